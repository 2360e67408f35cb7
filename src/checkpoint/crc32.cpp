#include "checkpoint/crc32.hpp"

#include <zlib.h>

#include <algorithm>
#include <limits>

namespace xtrain::checkpoint {

uint32_t crc32Of(const void* data, size_t bytes) {
  // zlib takes a 32-bit length: feed tensors of 4 GiB and more in pieces.
  constexpr size_t kPiece = std::numeric_limits<uInt>::max() / 2 + 1;
  const auto* p = static_cast<const Bytef*>(data);
  uLong crc = ::crc32(0L, Z_NULL, 0);
  while (bytes > 0) {
    const size_t n = std::min(bytes, kPiece);
    crc = ::crc32(crc, p, static_cast<uInt>(n));
    p += n;
    bytes -= n;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace xtrain::checkpoint
