// The Azure LLM inference trace reader (traces/azure.h) and the exact timestamps under it
// (traces/exact_time.h): arrivals, token counts and every error a user can hit, by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "core/input_error.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"
#include "traces/azure.h"
#include "traces/exact_time.h"
#include "traces/sources.h"
#include "traces/stats.h"

using namespace isim::trace;

namespace {

const char* kAzureHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

// The InputError of parse_azure on `text` (origin a.csv), "(no error)" when it parses.
std::string azure_error(const std::string& text) {
  std::istringstream in(text);
  return isim::test::error_of_call([&] { parse_azure(in, "a.csv"); });
}

ExactTime at(const std::string& text) {
  ExactTime t;
  REQUIRE(parse_date_time(text, &t).empty());
  return t;
}

}  // namespace

TEST_CASE("exact time: dates, offsets and fractions are read without floating point") {
  // 1970..2022 is 53 years with 13 leap days (1972..2020): 19358 days; Jan..Oct 2023 304 days;
  // + 15 -> 19677 days = 1700092800 s; + 18 h 17 min 3 s (65823 s) = 1700158623.
  const ExactTime a = at("2023-11-16 18:17:03.9799600");
  CHECK(a.seconds == 1700158623);
  CHECK(a.fraction == 9799600);
  CHECK(a.digits == 7);
  CHECK(at("1970-01-01 00:00:00").seconds == 0);
  // 02:00:01.5 at +02:00 is 00:00:01.5 UTC, as is 23:00:01.5 the day before at -01:00.
  const ExactTime b = at("2024-05-10 00:00:01.5Z");
  CHECK(seconds_between(b, at("2024-05-10 02:00:01.5+02:00")) == 0);
  CHECK(seconds_between(b, at("2024-05-09T23:00:01.5-0100")) == 0);
  // 2024 is a leap year: Feb 28 23:59:59 to Mar 1 00:00:00 is a day and a second; 2023: 1 s.
  CHECK(seconds_between(at("2024-02-28 23:59:59"), at("2024-03-01 00:00:00")) == 86401);
  CHECK(seconds_between(at("2023-02-28 23:59:59"), at("2023-03-01 00:00:00")) == 1);
  // 04.0319600 - 03.9799600 = 0.0520000 (as 520000 / 10^7: the double nearest 0.052), and
  // a 6-digit time against a 9-digit one: 2.250000001 - 0.009930 = 2.240070001.
  CHECK(seconds_between(a, at("2023-11-16 18:17:04.0319600")) == 0.052);
  CHECK(seconds_between(at("2024-05-10 00:00:00.009930+00:00"),
                        at("2024-05-10 00:00:02.250000001Z")) == 2.240070001);
  CHECK(before(a, at("2023-11-16 18:17:03.97996001")));
  CHECK(!before(a, at("2023-11-16 18:17:03.97996")));  // equal: 9799600e-7 = 979960e-6
  // Digits past the 18th are dropped.
  const ExactTime f = at("2023-01-01 00:00:00.12345678901234567890");
  CHECK(f.fraction == 123456789012345678);
  CHECK(f.digits == 18);

  ExactTime s;
  CHECK(parse_seconds("12.5", &s).empty());
  CHECK((s.seconds == 12 && s.fraction == 5 && s.digits == 1));
  CHECK(parse_seconds("4000000000", &s).empty());  // the limit itself
}

TEST_CASE("exact time: every malformed time says what was expected") {
  const std::string shape =
      "expected a date and time YYYY-MM-DD HH:MM:SS[.DIGITS][Z|+HH:MM|-HH:MM]";
  ExactTime t;
  CHECK(parse_date_time("16/11/2023 18:17", &t) == shape + ", got '16/11/2023 18:17'");
  CHECK(parse_date_time("2023-11-16 18:17", &t) == shape + ", got '2023-11-16 18:17'");
  CHECK(parse_date_time("2023-11-16 18:17:03.", &t) == shape + ", got '2023-11-16 18:17:03.'");
  CHECK(parse_date_time("2023-11-16 18:17:03 ", &t) == shape + ", got '2023-11-16 18:17:03 '");
  CHECK(parse_date_time("2023-11-16 18:17:03+2", &t) == shape + ", got '2023-11-16 18:17:03+2'");
  CHECK(parse_date_time("2023-13-01 00:00:00", &t) ==
        shape + " (month 13), got '2023-13-01 00:00:00'");
  CHECK(parse_date_time("2023-02-29 00:00:00", &t) ==
        shape + " (day 29 of 2023-02), got '2023-02-29 00:00:00'");
  CHECK(parse_date_time("2023-11-16 24:00:00", &t) ==
        shape + " (hour 24), got '2023-11-16 24:00:00'");
  CHECK(parse_date_time("2023-11-16 18:60:00", &t) ==
        shape + " (minute 60), got '2023-11-16 18:60:00'");
  CHECK(parse_date_time("2023-11-16 18:17:60", &t) ==
        shape + " (second 60), got '2023-11-16 18:17:60'");
  CHECK(parse_date_time("0000-01-01 00:00:00", &t) ==
        shape + " (year 0000), got '0000-01-01 00:00:00'");
  CHECK(parse_date_time("2023-11-16 18:17:03+24:00", &t) ==
        shape + " (offset +24:00), got '2023-11-16 18:17:03+24:00'");
  const std::string seconds = "expected seconds, a decimal number >= 0";
  CHECK(parse_seconds("-5", &t) == seconds + ", got '-5'");
  CHECK(parse_seconds("1e3", &t) == seconds + ", got '1e3'");
  CHECK(parse_seconds(".5", &t) == seconds + ", got '.5'");
  CHECK(parse_seconds("", &t) == seconds + ", got ''");
  CHECK(parse_seconds("4000000000.5", &t) ==
        "expected at most 4000000000 s (about 126 years, the limit on a time), got "
        "'4000000000.5'");
}

// The first 20 rows of AzureLLMInferenceTrace_code.csv, unchanged (CRLF line ends).
TEST_CASE("azure: the 2023 excerpt gives one session a row, arriving at its offset") {
  AzureReport r;
  const Trace t = import_azure(isim::test::data_dir() + "/azure-excerpt.csv", &r);
  REQUIRE(t.size() == 20);
  CHECK(t[0].id == "azure-2");  // line 1 is the header
  CHECK(t[0].arrival_s == 0);
  CHECK(t[0].segments == std::vector<Segment>{{4808, 10, {}}});
  CHECK(t[0].prefix.empty());
  CHECK(t[1].arrival_s == 0.052);     // 18:17:04.0319600 - 18:17:03.9799600
  CHECK(t[2].arrival_s == 0.098189);  // 04.0781490 - 03.9799600
  // Lines 10 and 11 lie 25 us apart: 05.2792720 and 05.2792970 -> 1.299312 and 1.299337.
  CHECK(t[8].id == "azure-10");
  CHECK(t[8].arrival_s == 1.299312);
  CHECK(t[9].arrival_s == 1.299337);
  CHECK(t[12].arrival_s == 29.479069);  // 18:17:33.4590290 - 18:17:03.9799600
  CHECK(t[19].id == "azure-21");
  CHECK(t[19].arrival_s == 30.482726);  // 18:17:34.4626860 - 18:17:03.9799600
  CHECK(t[19].segments == std::vector<Segment>{{6587, 18, {}}});
  int64_t prompt = 0, output = 0;
  for (const auto& s : t) {
    prompt += s.segments[0].input;
    output += s.segments[0].output;
  }
  // 4808+3180+110+7433+34+374+6985+34+1145+201+137+7427+1555+3893+1827+394+675+7436+158+6587
  CHECK(prompt == 54393);
  // 10+8+27+14+12+14+9+23+7+24+9+8+19+19+10+17+6+9+26+18
  CHECK(output == 289);
  CHECK(r == AzureReport{20, 0, 0, "2023-11-16 18:17:03.9799600", 30.482726});
  // 20 sessions over 30.482726 s: (20 - 1) / 30.482726 = 0.623304 sessions/s.
  const std::string stats = trace_stats(t);
  CHECK(stats.find("sessions      20\n") != std::string::npos);
  CHECK(stats.find("arrival span  30.4827 s (0 .. 30.4827)\n") != std::string::npos);
  CHECK(stats.find("mean rate     0.623304 sessions/s\n") != std::string::npos);
}

// Written from the 2024 files' documented format (Azure/AzurePublicDataset,
// analysis/AzureLLMInferenceDataset2024.ipynb: its first rows, and its note that times come with
// and without a fraction), with hand-made rows for other offsets and a 0-token output.
TEST_CASE("azure: 2024-style times with offsets, and a 0-token output decoding 1") {
  AzureReport r;
  const Trace t = import_azure(isim::test::data_dir() + "/azure-2024-style.csv", &r);
  REQUIRE(t.size() == 6);
  CHECK(t[0].arrival_s == 0);
  CHECK(t[1].arrival_s == 0.007405);  // 0.017335 - 0.009930
  CHECK(t[2].arrival_s == 0.99007);   // 1 - 0.009930 (no fraction written)
  CHECK(t[3].arrival_s == 1.49007);   // 02:00:01.5+02:00 = 00:00:01.5 UTC
  CHECK(t[4].arrival_s == 2.24007);   // 2024-05-09T23:00:02.25-01:00 = 00:00:02.25 UTC
  CHECK(t[5].arrival_s == 2.240070001);
  CHECK(t[3].segments == std::vector<Segment>{{2376, 1, {}}});  // GeneratedTokens 0 -> 1
  CHECK(r == AzureReport{6, 1, 5, "2024-05-10 00:00:00.009930+00:00", 2.240070001});
  const LoadedTrace loaded = trace_source_registry()
                                 .create("azure", "test")
                                 ->load({isim::test::data_dir() + "/azure-2024-style.csv"});
  CHECK(loaded.trace == t);
  REQUIRE(loaded.notes.size() == 2);
  CHECK(loaded.notes[1] == isim::test::data_dir() +
                               "/azure-2024-style.csv: 1 requests with GeneratedTokens 0 decode "
                               "1 token (first at line 5)");
}

TEST_CASE("azure: every bad row names its line and what was expected") {
  const std::string h = kAzureHeader;
  const std::string row = "2023-11-16 18:17:04,10,2\n";
  CHECK(azure_error("time,context,generated\n") ==
        "a.csv:1: expected the header 'TIMESTAMP,ContextTokens,GeneratedTokens' (an Azure LLM "
        "inference trace), got 'time,context,generated'");
  CHECK(azure_error(h + row + "2023-11-16 18:17:05,10\n") ==
        "a.csv:3: expected 3 comma-separated cells (TIMESTAMP,ContextTokens,GeneratedTokens), "
        "got 2");
  CHECK(azure_error(h + "\n" + row + "2023-11-16 18:17:05,10,2,7\n") ==
        "a.csv:4: expected 3 comma-separated cells (TIMESTAMP,ContextTokens,GeneratedTokens), "
        "got 4");  // the blank line 2 is skipped but counted
  CHECK(azure_error(h + "2023-11-16 18:17:04,12.5,2\n") ==
        "a.csv:2: ContextTokens: expected an integer >= 1, got '12.5'");
  CHECK(azure_error(h + "2023-11-16 18:17:04,0,2\n") ==
        "a.csv:2: ContextTokens: expected an integer >= 1, got '0'");
  CHECK(azure_error(h + "2023-11-16 18:17:04,10,-1\n") ==
        "a.csv:2: GeneratedTokens: expected an integer >= 0, got '-1'");
  CHECK(azure_error(h + "2023-11-16 18:17:04,1000000001,2\n") ==
        "a.csv:2: ContextTokens: expected at most 1000000000 tokens (the limit on a token "
        "count), got '1000000001'");
  CHECK(azure_error(h + "2023-11-16 18:17:04,10,\n") ==
        "a.csv:2: GeneratedTokens: expected an integer >= 0, got ''");
  CHECK(azure_error(h + "2023-02-29 00:00:00,10,2\n") ==
        "a.csv:2: TIMESTAMP: expected a date and time "
        "YYYY-MM-DD HH:MM:SS[.DIGITS][Z|+HH:MM|-HH:MM] (day 29 of 2023-02), got "
        "'2023-02-29 00:00:00'");
  CHECK(azure_error(h + row + "2023-11-16 18:17:03.9,10,2\n") ==
        "a.csv:3: TIMESTAMP: '2023-11-16 18:17:03.9' is before line 2's '2023-11-16 18:17:04': "
        "rows must be in time order");
  // 1900-01-01 to 2100-01-01: 200 x 365 + 49 leap days (1904..2096; 1900 and 2100 are not)
  // = 73049 days = 6311433600 s, past 4e9.
  CHECK(azure_error(h + "1900-01-01 00:00:00,10,2\n2100-01-01 00:00:00,10,2\n") ==
        "a.csv:3: TIMESTAMP: '2100-01-01 00:00:00' after the first row's '1900-01-01 "
        "00:00:00': expected at most 4000000000 s (about 126 years, the limit on a time), got "
        "6311433600 s");
  CHECK(azure_error(h + row + "2023-11-16 18:17:04,10,2\n") == "(no error)");  // equal times

  const auto d = isim::test::scratch("azure-empty");
  const std::string header_only = isim::test::write_file(d / "h.csv", h);
  CHECK(isim::test::error_of_call([&] { import_azure(header_only); }) ==
        header_only + ": no sessions (the file holds no rows: it is empty or has only its header)");
}

TEST_CASE("azure: both shared 2023 files read whole" *
          doctest::skip(isim::test::absent(!std::filesystem::exists(
              isim::test::shared_data() + "/azure-llm-2023/AzureLLMInferenceTrace_conv.csv")))) {
  const std::string dir = isim::test::shared_data() + "/azure-llm-2023/";
  AzureReport code, conv;
  // The data README: 8,819 and 19,366 requests. Spans: 19:14:19.9280160 - 18:17:03.9799600 =
  // 57 min 15.948056 s; 19:14:08.4025270 - 18:15:46.6805900 = 58 min 21.721937 s.
  CHECK(import_azure(dir + "AzureLLMInferenceTrace_code.csv", &code).size() == 8819);
  CHECK(code.span_s == 3435.948056);
  CHECK(import_azure(dir + "AzureLLMInferenceTrace_conv.csv", &conv).size() == 19366);
  CHECK(conv.span_s == 3501.721937);
  CHECK(code.zero_outputs_raised + conv.zero_outputs_raised == 0);
}
