// GradientReducer: the cross-instance all-reduce of the weights' gradients (or accumulators) once
// per step, in buckets, so a model with many small weights pays for a few collectives rather than
// one per weight. A bucket's all-reduce starts as soon as its last tensor is ready (ready(), called
// while the backward pass still runs) and overlaps the rest of the step; finish() starts what is
// left and waits.
// Where the communicator has memory shared by its ranks (shm: Communicator::allocateShared), every
// tensor gets a home in it, the tensors of a bucket one after the other, and a bucket's
// all-reduce works on its homes in place: the peers read and write them directly, with no staging
// copy and no copy through the backend's slots. The caller places its buffers there
// (sharedBuffer); a tensor whose buffer is elsewhere is copied in and out, as a packed bucket's
// are without shared memory. XTRAIN_SHARED_GRADIENTS=0 turns the shared memory off.
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "xtrain/names.hpp"

namespace xtrain::comm {
class Communicator;
class Work;
struct SharedMemory;
}  // namespace xtrain::comm

namespace xtrain::replication {

class GradientReducer {
 public:
  struct Tensor {
    TensorId id;
    size_t elements = 0;  // FLOAT elements
  };

  // Tensors are bucketed in the given order (the order the backward pass produces them is best)
  // into buckets of at most `bucketBytes`, packed into the bucket's staging buffer. A tensor of at
  // least min(bucketBytes, kAloneBytes) is reduced alone, in place: packing it would cost a copy in
  // and out, two passes over bytes that the collective itself reads once. It closes the bucket
  // before it, so a bucket never waits for a tensor produced after a large one.
  GradientReducer(std::shared_ptr<comm::Communicator> comm, std::vector<Tensor> tensors,
                  size_t bucketBytes);

  using BufferOf = std::function<float*(const TensorId&)>;

  // One step: ready(id) for tensors complete early (in the same order on every rank, e.g. in the
  // order a deterministic backward pass produces them), then finish() sums every tensor over the
  // communicator's ranks, in place. `bufferOf(id)` gives this rank's FLOAT buffer of the tensor and
  // must stay valid until finish() returned. Comm errors propagate from finish().
  void ready(const TensorId& id, const BufferOf& bufferOf);
  void finish(const BufferOf& bufferOf);
  // ready() for nothing, then finish().
  void allReduceSum(const BufferOf& bufferOf) { finish(bufferOf); }

  size_t numBuckets() const { return buckets_.size(); }

  // The home of tensor `id` in the memory shared with the other ranks, where its buffer may live
  // (64-byte aligned; null without shared memory, for a tensor not reduced here, or for one whose
  // place in its packed bucket is not aligned: it is copied in and out), and that memory (to keep
  // it alive).
  float* sharedBuffer(const TensorId& id) const;
  const std::shared_ptr<const comm::SharedMemory>& sharedMemory() const { return shared_; }

  // What the steps so far did, to check that the reduction overlaps the backward pass: buckets
  // started by ready() (before finish()), and the time finish() spent waiting for the all-reduces.
  struct Overlap {
    int64_t steps = 0;
    int64_t earlyBuckets = 0;  // over all steps
    double waitSeconds = 0;    // over all steps
  };
  const Overlap& overlap() const { return overlap_; }

  static constexpr size_t kAloneBytes = size_t{1} << 20;

  // XTRAIN_GRAD_BUCKET_BYTES, else 4 MiB.
  static size_t bucketBytesFromEnvironment();

 private:
  struct Bucket {
    std::vector<size_t> members;  // indices into tensors_
    size_t elements = 0;
    bool packed = true;  // false: one large tensor reduced in place
    std::vector<float> staging;
    // With shared memory: the bucket's homes are elements [sharedBegin, sharedEnd) of it (with
    // the zeros that align each tensor), reduced as one buffer.
    size_t sharedBegin = 0;
    size_t sharedEnd = 0;
    size_t readyCount = 0;             // members ready this step
    std::shared_ptr<comm::Work> work;  // the step's all-reduce, once started
  };
  void start(Bucket& b, const BufferOf& bufferOf);
  // Gives every tensor a home in shared memory, if the communicator has it.
  void placeInSharedMemory();
  float* home(size_t tensor) const { return sharedFloats_ + homeOffset_[tensor]; }
  static constexpr size_t kHomeAlignment = 64 / sizeof(float);  // in elements

  std::shared_ptr<comm::Communicator> comm_;
  std::vector<Tensor> tensors_;
  std::vector<Bucket> buckets_;
  Overlap overlap_;
  std::unordered_map<TensorId, size_t> bucketOf_;     // tensor -> bucket (empty tensors: none)
  std::shared_ptr<const comm::SharedMemory> shared_;  // null: no shared memory
  float* sharedFloats_ = nullptr;
  std::vector<size_t> homeOffset_;  // per tensor, in elements of sharedFloats_
};

}  // namespace xtrain::replication

#pragma GCC visibility pop
