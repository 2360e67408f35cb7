#include "comm/job_secret.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/env_value.hpp"
#include "xtrain/error.hpp"

namespace xtrain::comm {

namespace {

bool isHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

std::array<uint8_t, 32> sha256(std::string_view data) {
  std::array<uint8_t, 32> digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    throw runtime_error("SHA-256 failed (OpenSSL's EVP_Digest)");
  }
  return digest;
}

std::array<uint8_t, 32> hmacSha256(std::string_view key, std::string_view message) {
  std::array<uint8_t, 32> mac{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(),
           &length) == nullptr ||
      length != mac.size()) {
    throw runtime_error("HMAC-SHA-256 failed (OpenSSL's HMAC)");
  }
  return mac;
}

std::string randomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::getrandom(raw.data() + done, bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw runtime_error("cannot read random bytes (getrandom): {}", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (char c : raw) {
    const auto u = static_cast<unsigned char>(c);
    out += hex[u >> 4];
    out += hex[u & 15];
  }
  return out;
}

bool equalInConstantTime(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<std::string> jobSecretFromEnvironment() {
  const auto value = readEnvString(kJobSecretVariable);
  if (!value) return std::nullopt;
  const std::string& secret = *value;
  bool hex = secret.size() >= 32;
  for (char c : secret) hex = hex && isHexDigit(c);
  if (!hex) {
    throw error(
        "{} must be at least 32 hexadecimal digits (xrun sets it for every instance), but it has "
        "{} characters{}",
        kJobSecretVariable, secret.size(),
        secret.size() >= 32 ? " that are not all hex digits" : "");
  }
  return secret;
}

}  // namespace xtrain::comm
