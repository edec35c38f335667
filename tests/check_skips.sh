#!/usr/bin/env bash
# A test that cannot run must be reported as skipped, never as passed (tests/test_paths.h):
# fails when a test prints a skip message (doctest MESSAGE/INFO/WARN or a stream) instead of
# being skipped, or when a doctest skip decorator bypasses isim::test::absent, which CI
# (ISIM_REQUIRE_DATA=1) turns off. Usage: check_skips.sh TESTS_DIR. Folders named check_skips
# (tests/data/check_skips: its planted faults) are not searched, except as TESTS_DIR itself.
set -uo pipefail
dir=${1:?usage: check_skips.sh TESTS_DIR}
[[ -d $dir ]] || { echo "check_skips.sh: $dir: not a folder" >&2; exit 2; }
status=0
printed=$(grep -rnEi --include='*.cpp' --include='*.h' --exclude-dir=check_skips \
  '((MESSAGE|INFO|WARN)[[:space:]]*\(|cout|cerr|printf).*skip' "$dir")
if [[ -n $printed ]]; then
  echo "tests that print a skip instead of being skipped (use doctest::skip(isim::test::absent(...))):"
  echo "$printed"
  status=1
fi
bypass=$(grep -rn --include='*.cpp' --include='*.h' --exclude-dir=check_skips 'doctest::skip(' \
  "$dir" |
  grep -v 'doctest::skip(isim::test::absent(')
if [[ -n $bypass ]]; then
  echo "skip decorators that bypass isim::test::absent (CI could not catch them skipping):"
  echo "$bypass"
  status=1
fi
[[ $status == 0 ]] && echo "check_skips: no test prints a skip or bypasses isim::test::absent"
exit $status
