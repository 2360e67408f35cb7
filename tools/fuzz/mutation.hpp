// Byte-level mutations of an input file: the damage a disk, a copy or a hostile user does to a
// model, data set or checkpoint. Each one is drawn from a seeded Rng and says exactly what it did,
// so a failure report can be reproduced by hand as well as by --case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rng.hpp"

namespace xfuzz {

struct Mutation {
  enum class Kind { FlipBytes, RandomRun, Truncate, ZeroRange };
  Kind kind = Kind::FlipBytes;
  uint64_t offset = 0;                // first byte touched (Truncate: the new length)
  uint64_t length = 0;                // bytes touched
  std::vector<uint64_t> offsets;      // FlipBytes: every offset flipped
  std::vector<uint8_t> xorMasks;      // FlipBytes: the mask of each
  std::vector<uint8_t> runBytes;      // RandomRun: the bytes written

  // Draws a mutation of a file of `size` bytes (size 0: a run of bytes written into the empty file).
  static Mutation draw(Rng& rng, uint64_t size);
  void apply(std::string& bytes) const;
  // e.g. "flip 2 bytes at 0x1a2 (^0x40), 0x3f0 (^0x01)", "truncate 10952 -> 300 bytes"
  std::string describe(uint64_t originalSize) const;
};

}  // namespace xfuzz
