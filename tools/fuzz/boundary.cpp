#include "boundary.hpp"

namespace xfuzz {

const std::string& hugeString() {
  static const std::string s(100000, 'x');
  return s;
}

const std::vector<std::string>& boundaryValues() {
  static const std::vector<std::string> v{
      "0", "-1", "1", "2147483647", "2147483648", "4294967296", "4611686018427387904",
      "9223372036854775807", "9223372036854775808", "18446744073709551616", "nan", "inf", "-inf",
      "1e-45", "", hugeString(), "abc", "--"};
  return v;
}

}  // namespace xfuzz
