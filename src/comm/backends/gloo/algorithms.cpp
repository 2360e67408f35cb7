#include "comm/backends/gloo/algorithms.hpp"

#include <gloo/common/error.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "comm/backends/gloo/slots.hpp"
#include "comm/reduce.hpp"
#include "comm/types.hpp"

namespace xtrain::comm::gloo {

namespace {

using Op = CollectiveOperator;
using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

// The largest piece of a shard one send carries: small enough to pipeline (a received segment is
// reduced and forwarded while the next ones are in flight), large enough to amortise the
// per-message cost.
constexpr size_t kSegmentBytes = size_t{1} << 20;
// Segments a ring keeps in flight per direction.
constexpr size_t kWindow = 4;

std::chrono::milliseconds remaining(Deadline deadline) {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

}  // namespace

TrackedBuffer::TrackedBuffer(const Exchange& x, const void* ptr, size_t bytes)
    : deadline_(x.deadline),
      interrupt_(x.interrupt),
      ub_(x.context->createUnboundBuffer(const_cast<void*>(ptr), bytes)) {
  interrupt_->add(ub_.get());
}

TrackedBuffer::~TrackedBuffer() {
  interrupt_->remove(ub_.get());
}

void TrackedBuffer::waitRecv() {
  if (!ub_->waitRecv(remaining(deadline_))) {
    throw ::gloo::IoException("receive interrupted: a connection of the group broke");
  }
}

void TrackedBuffer::waitSend() {
  if (!ub_->waitSend(remaining(deadline_))) {
    throw ::gloo::IoException("send interrupted: a connection of the group broke");
  }
}

void TrackedBuffer::waitSends(size_t& pending) {
  for (; pending > 0; --pending) waitSend();
}

namespace {

// FLOAT Add, the hot path. `out` may be `a` or `b` (the in-place rings reduce into their input):
// every element is read before it is written, so the loop has no cross-iteration dependency.
void addFloat(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<float*>(out);
  const auto* x = static_cast<const float*>(a);
  const auto* y = static_cast<const float*>(b);
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}

ReduceFn pairwise(DataType work, Op core) {
  if (work == DataType::FLOAT && core == Op::Add) return addFloat;
  return [work, core](void* out, const void* a, const void* b, size_t n) {
    const void* srcs[2] = {a, b};
    void* dsts[1] = {out};
    reduceInto(work, core, srcs, 2, dsts, 1, n);
  };
}

// How an operator on a type runs on the rings: FLOAT16 travels as FLOAT (reduced in float as
// reduceInto does), INT32/UINT8 Mean as INT64 (the exact sum before the division), SquareAdd
// squares locally and adds, Mean adds and divides.
struct Plan {
  DataType work = DataType::FLOAT;
  Op core = Op::Add;
  bool square = false;
  bool mean = false;
  bool convert = false;  // work != the buffer's type
};

Plan planFor(DataType type, Op op) {
  Plan p;
  p.work = type;
  if (type == DataType::FLOAT16) {
    p.work = DataType::FLOAT;
  } else if (op == Op::Mean && (type == DataType::INT32 || type == DataType::UINT8)) {
    p.work = DataType::INT64;
  }
  p.convert = p.work != type;
  p.square = op == Op::SquareAdd;
  p.mean = op == Op::Mean;
  p.core = (p.square || p.mean) ? Op::Add : op;
  return p;
}

template <typename T>
T squareWrapped(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v * v;
  } else {
    const auto u = static_cast<uint64_t>(static_cast<int64_t>(v));
    return static_cast<T>(u * u);  // modular, as reduceInto's integer SquareAdd
  }
}

template <typename T>
void squareInto(const void* src, void* dst, size_t n) {
  const T* s = static_cast<const T*>(src);
  T* d = static_cast<T*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = squareWrapped(s[i]);
}

// `n` elements of `type` at `src` to the plan's work type at `dst` (squared for SquareAdd).
void toWork(const Plan& p, DataType type, const void* src, void* dst, size_t n) {
  if (type == DataType::FLOAT16) {
    const auto* s = static_cast<const uint16_t*>(src);
    auto* d = static_cast<float*>(dst);
    for (size_t i = 0; i < n; ++i) {
      const float v = halfToFloat(s[i]);
      d[i] = p.square ? v * v : v;
    }
    return;
  }
  if (p.convert) {  // INT32 / UINT8 Mean as INT64
    auto* d = static_cast<int64_t*>(dst);
    if (type == DataType::INT32) {
      const auto* s = static_cast<const int32_t*>(src);
      for (size_t i = 0; i < n; ++i) d[i] = s[i];
    } else {
      const auto* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) d[i] = s[i];
    }
    return;
  }
  // Same type, squared.
  switch (type) {
    case DataType::FLOAT: return squareInto<float>(src, dst, n);
    case DataType::INT32: return squareInto<int32_t>(src, dst, n);
    case DataType::INT64: return squareInto<int64_t>(src, dst, n);
    case DataType::UINT8: return squareInto<uint8_t>(src, dst, n);
    default: break;
  }
  throw internal_error("gloo: no conversion of {} for {}", dataTypeName(type), toString(p.core));
}

// `n` reduced elements of the work type at `src` to `type` at `dst` (divided by k for Mean). `dst`
// may be `src` when the types are the same.
void fromWork(const Plan& p, DataType type, int k, const void* src, void* dst, size_t n) {
  if (p.work == DataType::FLOAT) {
    const auto* s = static_cast<const float*>(src);
    const float div = static_cast<float>(k);
    if (type == DataType::FLOAT16) {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = floatToHalf(p.mean ? s[i] / div : s[i]);
    } else if (p.mean) {
      auto* d = static_cast<float*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = s[i] / div;
    } else if (src != dst) {
      std::memcpy(dst, src, n * sizeof(float));
    }
    return;
  }
  if (p.work == DataType::INT64) {
    const auto* s = static_cast<const int64_t*>(src);
    const auto div = static_cast<int64_t>(k);
    auto value = [&](size_t i) { return p.mean ? s[i] / div : s[i]; };
    if (type == DataType::INT32) {
      auto* d = static_cast<int32_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<int32_t>(value(i));
    } else if (type == DataType::UINT8) {
      auto* d = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(value(i));
    } else {
      auto* d = static_cast<int64_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = value(i);
    }
    return;
  }
  if (src != dst) std::memcpy(dst, src, n * dataTypeSize(type));
}

bool needsScratch(const Plan& p) {
  return p.convert || p.square;
}

// Calls f(offset, length) for the segments of `valid` elements.
template <typename F>
void forSegments(size_t valid, size_t segElems, F&& f) {
  for (size_t off = 0; off < valid; off += segElems) f(off, std::min(segElems, valid - off));
}

// The elements of shard j (shards of s elements) below n: s, fewer for the last, 0 past the end.
size_t shardValid(int j, size_t s, size_t n) {
  const size_t b = static_cast<size_t>(j) * s;
  return b < n ? std::min(s, n - b) : 0;
}

int mod(int a, int k) {
  return ((a % k) + k) % k;
}

// Ring reduce-scatter of `n` elements at `src` (k >= 2): after k-1 steps rank r holds shard r of
// the reduction in `dst` (s = ceil(n/k) elements; `zeroPad`: the elements past n are zeroed, else
// left alone). `dst` must not overlap `src`, or be this rank's shard of `src` (src + r*s: shard r
// of the input is read only at the last step, each element just before its sum is written). At step
// t rank r receives shard (r-t-2) mod k from its left neighbour, reduces it with its own input and
// forwards the result to its right neighbour (its step t+1), segment by segment: transfers and
// reductions overlap, and segments pass through a small window of buffers that stays in cache.
// Each rank sends and receives (k-1)/k of the buffer: half the traffic of an all-reduce.
// (Longer than 80 lines: the pipeline's receive and reduce windows are one state machine, clearer
// read whole than split across helpers sharing a dozen locals.)
void ringReduceScatter(const Exchange& x, size_t es, const ReduceFn& fn, const char* src, char* dst,
                       size_t n, bool zeroPad) {
  const auto& ctx = x.context;
  const int k = ctx->size;
  const int r = ctx->rank;
  const size_t s = shardCount(n, static_cast<size_t>(k));
  auto valid = [&](int j) { return shardValid(j, s, n); };
  if (s == 0) return;
  const int right = mod(r + 1, k);
  const int left = mod(r - 1, k);
  const int steps = k - 1;
  const size_t segElems = std::max<size_t>(1, std::min(kSegmentBytes / es, s));
  const size_t segBytes = segElems * es;
  const uint64_t slot = ringSlot(x.seq);

  // The segments this rank receives, in order (step by step).
  struct Item {
    int step;
    int shard;
    size_t off;
    size_t len;
  };
  std::vector<Item> items;
  for (int t = 0; t < steps; ++t) {
    const int j = mod(r - t - 2, k);
    forSegments(valid(j), segElems, [&](size_t off, size_t len) {
      items.push_back({t, j, off, len});
    });
  }
  // Receives go through a window of segment buffers (reused as soon as a segment is reduced, so
  // they stay in cache); the partial reductions forwarded at step t+1 go to red[t & 1], a whole
  // shard each, so a rank never waits for a send within a step (waiting there can deadlock the
  // ring): it waits for the sends of step t-1 only before rewriting red[t & 1] at step t+1.
  const size_t window = kWindow;
  const size_t shardBytes = s * es;
  char* recvWin =
      x.scratch->get(Scratch::kRing, window * segBytes + (steps > 1 ? 2 * shardBytes : 0));
  char* redMem[2] = {recvWin + window * segBytes, recvWin + window * segBytes + shardBytes};
  TrackedBuffer recvUb(x, recvWin, window * segBytes);
  std::unique_ptr<TrackedBuffer> redUb[2];
  if (steps > 1) {
    redUb[0] = std::make_unique<TrackedBuffer>(x, redMem[0], shardBytes);
    redUb[1] = std::make_unique<TrackedBuffer>(x, redMem[1], shardBytes);
  }
  TrackedBuffer srcUb(x, src, n * es);

  size_t posted = 0;
  auto postUpTo = [&](size_t limit) {
    for (; posted < std::min(limit, items.size()); ++posted) {
      recvUb->recv(left, slot, (posted % window) * segBytes, items[posted].len * es);
    }
  };
  postUpTo(window);
  size_t pendingSrc = 0;
  const int first = mod(r - 1, k);
  forSegments(valid(first), segElems, [&](size_t off, size_t len) {
    srcUb->send(right, slot, (static_cast<size_t>(first) * s + off) * es, len * es);
    ++pendingSrc;
  });
  size_t pendingRed[2] = {0, 0};
  int step = -1;
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    const bool last = it.step == steps - 1;
    if (it.step != step) {
      step = it.step;
      // red[step & 1] was the source of the sends of step `step - 1`.
      if (!last && step >= 2) redUb[step & 1]->waitSends(pendingRed[step & 1]);
    }
    recvUb.waitRecv();
    const char* in = recvWin + (i % window) * segBytes;
    const char* own = src + (static_cast<size_t>(it.shard) * s + it.off) * es;
    if (last) {
      fn(dst + it.off * es, in, own, it.len);
    } else {
      fn(redMem[step & 1] + it.off * es, in, own, it.len);
      (*redUb[step & 1])->send(right, slot, it.off * es, it.len * es);
      ++pendingRed[step & 1];
    }
    postUpTo(i + 1 + window);  // item i's receive buffer is free again
  }
  srcUb.waitSends(pendingSrc);
  if (steps > 1) {
    redUb[0]->waitSends(pendingRed[0]);
    redUb[1]->waitSends(pendingRed[1]);
  }
  const size_t v = valid(r);
  if (zeroPad && v < s) std::memset(dst + v * es, 0, (s - v) * es);
}

// Ring all-gather straight into the output (the last shards may be short or empty): at step t rank
// r forwards shard (r-t) mod k to its right neighbour as its segments arrive. `in` is this rank's
// shard: anywhere outside `out`, at the start of `out` (in place) or already at out + r*s.
void ringAllGather(const Exchange& x, size_t es, const char* in, char* out, size_t n) {
  const auto& ctx = x.context;
  const int k = ctx->size;
  const int r = ctx->rank;
  const size_t s = shardCount(n, static_cast<size_t>(k));
  auto valid = [&](int j) { return shardValid(j, s, n); };
  const int right = mod(r + 1, k);
  const int left = mod(r - 1, k);
  const size_t segElems = std::max<size_t>(1, kSegmentBytes / es);
  const uint64_t slot = gatherSlot(x.seq);
  const size_t own = valid(r);
  char* ownAt = out + static_cast<size_t>(r) * s * es;
  // In place the shard is at the start; r*s >= s >= own, so the copy never overlaps.
  if (own > 0 && ownAt != in) std::memcpy(ownAt, in, own * es);
  TrackedBuffer outUb(x, out, n * es);
  for (int t = 0; t < k - 1; ++t) {
    const int j = mod(r - t - 1, k);
    forSegments(valid(j), segElems, [&](size_t off, size_t len) {
      outUb->recv(left, slot, (static_cast<size_t>(j) * s + off) * es, len * es);
    });
  }
  size_t pending = 0;
  forSegments(own, segElems, [&](size_t off, size_t len) {
    outUb->send(right, slot, (static_cast<size_t>(r) * s + off) * es, len * es);
    ++pending;
  });
  for (int t = 0; t < k - 1; ++t) {
    const int j = mod(r - t - 1, k);
    forSegments(valid(j), segElems, [&](size_t off, size_t len) {
      outUb.waitRecv();
      if (t + 1 < k - 1) {
        outUb->send(right, slot, (static_cast<size_t>(j) * s + off) * es, len * es);
        ++pending;
      }
    });
  }
  outUb.waitSends(pending);
}

// Pipelined binomial tree from `root` (k >= 2): rank v (relative to the root) receives from
// v - lowbit(v) and forwards every segment, as it arrives, to v + m for m = lowbit(v)/2, ..., 1
// (the root: m from the largest power of two below k), larger subtrees first.
void treeBroadcast(const Exchange& x, int root, const char* in, char* out, size_t bytes) {
  const auto& ctx = x.context;
  const int k = ctx->size;
  const int v = mod(ctx->rank - root, k);
  int low = 1;
  while (low < k && (v & low) == 0) low <<= 1;
  std::vector<int> children;
  for (int m = low >> 1; m >= 1; m >>= 1) {
    if (v + m < k) children.push_back(mod(v + m + root, k));
  }
  const uint64_t slot = broadcastSlot(x.seq);
  size_t pending = 0;
  if (v == 0) {
    TrackedBuffer inUb(x, in, bytes);
    forSegments(bytes, kSegmentBytes, [&](size_t off, size_t len) {
      for (int c : children) {
        inUb->send(c, slot, off, len);
        ++pending;
      }
    });
    if (in != out) std::memcpy(out, in, bytes);  // while the sends are in flight
    inUb.waitSends(pending);
    return;
  }
  const int parent = mod(v - low + root, k);
  TrackedBuffer outUb(x, out, bytes);
  forSegments(bytes, kSegmentBytes,
              [&](size_t off, size_t len) { outUb->recv(parent, slot, off, len); });
  forSegments(bytes, kSegmentBytes, [&](size_t off, size_t len) {
    outUb.waitRecv();
    for (int c : children) {
      outUb->send(c, slot, off, len);
      ++pending;
    }
  });
  outUb.waitSends(pending);
}

}  // namespace

void allReduce(const Exchange& x, DataType type, CollectiveOperator op, const void* input,
               void* output, size_t count) {
  if (count == 0) return;
  const int k = x.context ? x.context->size : 1;
  if (op == Op::Local || k == 1) {
    if (op == Op::Local) {
      if (input != output) std::memcpy(output, input, count * dataTypeSize(type));
    } else {
      void* dsts[1] = {output};
      reduceInto(type, op, &input, 1, dsts, 1, count);
    }
    return;
  }
  // Ring reduce-scatter straight into this rank's shard (of the output, or of the work buffer in
  // the work type), then ring all-gather of the shards in the output's type.
  const Plan p = planFor(type, op);
  const size_t wes = dataTypeSize(p.work);
  const size_t es = dataTypeSize(type);
  const ReduceFn fn = pairwise(p.work, p.core);
  const int r = x.context->rank;
  const size_t s = shardCount(count, static_cast<size_t>(k));
  const size_t begin = std::min(count, static_cast<size_t>(r) * s);
  const size_t own = std::min(s, count - begin);
  char* out = static_cast<char*>(output);
  char* ownOut = out + begin * es;
  if (!needsScratch(p)) {
    // In place the reduce-scatter's destination is its own input shard; otherwise the buffers do
    // not overlap.
    ringReduceScatter(x, wes, fn, static_cast<const char*>(input), ownOut, count, false);
    if (p.mean) fromWork(p, type, k, ownOut, ownOut, own);
  } else {
    char* work = x.scratch->get(Scratch::kWork, count * wes);
    toWork(p, type, input, work, count);
    char* ownWork = work + begin * wes;
    ringReduceScatter(x, wes, fn, work, ownWork, count, false);
    fromWork(p, type, k, ownWork, ownOut, own);
  }
  ringAllGather(x, es, ownOut, out, count);
}

size_t inlineCapacity(int k) {
  if (k < 2) return 0;
  // 64 KiB per message, less in large groups so that the receives of one exchange stay near 1 MiB.
  constexpr size_t kMaxBytes = size_t{64} << 10;
  constexpr size_t kTotalBytes = size_t{1} << 20;
  const size_t cap = std::min(kMaxBytes, kTotalBytes / static_cast<size_t>(k - 1));
  return cap & ~size_t{63};
}

void reduceInputs(Scratch& scratch, DataType type, CollectiveOperator op, const void* const* inputs,
                  int k, void* output, size_t count) {
  if (count == 0) return;
  const Plan p = planFor(type, op);
  const size_t wes = dataTypeSize(p.work);
  const ReduceFn fn = pairwise(p.work, p.core);
  const bool convert = needsScratch(p);
  char* acc = scratch.get(Scratch::kWork, count * wes);
  char* tmp = convert ? scratch.get(Scratch::kShard, count * wes) : nullptr;
  if (convert) {
    toWork(p, type, inputs[0], acc, count);
  } else {
    std::memcpy(acc, inputs[0], count * wes);
  }
  for (int i = 1; i < k; ++i) {
    const void* in = inputs[i];
    if (convert) {
      toWork(p, type, in, tmp, count);
      in = tmp;
    }
    fn(acc, acc, in, count);
  }
  fromWork(p, type, k, acc, output, count);
}

void reduceScatter(const Exchange& x, DataType type, CollectiveOperator op, const void* input,
                   void* output, size_t count) {
  const int k = x.context ? x.context->size : 1;
  const int r = x.context ? x.context->rank : 0;
  const size_t es = dataTypeSize(type);
  const size_t s = shardCount(count, static_cast<size_t>(k));
  if (s == 0) return;
  if (op == Op::Local) {
    const size_t begin = static_cast<size_t>(r) * s;
    const size_t v = begin < count ? std::min(s, count - begin) : 0;
    if (v > 0) std::memmove(output, static_cast<const char*>(input) + begin * es, v * es);
    if (v < s) std::memset(static_cast<char*>(output) + v * es, 0, (s - v) * es);
    return;
  }
  if (k == 1) {  // s == count: no padding
    void* dsts[1] = {output};
    reduceInto(type, op, &input, 1, dsts, 1, count);
    return;
  }
  const Plan p = planFor(type, op);
  const size_t wes = dataTypeSize(p.work);
  const ReduceFn fn = pairwise(p.work, p.core);
  const char* src = static_cast<const char*>(input);
  if (needsScratch(p)) {
    char* work = x.scratch->get(Scratch::kWork, count * wes);
    toWork(p, type, input, work, count);
    src = work;
  }
  // The ring's destination must not overlap its source: in place (output is the input's start) or
  // in another type, it reduces into a private shard first.
  const bool direct = !p.convert && static_cast<const void*>(src) != output;
  char* dst = direct ? static_cast<char*>(output) : x.scratch->get(Scratch::kShard, s * wes);
  ringReduceScatter(x, wes, fn, src, dst, count, true);
  if (!direct || p.mean) fromWork(p, type, k, dst, output, s);
}

void allGather(const Exchange& x, size_t elementSize, const void* input, void* output,
               size_t count) {
  if (count == 0) return;
  const int k = x.context ? x.context->size : 1;
  auto* out = static_cast<char*>(output);
  const auto* in = static_cast<const char*>(input);
  if (k == 1) {
    if (in != out) std::memcpy(out, in, count * elementSize);
    return;
  }
  ringAllGather(x, elementSize, in, out, count);
}

void broadcast(const Exchange& x, size_t elementSize, int root, const void* input, void* output,
               size_t count) {
  if (count == 0) return;
  const int k = x.context ? x.context->size : 1;
  const size_t bytes = count * elementSize;
  if (k == 1) {
    if (input != output) std::memcpy(output, input, bytes);
    return;
  }
  treeBroadcast(x, root, static_cast<const char*>(input), static_cast<char*>(output), bytes);
}

}  // namespace xtrain::comm::gloo
