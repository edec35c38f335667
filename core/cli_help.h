// One verb's help, from one place: its usage lines, its option table (the Boost descriptions
// the verb parses with) and a few examples. `--help` prints all three to stdout; a usage error
// prints the usage lines (cli.h's UsageError), so help and usage never drift apart.
//
// Contract: help_text(h, visible) is
//   usage lines, a blank line, the `about` paragraph (when given) and a blank line,
//   "options:" and the visible option table, then "examples:" and the examples, one per line.
// Options a verb parses but does not document (its positionals) go in a hidden table that
// parse_visible_hidden() adds to the parse but never to the help.
#pragma once

#include <iostream>
#include <sstream>
#include <string>

#include <boost/program_options.hpp>

#include "core/cli_args.h"

namespace isim {

struct Help {
  std::string usage;     // "usage: isim VERB ...\n" (continuation lines indented)
  std::string about;     // what the verb does and its exit codes; "" for none
  std::string examples;  // "  isim VERB ...\n" lines, each a command that works as written
};

inline std::string help_text(const Help& h, const boost::program_options::options_description& o) {
  std::ostringstream s;
  s << h.usage << "\n";
  if (!h.about.empty()) s << h.about << "\n";
  s << "options:\n" << o << "\nexamples:\n" << h.examples;
  return s.str();
}

// Prints the help to stdout; the exit code of --help (0).
inline int print_help(const Help& h, const boost::program_options::options_description& o) {
  std::cout << help_text(h, o);
  return 0;
}

inline UsageError usage_error(const std::string& message, const Help& h) {
  return UsageError{message, h.usage + "(see --help)\n"};
}

// Parses with the visible options and the hidden ones (positionals) together.
inline boost::program_options::variables_map parse_visible_hidden(
    const Args& args, const boost::program_options::options_description& visible,
    const boost::program_options::options_description& hidden,
    const boost::program_options::positional_options_description& pos) {
  namespace po = boost::program_options;
  po::options_description all;
  all.add(visible).add(hidden);
  po::variables_map vm;
  po::store(no_empty_values(po::command_line_parser(args).options(all).positional(pos).run()), vm);
  po::notify(vm);
  return vm;
}

}  // namespace isim
