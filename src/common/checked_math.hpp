// Checked arithmetic for sizes, counts and byte lengths that come from input: a model's dimensions,
// a command-line value, a file's header. Unchecked, such a product wraps silently, passes the size
// checks that follow it and ends in a write past a buffer; checked, it throws
// xtrain::size_overflow_error, naming the quantity and each factor, so the tools report it as bad
// input (exit code 2).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace xtrain {

// One factor of a product, named as the user knows it ("--micro-batch-size", "dimension 0").
struct NamedFactor {
  std::string_view name;
  int64_t value;
};

// The product of `factors`, which must each be >= 0. Throws size_overflow_error ("<what> overflows:
// a 2 x b 4611686018427387904 is more than 9223372036854775807") when it does not fit in int64_t,
// and xtrain::error when a factor is negative. A product with a zero factor is 0, whatever the
// others.
int64_t checkedProduct(std::string_view what, std::initializer_list<NamedFactor> factors);

// a * b (both >= 0), checked as checkedProduct is.
int64_t checkedMul(std::string_view what, int64_t a, int64_t b);

// a + b (both >= 0), checked likewise.
int64_t checkedAdd(std::string_view what, int64_t a, int64_t b);

}  // namespace xtrain

#pragma GCC visibility pop
