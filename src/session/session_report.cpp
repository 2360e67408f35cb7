// SessionProfiler's report writers (docs/reports.md): the text summary (getSummaryReport), the
// same as JSON (getReport) and the lowered programs as JSON (getSerializedGraph).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "common/json_writer.hpp"
#include "session/session_profiler.hpp"

namespace xtrain::session {
namespace {

constexpr size_t kTopOps = 20;
constexpr size_t kLargestTensors = 5;

// One instruction of replica 0's programs with what the profile knows of it.
struct OpRow {
  ir::Phase phase;
  size_t index;
  const ir::Op* op;
  const std::string* description;
  double seconds;
  uint64_t calls;
  uint64_t cycles;
};

std::string bytesText(uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

std::string msText(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  return buf;
}

std::string percentText(double part, double total) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", total > 0 ? 100.0 * part / total : 0.0);
  return buf;
}

}  // namespace

namespace {

// Replica 0's instructions with their times, calls and cycles, in program order.
std::vector<OpRow> opRows(const ir::Graph& graph, const LoweredGraph& lowered,
                          const std::array<std::vector<uint64_t>, ir::kPhaseCount>& cycles) {
  std::vector<OpRow> rows;
  for (int ph = 0; ph < ir::kPhaseCount; ++ph) {
    const auto phase = static_cast<ir::Phase>(ph);
    const device::Program& program = lowered.program(phase);
    const auto& ops = lowered.ops(phase);
    for (size_t k = 0; k < program.size(); ++k) {
      rows.push_back({phase, k, &graph.op(ops[k]), &program.instructions()[k].description,
                      k < program.seconds().size() ? program.seconds()[k] : 0.0, program.runs(),
                      cycles[static_cast<size_t>(ph)][k]});
    }
  }
  return rows;
}

// The copies between the IPUs of a replica (docs/model-parallelism.md): how many, their bytes per
// micro-batch and their share of the kernels' time and of the simulated cycles.
std::string ipuCopyLine(const ir::Graph& graph, const std::vector<OpRow>& rows,
                        double kernelSeconds) {
  uint64_t copies = 0, bytes = 0, cycles = 0, allCycles = 0;
  double seconds = 0;
  for (const auto& r : rows) {
    allCycles += r.cycles;
    if (r.op->type != "IpuCopy" || r.op->domain != ir::kXtrainDomain) continue;
    ++copies;
    bytes += static_cast<uint64_t>(graph.tensor(r.op->inputs.at(0)).info.nbytes());
    cycles += r.cycles;
    seconds += r.seconds;
  }
  if (copies == 0) return "inter-IPU copies: none\n";
  return format(
      "inter-IPU copies (IpuCopy): {} op(s), {} per execution of each once; {} of the "
      "kernels' time, {} of the simulated cycles\n",
      copies, bytesText(bytes), percentText(seconds, kernelSeconds),
      percentText(static_cast<double>(cycles), static_cast<double>(allCycles)));
}

// The off-chip tensors' remote loads and stores (offchip_plan.hpp) in replica 0's programs: each op
// executed once.
struct RemoteTotals {
  uint64_t loads = 0, stores = 0, loadBytes = 0, storeBytes = 0, cycles = 0;
};

RemoteTotals remoteTotals(const LoweredGraph& lowered) {
  RemoteTotals t;
  for (int ph = 0; ph < ir::kPhaseCount; ++ph) {
    for (const auto& instr : lowered.program(static_cast<ir::Phase>(ph)).instructions()) {
      for (const auto& m : instr.remote) {
        (m.store ? t.stores : t.loads) += 1;
        (m.store ? t.storeBytes : t.loadBytes) += static_cast<uint64_t>(m.bytes);
        t.cycles += static_cast<uint64_t>(m.cycles);
      }
    }
  }
  return t;
}

// getReport's "memory": per IPU its bytes by class on chip and in streaming memory, and every
// off-chip tensor.
void writeMemoryJson(json::Writer& w, const device::MemoryModel& model) {
  w.key("memory").beginObject();
  w.key("capacityBytesPerIpu");
  if (model.hasLimit()) {
    w.value(model.capacity());
  } else {
    w.null();
  }
  w.key("ipus").beginArray();
  for (int ipu = 0; ipu < model.numIpus(); ++ipu) {
    w.beginObject().field("ipu", ipu).field("totalBytes", model.used(ipu));
    w.key("classes").beginObject();
    for (size_t c = 0; c < device::kNumTensorClasses; ++c) {
      const auto cls = static_cast<device::TensorClass>(c);
      w.field(device::toString(cls), model.used(ipu, cls));
    }
    w.endObject();
    // Streaming memory: what the IPU keeps off chip (outside its capacity).
    w.field("streamingBytes", model.streaming(ipu));
    w.key("streamingClasses").beginObject();
    for (size_t c = 0; c < device::kNumTensorClasses; ++c) {
      const auto cls = static_cast<device::TensorClass>(c);
      w.field(device::toString(cls), model.streaming(ipu, cls));
    }
    w.endObject().endObject();
  }
  w.endArray();
  w.key("offChipTensors").beginArray();
  for (const auto& t : model.offChipTensors()) {
    w.beginObject()
        .field("ipu", t.ipu)
        .field("name", t.name)
        .field("class", device::toString(t.cls))
        .field("bytes", t.bytes)
        .endObject();
  }
  w.endArray().endObject();
}

// getReport's "execution.offChipTransfers".
void writeRemoteJson(json::Writer& w, const RemoteTotals& t) {
  w.key("offChipTransfers")
      .beginObject()
      .field("loads", t.loads)
      .field("loadBytes", t.loadBytes)
      .field("stores", t.stores)
      .field("storeBytes", t.storeBytes)
      .field("cycles", t.cycles)
      .endObject();
}

std::string remoteLine(const RemoteTotals& t, const std::vector<OpRow>& rows) {
  if (t.loads + t.stores == 0) return "off-chip transfers: none\n";
  uint64_t allCycles = 0;
  for (const auto& r : rows) allCycles += r.cycles;
  return format(
      "off-chip transfers (RemoteLoad/RemoteStore, streaming memory): {} load(s) of {} and {} "
      "store(s) of {} per execution of each op once; {} of the simulated cycles\n",
      t.loads, bytesText(t.loadBytes), t.stores, bytesText(t.storeBytes),
      percentText(static_cast<double>(t.cycles), static_cast<double>(allCycles)));
}

}  // namespace

std::string SessionProfiler::summaryReport(const SessionFigures& figures) const {
  std::string s = format(
      "xtrain {} session: {} ops, {} tensors; {} local replica(s), accumulation factor {}, "
      "{} batch(es) per step; {} step(s) run\n",
      figures.training ? "training" : "inference", figures.ops, figures.tensors,
      figures.localReplicas, figures.accumulationFactor, figures.batchesPerStep, figures.stepsRun);
  if (!memoryModel_) return s + "memory: not computed yet (call prepareDevice())\n";
  s += memoryModel_->report(reportSettings_.showVarStorage ? std::numeric_limits<size_t>::max()
                                                           : kLargestTensors);
  s += figures.batchSerialization;
  if (!program_ || !cycleModel_) return s;
  s += stepTimeReport(figures);
  s += pipelineReport(figures);
  const SessionProfile& p = profile_;
  // The device's counter is not part of the profile: it is there after a reset too.
  std::string cycles;
  if (cycleCounter_) {
    cycles = format(
        "cycles (instrumentWithHardwareCycleCounter, simulated clock of {} GHz, {} tiles): last "
        "run {}, all runs since the reset {}\n",
        CycleModel::kClockHz / 1e9, cycleModel_->tiles(), p.lastRunCycles, p.totalCycles);
  }
  if (p.runs == 0) return s + "execution profile: no run() since the profile was reset\n" + cycles;

  std::vector<OpRow> rows = opRows(*graph_, *program_, instructionCycles_);
  double kernelSeconds = 0;
  std::map<std::string, double> byPhase, byType;
  for (const auto& r : rows) {
    kernelSeconds += r.seconds;
    byPhase[ir::toString(r.phase)] += r.seconds;
    byType[r.op->type] += r.seconds;
  }
  const auto sorted = [](const std::map<std::string, double>& m) {
    std::vector<std::pair<double, std::string>> v;
    for (const auto& [name, t] : m) v.emplace_back(t, name);
    std::sort(v.begin(), v.end(), std::greater<>());
    return v;
  };
  std::ostringstream os;
  os << "execution profile: " << p.runs << " run(s), " << p.batches << " batch(es), "
     << p.microBatches << " micro-batch(es); " << msText(p.runSeconds) << " in run(); "
     << msText(kernelSeconds) << " in kernels (replica 0)\n";
  os << "  by phase:";
  for (const auto& [t, name] : sorted(byPhase)) {
    if (t > 0) os << "  " << name << " " << percentText(t, kernelSeconds);
  }
  os << "\n  by op type:";
  for (const auto& [t, name] : sorted(byType)) {
    if (kernelSeconds > 0 && t / kernelSeconds >= 0.001) {
      os << "  " << name << " " << percentText(t, kernelSeconds);
    }
  }
  os << "\n";
  std::stable_sort(rows.begin(), rows.end(),
                   [](const OpRow& a, const OpRow& b) { return a.seconds > b.seconds; });
  const size_t shown = reportSettings_.showExecutionSteps ? rows.size() : kTopOps;
  os << (reportSettings_.showExecutionSteps ? "  every op (showExecutionSteps), by time:\n"
                                            : "  slowest ops:\n");
  for (size_t i = 0; i < rows.size() && i < shown; ++i) {
    const OpRow& r = rows[i];
    os << "    " << msText(r.seconds) << "  " << percentText(r.seconds, kernelSeconds) << "  "
       << ir::toString(r.phase) << "  " << *r.description << "  x" << r.calls << "\n";
  }
  if (p.collectives.empty()) {
    os << "collectives: none\n";
  } else {
    os << "collectives (replica 0):\n";
    for (const auto& [key, c] : p.collectives) {
      os << "  " << key.operation << " of " << key.what << " over " << key.communicator << " ("
         << key.groupSize << " replicas): " << c.calls << " call(s), " << bytesText(c.bytes) << ", "
         << msText(c.seconds) << "\n";
    }
  }
  os << "host transfers: inputs in " << p.inputs.count << " buffer(s), "
     << bytesText(p.inputs.bytes) << ", " << msText(p.inputs.seconds) << "; anchors out "
     << p.anchors.count << " buffer(s), " << bytesText(p.anchors.bytes) << ", "
     << msText(p.anchors.seconds) << "\n";
  os << ipuCopyLine(*graph_, rows, kernelSeconds);
  os << remoteLine(remoteTotals(*program_), rows);
  if (cycleCounter_) {
    os << "cycles (instrumentWithHardwareCycleCounter, simulated clock of "
       << CycleModel::kClockHz / 1e9 << " GHz, " << cycleModel_->tiles() << " tiles): last run "
       << p.lastRunCycles << ", all runs " << p.totalCycles << "\n";
  }
  return s + os.str();
}

std::string SessionProfiler::reportJson(const SessionFigures& figures) const {
  requireStarted("getReport");
  json::StringWriter w;
  w.beginObject().field("schema", "xtrain.report").field("version", 1);
  w.key("session")
      .beginObject()
      .field("kind", figures.training ? "training" : "inference")
      .field("ops", figures.ops)
      .field("tensors", figures.tensors)
      .field("localReplicas", figures.localReplicas)
      .field("globalReplicas", figures.globalReplicas)
      .field("accumulationFactor", figures.accumulationFactor)
      .field("batchesPerStep", figures.batchesPerStep)
      .field("stepsRun", figures.stepsRun)
      .endObject();
  w.key("pipeline");
  writePipelineJson(w);

  writeMemoryJson(w, *memoryModel_);

  const SessionProfile& p = profile_;
  const std::vector<OpRow> rows = opRows(*graph_, *program_, instructionCycles_);
  double kernelSeconds = 0;
  for (const auto& r : rows) kernelSeconds += r.seconds;
  w.key("execution")
      .beginObject()
      .field("runs", p.runs)
      .field("batches", p.batches)
      .field("microBatches", p.microBatches)
      .field("runSeconds", p.runSeconds)
      .field("kernelSeconds", kernelSeconds);
  writeRemoteJson(w, remoteTotals(*program_));
  w.key("phases").beginObject();
  for (int ph = 0; ph < ir::kPhaseCount; ++ph) {
    const auto phase = static_cast<ir::Phase>(ph);
    const device::Program& program = program_->program(phase);
    if (program.empty()) continue;
    double seconds = 0;
    for (double t : program.seconds()) seconds += t;
    w.key(ir::toString(phase))
        .beginObject()
        .field("instructions", static_cast<uint64_t>(program.size()))
        .field("runs", program.runs())
        .field("seconds", seconds)
        .field("cyclesPerRun", phaseCycles_[static_cast<size_t>(ph)])
        .endObject();
  }
  w.endObject();
  w.key("ops").beginArray();
  for (const auto& r : rows) {
    w.beginObject()
        .field("phase", ir::toString(r.phase))
        .field("index", static_cast<uint64_t>(r.index))
        .field("type", r.op->type)
        .field("name", r.op->name)
        .field("virtualGraph", std::max<int64_t>(0, r.op->placement.virtualGraph))
        .field("description", *r.description)
        .field("calls", r.calls)
        .field("seconds", r.seconds)
        .field("cyclesPerCall", r.cycles)
        .endObject();
  }
  w.endArray();
  w.key("collectives").beginArray();
  for (const auto& [key, c] : p.collectives) {
    w.beginObject()
        .field("communicator", key.communicator)
        .field("groupSize", key.groupSize)
        .field("operation", key.operation)
        .field("what", key.what)
        .field("calls", c.calls)
        .field("bytes", c.bytes)
        .field("seconds", c.seconds)
        .endObject();
  }
  w.endArray();
  w.key("hostTransfers").beginObject();
  for (const auto& [name, t] : {std::pair<const char*, const TransferStats*>{"inputs", &p.inputs},
                                {"anchors", &p.anchors}}) {
    w.key(name)
        .beginObject()
        .field("count", t->count)
        .field("bytes", t->bytes)
        .field("seconds", t->seconds)
        .endObject();
  }
  w.endObject();
  w.key("cycles");
  if (cycleCounter_) {
    w.beginObject()
        .field("lastRun", p.lastRunCycles)
        .field("total", p.totalCycles)
        .field("clockHz", CycleModel::kClockHz)
        .field("tilesPerIpu", cycleModel_->tiles())
        .endObject();
  } else {
    w.null();
  }
  w.endObject().endObject();
  return w.str();
}

std::string SessionProfiler::serializedGraph() const {
  requireStarted("getSerializedGraph");
  json::StringWriter w;
  w.beginObject().field("schema", "xtrain.serialized-graph").field("version", 1);
  w.key("programs").beginArray();
  for (int ph = 0; ph < ir::kPhaseCount; ++ph) {
    const auto phase = static_cast<ir::Phase>(ph);
    const auto& ops = program_->ops(phase);
    if (ops.empty()) continue;
    w.beginObject().field("phase", ir::toString(phase)).key("instructions").beginArray();
    for (size_t k = 0; k < ops.size(); ++k) {
      const ir::Op& op = graph_->op(ops[k]);
      w.beginObject()
          .field("index", static_cast<uint64_t>(k))
          .field("type", op.type)
          .field("domain", op.domain)
          .field("name", op.name);
      for (const auto& [field, ids] :
           {std::pair<const char*, const std::vector<TensorId>*>{"inputs", &op.inputs},
            {"outputs", &op.outputs}}) {
        w.key(field).beginArray();
        for (const auto& id : *ids) w.value(id);
        w.endArray();
      }
      w.field("flops", CycleModel::flops(*graph_, op))
          .field("cycles", instructionCycles_[static_cast<size_t>(ph)][k])
          .endObject();
    }
    w.endArray().endObject();
  }
  w.endArray();
  w.key("tensors").beginArray();
  for (const auto& [id, t] : graph_->tensors()) {
    w.beginObject()
        .field("id", id)
        .field("kind", ir::toString(t->kind))
        .field("type", dataTypeName(t->info.dataType()));
    w.key("shape").beginArray();
    for (int64_t d : t->info.shape()) w.value(d);
    w.endArray().endObject();
  }
  w.endArray().endObject();
  return w.str();
}

}  // namespace xtrain::session
