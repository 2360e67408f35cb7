#include "checkpoint/seal.hpp"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/crc32.hpp"
#include "checkpoint/durable_files.hpp"
#include "checkpoint/layout.hpp"
#include "xtrain/format.hpp"

namespace xtrain::checkpoint {

namespace fs = std::filesystem;

namespace {

// The first line of every seal; the number is the seal's own version.
constexpr const char* kSealHeader = "xtrain-checkpoint-seal 1";

struct Fingerprint {
  uint64_t bytes = 0;
  uint32_t crc = 0;
};

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// Size and CRC-32 of a file's bytes, or nullopt when it cannot be read.
std::optional<Fingerprint> fingerprintOf(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string bytes{std::istreambuf_iterator<char>(in), {}};
  if (in.bad()) return std::nullopt;
  return Fingerprint{bytes.size(), crc32Of(bytes.data(), bytes.size())};
}

template <typename T>
bool parseWhole(const std::string& text, T& value, int base = 10) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return ec == std::errc() && end == text.data() + text.size();
}

// The index's line of a seal: "checkpoint.h5 <bytes> <crc32, 8 hex digits>".
std::optional<Fingerprint> parseIndexLine(const std::string& line) {
  std::istringstream words(line);
  std::string name, bytes, crc, extra;
  if (!(words >> name >> bytes >> crc) || (words >> extra)) return std::nullopt;
  Fingerprint f;
  if (name != layout::kIndexFile || crc.size() != 8 || !parseWhole(bytes, f.bytes) ||
      !parseWhole(crc, f.crc, 16)) {
    return std::nullopt;
  }
  return f;
}

std::string sealPath(const std::string& dir) {
  return (fs::path(dir) / layout::kSealFile).string();
}

}  // namespace

void writeSeal(const std::string& dir) {
  const std::string index = (fs::path(dir) / layout::kIndexFile).string();
  const auto f = fingerprintOf(index);
  if (!f) throw CheckpointError("cannot read '{}' to seal it", index);
  replaceFileDurably(sealPath(dir), xtrain::format("{}\n{} {} {}\n", kSealHeader,
                                                   layout::kIndexFile, f->bytes, hex(f->crc)));
}

SealCheck checkSeal(const std::string& dir, const std::string& indexFile) {
  const std::string seal = sealPath(dir);
  std::error_code ec;
  if (!fs::exists(seal, ec)) return {};
  SealCheck out{SealState::Broken, ""};
  std::ifstream in(seal);
  std::string header, line;
  std::optional<Fingerprint> recorded;
  if (std::getline(in, header) && header == kSealHeader && std::getline(in, line)) {
    recorded = parseIndexLine(line);
  }
  if (!recorded) {
    out.problem = xtrain::format(
        "'{}' is damaged: it is not a seal (expected '{}' and a line '{} "
        "<bytes> <crc32>')",
        seal, kSealHeader, layout::kIndexFile);
    return out;
  }
  const auto actual = fingerprintOf(indexFile);
  if (!actual) {
    out.problem = xtrain::format("'{}' cannot be read (its seal '{}' expects {} bytes)", indexFile,
                                 seal, recorded->bytes);
  } else if (actual->bytes < recorded->bytes) {
    out.problem = xtrain::format(
        "'{}' is damaged: it is truncated or replaced ({} bytes, its seal recorded {})", indexFile,
        actual->bytes, recorded->bytes);
  } else if (actual->bytes != recorded->bytes) {
    out.problem = xtrain::format("'{}' is damaged: it has {} bytes, its seal recorded {}",
                                 indexFile, actual->bytes, recorded->bytes);
  } else if (actual->crc != recorded->crc) {
    out.problem = xtrain::format(
        "'{}' is damaged (corrupt): its bytes have CRC-32 0x{}, its seal '{}' recorded 0x{}",
        indexFile, hex(actual->crc), seal, hex(recorded->crc));
  } else {
    out.state = SealState::Sound;
  }
  return out;
}

bool isSealed(const std::string& dir) {
  std::ifstream in(sealPath(dir));
  std::string header;
  return std::getline(in, header) && header == kSealHeader;
}

}  // namespace xtrain::checkpoint
