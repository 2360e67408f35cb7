// The simulated IPU clock behind instrumentWithHardwareCycleCounter and getCycleCount(): a cost
// model, not a measurement, so that the same program gives the same count on any machine and under
// any load. The rates are a GC200 IPU's orders of magnitude (docs/reports.md has the table):
//
//   an instruction:  kInstructionOverhead + max(compute, memory) cycles, where
//     compute = FLOPs / (tiles x FLOPs per tile and cycle): 32 (FLOAT) or 128 (FLOAT16) for the
//               dense ops (MatMul, MatMulT, Gemm, Conv and its gradients), 2 (FLOAT) or 4
//               (FLOAT16) for every other op, whose FLOPs are its largest tensor's elements;
//     memory  = bytes of its inputs and outputs / (tiles x 8 bytes per tile and cycle);
//   a collective over k replicas of n bytes: kCollectiveOverhead + f x n / kLinkBytesPerCycle, with
//     f = 2 (k - 1) / k for an all-reduce, (k - 1) / k for a reduce-scatter or all-gather;
//   a host transfer of n bytes: kHostOverhead + n / kHostBytesPerCycle;
//   a copy of n bytes between the IPUs of a replica (IpuCopy, docs/model-parallelism.md):
//     kInstructionOverhead + n / kLinkBytesPerCycle;
//   a remote load or store of n bytes between an IPU and its streaming memory (off-chip tensors,
//     docs/model-parallelism.md): kRemoteOverhead + n / kRemoteBytesPerCycle. A GC200's streaming
//     memory is DDR4 behind the IPU-Machine's gateway; the simulated device keeps it in host
//     memory, so it is costed as the host link is: 16 GB/s (PCIe Gen4 x16) with a host transfer's
//     set-up.
//   a pipeline stash or restore of n bytes (docs/pipelining.md): an on-chip copy,
//     kInstructionOverhead + 2 n / (tiles x 8 bytes per tile and cycle) (read and write);
//   an op serialized over F slices of the batch (session/batch_serial.hpp): F instructions, each
//     on one slice's tensors (the caller sizes them);
//   a pipelined step: each pipeline cycle costs its busiest IPU (the slots of one IPU run one after
//     the other, the IPUs side by side), summed over the m + slots - 1 cycles of m micro-batches.
//
// Dense ops' FLOPs: 2 x output elements x the contracted length (MatMul, MatMulT, Gemm: the first
// input's reduced dimension), and for the convolutions 2 x sqrt(|input| x |weight| x |output|),
// which is exact for a stride-1 'same' convolution and its two gradients and close otherwise.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace xtrain::session {

class CycleModel {
 public:
  static constexpr double kClockHz = 1.33e9;
  static constexpr int kDefaultTilesPerIpu = 1472;
  static constexpr uint64_t kInstructionOverhead = 150;  // a sync and an exchange phase
  static constexpr double kDenseFlopsPerTileFloat = 32;
  static constexpr double kDenseFlopsPerTileHalf = 128;
  static constexpr double kVectorFlopsPerTileFloat = 2;
  static constexpr double kVectorFlopsPerTileHalf = 4;
  static constexpr double kTileBytesPerCycle = 8;
  static constexpr double kLinkBytesPerCycle = 48;  // 64 GB/s IPU-Link at 1.33 GHz
  static constexpr uint64_t kCollectiveOverhead = 1000;
  static constexpr double kHostBytesPerCycle = 12;  // 16 GB/s PCIe at 1.33 GHz
  static constexpr uint64_t kHostOverhead = 500;
  static constexpr double kRemoteBytesPerCycle = kHostBytesPerCycle;
  static constexpr uint64_t kRemoteOverhead = kHostOverhead;

  // tilesPerIpu <= 0 (a CPU device): kDefaultTilesPerIpu.
  explicit CycleModel(int tilesPerIpu);

  int tiles() const { return tiles_; }
  // The cycles of one execution of `op` (its tensors' shapes and types from `graph`).
  uint64_t opCycles(const ir::Graph& graph, const ir::Op& op) const;
  // operation: "all-reduce", "reduce-scatter" or "all-gather"; groupSize <= 1 costs nothing.
  uint64_t collectiveCycles(const std::string& operation, uint64_t bytes, int64_t groupSize) const;
  uint64_t hostTransferCycles(uint64_t bytes) const;
  // A RemoteLoad or RemoteStore of an off-chip tensor.
  static uint64_t remoteTransferCycles(uint64_t bytes);
  uint64_t stashCycles(uint64_t bytes) const;
  // The pipelined cycles of `microBatches` micro-batches, slot k costing slotCycles[k] on IPU
  // slotIpu[k] (see above).
  static uint64_t pipelineCycles(const std::vector<uint64_t>& slotCycles,
                                 const std::vector<int64_t>& slotIpu, int64_t microBatches);

  // The FLOPs counted for `op` (for the report and tests).
  static double flops(const ir::Graph& graph, const ir::Op& op);
  static bool isDense(const std::string& type);

 private:
  int tiles_;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
