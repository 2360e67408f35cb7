#include "device/ipu/memory_model.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "common/check.hpp"
#include "device/ipu/ipu_options.hpp"
#include "xtrain/error.hpp"

namespace xtrain::device {
namespace {

constexpr std::array<TensorClass, kNumTensorClasses> kClasses = {
    TensorClass::Weights,     TensorClass::OptimizerState, TensorClass::Accumulators,
    TensorClass::Activations, TensorClass::Streams,        TensorClass::Other};

const char* rowLabel(TensorClass cls) {
  return cls == TensorClass::Activations ? "Activations (peak live)" : toString(cls);
}

std::string bytesWithExact(uint64_t bytes) {
  if (bytes < 1024) {
    return formatBytes(bytes);
  }
  return format("{} ({} B)", formatBytes(bytes), bytes);
}

}  // namespace

const char* toString(TensorClass cls) {
  switch (cls) {
    case TensorClass::Weights: return "Weights";
    case TensorClass::OptimizerState: return "OptimizerState";
    case TensorClass::Accumulators: return "Accumulators";
    case TensorClass::Activations: return "Activations";
    case TensorClass::Streams: return "Streams";
    case TensorClass::Other: return "Other";
  }
  return "Unknown";
}

MemoryModel::MemoryModel(std::string deviceName, int numIpus, std::optional<Limits> limits,
                         std::vector<int> ipuLabels)
    : deviceName_(std::move(deviceName)),
      limits_(limits),
      ipuLabels_(std::move(ipuLabels)),
      ipus_(static_cast<size_t>(std::max(numIpus, 0))) {
  XT_CHECK_GT(numIpus, 0, "a memory model needs at least one IPU");
  XT_CHECK(ipuLabels_.empty() || ipuLabels_.size() == ipus_.size(), "one label per IPU");
}

MemoryModel MemoryModel::forDevice(const DeviceInfo& device) {
  std::optional<Limits> limits;
  if (device.hasMemoryLimit()) {
    limits = Limits{device.getTilesPerIPU(), device.getMemoryPerTile()};
  }
  std::vector<int> labels;
  if (device.getType() == DeviceType::Ipu) {
    labels = device.getIpuIds();
  }
  return MemoryModel(format("{} device {}", toString(device.getType()), device.getId()),
                     device.getNumIpus(), limits, std::move(labels));
}

void MemoryModel::add(int ipu, TensorClass cls, std::string name, uint64_t bytes) {
  XT_CHECK(ipu >= 0 && ipu < numIpus(), "tensor {} placed on IPU {} of a {}-IPU device", name, ipu,
           numIpus());
  Ipu& slot = ipus_[static_cast<size_t>(ipu)];
  slot.perClass[static_cast<size_t>(cls)] += bytes;
  slot.total += bytes;
  slot.tensors.push_back(Entry{std::move(name), cls, bytes});
}

void MemoryModel::addStreaming(int ipu, TensorClass cls, std::string name, uint64_t bytes) {
  XT_CHECK(ipu >= 0 && ipu < numIpus(), "off-chip tensor {} of IPU {} of a {}-IPU device", name,
           ipu, numIpus());
  Ipu& slot = ipus_[static_cast<size_t>(ipu)];
  slot.streamingPerClass[static_cast<size_t>(cls)] += bytes;
  slot.streamingTotal += bytes;
  slot.offChip.push_back(Entry{std::move(name), cls, bytes});
}

uint64_t MemoryModel::streaming(int ipu) const {
  return ipuAt(ipu).streamingTotal;
}

uint64_t MemoryModel::streaming(int ipu, TensorClass cls) const {
  return ipuAt(ipu).streamingPerClass[static_cast<size_t>(cls)];
}

std::vector<MemoryModel::OffChipTensor> MemoryModel::offChipTensors() const {
  std::vector<OffChipTensor> out;
  for (int i = 0; i < numIpus(); ++i) {
    for (const auto& e : ipus_[static_cast<size_t>(i)].offChip) {
      out.push_back({i, e.name, e.cls, e.bytes});
    }
  }
  return out;
}

bool MemoryModel::anyStreaming() const {
  return std::any_of(ipus_.begin(), ipus_.end(),
                     [](const Ipu& ipu) { return !ipu.offChip.empty(); });
}

void MemoryModel::clear() {
  for (auto& ipu : ipus_) {
    ipu = Ipu{};
  }
}

const MemoryModel::Ipu& MemoryModel::ipuAt(int ipu) const {
  XT_CHECK(ipu >= 0 && ipu < numIpus(), "IPU {} of a {}-IPU device", ipu, numIpus());
  return ipus_[static_cast<size_t>(ipu)];
}

uint64_t MemoryModel::used(int ipu) const {
  return ipuAt(ipu).total;
}

uint64_t MemoryModel::used(int ipu, TensorClass cls) const {
  return ipuAt(ipu).perClass[static_cast<size_t>(cls)];
}

std::vector<int> MemoryModel::overflowingIpus() const {
  std::vector<int> out;
  if (!limits_) {
    return out;
  }
  for (int i = 0; i < numIpus(); ++i) {
    if (ipus_[static_cast<size_t>(i)].total > limits_->capacity()) {
      out.push_back(i);
    }
  }
  return out;
}

std::string MemoryModel::ipuName(int ipu) const {
  if (ipuLabels_.empty()) {
    return format("IPU {}", ipu);
  }
  return format("IPU {} (pool IPU {})", ipu, ipuLabels_[static_cast<size_t>(ipu)]);
}

std::vector<const MemoryModel::Entry*> MemoryModel::largest(int ipu, size_t n) const {
  std::vector<const Entry*> out;
  for (const auto& e : ipuAt(ipu).tensors) {
    out.push_back(&e);
  }
  const size_t k = std::min(n, out.size());
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k), out.end(),
                    [](const Entry* a, const Entry* b) {
                      return a->bytes != b->bytes ? a->bytes > b->bytes : a->name < b->name;
                    });
  out.resize(k);
  return out;
}

std::string MemoryModel::report(size_t numLargest) const {
  std::ostringstream os;
  os << "Memory report for " << deviceName_ << " (" << numIpus()
     << (numIpus() == 1 ? " IPU" : " IPUs") << "), capacity per IPU: ";
  if (limits_) {
    os << bytesWithExact(limits_->capacity()) << " = " << limits_->tilesPerIpu << " tiles x "
       << formatBytes(limits_->memoryPerTile) << "\n";
  } else {
    os << "no limit\n";
  }
  constexpr int kLabel = 26;
  const auto row = [&os](const std::string& label, const std::string& value) {
    os << "  " << std::left << std::setw(kLabel) << label << value << "\n";
  };
  for (int i = 0; i < numIpus(); ++i) {
    const Ipu& ipu = ipus_[static_cast<size_t>(i)];
    os << ipuName(i) << ":";
    if (limits_ && ipu.total > limits_->capacity()) {
      os << " OUT OF MEMORY";
    }
    os << "\n";
    for (TensorClass cls : kClasses) {
      row(rowLabel(cls), bytesWithExact(ipu.perClass[static_cast<size_t>(cls)]));
    }
    row("Total", bytesWithExact(ipu.total));
    if (limits_) {
      const uint64_t cap = limits_->capacity();
      row("Capacity", bytesWithExact(cap));
      const double pct =
          cap ? 100.0 * static_cast<double>(ipu.total) / static_cast<double>(cap) : 0;
      std::ostringstream used;
      used << std::fixed << std::setprecision(1) << pct << "% used";
      if (ipu.total <= cap) {
        row("Free", bytesWithExact(cap - ipu.total) + ", " + used.str());
      } else {
        row("Overflow", bytesWithExact(ipu.total - cap) + ", " + used.str());
      }
    }
    const auto top = largest(i, numLargest);
    if (!top.empty()) {
      os << "  Largest tensors:\n";
      for (const Entry* e : top) {
        os << "    " << std::left << std::setw(kLabel + 6) << e->name << " " << std::setw(16)
           << toString(e->cls) << " " << bytesWithExact(e->bytes) << "\n";
      }
    }
    // Only when something is off chip, so that the reports of on-chip sessions stay as they were.
    if (anyStreaming()) {
      std::string classes;
      for (TensorClass cls : kClasses) {
        const uint64_t b = ipu.streamingPerClass[static_cast<size_t>(cls)];
        if (b > 0)
          classes += format("{}{} {}", classes.empty() ? "" : ", ", toString(cls), formatBytes(b));
      }
      row("Streaming memory", bytesWithExact(ipu.streamingTotal) +
                                  (classes.empty() ? "" : " (" + classes + ")") +
                                  ", off chip: not in the capacity");
      std::vector<const Entry*> off;
      for (const auto& e : ipu.offChip) off.push_back(&e);
      std::stable_sort(off.begin(), off.end(),
                       [](const Entry* a, const Entry* b) { return a->bytes > b->bytes; });
      if (off.size() > numLargest) off.resize(numLargest);
      if (!off.empty()) os << "  Off-chip tensors (streaming memory):\n";
      for (const Entry* e : off) {
        os << "    " << std::left << std::setw(kLabel + 6) << e->name << " " << std::setw(16)
           << toString(e->cls) << " " << bytesWithExact(e->bytes) << "\n";
      }
    }
  }
  return os.str();
}

void MemoryModel::check() const {
  const std::vector<int> over = overflowingIpus();
  if (over.empty()) {
    return;
  }
  const int i = over.front();
  const Ipu& ipu = ipus_[static_cast<size_t>(i)];
  const uint64_t cap = limits_->capacity();
  std::string msg = format(
      "Out of memory on {} of {}: its tensors need {} but the IPU has {} ({} tiles x {}); over by "
      "{}",
      ipuName(i), deviceName_, bytesWithExact(ipu.total), bytesWithExact(cap), limits_->tilesPerIpu,
      formatBytes(limits_->memoryPerTile), formatBytes(ipu.total - cap));
  const auto top = largest(i, 1);
  if (!top.empty()) {
    msg += format(". Largest tensor: {} ({}, {})", top.front()->name, toString(top.front()->cls),
                  formatBytes(top.front()->bytes));
  }
  if (over.size() > 1) {
    std::vector<int> others(over.begin() + 1, over.end());
    msg += format(". {} more IPUs overflow: {}", others.size(), others);
  }
  msg +=
      ". Use more IPUs, fewer or smaller tensors, or a device with more memory per tile; "
      "getSummaryReport() has the per-IPU report.";
  throw OutOfMemoryException(msg, report());
}

}  // namespace xtrain::device
