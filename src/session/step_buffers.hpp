// StepBuffers: the host side of one run(): checks every input and anchor buffer against the shapes
// of docs/replication-semantics.md section 6 before anything runs, then moves one micro-batch per
// replica at a time between the user's buffers (or IStepIO callbacks, or synthetic data) and a
// replica's device buffers.
#pragma once
#pragma GCC visibility push(default)

#include <set>
#include <vector>

#include "common/host_tensor.hpp"
#include "ir/graph.hpp"
#include "xtrain/dataflow.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/stepio.hpp"

namespace xtrain::session {

// prefix + shape, with the prefix dimensions equal to 1 dropped (the tensor's own dimensions all
// stay).
Shape withPrefix(const std::vector<int64_t>& prefix, const Shape& shape);

// Throws xtrain::error "<what>: buffer for '<id>' is <given>, expected <expected>" unless the
// element type matches and the element counts are equal.
void checkHostBuffer(const char* what, const TensorId& id, const TensorInfo& expected,
                     const TensorInfo& given);

// Fills `dst` with synthetic input data of `mode` (not Off) drawn from `seed` (the definition is
// beside the function).
void fillSynthetic(HostTensor& dst, SyntheticDataMode mode, uint64_t seed);

class StepBuffers {
 public:
  // `broadcast`: inputs fed with ReplicatedStreamMode::Broadcast (one micro-batch for all replicas,
  // no replica dimension in their buffers). `unused`: model inputs the session removed because no
  // op reads them; a buffer given for one is ignored with a warning (as PopART does), a buffer for
  // any other name that is not an input is an error.
  StepBuffers(const ir::Graph& graph, const DataFlow& dataFlow, SyntheticDataMode synthetic,
              int64_t bps, int64_t af, int64_t replicas, IStepIO& stepio, uint64_t seed,
              const std::set<TensorId>& broadcast = {}, const std::set<TensorId>& unused = {});

  const std::vector<TensorId>& inputIds() const { return inputIds_; }
  const std::vector<TensorId>& anchorIds() const { return anchorIds_; }

  // Fills `dst` with input k's micro-batch for iteration (b * af + a) on replica r.
  void readInput(size_t k, int64_t iteration, int64_t replica, HostTensor& dst);
  // Records anchor k's value after iteration on replica r, as its return type says.
  void writeAnchor(size_t k, int64_t iteration, int64_t replica, const HostTensor& src);
  // Delivers what is only complete at the end of the step (SUM anchors through callbacks).
  void finish();

 private:
  struct Input {
    TensorInfo info;
    unsigned char* data = nullptr;            // whole-step buffer (StepIO), or nullptr
    DataType dataType = DataType::UNDEFINED;  // of `data`: the tensor's, or INT64 for INT32
    std::vector<bool> filled;                 // synthetic data already written, per replica
    bool broadcast = false;                   // one micro-batch for all replicas
    HostTensor current;  // broadcast through callbacks: this iteration's micro-batch
  };
  struct Anchor {
    TensorInfo info;
    AnchorReturnType art;
    unsigned char* data = nullptr;  // whole-step buffer (StepIO), or nullptr
    std::vector<HostTensor> sums;   // SUM through callbacks: one per replica
  };

  const DataFlow& dataFlow_;
  SyntheticDataMode synthetic_;
  int64_t bps_, af_, replicas_;
  IStepIO& stepio_;
  StepIO* whole_;  // stepio_ when it is a StepIO
  uint64_t seed_;
  std::vector<TensorId> inputIds_;
  std::vector<TensorId> anchorIds_;
  std::vector<Input> inputs_;
  std::vector<Anchor> anchors_;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
