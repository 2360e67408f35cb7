// StepIO: the host buffers one run() reads inputs from and writes anchors to.
//
// Buffer shapes (docs/replication-semantics.md section 6), with bps = batches per step, af =
// accumulation factor, L = local replicas: inputs [bps, af, L] + shape (no L for
// ReplicatedStreamMode::Broadcast); anchors ALL [bps, af, L] + shape, EVERYN(N) [bps/N, af, L] +
// shape, FINAL and SUM [L] + shape. Prefix dimensions equal to 1 are dropped; the tensor's own
// size-1 dimensions stay. The session checks every buffer before a run and throws xtrain::error
// naming the tensor, the expected shape and the given shape.
#pragma once

#include <functional>
#include <map>

#include "xtrain/api.hpp"
#include "xtrain/ndarraywrapper.hpp"
#include "xtrain/tensorinfo.hpp"
#include "xtrain/voiddata.hpp"

namespace xtrain {

// The interface the session pulls data through, one micro-batch per replica at a time.
// Calls for one run happen on the calling thread, in micro-batch order. The defaults are PopART's
// (isBroadcast false, outComplete doing nothing), so a PopART IStepIO's overrides fit; PopART's
// assertNumElements(const popx::Executablex&) has no counterpart (the session checks the sizes).
class XTRAIN_API IStepIO {
 public:
  virtual ~IStepIO() = default;
  // The next micro-batch of input `id` (numElements elements) for the next replica in turn.
  virtual ConstVoidData in(TensorId id, int64_t numElements, bool prefetch,
                           bool isBroadcast = false) = 0;
  virtual void inComplete(TensorId id, int64_t numElements, bool isBroadcast = false) = 0;
  // Where to write the next value of anchor `id` (numElements elements).
  virtual MutableVoidData out(TensorId id, int64_t numElements) = 0;
  // The value written to the last out() of `id` is complete.
  virtual void outComplete(TensorId) {}
};

// Whole-step buffers given up front. The session reads and writes them directly (no per-micro-batch
// calls).
class XTRAIN_API StepIO : public IStepIO {
 public:
  StepIO(std::map<TensorId, IArray&> inputs, std::map<TensorId, IArray&> outputs)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

  const std::map<TensorId, IArray&>& inputs() const { return inputs_; }
  const std::map<TensorId, IArray&>& outputs() const { return outputs_; }

  // StepIO is consumed whole by the session; these per-micro-batch calls are not used for it.
  ConstVoidData in(TensorId id, int64_t numElements, bool prefetch, bool isBroadcast) override;
  void inComplete(TensorId id, int64_t numElements, bool isBroadcast) override;
  MutableVoidData out(TensorId id, int64_t numElements) override;
  void outComplete(TensorId id) override;

 private:
  std::map<TensorId, IArray&> inputs_;
  std::map<TensorId, IArray&> outputs_;
};

// Per-micro-batch callbacks (PopART's StepIOCallback).
class XTRAIN_API StepIOCallback : public IStepIO {
 public:
  using InputCallback = std::function<ConstVoidData(TensorId, bool)>;
  using InputCompleteCallback = std::function<void(TensorId)>;
  using OutputCallback = std::function<MutableVoidData(TensorId)>;
  using OutputCompleteCallback = std::function<void(TensorId)>;

  StepIOCallback(InputCallback in, InputCompleteCallback inComplete, OutputCallback out,
                 OutputCompleteCallback outComplete)
      : in_(std::move(in)),
        inComplete_(std::move(inComplete)),
        out_(std::move(out)),
        outComplete_(std::move(outComplete)) {}

  ConstVoidData in(TensorId id, int64_t, bool prefetch, bool) override { return in_(id, prefetch); }
  void inComplete(TensorId id, int64_t, bool) override { inComplete_(id); }
  MutableVoidData out(TensorId id, int64_t) override { return out_(id); }
  void outComplete(TensorId id) override { outComplete_(id); }

 private:
  InputCallback in_;
  InputCompleteCallback inComplete_;
  OutputCallback out_;
  OutputCompleteCallback outComplete_;
};

// Weight buffers for readWeights / writeWeights.
class XTRAIN_API WeightsIO {
 public:
  void insert(const TensorId& id, MutableVoidData data) { weights_[id] = data; }
  bool contains(const TensorId& id) const { return weights_.count(id) != 0; }
  MutableVoidData weight(const TensorId& id) const;
  const std::map<TensorId, MutableVoidData>& all() const { return weights_; }

 private:
  std::map<TensorId, MutableVoidData> weights_;
};

}  // namespace xtrain
