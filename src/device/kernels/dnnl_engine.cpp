#include "device/kernels/dnnl_engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <tuple>

#include "common/check.hpp"

namespace xtrain::device::dnnl_util {

namespace {

// Owns the process-wide engine. A function-local static: created on first use, thread-safe,
// destroyed after every thread_local stream of the main thread.
class Context {
 public:
  static Context& instance() {
    static Context context;
    return context;
  }
  const dnnl::engine& engine() const { return engine_; }

 private:
  Context() : engine_(dnnl::engine::kind::cpu, 0) {}
  dnnl::engine engine_;
};

}  // namespace

const dnnl::engine& engine() {
  return Context::instance().engine();
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory::dims toDims(const Shape& shape) {
  return {shape.begin(), shape.end()};
}

dnnl::memory::desc plainDesc(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) {
    strides[i - 1] = strides[i] * std::max<int64_t>(shape[i], 1);
  }
  return stridedDesc(shape, strides);
}

dnnl::memory::desc stridedDesc(const Shape& dims, const Shape& strides) {
  return dnnl::memory::desc(toDims(dims), dnnl::memory::data_type::f32, toDims(strides));
}

std::byte* threadScratch(size_t bytes) {
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<std::byte[], Free> buffer;
  thread_local size_t capacity = 0;
  if (bytes > capacity) {
    const size_t rounded = round64(bytes);
    buffer.reset(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
    capacity = buffer ? rounded : 0;
    if (!buffer) {
      throw error("could not allocate {} bytes of oneDNN scratch memory", rounded);
    }
  }
  return buffer.get();
}

dnnl::primitive_attr userScratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute(const Primitive& prim, std::unordered_map<int, dnnl::memory> args,
             std::byte* scratchpad) {
  try {
    if (prim.scratchpadBytes() > 0) {
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(prim.scratchpad, engine(), scratchpad));
    }
    dnnl::stream& s = stream();
    prim.prim.execute(s, args);
    s.wait();
  } catch (const dnnl::error& e) {
    throw error("oneDNN primitive failed: {} (status {})", e.what(), static_cast<int>(e.status));
  }
}

void PrimitiveRunner::add(int arg, const dnnl::memory::desc& plain,
                          const dnnl::memory::desc& chosen, bool output) {
  Arg a{arg, plain, chosen, output, plain != chosen, {}, 0};
  if (a.reorder) {
    a.offset = blockedBytes_;
    blockedBytes_ += round64(chosen.get_size());
    const dnnl::memory::desc& from = output ? chosen : plain;
    const dnnl::memory::desc& to = output ? plain : chosen;
    a.prim = makePrimitive<dnnl::reorder>(
        dnnl::reorder::primitive_desc(engine(), from, engine(), to, userScratchpadAttr()));
    scratchpadBytes_ = std::max(scratchpadBytes_, a.prim.scratchpadBytes());
  }
  args_.push_back(std::move(a));
}

void PrimitiveRunner::setPrimitive(Primitive prim) {
  scratchpadBytes_ = std::max(scratchpadBytes_, prim.scratchpadBytes());
  prim_ = std::move(prim);
}

void PrimitiveRunner::run(std::initializer_list<const void*> buffers) const {
  XT_CHECK_EQ(buffers.size(), args_.size(), "PrimitiveRunner::run");
  std::byte* scratch = threadScratch(blockedBytes_ + scratchpadBytes_);
  std::byte* scratchpad = scratch + blockedBytes_;
  std::unordered_map<int, dnnl::memory> args;
  // Outputs to copy back after the primitive: (user memory, blocked memory, reorder).
  std::vector<std::tuple<dnnl::memory, dnnl::memory, const Primitive*>> outputs;
  size_t i = 0;
  for (const void* buffer : buffers) {
    const Arg& a = args_[i++];
    dnnl::memory user = wrap(a.plain, buffer);
    if (!a.reorder) {
      args.emplace(a.id, std::move(user));
      continue;
    }
    dnnl::memory blocked(a.chosen, engine(), scratch + a.offset);
    if (a.output) {
      outputs.emplace_back(user, blocked, &a.prim);
    } else {
      execute(a.prim, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, blocked}}, scratchpad);
    }
    args.emplace(a.id, std::move(blocked));
  }
  execute(prim_, std::move(args), scratchpad);
  for (const auto& [user, blocked, reorder] : outputs) {
    execute(*reorder, {{DNNL_ARG_FROM, blocked}, {DNNL_ARG_TO, user}}, scratchpad);
  }
}

dnnl::memory::dims Window::dnnlDilations() const {
  dnnl::memory::dims d;
  for (int64_t v : dilations) {
    d.push_back(v - 1);
  }
  return d;
}

Window makeWindow(const KernelSpec& spec, const Shape& x, const Shape& y,
                  const Shape& kernelFromWeights) {
  XT_CHECK_EQ(x.size(), y.size(), "{}", spec.description);
  XT_CHECK_GE(x.size(), 3u, "{}", spec.description);
  Window w;
  w.nd = static_cast<int64_t>(x.size()) - 2;
  const size_t nd = static_cast<size_t>(w.nd);
  w.in.assign(x.begin() + 2, x.end());
  w.out.assign(y.begin() + 2, y.end());
  w.kernel = kernelFromWeights.empty() ? spec.attrs.getInts("kernel_shape") : kernelFromWeights;
  w.strides = spec.attrs.getInts("strides", Shape(nd, 1));
  w.dilations = spec.attrs.getInts("dilations", Shape(nd, 1));
  const Shape pads = spec.attrs.getInts("pads", Shape(2 * nd, 0));
  if (w.kernel.size() != nd || w.strides.size() != nd || w.dilations.size() != nd ||
      pads.size() != 2 * nd) {
    spec.fail(
        "kernel_shape, strides, dilations and pads must have {}, {}, {} and {} values for input {}",
        nd, nd, nd, 2 * nd, shapeToString(x));
  }
  w.padBegin.assign(pads.begin(), pads.begin() + w.nd);
  w.padEnd.assign(pads.begin() + w.nd, pads.end());
  for (size_t i = 0; i < nd; ++i) {
    const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    // The last window ends at (out-1)*stride + extent; whatever lies beyond the input is padding.
    // Any value in [tight, tight + stride - 1] gives the same output size in oneDNN's floor
    // formula, and tight + stride - 1 >= 0 for every valid output size, so clamping at 0 is safe.
    const int64_t tight = (w.out[i] - 1) * w.strides[i] + extent - w.in[i] - w.padBegin[i];
    w.dnnlPadEnd.push_back(std::max<int64_t>(tight, 0));
  }
  return w;
}

}  // namespace xtrain::device::dnnl_util
