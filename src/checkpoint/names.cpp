// Dataset names, checkpoint directory names and staging directory names.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/layout.hpp"
#include "xtrain/format.hpp"

namespace xtrain::checkpoint {

void Fnv1a64::add(std::string_view text) {
  constexpr uint64_t kPrime = 1099511628211ull;
  for (unsigned char c : text) value = (value ^ c) * kPrime;
  value = (value ^ 0xff) * kPrime;  // the separator
}

std::string graphFingerprint(uint64_t hash) {
  return xtrain::format("fnv1a64:{:016x}", hash);
}

std::string normalizeGraphFingerprint(const std::string& stored, int64_t formatVersion) {
  static constexpr std::string_view kLegacyPrefix = "fnv1a64:{:016x} ";
  if (formatVersion > 2 || !stored.starts_with(kLegacyPrefix)) return stored;
  const std::string digits = stored.substr(kLegacyPrefix.size());
  if (digits.empty() || digits.size() > 20 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return stored;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long hash = std::strtoull(digits.c_str(), &end, 10);
  if (errno == ERANGE || end != digits.c_str() + digits.size()) return stored;
  return graphFingerprint(hash);
}

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

namespace {

// FNV-1a, 32 bits, of this host's name: short enough for a directory name, and a collision only
// makes prune() keep a stale staging directory a little longer.
uint32_t thisHost() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return 0;
  uint32_t h = 2166136261u;
  for (const char* c = name; *c != '\0'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return h;
}

}  // namespace

StagingOwner thisProcessAsStagingOwner() {
  std::random_device random;
  return StagingOwner{thisHost(), static_cast<int64_t>(::getpid()),
                      static_cast<uint32_t>(random())};
}

std::string stagingDirectory(const std::string& finalDir, const StagingOwner& owner) {
  char tag[64];
  std::snprintf(tag, sizeof tag, "%08x-%lld-%08x", owner.host, static_cast<long long>(owner.pid),
                owner.nonce);
  return finalDir + layout::kStagingMarker + tag;
}

std::optional<StagingOwner> stagingOwnerOf(const std::string& stagingName) {
  const auto at = stagingName.rfind(layout::kStagingMarker);
  if (at == std::string::npos) return std::nullopt;
  const std::string tag = stagingName.substr(at + std::string(layout::kStagingMarker).size());
  unsigned host = 0, nonce = 0;
  long long pid = 0;
  int used = 0;
  if (std::sscanf(tag.c_str(), "%8x-%lld-%8x%n", &host, &pid, &nonce, &used) != 3 ||
      static_cast<size_t>(used) != tag.size() || pid <= 0) {
    return std::nullopt;
  }
  return StagingOwner{host, static_cast<int64_t>(pid), nonce};
}

bool ownerGone(const StagingOwner& owner) {
  return owner.host == thisHost() && owner.pid > 0 &&
         ::kill(static_cast<pid_t>(owner.pid), 0) != 0 && errno == ESRCH;
}

bool ownerAlive(const StagingOwner& owner) {
  if (owner.host != thisHost() || owner.pid <= 0) return false;
  // EPERM: the process exists but belongs to someone else.
  return ::kill(static_cast<pid_t>(owner.pid), 0) == 0 || errno == EPERM;
}

}  // namespace xtrain::checkpoint
