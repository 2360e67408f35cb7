#include "comm/store.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <thread>

namespace xtrain::comm {

namespace {
int64_t parseCounter(const std::string& key, const std::string& value) {
  if (value.empty()) return 0;
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size()) {
    throw error("store key '{}' holds '{}', not a counter; add() needs a decimal integer", key,
                value);
  }
  return v;
}

}  // namespace

LocalStore::LocalStore(std::string jobId, std::optional<Milliseconds> timeout)
    : jobId_(std::move(jobId)), timeout_(timeout ? *timeout : defaultTimeout()) {}

std::string LocalStore::label() const {
  return format("store of job '{}'", jobId_);
}

std::string LocalStore::get(const std::string& key, std::optional<Milliseconds> timeout) {
  wait({key}, timeout);
  auto v = read(key);
  if (!v) throw internal_error("{}: key '{}' vanished", label(), key);
  return *v;
}

int64_t LocalStore::add(const std::string& key, int64_t delta) {
  int64_t v = 0;
  update(key, [&](const std::optional<std::string>& current) {
    v = parseCounter(key, current.value_or("")) + delta;
    return std::to_string(v);
  });
  return v;
}

bool LocalStore::check(const std::vector<std::string>& keys) {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return has(k); });
}

void LocalStore::wait(const std::vector<std::string>& keys, std::optional<Milliseconds> timeout) {
  const Milliseconds t = timeout ? *timeout : timeout_;
  const auto deadline = std::chrono::steady_clock::now() + t;
  for (int attempt = 0;; ++attempt) {
    const uint64_t seen = version();
    if (check(keys)) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::vector<std::string> missing;
      for (const auto& k : keys) {
        if (!has(k)) missing.push_back(k);
      }
      throw CommTimeoutError("{}: timed out after {} ms waiting for keys {}", label(), t.count(),
                             missing);
    }
    awaitChange(seen, deadline, attempt);
  }
}

void LocalStore::awaitChange(uint64_t, std::chrono::steady_clock::time_point until, int attempt) {
  const auto pause = std::chrono::microseconds(200 << std::min(attempt, 7));
  const auto left = until - std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
      std::min(pause, std::chrono::microseconds(20'000)), left));
}

InMemoryStore::InMemoryStore(std::string jobId, std::optional<Milliseconds> timeout)
    : LocalStore(std::move(jobId), timeout) {}

std::optional<std::string> InMemoryStore::read(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

void InMemoryStore::write(const std::string& key, const std::string& value) {
  update(key, [&](const std::optional<std::string>&) { return value; });
}

bool InMemoryStore::has(const std::string& key) {
  std::lock_guard lock(mu_);
  return values_.count(key) > 0;
}

void InMemoryStore::update(
    const std::string& key,
    const std::function<std::string(const std::optional<std::string>&)>& next) {
  {
    std::lock_guard lock(mu_);
    auto it = values_.find(key);
    std::string v = next(it == values_.end() ? std::nullopt : std::optional(it->second));
    values_[key] = std::move(v);
    ++version_;
  }
  cv_.notify_all();
}

uint64_t InMemoryStore::version() {
  std::lock_guard lock(mu_);
  return version_;
}

void InMemoryStore::awaitChange(uint64_t seen, std::chrono::steady_clock::time_point until, int) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, until, [&] { return version_ != seen; });
}

PrefixStore::PrefixStore(std::shared_ptr<Store> base, std::string prefix)
    : base_(std::move(base)), prefix_(std::move(prefix)) {}

std::vector<std::string> PrefixStore::at(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(at(k));
  return out;
}

}  // namespace xtrain::comm
