// A read that fails half-way through a trace is an error naming the file and the line, not the
// end of the trace (issue 36: a trace whose read failed after three sessions ran three).
#include <doctest/doctest.h>

#include <istream>
#include <sstream>
#include <stdexcept>
#include <streambuf>
#include <string>

#include "core/input_error.h"
#include "tests/input_error_text.h"
#include "traces/jsonl.h"

namespace {

// Serves `text`, then fails: the next read throws, as a disk or network fault does inside
// std::filebuf (libstdc++ throws from underflow; the stream sets its bad bit).
class FailsAfter : public std::streambuf {
 public:
  explicit FailsAfter(std::string text) : text_(std::move(text)) {}

 protected:
  int_type underflow() override {
    if (served_) throw std::runtime_error("read fault");
    served_ = true;
    setg(text_.data(), text_.data(), text_.data() + text_.size());
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string text_;
  bool served_ = false;
};

std::string session_line(int k) {
  return R"({"id":"s)" + std::to_string(k) +
         R"(","arrival_s":1,"segments":[{"input":10,"output":5}]})"
         "\n";
}

}  // namespace

TEST_CASE("read errors: a JSONL trace that fails after three sessions is refused at line 4") {
  FailsAfter buf(session_line(1) + session_line(2) + session_line(3));
  std::istream in(&buf);
  // Three whole lines were read; the read of line 4 failed.
  CHECK(isim::test::error_of_call([&] { isim::trace::parse_jsonl(in, "t.jsonl"); }) ==
        "t.jsonl:4: read error; the file could not be read to its end");
}

TEST_CASE("read errors: the same three lines with a clean end are three sessions") {
  std::string text = session_line(1) + session_line(2) + session_line(3);
  std::istringstream in(text);
  CHECK(isim::trace::parse_jsonl(in, "t.jsonl").size() == 3);
}
