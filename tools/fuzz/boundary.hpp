// The boundary set every target draws hostile values from: the numbers where parsing, overflow and
// division go wrong, and things that are not numbers at all (docs/fuzzing.md lists them).
#pragma once

#include <string>
#include <vector>

namespace xfuzz {

// 100,000 bytes of 'x': longer than any name, path or number a tool should take.
const std::string& hugeString();

// 0, -1, 1, 2^31-1, 2^31, 2^32, 2^62, 2^63-1, 2^63, 2^64, NaN, infinities, a denormal, "", a
// 100 kB string, "abc", "--".
const std::vector<std::string>& boundaryValues();

}  // namespace xfuzz
