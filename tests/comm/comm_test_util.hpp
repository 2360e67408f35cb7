// Helpers for the comm tests: ranks as threads over an in-memory store, typed buffers, a naive
// reference.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/backend.hpp"
#include "comm/communicator.hpp"
#include "comm/store.hpp"

namespace xtrain::comm::testing {

using namespace std::chrono_literals;

// Generous for collectives that should succeed (they finish in milliseconds); still bounds every
// wait.
inline constexpr Milliseconds kTestTimeout = 30s;

// Runs fn(rank) on `size` threads and returns each rank's exception message ("" when it returned).
inline std::vector<std::string> runThreads(int size, const std::function<void(int)>& fn) {
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
        if (errors[static_cast<size_t>(r)].empty())
          errors[static_cast<size_t>(r)] = "(empty message)";
      } catch (...) {
        errors[static_cast<size_t>(r)] = "(unknown exception)";
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

// The backends whose ranks can be threads of one process: every parameterised test runs over each.
// (mpi ranks are processes started by mpirun; tests/comm/mpi_process_test.cpp covers it.)
inline const std::vector<std::string>& threadBackends() {
  static const std::vector<std::string> names = {"inproc", "shm", "gloo"};
  return names;
}

// Creates a world of `size` ranks (threads) with `backend` and runs fn(comm) on each. Returns each
// rank's error message ("" for success).
inline std::vector<std::string> runWorldCollectErrors(const std::string& backend, int size,
                                                      const std::function<void(Communicator&)>& fn,
                                                      Milliseconds timeout = kTestTimeout) {
  auto store = std::make_shared<InMemoryStore>("test", timeout);
  return runThreads(size, [&](int r) {
    CommConfig config{store, r, size, "world", timeout};
    auto comm = createCommunicator(config, backend);
    fn(*comm);
  });
}

inline std::vector<std::string> runWorldCollectErrors(int size,
                                                      const std::function<void(Communicator&)>& fn,
                                                      Milliseconds timeout = kTestTimeout) {
  return runWorldCollectErrors("inproc", size, fn, timeout);
}

// As runWorldCollectErrors, but fails the test on any rank's error.
inline void runWorld(const std::string& backend, int size,
                     const std::function<void(Communicator&)>& fn,
                     Milliseconds timeout = kTestTimeout) {
  const auto errors = runWorldCollectErrors(backend, size, fn, timeout);
  for (size_t r = 0; r < errors.size(); ++r) {
    EXPECT_EQ(errors[r], "") << backend << " rank " << r;
  }
}

inline void runWorld(int size, const std::function<void(Communicator&)>& fn,
                     Milliseconds timeout = kTestTimeout) {
  runWorld("inproc", size, fn, timeout);
}

// A buffer of `count` elements of `type`, read and written as doubles.
struct TypedBuffer {
  DataType type = DataType::FLOAT;
  std::vector<unsigned char> bytes;

  TypedBuffer() = default;
  TypedBuffer(DataType t, size_t count) : type(t), bytes(count * dataTypeSize(t), 0) {}
  size_t count() const { return bytes.size() / dataTypeSize(type); }
  BufferView view() { return BufferView{bytes.empty() ? nullptr : bytes.data(), count(), type}; }

  double get(size_t i) const {
    const unsigned char* p = bytes.data() + i * dataTypeSize(type);
    switch (type) {
      case DataType::FLOAT: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case DataType::FLOAT16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return halfToFloat(v);
      }
      case DataType::INT32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      case DataType::INT64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        return static_cast<double>(v);
      }
      case DataType::UINT8: return *p;
      default: ADD_FAILURE() << "unsupported type"; return 0;
    }
  }
  void set(size_t i, double x) {
    unsigned char* p = bytes.data() + i * dataTypeSize(type);
    switch (type) {
      case DataType::FLOAT: {
        float v = static_cast<float>(x);
        std::memcpy(p, &v, 4);
        return;
      }
      case DataType::FLOAT16: {
        uint16_t v = floatToHalf(static_cast<float>(x));
        std::memcpy(p, &v, 2);
        return;
      }
      case DataType::INT32: {
        int32_t v = static_cast<int32_t>(static_cast<int64_t>(x));
        std::memcpy(p, &v, 4);
        return;
      }
      case DataType::INT64: {
        int64_t v = static_cast<int64_t>(x);
        std::memcpy(p, &v, 8);
        return;
      }
      case DataType::UINT8: *p = static_cast<uint8_t>(static_cast<int64_t>(x)); return;
      default: ADD_FAILURE() << "unsupported type"; return;
    }
  }
};

inline bool isFloat(DataType t) {
  return t == DataType::FLOAT || t == DataType::FLOAT16;
}

// Deterministic input of rank r at index i: small values, exact in every type, with zeros for the
// logical operators and values near 1 for Mul (so products stay finite and meaningful).
inline double inputValue(DataType t, CollectiveOperator op, int r, size_t i) {
  const auto h = static_cast<int64_t>((i * 31 + static_cast<size_t>(r) * 17 + i / 7) % 41);
  if (op == CollectiveOperator::Mul) {
    if (isFloat(t)) return 0.5 + static_cast<double>(h % 16) / 16.0;
    return t == DataType::UINT8 ? static_cast<double>(h % 4) : static_cast<double>(h % 5 - 2);
  }
  if ((op == CollectiveOperator::LogicalAnd || op == CollectiveOperator::LogicalOr) &&
      (i + static_cast<size_t>(r)) % 3 == 0) {
    return 0;
  }
  if (t == DataType::UINT8) return static_cast<double>(h);
  if (isFloat(t)) return static_cast<double>(h - 20) / 8.0;
  return static_cast<double>(h - 20);
}

// The naive reference: element i of the reduction of values[0..k)[i], in double, then rounded the
// way the data type stores it (integers wrap; integer Mean truncates).
inline double naiveReduce(DataType t, CollectiveOperator op, const std::vector<double>& v) {
  using Op = CollectiveOperator;
  const double k = static_cast<double>(v.size());
  double acc = 0;
  switch (op) {
    case Op::Add:
      for (double x : v) acc += x;
      break;
    case Op::Mean:
      for (double x : v) acc += x;
      acc = isFloat(t) ? acc / k : std::trunc(acc / k);
      break;
    case Op::Mul:
      acc = 1;
      for (double x : v) acc *= x;
      break;
    case Op::Min:
      acc = v[0];
      for (double x : v) acc = std::min(acc, x);
      break;
    case Op::Max:
      acc = v[0];
      for (double x : v) acc = std::max(acc, x);
      break;
    case Op::LogicalAnd:
      acc = 1;
      for (double x : v) acc = (acc != 0 && x != 0) ? 1 : 0;
      break;
    case Op::LogicalOr:
      acc = 0;
      for (double x : v) acc = (acc != 0 || x != 0) ? 1 : 0;
      break;
    case Op::SquareAdd:
      for (double x : v) acc += x * x;
      break;
    case Op::Local: ADD_FAILURE() << "Local has no reduction"; break;
  }
  if (t == DataType::UINT8)
    return static_cast<double>(static_cast<uint8_t>(static_cast<int64_t>(acc)));
  if (t == DataType::INT32)
    return static_cast<double>(static_cast<int32_t>(static_cast<int64_t>(acc)));
  return acc;
}

inline bool close(DataType t, double got, double want) {
  if (!isFloat(t)) return got == want;
  const double tol = t == DataType::FLOAT16 ? 2e-3 : 1e-5;
  return std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

}  // namespace xtrain::comm::testing
