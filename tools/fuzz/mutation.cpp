#include "mutation.hpp"

#include <algorithm>
#include <cstdio>

namespace xfuzz {

namespace {
std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

namespace {
// Where a mutation starts: anywhere, or (two times in five) in the first 2 KiB, where the HDF5
// superblock and root object headers and the ONNX model's header fields live. Uniform offsets
// would mostly land in tensor payloads, which only checksums and loss values notice.
uint64_t drawOffset(Rng& rng, uint64_t size) {
  const uint64_t head = std::min<uint64_t>(size, 2048);
  return rng.chance(2, 5) ? rng.below(head) : rng.below(size);
}
}  // namespace

Mutation Mutation::draw(Rng& rng, uint64_t size) {
  Mutation m;
  if (size == 0) {  // nothing to flip, cut or zero: give the reader some garbage instead
    m.kind = Kind::RandomRun;
    m.length = rng.between(1, 64);
    for (uint64_t i = 0; i < m.length; ++i) m.runBytes.push_back(static_cast<uint8_t>(rng.next()));
    return m;
  }
  // Flips dominate: they are what checksums and parsers most often miss; the rest probe lengths.
  const uint64_t r = rng.below(100);
  if (r < 55) {
    m.kind = Kind::FlipBytes;
    const uint64_t n = rng.chance(2, 3) ? 1 : rng.between(2, 8);
    for (uint64_t i = 0; i < n; ++i) {
      m.offsets.push_back(drawOffset(rng, size));
      // Half single-bit flips (the classic bit rot), half whole random bytes.
      m.xorMasks.push_back(rng.chance(1, 2) ? static_cast<uint8_t>(1u << rng.below(8))
                                            : static_cast<uint8_t>(rng.between(1, 255)));
    }
    m.offset = m.offsets.front();
    m.length = n;
  } else if (r < 72) {
    m.kind = Kind::RandomRun;
    m.offset = drawOffset(rng, size);
    m.length = std::min<uint64_t>(rng.between(2, 64), size - m.offset);
    for (uint64_t i = 0; i < m.length; ++i) m.runBytes.push_back(static_cast<uint8_t>(rng.next()));
  } else if (r < 86) {
    m.kind = Kind::Truncate;
    m.offset = rng.below(size);  // the new length, always shorter
  } else {
    m.kind = Kind::ZeroRange;
    m.offset = drawOffset(rng, size);
    m.length = std::min<uint64_t>(rng.between(1, 512), size - m.offset);
  }
  return m;
}

void Mutation::apply(std::string& bytes) const {
  switch (kind) {
    case Kind::FlipBytes:
      for (size_t i = 0; i < offsets.size(); ++i)
        if (offsets[i] < bytes.size()) bytes[offsets[i]] = static_cast<char>(bytes[offsets[i]] ^ xorMasks[i]);
      break;
    case Kind::RandomRun:
      if (bytes.size() < offset + runBytes.size()) bytes.resize(offset + runBytes.size());
      for (size_t i = 0; i < runBytes.size(); ++i) bytes[offset + i] = static_cast<char>(runBytes[i]);
      break;
    case Kind::Truncate:
      if (offset < bytes.size()) bytes.resize(offset);
      break;
    case Kind::ZeroRange:
      for (uint64_t i = offset; i < offset + length && i < bytes.size(); ++i) bytes[i] = 0;
      break;
  }
}

std::string Mutation::describe(uint64_t originalSize) const {
  std::string s;
  switch (kind) {
    case Kind::FlipBytes:
      s = "flip " + std::to_string(offsets.size()) + (offsets.size() == 1 ? " byte" : " bytes") + " at";
      for (size_t i = 0; i < offsets.size(); ++i)
        s += (i ? ", " : " ") + hex(offsets[i]) + " (^" + hex(xorMasks[i]) + ")";
      break;
    case Kind::RandomRun:
      s = "write " + std::to_string(runBytes.size()) + " random bytes at " + hex(offset) + ":";
      for (uint8_t b : runBytes) {
        char buf[4];
        std::snprintf(buf, sizeof buf, " %02x", b);
        s += buf;
      }
      break;
    case Kind::Truncate:
      s = "truncate " + std::to_string(originalSize) + " -> " + std::to_string(offset) + " bytes";
      break;
    case Kind::ZeroRange:
      s = "zero " + std::to_string(length) + " bytes at " + hex(offset);
      break;
  }
  return s;
}

}  // namespace xfuzz
