#include "comm/store.hpp"

#include <charconv>
#include <chrono>

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

std::vector<std::string> missingIn(const std::map<std::string, std::string>& values,
                                   const std::vector<std::string>& keys, const std::string& jobId) {
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!values.count(jobId + "/" + k)) missing.push_back(k);
  }
  return missing;
}
}  // namespace

InMemoryStore::InMemoryStore(std::string jobId, std::optional<Milliseconds> timeout)
    : jobId_(std::move(jobId)), timeout_(timeout ? *timeout : defaultTimeout()) {}

void InMemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard lock(mu_);
    values_[full(key)] = value;
  }
  cv_.notify_all();
}

std::string InMemoryStore::get(const std::string& key, std::optional<Milliseconds> timeout) {
  wait({key}, timeout);
  std::lock_guard lock(mu_);
  return values_.at(full(key));
}

int64_t InMemoryStore::add(const std::string& key, int64_t delta) {
  int64_t v = 0;
  {
    std::lock_guard lock(mu_);
    auto& slot = values_[full(key)];
    v = parseCounter(key, slot) + delta;
    slot = std::to_string(v);
  }
  cv_.notify_all();
  return v;
}

void InMemoryStore::wait(const std::vector<std::string>& keys,
                         std::optional<Milliseconds> timeout) {
  const Milliseconds t = timeout ? *timeout : timeout_;
  std::unique_lock lock(mu_);
  const bool ok = cv_.wait_for(lock, t, [&] { return missingIn(values_, keys, jobId_).empty(); });
  if (!ok) {
    throw CommTimeoutError("store of job '{}': timed out after {} ms waiting for keys {}", jobId_,
                           t.count(), missingIn(values_, keys, jobId_));
  }
}

bool InMemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  return missingIn(values_, keys, jobId_).empty();
}

PrefixStore::PrefixStore(std::shared_ptr<Store> base, std::string prefix)
    : base_(std::move(base)), prefix_(std::move(prefix)) {}

std::vector<std::string> PrefixStore::full(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(prefix_ + "/" + k);
  return out;
}

void PrefixStore::set(const std::string& key, const std::string& value) {
  base_->set(prefix_ + "/" + key, value);
}
std::string PrefixStore::get(const std::string& key, std::optional<Milliseconds> timeout) {
  return base_->get(prefix_ + "/" + key, timeout);
}
int64_t PrefixStore::add(const std::string& key, int64_t delta) {
  return base_->add(prefix_ + "/" + key, delta);
}
void PrefixStore::wait(const std::vector<std::string>& keys, std::optional<Milliseconds> timeout) {
  base_->wait(full(keys), timeout);
}
bool PrefixStore::check(const std::vector<std::string>& keys) {
  return base_->check(full(keys));
}

}  // namespace xtrain::comm
