#include "common/checked_math.hpp"

#include <limits>
#include <string>

#include "xtrain/error.hpp"

namespace xtrain {

namespace {

std::string describe(std::initializer_list<NamedFactor> factors, const char* op) {
  std::string text;
  for (const auto& f : factors) {
    if (!text.empty()) text += op;
    if (!f.name.empty()) text += std::string(f.name) + " ";
    text += std::to_string(f.value);
  }
  return text;
}

[[noreturn]] void overflow(std::string_view what, std::initializer_list<NamedFactor> factors,
                           const char* op) {
  throw size_overflow_error("{} overflows: {} is more than {}", what, describe(factors, op),
                            std::numeric_limits<int64_t>::max());
}

void requireNonNegative(std::string_view what, std::initializer_list<NamedFactor> factors) {
  for (const auto& f : factors) {
    if (f.value < 0) throw error("{}: {} must not be negative, got {}", what, f.name, f.value);
  }
}

}  // namespace

int64_t checkedProduct(std::string_view what, std::initializer_list<NamedFactor> factors) {
  requireNonNegative(what, factors);
  for (const auto& f : factors) {
    if (f.value == 0) return 0;
  }
  int64_t product = 1;
  for (const auto& f : factors) {
    if (__builtin_mul_overflow(product, f.value, &product)) overflow(what, factors, " x ");
  }
  return product;
}

int64_t checkedMul(std::string_view what, int64_t a, int64_t b) {
  return checkedProduct(what, {{"", a}, {"", b}});
}

int64_t checkedAdd(std::string_view what, int64_t a, int64_t b) {
  const std::initializer_list<NamedFactor> terms{{"", a}, {"", b}};
  requireNonNegative(what, terms);
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) overflow(what, terms, " +");
  return sum;
}

}  // namespace xtrain
