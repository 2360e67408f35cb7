// ReplicaRuntime: this instance's L local replicas as they run. Each replica owns a buffer table
// (weights, optimizer state, activations) made from one LoweredGraph and runs the programs on its
// own thread (ReplicaPool; on the caller's thread with a single replica). Replica 0 runs the
// lowered programs themselves (the profiled ones); each other replica a copy of its own, since
// kernels keep scratch state between calls. The runtime is the session's one implementation of
// replication::LocalReplicas, and owns the ways replicas meet: the ReplicaExchange (gradients,
// shards, broadcasts and agreements across replicas and instances), the ReplicaCollectives of the
// model's replicated collective ops, and the instances' communicator.
//
// Contract: prepareDevice builds it in four steps, in this order: lower (replica 0's programs),
// joinInstances (blocks until every instance joined), build (every replica's buffers, the other
// programs, the threads), connect (the exchange and the collectives). Then run() drives it one
// micro-batch at a time (runMicroBatch), reduces the gradients after a batch's micro-batches
// (reduceGradients) and runs the update phases (runPhase). Calls come from one thread (the
// session's); the work of each replica runs on the replica's thread, and a failure on any replica
// is rethrown on the caller's thread after all finished (ReplicaPool's contract).
//
// A replica over several IPUs (model parallelism) keeps one buffer table. Pipelined
// (docs/pipelining.md), runPipeline runs the replica's stages on threads of their own over that
// table: the PipelinePlan guarantees that no two slots of a cycle touch a buffer one of them writes
// (each reading slot restores stashed tensors into copies of its own), and PipelineProgress that a
// slot starts only when the work of earlier cycles it depends on is done. The session above
// (and HostState, UpdateControl, SessionProfiler) keep seeing replicas through buffer(r, id) and
// forEach.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/cpu_contention.hpp"
#include "ir/graph.hpp"
#include "replication/replica_collectives.hpp"
#include "replication/replica_exchange.hpp"
#include "replication/replica_layout.hpp"
#include "session/adaptive_kernel_threads.hpp"
#include "session/lowered_graph.hpp"
#include "session/pipeline_plan.hpp"
#include "session/pipeline_progress.hpp"
#include "session/replica_pool.hpp"

namespace xtrain::comm {
class Communicator;
}

namespace xtrain::session {

class ReplicaRuntime final : public replication::LocalReplicas {
 public:
  explicit ReplicaRuntime(replication::ReplicaLayout layout) : layout_(layout) {}
  ~ReplicaRuntime();
  ReplicaRuntime(const ReplicaRuntime&) = delete;
  ReplicaRuntime& operator=(const ReplicaRuntime&) = delete;

  const replication::ReplicaLayout& layout() const { return layout_; }

  // prepareDevice's steps (see above). lower: replica 0's programs for `graph` (which must outlive
  // the runtime). joinInstances: with distributed replication over several instances, the
  // instances' communicator, once; returns whether this call joined them. connect: the exchange
  // reduces `plan` (FLOAT16 accumulators converted into their FLOAT reduced tensors first:
  // `halfAccumulators` as (accumulator, reduced)); with one local replica, no accumulation and
  // several instances, each plain gradient's bucket may start as soon as the backward pass wrote
  // it for the last time.
  void lower(const ir::Graph& graph, const LoweringOptions& options);
  bool joinInstances(bool distributed);
  void build();
  void connect(replication::GradientPlan plan,
               std::vector<std::pair<TensorId, TensorId>> halfAccumulators,
               int64_t accumulationFactor);

  // replication::LocalReplicas: replica r's buffer of tensor `id`, and fn(r) for every local
  // replica (on their threads when there are several).
  HostTensor& buffer(int64_t localReplica, const TensorId& id) override;
  void forEach(const std::function<void(int64_t)>& fn) override;
  // Replica r's buffer table (host I/O by buffer index).
  std::vector<HostTensor>& buffers(int64_t localReplica) {
    return replicas_[static_cast<size_t>(localReplica)].buffers;
  }
  // Replica 0's programs: the buffer indices of every replica, and what the profiler times.
  LoweredGraph& lowered() { return *lowered_; }
  const LoweredGraph& lowered() const { return *lowered_; }
  replication::ReplicaExchange& exchange() { return *exchange_; }
  replication::ReplicaCollectives& collectives() { return *collectives_; }
  // The instances' communicator (null with one instance).
  const std::shared_ptr<comm::Communicator>& instances() const { return instances_; }
  // Kernel threads of a single local replica, which computes on the caller's thread during run():
  // 0 leaves the caller's setting (OpenMP's default: every core, or OMP_NUM_THREADS). Unless the
  // user set OMP_NUM_THREADS (or XTRAIN_ADAPTIVE_THREADS=0), the count adapts to the machine's load
  // (AdaptiveKernelThreads): recordRunSeconds takes the wall time of the run that followed.
  int kernelThreadsForNextRun();
  void recordRunSeconds(double seconds);

  // One micro-batch on every replica, each on its thread: Forward, and when training Backward
  // (telling the exchange which gradients are final as it goes) and Accumulate, after the
  // micro-batch index is written into buffer accumulationIndex (-1: none). seedOf(global replica)
  // is each replica's random seed.
  void runMicroBatch(bool training, int accumulationIndex, int64_t microBatch,
                     const std::function<uint64_t(int64_t)>& seedOf);
  // Pipelining (docs/pipelining.md). setPipeline, before build(): the plan (which must outlive the
  // runtime); build() then makes each replica's stash rings and a thread per IPU of the replica
  // (a ReplicaPool; none with XTRAIN_PIPELINE_THREADS=0).
  //
  // runPipeline: a pipeline over `microBatches` micro-batches on every replica. In cycle c slot k
  // runs micro-batch c - k (when in range): the inputs it reads in place pushed into their stashes,
  // restores into the slot's copies, Forward, Backward, the micro-batch's index into the slot's
  // accumulation counter, Accumulate, pushes. The host's part runs on the caller's thread, cycle
  // by cycle in order: host.writeInputs(c) before cycle c, host.readOutputs(c) after it (so the
  // IStepIO calls come in the same order whatever the threads do). With stage threads, each IPU's
  // thread runs its slots through all the cycles (in each the last first) and a slot waits only
  // for what it needs (PipelineProgress): the previous slot's micro-batch, the host's inputs, the
  // host's read of its last output, the readers of the stash entry it overwrites; without them,
  // the IPUs run in turn, cycle by cycle. An exception on any thread stops the others and is
  // rethrown after all finished (a stage's: the ReplicaPool's contract). seedOf(global replica,
  // micro-batch) as in runMicroBatch.
  struct PipelineHost {
    std::function<void(int64_t cycle)> writeInputs;
    std::function<void(int64_t cycle)> readOutputs;
    std::set<int64_t> inputSlots;   // the slots that read in place what writeInputs writes
    std::set<int64_t> outputSlots;  // the slots whose writes readOutputs reads
  };
  using PipelineSeeds = std::function<uint64_t(int64_t globalReplica, int64_t microBatch)>;
  void setPipeline(const PipelinePlan* plan) { pipeline_ = plan; }
  // updateSeed (only when canUpdateInPipeline()): each stage thread runs its IPU's Update ops
  // with this seed as soon as its own slots are done, in place of runPhase(Update) after the
  // pipeline (the same ops on the same buffers: the same results).
  void runPipeline(int64_t microBatches, bool training, const PipelineSeeds& seedOf,
                   const PipelineHost& host, std::optional<uint64_t> updateSeed = std::nullopt);
  // Stage threads that split the update by IPU, whose slots leave each other's update alone
  // (PipelinePlan::updateAfterOwnSlots), and no FLOAT16 accumulators to take before it.
  bool canUpdateInPipeline() const;
  // The FLOAT16 accumulators taken, then every gradient reduced across the replicas.
  void reduceGradients();
  // One phase (Update, Apply) on every replica with the same seed. Pipelined with stage threads,
  // the Update phase runs each IPU's part on its stage thread when the plan could split it
  // (PipelinePlan::updateGroups): the same ops on the same buffers, so the same results.
  void runPhase(ir::Phase phase, uint64_t seed);

 private:
  // A replica's part on its device: its buffer table and the programs it runs.
  struct Replica {
    std::vector<HostTensor> buffers;
    const LoweredGraph* program = nullptr;
    std::unique_ptr<LoweredGraph> ownProgram;  // replicas 1..L-1 with their own threads
    // Pipelining: per stash of the plan, its ring of stashEntries() entries, and a thread per IPU.
    std::vector<std::vector<HostTensor>> stashes;
    std::unique_ptr<ReplicaPool> stagePool;
  };
  // Stages in turn: cycle `cycle` on every replica, each IPU's slots after the other's.
  void runPipelineCycle(int64_t cycle, int64_t microBatches, bool training,
                        const PipelineSeeds& seedOf);
  // Stage threads: replica r's IPU `ipu` through every cycle, each slot when it may run.
  void runPipelineStage(int64_t r, int64_t ipu, int64_t microBatches, bool training,
                        const PipelineSeeds& seedOf, const PipelineHost& host,
                        PipelineProgress& progress, std::optional<uint64_t> updateSeed);
  void runPipelineHost(int64_t microBatches, const PipelineHost& host, PipelineProgress& progress);
  // What slot `slot` needs before it runs micro-batch m on replica r (PipelineProgress's counts).
  PipelineNeeds slotNeeds(int64_t r, int64_t slot, int64_t m, const PipelineHost& host) const;
  // The entries of a stash's ring on the host: the plan's depth (what the IPU holds, and what the
  // memory model charges) and one spare, so that a stage can run a micro-batch ahead of the
  // lockstep schedule while its neighbour is late, instead of waiting for it.
  static int64_t stashEntries(const PipelineStash& stash) { return stash.depth + 1; }
  // One slot of a pipeline cycle on replica r.
  void runPipelineSlot(Replica& replica, int64_t slot, int64_t microBatch, bool training,
                       uint64_t seed);
  void buildStageThreads();
  // fn(r) for every replica, on their threads, each on the replica's timeline track.
  void forEachReplicaProgram(const std::function<void(int64_t)>& fn);
  void takeHalfAccumulators();

  const replication::ReplicaLayout layout_;
  const ir::Graph* graph_ = nullptr;
  const PipelinePlan* pipeline_ = nullptr;
  std::vector<std::vector<int64_t>> stageSlots_;  // per IPU of a replica: its slots, last first
  std::vector<std::vector<size_t>> inputPushes_;  // per slot: the input stashes it pushes first
  bool splitUpdate_ = false;  // each IPU's Update ops on its stage thread (runPhase)
  // The one IPU whose slots run the model's replicated collectives (-1: none). Its stage thread
  // acts for its replica in them; collectives on two IPUs run their stages in turn instead, since
  // stage threads would reach them in an order that differs between replicas.
  int64_t collectiveIpu_ = -1;
  LoweringOptions loweringOptions_;
  std::unique_ptr<LoweredGraph> lowered_;
  std::vector<Replica> replicas_;
  std::unique_ptr<ReplicaPool> pool_;  // one thread per local replica when there are several
  std::shared_ptr<comm::Communicator> instances_;
  // The job's instances on this host, this one included (they share its cores).
  int64_t instancesOnHost_ = 1;
  int singleReplicaKernelThreads_ = 0;
  std::unique_ptr<AdaptiveKernelThreads> adaptiveThreads_;  // single replica, not pipelined
  CpuContentionSampler cpuContention_{std::chrono::milliseconds(100)};
  std::unique_ptr<replication::ReplicaExchange> exchange_;
  // How the model's replicated collective ops meet the other replicas.
  std::unique_ptr<replication::ReplicaCollectives> collectives_;
  std::vector<std::pair<TensorId, TensorId>> halfAccumulators_;
  // Per Backward instruction: the reduced tensors complete after it (empty: no overlap).
  std::vector<std::vector<TensorId>> readyAfter_;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
