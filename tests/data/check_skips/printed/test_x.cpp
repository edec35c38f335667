// A planted fault for tests/check_skips.sh: a test that prints a skip and passes.
TEST_CASE("needs data") {
  if (!have_data()) {
    MESSAGE("skipped: no data");
    return;
  }
}
