// sort_doubles: sorts doubles ascending as std::sort would, in linear time.
//
// Contract: for values that are not NaN, the result is std::sort's order (-0 before +0, which
// std::sort leaves in either order); below 256 values it is std::sort. Above, an LSD radix sort
// over the bits of order-preserving keys, 11 bits a pass, skipping passes where every key has the
// same digit. Statistics that sum in sorted order (byte-identical outputs) need a full sort, so
// a tally or nth_element would not do; this one costs O(n) and two n-word buffers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace isim {

inline void sort_doubles(std::vector<double>& v) {
  if (v.size() < 256) {
    std::sort(v.begin(), v.end());
    return;
  }
  // Order-preserving keys: a negative double's bits all flipped, a positive one's sign set.
  const size_t n = v.size();
  std::vector<uint64_t> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t x;
    std::memcpy(&x, &v[i], sizeof x);
    a[i] = (x >> 63) != 0 ? ~x : x | (uint64_t{1} << 63);
  }
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < 64; shift += kBits) {
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t x : a) ++count[(x >> shift) & (kBuckets - 1)];
    if (count[(a[0] >> shift) & (kBuckets - 1)] == n) continue;  // one digit: already in order
    size_t sum = 0;
    for (size_t& c : count) sum += std::exchange(c, sum);
    for (uint64_t x : a) b[count[(x >> shift) & (kBuckets - 1)]++] = x;
    a.swap(b);
  }
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = (a[i] >> 63) != 0 ? a[i] & ~(uint64_t{1} << 63) : ~a[i];
    std::memcpy(&v[i], &x, sizeof x);
  }
}

}  // namespace isim
