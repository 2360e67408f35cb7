// Dataset names and checkpoint directory names.
#include <cstdio>
#include <string>

#include "checkpoint/checkpoint.hpp"

namespace xtrain::checkpoint {

std::string encodeName(const std::string& tensorName) {
  // '/' would split the name into HDF5 groups; '%' is escaped so that decoding is unambiguous.
  std::string out;
  out.reserve(tensorName.size());
  for (char c : tensorName) {
    if (c == '/') {
      out += "%2F";
    } else if (c == '%') {
      out += "%25";
    } else {
      out += c;
    }
  }
  return out;
}

std::string decodeName(const std::string& encoded) {
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%' && i + 2 < encoded.size()) {
      const std::string code = encoded.substr(i + 1, 2);
      if (code == "2F" || code == "2f") {
        out += '/';
        i += 2;
        continue;
      }
      if (code == "25") {
        out += '%';
        i += 2;
        continue;
      }
    }
    out += encoded[i];  // anything else is kept as written
  }
  return out;
}

std::string checkpointName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "ckpt-%08lld", static_cast<long long>(step));
  return buf;
}

}  // namespace xtrain::checkpoint
