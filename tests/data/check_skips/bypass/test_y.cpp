// A planted fault for tests/check_skips.sh: a skip decorator CI cannot turn off.
TEST_CASE("needs data" * doctest::skip(!have_data())) {}
