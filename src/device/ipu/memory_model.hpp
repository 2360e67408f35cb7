// The memory model of a device: a session reports the tensors it places on each IPU, and the model
// says whether they fit (tilesPerIPU x memoryPerTile per IPU). Internal API, used by sessions.
//
// Contract: report each resident tensor once, on the IPU (device-local index 0..numIpus-1) that
// holds it. Tensors kept off chip (streaming memory, docs/model-parallelism.md) are reported with
// addStreaming, on the IPU whose program loads them: they are shown, never counted against the
// IPU's capacity. For Activations report the set live at the peak of the program, not every
// activation. A CPU device has no limit: the model still counts, but never overflows. Not
// thread-safe; one model per device per session.
#pragma once
#pragma GCC visibility push(default)

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xtrain/devicemanager.hpp"

namespace xtrain::device {

enum class TensorClass { Weights, OptimizerState, Accumulators, Activations, Streams, Other };
inline constexpr size_t kNumTensorClasses = 6;
const char* toString(TensorClass cls);

class MemoryModel {
 public:
  struct Limits {
    int tilesPerIpu = 0;
    uint64_t memoryPerTile = 0;
    uint64_t capacity() const { return static_cast<uint64_t>(tilesPerIpu) * memoryPerTile; }
  };

  // deviceName appears in messages ("Ipu device 64"). limits nullopt: no memory limit. ipuLabels,
  // when given, are the pool's IPU ids of the device's IPUs (named beside the local index in
  // messages).
  MemoryModel(std::string deviceName, int numIpus, std::optional<Limits> limits,
              std::vector<int> ipuLabels = {});
  // The model of a device: its IPUs and limits (none for a CPU device).
  static MemoryModel forDevice(const DeviceInfo& device);

  // Charges `bytes` of tensor `name` to IPU `ipu`. An ipu outside 0..numIpus()-1 is an
  // internal_error.
  void add(int ipu, TensorClass cls, std::string name, uint64_t bytes);
  // Charges `bytes` of off-chip tensor `name` to the streaming memory of IPU `ipu`.
  void addStreaming(int ipu, TensorClass cls, std::string name, uint64_t bytes);
  void clear();

  int numIpus() const { return static_cast<int>(ipus_.size()); }
  bool hasLimit() const { return limits_.has_value(); }
  // Bytes per IPU; 0 when there is no limit.
  uint64_t capacity() const { return limits_ ? limits_->capacity() : 0; }
  uint64_t used(int ipu) const;
  uint64_t used(int ipu, TensorClass cls) const;
  // Bytes in IPU `ipu`'s streaming memory (all classes, or one).
  uint64_t streaming(int ipu) const;
  uint64_t streaming(int ipu, TensorClass cls) const;
  // Every off-chip tensor: (ipu, name, class, bytes), in the order they were added.
  struct OffChipTensor {
    int ipu;
    std::string name;
    TensorClass cls;
    uint64_t bytes;
  };
  std::vector<OffChipTensor> offChipTensors() const;
  // The IPUs whose tensors exceed the capacity, in order.
  std::vector<int> overflowingIpus() const;

  // Per IPU: bytes per class, total, capacity, free or overflow, and its numLargest largest
  // tensors.
  std::string report(size_t numLargest = 5) const;
  // Throws xtrain::OutOfMemoryException when an IPU overflows: the message names the IPU, its
  // capacity and what its tensors need; getSummaryReport() is report().
  void check() const;

 private:
  struct Entry {
    std::string name;
    TensorClass cls;
    uint64_t bytes;
  };
  struct Ipu {
    std::array<uint64_t, kNumTensorClasses> perClass{};
    uint64_t total = 0;
    std::vector<Entry> tensors;
    // Streaming memory: off chip, outside the capacity.
    std::array<uint64_t, kNumTensorClasses> streamingPerClass{};
    uint64_t streamingTotal = 0;
    std::vector<Entry> offChip;
  };
  bool anyStreaming() const;
  const Ipu& ipuAt(int ipu) const;
  std::string ipuName(int ipu) const;
  std::vector<const Entry*> largest(int ipu, size_t n) const;

  std::string deviceName_;
  std::optional<Limits> limits_;
  std::vector<int> ipuLabels_;
  std::vector<Ipu> ipus_;
};

}  // namespace xtrain::device

#pragma GCC visibility pop
