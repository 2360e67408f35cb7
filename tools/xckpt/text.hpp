// Small text helpers for xckpt's tables.
#pragma once

#include <cstdint>
#include <string>

namespace xtrain::tools::xckpt {

// "1.5 MiB", "312 B".
std::string humanBytes(uint64_t bytes);
// `text` padded with spaces to `width` (never cut).
std::string padded(const std::string& text, size_t width);
// A double in a short scientific form ("1.25e-03"), "0" for zero.
std::string shortNumber(double value);

}  // namespace xtrain::tools::xckpt
