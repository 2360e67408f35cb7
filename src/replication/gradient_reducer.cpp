#include "replication/gradient_reducer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "comm/communicator.hpp"
#include "common/env_switch.hpp"
#include "common/timeline.hpp"
#include "xtrain/error.hpp"

namespace xtrain::replication {

size_t GradientReducer::bucketBytesFromEnvironment() {
  return static_cast<size_t>(readByteCount("XTRAIN_GRAD_BUCKET_BYTES", size_t{4} << 20, 4));
}

GradientReducer::GradientReducer(std::shared_ptr<comm::Communicator> comm,
                                 std::vector<Tensor> tensors, size_t bucketBytes)
    : comm_(std::move(comm)), tensors_(std::move(tensors)) {
  const size_t limit = std::max<size_t>(1, bucketBytes / sizeof(float));
  const size_t alone = std::min(limit, kAloneBytes / sizeof(float));
  Bucket current;
  auto close = [&] {
    if (!current.members.empty()) buckets_.push_back(std::move(current));
    current = Bucket{};
  };
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const size_t n = tensors_[i].elements;
    if (n == 0) continue;
    if (n >= alone) {
      close();
      Bucket own;
      own.members = {i};
      own.elements = n;
      own.packed = false;
      buckets_.push_back(std::move(own));
      continue;
    }
    if (current.elements + n > limit) close();
    current.members.push_back(i);
    current.elements += n;
  }
  close();
  for (size_t k = 0; k < buckets_.size(); ++k) {
    for (size_t m : buckets_[k].members) bucketOf_.emplace(tensors_[m].id, k);
  }
  if (readBoolSwitch("XTRAIN_SHARED_GRADIENTS", true)) placeInSharedMemory();
  if (shared_) return;
  for (auto& b : buckets_) {
    if (b.packed) b.staging.resize(b.elements);
  }
}

void GradientReducer::placeInSharedMemory() {
  // Buckets 64-byte aligned (16 floats), the tensors of a bucket one after the other, as in its
  // staging buffer: the all-reduces move the same bytes as without shared memory. Every rank
  // computes the same layout.
  homeOffset_.assign(tensors_.size(), 0);
  size_t end = 0;
  for (auto& b : buckets_) {
    end = (end + kHomeAlignment - 1) / kHomeAlignment * kHomeAlignment;
    b.sharedBegin = end;
    for (size_t m : b.members) {
      homeOffset_[m] = end;
      end += tensors_[m].elements;
    }
    b.sharedEnd = end;
  }
  if (end == 0) return;
  shared_ = comm_->allocateShared(end * sizeof(float));
  if (shared_) sharedFloats_ = reinterpret_cast<float*>(shared_->data);
}

float* GradientReducer::sharedBuffer(const TensorId& id) const {
  if (!shared_) return nullptr;
  const auto it = bucketOf_.find(id);
  if (it == bucketOf_.end()) return nullptr;
  for (size_t m : buckets_[it->second].members) {
    // A home that is not 64-byte aligned cannot hold a tensor's buffer (it is copied there).
    if (tensors_[m].id == id) return homeOffset_[m] % kHomeAlignment == 0 ? home(m) : nullptr;
  }
  return nullptr;
}

void GradientReducer::start(Bucket& b, const BufferOf& bufferOf) {
  // Packing and issuing; the all-reduce itself is the communicator's (a collective event).
  timeline::Span traced(timeline::Category::Bucket, "gradient bucket");
  traced.arg("bucket", &b - buckets_.data())
      .arg("bytes", static_cast<int64_t>(b.elements * sizeof(float)))
      .arg("tensors", static_cast<int64_t>(b.members.size()));
  comm::AllReduceOptions o;
  if (shared_) {
    // Tensors whose buffers are not at home are copied there (and back in finish()).
    for (size_t m : b.members) {
      const Tensor& t = tensors_[m];
      const float* buffer = bufferOf(t.id);
      if (buffer != home(m)) std::memcpy(home(m), buffer, t.elements * sizeof(float));
    }
    o.debugName = (b.packed ? "gradient bucket of " : "") + tensors_[b.members[0]].id;
    b.work = comm_->allReduce(
        comm::viewOf(sharedFloats_ + b.sharedBegin, b.sharedEnd - b.sharedBegin, DataType::FLOAT),
        o);
    return;
  }
  if (!b.packed) {
    const Tensor& t = tensors_[b.members[0]];
    o.debugName = t.id;
    b.work = comm_->allReduce(comm::viewOf(bufferOf(t.id), t.elements, DataType::FLOAT), o);
    return;
  }
  size_t offset = 0;
  for (size_t m : b.members) {
    const Tensor& t = tensors_[m];
    std::memcpy(b.staging.data() + offset, bufferOf(t.id), t.elements * sizeof(float));
    offset += t.elements;
  }
  o.debugName = "gradient bucket of " + tensors_[b.members[0]].id;
  b.work = comm_->allReduce(comm::viewOf(b.staging.data(), b.elements, DataType::FLOAT), o);
}

void GradientReducer::ready(const TensorId& id, const BufferOf& bufferOf) {
  const auto it = bucketOf_.find(id);
  if (it == bucketOf_.end()) return;  // empty, or not reduced here
  Bucket& b = buckets_[it->second];
  if (++b.readyCount == b.members.size() && !b.work) {
    start(b, bufferOf);
    ++overlap_.earlyBuckets;
  }
}

void GradientReducer::finish(const BufferOf& bufferOf) {
  // Buckets not started yet start in bucket order: the same on every rank.
  for (auto& b : buckets_) {
    if (!b.work) start(b, bufferOf);
  }
  std::exception_ptr failure;
  timeline::Span waiting(timeline::Category::Bucket, "wait for gradient buckets");
  waiting.arg("buckets", static_cast<int64_t>(buckets_.size()));
  const auto waitStart = std::chrono::steady_clock::now();
  for (auto& b : buckets_) {
    try {
      b.work->wait();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  ++overlap_.steps;
  overlap_.waitSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - waitStart).count();
  for (auto& b : buckets_) {
    b.work.reset();
    b.readyCount = 0;
  }
  if (failure) std::rethrow_exception(failure);
  for (auto& b : buckets_) {
    if (shared_) {
      for (size_t m : b.members) {
        float* buffer = bufferOf(tensors_[m].id);
        if (buffer != home(m)) std::memcpy(buffer, home(m), tensors_[m].elements * sizeof(float));
      }
      continue;
    }
    if (!b.packed) continue;
    size_t offset = 0;
    for (size_t m : b.members) {
      const Tensor& t = tensors_[m];
      std::memcpy(bufferOf(t.id), b.staging.data() + offset, t.elements * sizeof(float));
      offset += t.elements;
    }
  }
}

}  // namespace xtrain::replication
