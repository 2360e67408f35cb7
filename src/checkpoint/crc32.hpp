// CRC-32 of a dataset's bytes: the ISO-HDLC polynomial of zlib, gzip and PNG, so a reader can check
// a dataset with Python's zlib.crc32(array.tobytes()) (docs/checkpoint-format.md).
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <cstdint>

namespace xtrain::checkpoint {

uint32_t crc32Of(const void* data, size_t bytes);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
