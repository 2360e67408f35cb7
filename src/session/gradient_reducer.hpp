// GradientReducer: the cross-instance all-reduce of the weights' gradients (or accumulators) once
// per step, in buckets, so a model with many small weights pays for a few collectives rather than
// one per weight, and the packing of one bucket overlaps the reduction of the previous one.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xtrain/names.hpp"

namespace xtrain::comm {
class Communicator;
}

namespace xtrain::session {

class GradientReducer {
 public:
  struct Tensor {
    TensorId id;
    size_t elements = 0;  // FLOAT elements
  };

  // Tensors are bucketed in the given order (the order the backward pass produces them is best)
  // into buckets of at most `bucketBytes`; a tensor larger than that is reduced in place, alone.
  GradientReducer(std::shared_ptr<comm::Communicator> comm, std::vector<Tensor> tensors,
                  size_t bucketBytes);

  // Sums every tensor over the communicator's ranks, in place; `bufferOf(id)` gives this rank's
  // FLOAT buffer of the tensor. Blocks until done; comm errors propagate.
  void allReduceSum(const std::function<float*(const TensorId&)>& bufferOf);

  size_t numBuckets() const { return buckets_.size(); }

  // XTRAIN_GRAD_BUCKET_BYTES, else 4 MiB.
  static size_t bucketBytesFromEnvironment();

 private:
  struct Bucket {
    std::vector<size_t> members;  // indices into tensors_
    size_t elements = 0;
    bool packed = true;  // false: one large tensor reduced in place
    std::vector<float> staging;
  };

  std::shared_ptr<comm::Communicator> comm_;
  std::vector<Tensor> tensors_;
  std::vector<Bucket> buckets_;
};

}  // namespace xtrain::session
