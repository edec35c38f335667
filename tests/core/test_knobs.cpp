// Knob tables (core/knobs.h): one table reads, bounds, lists, writes and describes a struct's
// settings. Expected texts are written out by hand.
#include <doctest/doctest.h>

#include "tests/input_error_text.h"

#include <cstdint>
#include <string>

#include "core/knobs.h"

namespace {

struct Toy {
  int32_t seqs = 4;
  double share = 0.5;
  double mark = 0.0;
  bool on = true;
  std::string mode = "auto";
  template <class Visit>
  void knobs(Visit&& k) {
    k("seqs", seqs, isim::above_upto(0, 16), "an integer", "sequences per step");
    k("share", share, isim::above_upto(0, 1), "a fraction in (0, 1]", "a share");
    k("mark", mark, isim::from_below(0, 1), "a fraction in [0, 1)", "a watermark");
    k("on", on, isim::none(), "true or false", "a switch");
    k("mode", mode, isim::none(), "a name", "a mode");
  }
};

Toy read(const std::string& text) {
  Toy t;
  const isim::YamlMap m(YAML::Load(text), "t.yaml", "toy", isim::knob_names<Toy>());
  isim::KnobReader r{m};
  t.knobs(r);
  return t;
}

std::string error_of(const std::string& text) {
  return isim::test::error_of_call([&] { read(text); });
}

}  // namespace

TEST_CASE("a knob table reads present keys and keeps the defaults of absent ones") {
  const Toy t = read("{seqs: 16, mark: 0.25, mode: fast}");
  CHECK(t.seqs == 16);
  CHECK(t.share == 0.5);
  CHECK(t.mark == 0.25);
  CHECK(t.on);
  CHECK(t.mode == "fast");
}

TEST_CASE("each end of a bound is checked on the value read, open or closed") {
  CHECK(error_of("{seqs: 0}") == "t.yaml:1: toy.seqs: must be > 0");
  CHECK(error_of("{seqs: 17}") == "t.yaml:1: toy.seqs: must be <= 16");
  CHECK(error_of("{share: 1.5}") == "t.yaml:1: toy.share: must be <= 1");
  CHECK(error_of("{mark: -0.5}") == "t.yaml:1: toy.mark: must be >= 0");
  CHECK(error_of("{mark: 1}") == "t.yaml:1: toy.mark: must be < 1");
  CHECK(error_of("{on: 3}") == "t.yaml:1: toy.on: expected true or false, got '3'");
  CHECK(error_of("{seqs: x}") == "t.yaml:1: toy.seqs: expected an integer, got 'x'");
  CHECK(error_of("{seq: 1}") ==
        "t.yaml:1: toy.seq: unknown key; valid keys: seqs, share, mark, on, mode");
}

TEST_CASE("the writer and the rows of isim list come from the same table") {
  Toy t;
  t.share = 0.25;
  YAML::Node out;
  isim::KnobWriter w{out};
  t.knobs(w);
  YAML::Emitter e;
  e << YAML::Flow << out;
  CHECK(std::string(e.c_str()) == "{seqs: 4, share: 0.25, mark: 0, on: true, mode: auto}");
  const auto rows = isim::knob_rows<Toy>();
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].key == "seqs");
  CHECK(rows[0].def == "4");
  CHECK(rows[0].bound == "(0, 16]");
  CHECK(rows[2].bound == "[0, 1)");
  CHECK(rows[3].def == "true");
  CHECK(rows[3].bound.empty());
  CHECK(rows[4].help == "a mode");
  CHECK(isim::at_least(-1).text() == ">= -1");
}
