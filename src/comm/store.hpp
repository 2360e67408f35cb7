// Store: a small key-value store the ranks of a job use to meet (rendezvous) before they can
// communicate.
#pragma once
#pragma GCC visibility push(default)

#include <condition_variable>
#include <cstdint>
#include <filesystem>
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

// Ranks that are threads of one process.
class InMemoryStore : public Store {
 public:
  explicit InMemoryStore(std::string jobId = "job",
                         std::optional<Milliseconds> timeout = std::nullopt);
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key,
                  std::optional<Milliseconds> timeout = std::nullopt) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys,
            std::optional<Milliseconds> timeout = std::nullopt) override;
  bool check(const std::vector<std::string>& keys) override;
  const std::string& jobId() const override { return jobId_; }

 private:
  std::string full(const std::string& key) const { return jobId_ + "/" + key; }

  std::string jobId_;
  Milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
};

// Ranks that are processes sharing a file system (one host, or a shared directory). The store lives
// in the job-private directory <root>/xtrain-job-<jobId> (created with mode 0700; rejected if
// another user owns it); each key is one file, written to a temporary name and renamed, so readers
// never see half a value. add() serialises through flock() on a lock file.
class FileStore : public Store {
 public:
  FileStore(const std::filesystem::path& root, std::string jobId,
            std::optional<Milliseconds> timeout = std::nullopt);
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key,
                  std::optional<Milliseconds> timeout = std::nullopt) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys,
            std::optional<Milliseconds> timeout = std::nullopt) override;
  bool check(const std::vector<std::string>& keys) override;
  const std::string& jobId() const override { return jobId_; }
  const std::filesystem::path& directory() const { return dir_; }

 private:
  std::filesystem::path pathOf(const std::string& key) const;
  std::optional<std::string> read(const std::string& key) const;
  void writeAtomically(const std::string& key, const std::string& value);

  std::string jobId_;
  Milliseconds timeout_;
  std::filesystem::path dir_;
};

// A view of another store with every key prefixed by `prefix` + "/" (to give each communicator its
// own key space).
class PrefixStore : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> base, std::string prefix);
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key,
                  std::optional<Milliseconds> timeout = std::nullopt) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys,
            std::optional<Milliseconds> timeout = std::nullopt) override;
  bool check(const std::vector<std::string>& keys) override;
  const std::string& jobId() const override { return base_->jobId(); }

 private:
  std::vector<std::string> full(const std::vector<std::string>& keys) const;
  std::shared_ptr<Store> base_;
  std::string prefix_;
};

}  // namespace xtrain::comm

#pragma GCC visibility pop
