// Argument parsing shared by the isim verbs (Boost.Program_options).
//
// Contract: parse_args stores and notifies the verb's options and positionals; Boost's errors
// (unknown option, missing value) propagate to main, which reports them with exit 2. The
// one-name form takes a single positional argument under that option name.
#pragma once

#include <boost/program_options.hpp>

#include "experiments/cli.h"

namespace isim::exp {

inline boost::program_options::variables_map parse_args(
    const Args& args, const boost::program_options::options_description& opts,
    const boost::program_options::positional_options_description& pos) {
  namespace po = boost::program_options;
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  return vm;
}

inline boost::program_options::variables_map parse_args(
    const Args& args, const boost::program_options::options_description& opts,
    const char* positional) {
  boost::program_options::positional_options_description pos;
  pos.add(positional, 1);
  return parse_args(args, opts, pos);
}

}  // namespace isim::exp
