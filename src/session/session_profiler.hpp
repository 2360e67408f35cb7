// SessionProfiler: what a session measures and reports (docs/reports.md). It owns the execution
// profile (session_profile.hpp), the simulated clock (cycle_model.hpp) with each instruction's
// cycles, the memory charged to each IPU (memory_plan.hpp), the run and reduction times, and the
// report writers: the text summary (getSummaryReport), the same as JSON (getReport), the lowered
// programs as JSON (getSerializedGraph) and autoReport's files.
//
// Contract: the session records into it from its own thread (countRun, countTransfer, countPhase,
// countReduction); replica 0's thread records the collectives of the model's replicated ops into
// profile() while the session's thread waits for the replicas. The reports read replica 0's
// programs, given to start() at prepareDevice; before that only the summary's first lines (and the
// memory, once recorded) are there, and the calls that need the programs throw "call
// prepareDevice() first". What the reports say of the session itself (its kind, size and steps)
// comes with each call as SessionFigures, since the session changes it.
#pragma once
#pragma GCC visibility push(default)

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/ipu/memory_model.hpp"
#include "ir/graph.hpp"
#include "replication/replica_exchange.hpp"
#include "session/cycle_model.hpp"
#include "session/engine_options.hpp"
#include "session/lowered_graph.hpp"
#include "session/pipeline_plan.hpp"
#include "session/session_profile.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/sessionoptions.hpp"

namespace xtrain::json {
class Writer;
}

namespace xtrain::session {

// The session as the reports describe it (the summary's first line, report.json's "session").
struct SessionFigures {
  bool training = false;
  uint64_t ops = 0;
  uint64_t tensors = 0;
  int64_t localReplicas = 1;
  int64_t globalReplicas = 1;
  int64_t accumulationFactor = 1;
  int64_t batchesPerStep = 1;
  int64_t stepsRun = 0;
  // Batch serialization (batch_serial.hpp): a line for the summary, "" without it.
  std::string batchSerialization;
};

class SessionProfiler {
 public:
  // Host transfers by direction: inputs in, anchors out.
  enum class Transfer { Inputs, Anchors };

  SessionProfiler() = default;
  // reportOptions are parsed here (throws xtrain::error naming a bad key or value); engine gives
  // autoReport's settings.
  SessionProfiler(const SessionOptions& options, const EngineSettings& engine);

  // The memory charged to each IPU (prepareDevice, before lowering). With SessionOptions::logDir
  // the summary is written there first; then throws OutOfMemoryException when an IPU overflows.
  void recordMemory(const device::MemoryModel& model, const SessionFigures& figures);
  // At prepareDevice: per-op timing on replica 0's programs (`replica0`, which must outlive the
  // profiler's use of it), each instruction's simulated cycles, what each gradient reduction moves
  // over which communicator (`gradients`, through `exchange`), and autoReport's serialized graph.
  // reportSuffix tells one instance's report files from another's ("" with a single instance).
  void start(const ir::Graph& graph, LoweredGraph& replica0, const DeviceInfo& device,
             const replication::ReplicaExchange& exchange,
             const replication::GradientPlan& gradients, std::string reportSuffix);
  // Zeroes the execution profile: the counters, the times, the per-op times (not the device's
  // cycle counter, which getCycleCount reads).
  void resetProfile();
  // Where replica 0's collectives are recorded (ReplicaCollectives::setRecorder, set by
  // SessionImpl::prepareDevice).
  SessionProfile& profile() { return profile_; }

  // The records of one run(): its start, `bytes` moved for local replica `replica`, the seconds of
  // a micro-batch's transfers, a phase run on replica 0, the reduction across replicas after a
  // batch (its wall time and the exchange's times by kind), and its end (autoReport's files are
  // written then).
  void startRun() { profile_.currentRunCycles = 0; }
  // Around each batch of an unpipelined run (its micro-batches and its update): the inner
  // counters (hardwareInstrumentations Inner) read the cycles of the run's last batch.
  void startBatch() { batchStartCycles_ = profile_.currentRunCycles; }
  void endBatch() { lastBatchCycles_ = profile_.currentRunCycles - batchStartCycles_; }
  // The IPUs of one replica: inner counters "inner_ipu_0" .. "inner_ipu_<ipus - 1>" (before
  // start()).
  void setIpusPerReplica(int64_t ipus) { ipusPerReplica_ = ipus; }
  void countTransfer(Transfer direction, int64_t replica, size_t bytes);
  void addTransferSeconds(Transfer direction, double seconds);
  void countPhase(ir::Phase phase);
  void countReduction(double seconds, const replication::ReplicaExchange::ReductionSeconds& kinds);
  void countRun(double seconds, const SessionFigures& figures);
  // Pipelining (pipeline_profile.cpp): the plan, before start() (it must outlive the profiler's
  // use); countPipeline records `microBatches` micro-batches run through the pipeline: their
  // pipelined cycles (CycleModel::pipelineCycles) and their stash and restore traffic.
  void setPipeline(const PipelinePlan* plan) { pipeline_ = plan; }
  // Batch serialization (batch_serial.hpp): the cycles of the serialized ops' launches on their
  // slices, which replace an op's single launch; set before start().
  void setSerializedCycles(std::map<OpId, uint64_t> cycles) {
    serializedCycles_ = std::move(cycles);
  }
  void countPipeline(int64_t microBatches);

  // Seconds in run() and in the gradient reduction across replicas since the reset.
  double runSeconds() const { return profile_.runSeconds; }
  double reductionSeconds() const { return reductionSeconds_; }
  // The simulated clock's counters (instrumentWithHardwareCycleCounter), by id as PopART names
  // them: "" (hardwareInstrumentations Outer) the cycles of the last run(); "inner_ipu_N" (Inner)
  // the cycles of the last run's last batch as IPU N of a replica counts them. The IPUs of a
  // replica run a batch's instructions one after the other (each waiting at the syncs while
  // another computes), so every IPU's counter spans the whole batch: the same count on each. A
  // pipelined session has no inner counters (its batches overlap; PopART's pipelined program has
  // none either).
  uint64_t cycleCount(const std::string& id) const;

  // The reports (session_report.cpp).
  std::string summaryReport(const SessionFigures& figures) const;
  std::string reportJson(const SessionFigures& figures) const;
  std::string serializedGraph() const;
  // Where run() spent its time: compute, the gradient reduction across replicas (with the buckets'
  // overlap of the backward pass across instances).
  std::string stepTimeReport(const SessionFigures& figures) const;
  // The pipeline's lines of the summary ("" when not pipelined), and its report.json object.
  std::string pipelineReport(const SessionFigures& figures) const;
  void writePipelineJson(json::Writer& w) const;

 private:
  // One communicator of the gradient reduction: what it moves each step, and its kind (0 plain, 1
  // grouped, 2 sharded), whose measured time it shares with the other communicators of its kind
  // by bytes.
  struct GradientPart {
    uint64_t bytes = 0;
    size_t kind = 0;
  };
  void planGradientParts(const ir::Graph& graph, const replication::GradientPlan& gradients,
                         int64_t globalReplicas);
  void requireStarted(const char* what) const;
  // At start(), when pipelined: each slot's cycles (its instructions, stashes and restores) and
  // IPU.
  void startPipeline();
  void writeAutoReports(const SessionFigures& figures) const;
  TransferStats& stats(Transfer direction) {
    return direction == Transfer::Inputs ? profile_.inputs : profile_.anchors;
  }

  // SessionOptions::reportOptions, and the options the reports follow.
  ReportSettings reportSettings_;
  bool autoReport_ = false;
  bool autoReportSerializedGraph_ = false;
  std::string autoReportDirectory_;
  std::string logDir_;
  bool cycleCounter_ = false;   // instrumentWithHardwareCycleCounter
  bool outerCounter_ = false;   // hardwareInstrumentations has Outer: id ""
  bool innerCounters_ = false;  // hardwareInstrumentations has Inner: "inner_ipu_N"
  int64_t ipusPerReplica_ = 1;
  uint64_t batchStartCycles_ = 0;  // the run's cycles when the current batch started
  uint64_t lastBatchCycles_ = 0;   // the inner counters
  bool allowOutOfMemory_ = false;  // engineOptions debug.allowOutOfMemory
  bool ran_ = false;               // run() has completed once (getCycleCount needs a count)

  // Set by start(): the graph and replica 0's programs, the exchange (the buckets' overlap), the
  // instance's report file suffix.
  const ir::Graph* graph_ = nullptr;
  LoweredGraph* program_ = nullptr;
  const replication::ReplicaExchange* exchange_ = nullptr;
  std::string reportSuffix_;
  // The execution profile since the last reset, the simulated clock, and each instruction's cycles
  // by phase (replica 0's programs, in program order).
  SessionProfile profile_;
  std::unique_ptr<CycleModel> cycleModel_;
  std::array<std::vector<uint64_t>, ir::kPhaseCount> instructionCycles_;
  std::array<uint64_t, ir::kPhaseCount> phaseCycles_{};
  std::map<CollectiveKey, GradientPart> gradientParts_;
  std::array<uint64_t, 3> gradientKindBytes_{};
  // The memory charged to each IPU, for the reports.
  std::optional<device::MemoryModel> memoryModel_;
  // Seconds spent in the cross-replica gradient reduction since the reset.
  double reductionSeconds_ = 0;
  // Pipelining: the plan, each slot's cycles and IPU, one micro-batch's stash and restore bytes
  // and cycles (replica 0), and what was counted since the reset.
  const PipelinePlan* pipeline_ = nullptr;
  std::map<OpId, uint64_t> serializedCycles_;
  std::vector<uint64_t> slotCycles_;
  std::vector<int64_t> slotIpu_;
  uint64_t stashBytesPerMicroBatch_ = 0;
  uint64_t stashCyclesPerMicroBatch_ = 0;
  uint64_t pipelinedCycles_ = 0;   // since the reset
  uint64_t sequentialCycles_ = 0;  // the same micro-batches one slot after the other
  uint64_t pipelineMicroBatches_ = 0;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
