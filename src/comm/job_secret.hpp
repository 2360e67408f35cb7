// The job's secret: xrun generates it, hands it to every instance in XTRAIN_JOB_SECRET, and the
// gloo backend authenticates each TCP connection with it (HMAC-SHA-256 over a per-connection
// challenge), so a process of another user that connects to a job's port cannot pass for a rank.
#pragma once
#pragma GCC visibility push(default)

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xtrain::comm {

// The environment variable xrun sets (never on a command line, where `ps` would show it).
inline constexpr const char* kJobSecretVariable = "XTRAIN_JOB_SECRET";

// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104) of byte strings, by OpenSSL's libcrypto.
std::array<uint8_t, 32> sha256(std::string_view data);
std::array<uint8_t, 32> hmacSha256(std::string_view key, std::string_view message);

// `bytes` bytes from the kernel's random source (getrandom), as 2 * bytes lowercase hex digits.
std::string randomHex(size_t bytes);

// Whether two strings are equal, in a time that does not depend on where they differ.
bool equalInConstantTime(std::string_view a, std::string_view b);

// XTRAIN_JOB_SECRET: nullopt when unset or empty; an error naming the variable when it is not at
// least 32 hexadecimal digits.
std::optional<std::string> jobSecretFromEnvironment();

}  // namespace xtrain::comm

#pragma GCC visibility pop
