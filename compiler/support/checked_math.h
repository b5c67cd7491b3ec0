// Overflow-checked integer arithmetic for shape and size computations.
//
// Model files are user input: a 3-billion-channel conv or a 2^40-pixel image must produce an
// error, never a wrapped product that later sizes a buffer. Every element count and byte size
// in zoc goes through these helpers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace zoc {

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of all factors, or nullopt on overflow.
template <class Range>
std::optional<int64_t> checked_product_of(const Range& factors) {
  int64_t r = 1;
  for (int64_t f : factors) {
    auto next = checked_mul(r, f);
    if (!next) return std::nullopt;
    r = *next;
  }
  return r;
}

inline std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors) {
  return checked_product_of(factors);
}

}  // namespace zoc
