// Every error class docs/errors.md lists, thrown by what really raises it (a busy device, a
// collective whose peer timed out, died or disagreed, a model too large for its IPU, ...), never
// by constructing it; and the page lists exactly the classes these tests cover.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "comm/backend.hpp"
#include "comm/communicator.hpp"
#include "comm/store.hpp"
#include "comm/types.hpp"
#include "testing/process_testing.hpp"
#include "testing/training_testing.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/session.hpp"

namespace xtrain {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Bounds every collective that should succeed; the failing ones have their own short timeouts.
constexpr comm::Milliseconds kGenerous = 30s;

std::exception_ptr thrownBy(const std::function<void()>& fn) {
  try {
    fn();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

// A fresh directory under gtest's temporary directory, removed at the end.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::path(::testing::TempDir()) /
             ("xtrain_errors_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

// Runs rank 0 and rank 1 of an inproc world of two on two threads; returns what rank 0 threw.
std::exception_ptr rankZeroOfTwo(const std::function<void(comm::Communicator&)>& rank0,
                                 const std::function<void(comm::Communicator&)>& rank1,
                                 comm::Milliseconds timeout) {
  auto store = std::make_shared<comm::InMemoryStore>("errors", kGenerous);
  std::exception_ptr first;
  std::exception_ptr second;
  std::thread other([&] {
    second = thrownBy([&] {
      auto c = comm::createCommunicator(comm::CommConfig{store, 1, 2, "world", timeout}, "inproc");
      rank1(*c);
    });
  });
  first = thrownBy([&] {
    auto c = comm::createCommunicator(comm::CommConfig{store, 0, 2, "world", timeout}, "inproc");
    rank0(*c);
  });
  other.join();
  return first;
}

// Rank 0 all-reduces; rank 1 joins the world but never calls it, so rank 0 times out (after 200
// ms). With `reuse`, rank 0 then calls a collective on the failed communicator.
std::exception_ptr collectiveTimeout(bool reuse) {
  return rankZeroOfTwo(
      [reuse](comm::Communicator& c) {
        float x = 1;
        try {
          c.allReduceSync(comm::viewOf(&x, 1, DataType::FLOAT));
        } catch (const comm::CommTimeoutError&) {
          if (!reuse) throw;
        }
        c.allReduceSync(comm::viewOf(&x, 1, DataType::FLOAT));
      },
      [](comm::Communicator&) {}, 200ms);
}

// The two ranks all-reduce different counts.
std::exception_ptr collectiveMismatch() {
  auto body = [](comm::Communicator& c) {
    std::vector<float> x(12, 1.0f);
    c.allReduceSync(comm::viewOf(x.data(), c.rank() == 0 ? 10 : 12, DataType::FLOAT));
  };
  return rankZeroOfTwo(body, body, kGenerous);
}

// An shm world of two processes: the child joins, passes a barrier and exits; the parent's next
// all-reduce finds its peer gone.
std::exception_ptr peerLost() {
  ScratchDir dir("peer_lost");
  auto config = [&](int rank) {
    auto store = std::make_shared<comm::FileStore>(dir.path, "peer-lost", kGenerous);
    return comm::CommConfig{store, rank, 2, "world", kGenerous};
  };
  const pid_t child = ::fork();
  if (child == 0) {
    int code = 0;
    try {
      auto c = comm::createCommunicator(config(1), "shm");
      c->barrierSync();
    } catch (...) {
      code = 1;
    }
    ::_exit(code);
  }
  if (child < 0) {
    ADD_FAILURE() << "fork failed";
    return nullptr;
  }
  std::exception_ptr e = thrownBy([&] {
    auto c = comm::createCommunicator(config(0), "shm");
    c->barrierSync();
    int status = 0;
    ::waitpid(child, &status, 0);  // the child exits right after the barrier
    float x = 1;
    c->allReduceSync(comm::viewOf(&x, 1, DataType::FLOAT));
  });
  // Should the parent have failed before the barrier, the child ends at its own store timeout.
  ::waitpid(child, nullptr, 0);
  return e;
}

// A backend that implements nothing but its identity (as a new backend starts).
class BareCommunicator : public comm::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string& name() const override { return name_; }
  const std::string& backendName() const override { return backend_; }
  comm::Milliseconds timeout() const override { return 1000ms; }

 private:
  std::string name_ = "world";
  std::string backend_ = "errors-bare";
};

std::exception_ptr unsupportedCollective() {
  static const bool registered = [] {
    comm::registerBackend("errors-bare", [](const comm::CommConfig&) {
      return std::make_shared<BareCommunicator>();
    });
    return true;
  }();
  (void)registered;
  auto c = comm::createCommunicator(
      comm::CommConfig{std::make_shared<comm::InMemoryStore>(), 0, 1, "w", {}}, "errors-bare");
  float x = 0;
  return thrownBy([&] { c->allReduceSync(comm::viewOf(&x, 1, DataType::FLOAT)); });
}

// Device 0 of a pool of 8 IPUs (in a lock directory of this test's own) held, then asked for again.
std::exception_ptr busyDevice() {
  ScratchDir dir("busy_device");
  testing::ScopedEnv lock("XTRAIN_IPU_LOCK_DIR", dir.path.c_str());
  testing::ScopedEnv ipus("XTRAIN_NUM_IPUS", "8");
  testing::ScopedEnv ids("XTRAIN_IPU_IDS", nullptr);
  auto& dm = DeviceManager::createDeviceManager();
  auto held = dm.acquireDeviceById(0);
  return thrownBy([&] { (void)dm.acquireDeviceById(0); });
}

std::exception_ptr badDeviceId() {
  return thrownBy([] { (void)DeviceManager::createDeviceManager().acquireDeviceById(-3); });
}

std::exception_ptr overflowingShape() {
  return thrownBy([] { TensorInfo(DataType::FLOAT, {int64_t{1} << 40, int64_t{1} << 40}); });
}

// An MLP of ~100 KB of weights on an IPU model of 4 tiles of 16 KiB.
std::exception_ptr overflowingIpu() {
  const testing::MlpModel m = testing::buildMlpModel(4, 8, 4096);
  auto device = DeviceManager::createDeviceManager().createIpuModelDevice(
      {{"tilesPerIPU", "4"}, {"memoryPerTile", "16KiB"}});
  auto s = TrainingSession::createFromOnnxModel(m.proto, DataFlow(1), m.loss,
                                                ConstSGD(0.1f, 0, 0.9f), device);
  return thrownBy([&] { s->prepareDevice(); });
}

template <typename T>
const T* as(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const T& e) {
    return &e;  // the exception object outlives the handler: p holds it
  } catch (...) {
  }
  return nullptr;
}

bool isSystemError(const std::exception_ptr& p) {
  return as<recoverable_runtime_error>(p) || as<unrecoverable_runtime_error>(p) ||
         as<unknown_runtime_error>(p);
}

std::string describe(const std::exception_ptr& p) {
  if (!p) return "nothing was thrown";
  try {
    std::rethrow_exception(p);
  } catch (const std::exception& e) {
    return std::string(typeid(e).name()) + ": " + e.what();
  } catch (...) {
  }
  return "a non-standard exception";
}

// One documented class: what raises it, and whether the exception is of that class as the page
// says (exactly, or through the comm class it is thrown as).
struct Case {
  std::function<std::exception_ptr()> trigger;
  std::function<bool(const std::exception_ptr&)> matches;
};

template <typename T>
bool exactly(const std::exception_ptr& p) {
  const T* e = as<T>(p);
  return e != nullptr && typeid(*e) == typeid(T);
}

const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> all = {
      {"xtrain::error", {badDeviceId, exactly<error>}},
      {"xtrain::runtime_error",
       {busyDevice, [](auto& p) { return exactly<runtime_error>(p) && !isSystemError(p); }}},
      {"xtrain::recoverable_runtime_error",
       {peerLost,
        [](auto& p) {
          const auto* e = as<recoverable_runtime_error>(p);
          return e != nullptr && e->getRecoveryAction() == RecoveryAction::PARTITION_RESET &&
                 std::string(e->what()).find("(recovery action: PARTITION_RESET)") !=
                     std::string::npos;
        }}},
      {"xtrain::unrecoverable_runtime_error",
       {[] { return collectiveTimeout(true); },
        [](auto& p) { return as<unrecoverable_runtime_error>(p) != nullptr; }}},
      {"xtrain::unknown_runtime_error",
       {[] { return collectiveTimeout(false); },
        [](auto& p) { return as<unknown_runtime_error>(p) != nullptr; }}},
      {"xtrain::size_overflow_error", {overflowingShape, exactly<size_overflow_error>}},
      {"xtrain::OutOfMemoryException", {overflowingIpu, exactly<OutOfMemoryException>}},
      {"comm::CommTimeoutError",
       {[] { return collectiveTimeout(false); }, exactly<comm::CommTimeoutError>}},
      {"comm::CommMismatchError",
       {collectiveMismatch,
        [](auto& p) { return exactly<comm::CommMismatchError>(p) && !isSystemError(p); }}},
      {"comm::CommPeerLostError", {peerLost, exactly<comm::CommPeerLostError>}},
      {"comm::CommAbortedError",
       {[] { return collectiveTimeout(true); }, exactly<comm::CommAbortedError>}},
      {"comm::UnsupportedError", {unsupportedCollective, exactly<comm::UnsupportedError>}},
  };
  return all;
}

// Classes the page lists that no input can raise: a broken invariant is a bug.
const std::set<std::string> kNoTrigger = {"xtrain::internal_error"};

void expectThrownByItsTrigger(const std::string& name) {
  const Case& c = cases().at(name);
  const std::exception_ptr p = c.trigger();
  EXPECT_TRUE(p && c.matches(p)) << name << ": " << describe(p);
}

TEST(ErrorClasses, BadArgumentIsAnError) {
  expectThrownByItsTrigger("xtrain::error");
}
TEST(ErrorClasses, BusyDeviceIsARuntimeError) {
  expectThrownByItsTrigger("xtrain::runtime_error");
}
TEST(ErrorClasses, LostPeerIsRecoverableByPartitionReset) {
  expectThrownByItsTrigger("xtrain::recoverable_runtime_error");
  expectThrownByItsTrigger("comm::CommPeerLostError");
}
TEST(ErrorClasses, FailedCommunicatorIsUnrecoverable) {
  expectThrownByItsTrigger("xtrain::unrecoverable_runtime_error");
  expectThrownByItsTrigger("comm::CommAbortedError");
}
TEST(ErrorClasses, CollectiveTimeoutIsUnknown) {
  expectThrownByItsTrigger("xtrain::unknown_runtime_error");
  expectThrownByItsTrigger("comm::CommTimeoutError");
}
TEST(ErrorClasses, CollectiveMismatchIsAPlainRuntimeError) {
  expectThrownByItsTrigger("comm::CommMismatchError");
}
TEST(ErrorClasses, MissingBackendFeatureIsUnsupported) {
  expectThrownByItsTrigger("comm::UnsupportedError");
}
TEST(ErrorClasses, OverflowingShapeIsASizeOverflow) {
  expectThrownByItsTrigger("xtrain::size_overflow_error");
}
TEST(ErrorClasses, OverflowingIpuIsOutOfMemory) {
  expectThrownByItsTrigger("xtrain::OutOfMemoryException");
}

// A checkpoint save whose directory exists but takes no new files (/proc): an I/O fault while
// running, not bad input.
TEST(ErrorClasses, CheckpointSaveThatCannotWriteIsARuntimeError) {
  const testing::MlpModel m = testing::buildMlpModel();
  auto s = testing::makeMlpSession(m, SessionOptions(), ConstSGD(0.1f, 0, 0.9f));
  const std::exception_ptr p = thrownBy([&] { s->saveCheckpoint("/proc/xtrain_errors_ckpt"); });
  EXPECT_TRUE(exactly<runtime_error>(p)) << describe(p);
  EXPECT_NE(describe(p).find("the previous checkpoint is intact"), std::string::npos)
      << describe(p);
}

// The names in the first column of docs/errors.md's tables of exceptions (before "## The tools'
// exit codes"): `xtrain::...` and `comm::...`.
std::set<std::string> documentedClasses() {
  std::ifstream in(std::string(XTRAIN_SOURCE_DIR) + "/docs/errors.md");
  EXPECT_TRUE(in.good()) << "cannot read docs/errors.md";
  const std::regex row(R"(^\| `((xtrain|comm)::[A-Za-z_]+)` \|)");
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line) && line.rfind("## The tools' exit codes", 0) != 0) {
    std::smatch m;
    if (std::regex_search(line, m, row)) names.insert(m[1]);
  }
  return names;
}

TEST(ErrorsDoc, ListsExactlyTheClassesTheTestsThrow) {
  const std::set<std::string> documented = documentedClasses();
  EXPECT_GE(documented.size(), cases().size());
  for (const auto& name : documented) {
    EXPECT_TRUE(cases().count(name) > 0 || kNoTrigger.count(name) > 0)
        << "docs/errors.md lists " << name << " but no test here throws it";
  }
  for (const auto& [name, c] : cases()) {
    EXPECT_TRUE(documented.count(name) > 0) << name << " is thrown but docs/errors.md omits it";
  }
  for (const auto& name : kNoTrigger) EXPECT_TRUE(documented.count(name) > 0) << name;
}

}  // namespace
}  // namespace xtrain
