// SessionProfiler's records: the simulated clock set up at prepareDevice, what each run() counts,
// the memory model and autoReport's files. The reports themselves are in session_report.cpp.
#include "session/session_profiler.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "common/output_file.hpp"
#include "xtrain/error.hpp"

namespace xtrain::session {

namespace {

// Writes `text` to `path` through a temporary beside it, so that a reader never sees half a file.
// The names are xtrain's own in the autoReport directory, which may be shared: replaceOwnFile
// never writes through a link or a temporary another user planted there.
void writeReportFile(const std::string& path, const std::string& text) {
  replaceOwnFile(path, text, "autoReport");
}

}  // namespace

namespace {

// debug.allowOutOfMemory lets the simulated IPUs overflow, not the host: the tensors of every IPU
// must still fit in half the host's memory (the kernels' working buffers need the rest).
bool hostCannotHold(const device::MemoryModel& model) {
  const long pages = sysconf(_SC_PHYS_PAGES), pageBytes = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageBytes <= 0) return false;
  const uint64_t host = static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageBytes);
  uint64_t total = 0;
  for (int i = 0; i < model.numIpus(); ++i) total += model.used(i);
  return total > host / 2;
}

}  // namespace

SessionProfiler::SessionProfiler(const SessionOptions& options, const EngineSettings& engine)
    : reportSettings_(parseReportOptions(options.reportOptions)),
      autoReport_(engine.autoReport),
      autoReportSerializedGraph_(engine.autoReportSerializedGraph),
      autoReportDirectory_(engine.autoReportDirectory.empty() ? "." : engine.autoReportDirectory),
      logDir_(options.logDir),
      cycleCounter_(options.instrumentWithHardwareCycleCounter),
      outerCounter_(options.hardwareInstrumentations.count(Instrumentation::Outer) > 0),
      innerCounters_(options.hardwareInstrumentations.count(Instrumentation::Inner) > 0),
      allowOutOfMemory_(engine.allowOutOfMemory) {}

void SessionProfiler::recordMemory(const device::MemoryModel& model,
                                   const SessionFigures& figures) {
  memoryModel_ = model;
  // SessionOptions::logDir: the report is also written there (before the check, so an overflow
  // leaves it).
  if (!logDir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(logDir_, ec);
    const std::string path = logDir_ + "/memory-report.txt";
    // logDir may be shared: its fixed names are replaced, never written through.
    replaceOwnFile(path, summaryReport(figures), "SessionOptions::logDir");
  }
  if (!allowOutOfMemory_ || hostCannotHold(model)) model.check();
}

void SessionProfiler::start(const ir::Graph& graph, LoweredGraph& replica0,
                            const DeviceInfo& device, const replication::ReplicaExchange& exchange,
                            const replication::GradientPlan& gradients, std::string reportSuffix) {
  graph_ = &graph;
  program_ = &replica0;
  exchange_ = &exchange;
  reportSuffix_ = std::move(reportSuffix);
  program_->setProfiling(true);
  // A CPU device has no tiles of its own: it is costed as a whole IPU.
  cycleModel_ = std::make_unique<CycleModel>(
      device.getType() == DeviceType::Cpu ? 0 : device.getTilesPerIPU());
  for (int ph = 0; ph < ir::kPhaseCount; ++ph) {
    const auto phase = static_cast<ir::Phase>(ph);
    auto& cycles = instructionCycles_[static_cast<size_t>(ph)];
    cycles.clear();
    const auto& instructions = program_->program(phase).instructions();
    const auto& ops = program_->ops(phase);
    for (size_t k = 0; k < ops.size(); ++k) {
      // An op's cycles include the remote loads and stores of its off-chip tensors
      // (offchip_plan.hpp): the IPU waits for them.
      auto serialized = serializedCycles_.find(ops[k]);
      uint64_t c = serialized != serializedCycles_.end()
                       ? serialized->second
                       : cycleModel_->opCycles(graph, graph.op(ops[k]));
      for (const auto& m : instructions[k].remote) c += static_cast<uint64_t>(m.cycles);
      cycles.push_back(c);
    }
    phaseCycles_[static_cast<size_t>(ph)] = 0;
    for (uint64_t c : cycles) phaseCycles_[static_cast<size_t>(ph)] += c;
  }
  planGradientParts(graph, gradients, exchange.layout().global);
  startPipeline();
  profile_ = SessionProfile{};
  if (autoReportSerializedGraph_) {
    writeReportFile(autoReportDirectory_ + "/serialized_graph" + reportSuffix_ + ".json",
                    serializedGraph());
  }
}

// The reduction's gradients by communicator: plain ones all-reduced over every replica, grouped
// ones over their VariableSettings groups, sharded ones reduce-scattered over their domain.
void SessionProfiler::planGradientParts(const ir::Graph& graph,
                                        const replication::GradientPlan& gradients,
                                        int64_t globalReplicas) {
  gradientParts_.clear();
  gradientKindBytes_ = {};
  if (globalReplicas <= 1) return;
  auto add = [&](const CollectiveKey& key, const TensorId& reduced, size_t kind) {
    if (key.groupSize <= 1) return;
    const uint64_t bytes = static_cast<uint64_t>(graph.tensor(reduced).info.nbytes());
    gradientParts_[key].bytes += bytes;
    gradientParts_[key].kind = kind;
    gradientKindBytes_[kind] += bytes;
  };
  for (const TensorId& reduced : gradients.plain) {
    add({"replicas", globalReplicas, "all-reduce", "gradients"}, reduced, 0);
  }
  for (const auto& g : gradients.grouped) {
    const ReplicaGrouping& grouping = g.variable.grouping;
    add({grouping.str(), grouping.getGroupSize(), "all-reduce", "gradients"}, g.reduced, 1);
  }
  for (const auto& s : gradients.sharded) {
    add({s.plan.domain.str(), s.plan.shardCount(), "reduce-scatter", "gradients"}, s.reduced, 2);
  }
}

void SessionProfiler::resetProfile() {
  profile_.reset();
  pipelinedCycles_ = sequentialCycles_ = pipelineMicroBatches_ = 0;
  reductionSeconds_ = 0;
  if (program_) program_->resetProfile();
}

void SessionProfiler::countTransfer(Transfer direction, int64_t replica, size_t bytes) {
  TransferStats& s = stats(direction);
  ++s.count;
  s.bytes += bytes;
  if (replica == 0) profile_.currentRunCycles += cycleModel_->hostTransferCycles(bytes);
}

void SessionProfiler::addTransferSeconds(Transfer direction, double seconds) {
  stats(direction).seconds += seconds;
}

void SessionProfiler::countPhase(ir::Phase phase) {
  profile_.currentRunCycles += phaseCycles_[static_cast<size_t>(phase)];
}

// Each kind's time is shared among its communicators by bytes.
void SessionProfiler::countReduction(double seconds,
                                     const replication::ReplicaExchange::ReductionSeconds& kinds) {
  reductionSeconds_ += seconds;
  const std::array<double, 3> kindSeconds{kinds.plain, kinds.grouped, kinds.sharded};
  for (const auto& [key, part] : gradientParts_) {
    const uint64_t kindBytes = gradientKindBytes_[part.kind];
    const double share =
        kindBytes > 0 ? static_cast<double>(part.bytes) / static_cast<double>(kindBytes) : 0;
    profile_.addCollective(key, part.bytes, kindSeconds[part.kind] * share);
    profile_.currentRunCycles +=
        cycleModel_->collectiveCycles(key.operation, part.bytes, key.groupSize);
  }
}

void SessionProfiler::countRun(double seconds, const SessionFigures& figures) {
  const uint64_t bps = static_cast<uint64_t>(figures.batchesPerStep);
  ++profile_.runs;
  profile_.batches += bps;
  profile_.microBatches += bps * static_cast<uint64_t>(figures.accumulationFactor);
  profile_.runSeconds += seconds;
  profile_.lastRunCycles = profile_.currentRunCycles;
  ran_ = true;
  profile_.totalCycles += profile_.currentRunCycles;
  if (autoReport_) writeAutoReports(figures);
}

void SessionProfiler::requireStarted(const char* what) const {
  if (program_ == nullptr) throw error("{}: call prepareDevice() first", what);
}

uint64_t SessionProfiler::cycleCount(const std::string& id) const {
  // PopART's words and order: the option, a run to count, then the id.
  if (!cycleCounter_) {
    throw runtime_error(
        "SessionOption 'instrumentWithHardwareCycleCounter' must be set to true before creating "
        "the session for getCycleCount to read a cycle count");
  }
  requireStarted("getCycleCount");
  if (!ran_) throw runtime_error("Must call run before getCycleCount: there is no count yet");
  if (id.empty() && outerCounter_) return profile_.lastRunCycles;
  const bool inner = innerCounters_ && pipeline_ == nullptr;
  std::string ids = outerCounter_ ? "\"\" (Outer: the whole run)" : "";
  if (inner) {
    const std::string prefix = "inner_ipu_";
    if (id.compare(0, prefix.size(), prefix) == 0 && id.size() > prefix.size() &&
        id.find_first_not_of("0123456789", prefix.size()) == std::string::npos &&
        id.size() - prefix.size() < 10 && std::stoll(id.substr(prefix.size())) < ipusPerReplica_) {
      return lastBatchCycles_;
    }
    ids += xtrain::format(
        "{}\"inner_ipu_0\" to \"inner_ipu_{}\" (Inner: the last batch on each IPU of a "
        "replica)",
        ids.empty() ? "" : ", ", ipusPerReplica_ - 1);
  }
  const char* why = innerCounters_ && pipeline_ != nullptr
                        ? " (a pipelined session has no inner counters: its batches overlap)"
                        : "";
  throw runtime_error(
      "getCycleCount(\"{}\"): no cycle counter has this id; this session's are {}{}. Invalid id "
      "for cycle counter, '{}'. Make sure you have set SessionOption::hardwareInstrumentations "
      "correctly.",
      id, ids.empty() ? "none" : ids, why, id);
}

void SessionProfiler::writeAutoReports(const SessionFigures& figures) const {
  // One set of files per instance when several share the directory.
  writeReportFile(autoReportDirectory_ + "/report" + reportSuffix_ + ".json", reportJson(figures));
  writeReportFile(autoReportDirectory_ + "/summary" + reportSuffix_ + ".txt",
                  summaryReport(figures));
}

std::string SessionProfiler::stepTimeReport(const SessionFigures& figures) const {
  // Since the profile was last reset (getSummaryReport(true)).
  if (profile_.runs == 0) return "";
  const double steps = static_cast<double>(profile_.runs);
  const double runSeconds = profile_.runSeconds;
  char line[256];
  std::snprintf(line, sizeof line,
                "run: %lld steps, %.3f ms per step; gradient reduction across %lld replicas (%lld "
                "local): %.3f ms per step (%.1f%%)\n",
                static_cast<long long>(profile_.runs), runSeconds / steps * 1e3,
                static_cast<long long>(figures.globalReplicas),
                static_cast<long long>(figures.localReplicas), reductionSeconds_ / steps * 1e3,
                runSeconds > 0 ? 100.0 * reductionSeconds_ / runSeconds : 0.0);
  std::string report = line;
  if (const auto* reducer = exchange_ ? exchange_->reducer() : nullptr;
      reducer != nullptr && reducer->overlap().steps > 0) {
    // Whether the buckets' all-reduces overlap the backward pass, and what is left exposed.
    const auto& o = reducer->overlap();
    const double n = static_cast<double>(o.steps);
    std::snprintf(line, sizeof line,
                  "gradient buckets across instances: %zu, %.1f per step started during the "
                  "backward pass; waiting for them after it: %.3f ms per step\n",
                  reducer->numBuckets(), static_cast<double>(o.earlyBuckets) / n,
                  o.waitSeconds / n * 1e3);
    report += line;
  }
  return report;
}

}  // namespace xtrain::session
