// Store: a small key-value store the ranks of a job use to meet (rendezvous) before they can
// communicate.
#pragma once
#pragma GCC visibility push(default)

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/types.hpp"

namespace xtrain::comm {

// Contract:
//  - Keys are strings; values are byte strings. set() overwrites; add() treats the value as a
//    decimal integer (missing = 0), adds atomically and returns the new value.
//  - get() waits until the key exists; get() and wait() are bounded by a timeout (unset: the
//    store's timeout) and throw CommTimeoutError naming the missing keys.
//  - Thread-safe: any number of threads (and, for FileStore, processes) may use one store.
//  - Every key is prefixed with the job id, so two jobs sharing a store location never meet.
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::string get(const std::string& key,
                          std::optional<Milliseconds> timeout = std::nullopt) = 0;
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual void wait(const std::vector<std::string>& keys,
                    std::optional<Milliseconds> timeout = std::nullopt) = 0;
  // Whether every key exists now. Never blocks.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual const std::string& jobId() const = 0;
};

// A store whose values this process reads directly (InMemoryStore, FileStore): get(), add(),
// wait() and check() written once over a few primitives of the storage.
class LocalStore : public Store {
 public:
  void set(const std::string& key, const std::string& value) override { write(key, value); }
  std::string get(const std::string& key,
                  std::optional<Milliseconds> timeout = std::nullopt) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys,
            std::optional<Milliseconds> timeout = std::nullopt) override;
  bool check(const std::vector<std::string>& keys) override;
  const std::string& jobId() const override { return jobId_; }

 protected:
  LocalStore(std::string jobId, std::optional<Milliseconds> timeout);

  virtual std::optional<std::string> read(const std::string& key) = 0;
  virtual void write(const std::string& key, const std::string& value) = 0;
  virtual bool has(const std::string& key) = 0;
  // Replaces the value of `key` by next(its value, nullopt when unset), atomically.
  virtual void update(
      const std::string& key,
      const std::function<std::string(const std::optional<std::string>&)>& next) = 0;
  // A number that changes whenever a value does (0 when the storage cannot tell); then waits until
  // it differs from `seen`, `until` passes, or, for storage that cannot tell, a pause that grows
  // with `attempt` (200 us doubling up to 20 ms).
  virtual uint64_t version() { return 0; }
  virtual void awaitChange(uint64_t seen, std::chrono::steady_clock::time_point until, int attempt);
  // "store of job 'x'", for messages.
  virtual std::string label() const;

 private:
  std::string jobId_;
  Milliseconds timeout_;
};

// Ranks that are threads of one process.
class InMemoryStore : public LocalStore {
 public:
  explicit InMemoryStore(std::string jobId = "job",
                         std::optional<Milliseconds> timeout = std::nullopt);

 private:
  std::optional<std::string> read(const std::string& key) override;
  void write(const std::string& key, const std::string& value) override;
  bool has(const std::string& key) override;
  void update(const std::string& key,
              const std::function<std::string(const std::optional<std::string>&)>& next) override;
  uint64_t version() override;
  void awaitChange(uint64_t seen, std::chrono::steady_clock::time_point until,
                   int attempt) override;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
  uint64_t version_ = 0;
};

// Ranks that are processes sharing a file system (one host, or a shared directory). The store lives
// in the job-private directory <root>/xtrain-job-<jobId> (created with mode 0700; rejected if
// another user owns it); each key is one file, written to a temporary name and renamed, so readers
// never see half a value. add() serialises through flock() on a lock file.
class FileStore : public LocalStore {
 public:
  FileStore(const std::filesystem::path& root, std::string jobId,
            std::optional<Milliseconds> timeout = std::nullopt);
  const std::filesystem::path& directory() const { return dir_; }

 private:
  std::filesystem::path pathOf(const std::string& key) const;
  std::optional<std::string> read(const std::string& key) override;
  void write(const std::string& key, const std::string& value) override;
  bool has(const std::string& key) override;
  void update(const std::string& key,
              const std::function<std::string(const std::optional<std::string>&)>& next) override;
  std::string label() const override;

  std::filesystem::path dir_;
};

// A view of another store with every key prefixed by `prefix` + "/" (to give each communicator its
// own key space).
class PrefixStore : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> base, std::string prefix);
  void set(const std::string& key, const std::string& value) override {
    base_->set(at(key), value);
  }
  std::string get(const std::string& key,
                  std::optional<Milliseconds> timeout = std::nullopt) override {
    return base_->get(at(key), timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override { return base_->add(at(key), delta); }
  void wait(const std::vector<std::string>& keys,
            std::optional<Milliseconds> timeout = std::nullopt) override {
    base_->wait(at(keys), timeout);
  }
  bool check(const std::vector<std::string>& keys) override { return base_->check(at(keys)); }
  const std::string& jobId() const override { return base_->jobId(); }

 private:
  std::string at(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> at(const std::vector<std::string>& keys) const;
  std::shared_ptr<Store> base_;
  std::string prefix_;
};

}  // namespace xtrain::comm

#pragma GCC visibility pop
