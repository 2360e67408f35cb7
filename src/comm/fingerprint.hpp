// Fingerprint: what a rank says it is doing in one collective. Exchanged with the data and compared
// on every call, so ranks that issue different collectives fail with an error showing both sides
// instead of exchanging garbage or hanging.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>

#include "xtrain/collectives.hpp"
#include "xtrain/datatype.hpp"
#include "xtrain/format.hpp"

namespace xtrain::comm {

enum class OpKind : uint8_t { AllReduce, ReduceScatter, AllGather, Broadcast, Barrier };

inline const char* toString(OpKind k) {
  switch (k) {
    case OpKind::AllReduce: return "allReduce";
    case OpKind::ReduceScatter: return "reduceScatter";
    case OpKind::AllGather: return "allGather";
    case OpKind::Broadcast: return "broadcast";
    case OpKind::Barrier: return "barrier";
  }
  return "?";
}

struct Fingerprint {
  OpKind kind = OpKind::Barrier;
  uint64_t seq = 0;  // per-communicator sequence number
  uint64_t count =
      0;  // the full (unsharded) element count: reduceScatter's input, allGather's output
  DataType type = DataType::UNDEFINED;
  CollectiveOperator op = CollectiveOperator::Add;  // AllReduce, ReduceScatter
  int root = 0;                                     // Broadcast

  bool operator==(const Fingerprint&) const = default;
};

// "allReduce seq 3 (count=10, type=FLOAT, op=Add)".
inline std::string describe(const Fingerprint& f) {
  switch (f.kind) {
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
      return format("{} seq {} (count={}, type={}, op={})", toString(f.kind), f.seq, f.count,
                    dataTypeName(f.type), toString(f.op));
    case OpKind::AllGather:
      return format("{} seq {} (count={}, type={})", toString(f.kind), f.seq, f.count,
                    dataTypeName(f.type));
    case OpKind::Broadcast:
      return format("{} seq {} (count={}, type={}, root={})", toString(f.kind), f.seq, f.count,
                    dataTypeName(f.type), f.root);
    case OpKind::Barrier: return format("{} seq {}", toString(f.kind), f.seq);
  }
  return "?";
}

}  // namespace xtrain::comm

#pragma GCC visibility pop
