// The oneDNN context shared by the kernels in src/device/kernels/, and small helpers around it.
//
// Contract:
//  - One CPU engine per process, created on first use (thread-safe) and released at exit.
//  - One stream per thread: Program::run may execute the same kernel from several replica threads
//    at once, and a stream must not be shared by concurrently executing threads. CPU streams are
//    cheap; each thread creates its own on first use.
//  - Primitives are created in kernel factories (shapes are static); the hot path only executes.
//    Every primitive is created with scratchpad_mode::user and gets its scratchpad from per-thread
//    scratch memory: oneDNN's library-managed scratchpad is shared by all primitives and only safe
//    when a primitive runs on the thread that created it, which replicas do not guarantee.
//  - Memory objects wrapping a run's buffers are created per run (they wrap the caller's pointers,
//    no data is allocated), so a kernel keeps no per-run state and may run concurrently.
//  - Buffers are always in plain row-major layouts (ab, abc, nchw, oihw, goihw, ...). Primitives
//    that run much faster on blocked layouts (convolutions) go through PrimitiveRunner, which
//    reorders into per-thread scratch with reorder primitives created in the factory.
//  - oneDNN's exceptions (dnnl::error) never escape: factories turn them into spec.fail (create()),
//    execute() into xtrain::error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device/kernel.hpp"

#pragma GCC visibility push(default)

namespace xtrain::device::dnnl_util {

const dnnl::engine& engine();
// The calling thread's stream on engine().
dnnl::stream& stream();

// Dims of a plain row-major tensor of the given shape.
dnnl::memory::dims toDims(const Shape& shape);
// A plain row-major (dense, C order) descriptor of FLOAT elements.
dnnl::memory::desc plainDesc(const Shape& shape);
// A FLOAT descriptor with explicit strides (in elements), e.g. a transposed view.
dnnl::memory::desc stridedDesc(const Shape& dims, const Shape& strides);

// Wraps a caller-owned buffer (no copy). oneDNN takes a non-const handle even for read-only inputs.
inline dnnl::memory wrap(const dnnl::memory::desc& md, const void* data) {
  return dnnl::memory(md, engine(), const_cast<void*>(data));
}

// Bytes rounded up to a multiple of 64, for carving aligned regions out of scratch memory.
inline size_t round64(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// Per-thread scratch memory, 64-byte aligned, at least `bytes` long; valid until the next call on
// the same thread (kernels on one thread run one after another, each calls this once per run).
// Grows, never shrinks; contents are not kept.
std::byte* threadScratch(size_t bytes);

// The attributes every primitive is created with: the caller provides the scratchpad.
dnnl::primitive_attr userScratchpadAttr();

// A primitive and the scratchpad it needs.
struct Primitive {
  dnnl::primitive prim;
  dnnl::memory::desc scratchpad;
  size_t scratchpadBytes() const { return scratchpad.get_size(); }
};

// P is the primitive type of the descriptor pd (created with userScratchpadAttr()).
template <typename P, typename PD>
Primitive makePrimitive(const PD& pd) {
  return Primitive{P(pd), pd.scratchpad_desc()};
}

// Runs a primitive on the calling thread's stream and waits for it. `scratchpad` holds at least
// prim.scratchpadBytes() (may be null when that is 0). dnnl::error becomes xtrain::error.
void execute(const Primitive& prim, std::unordered_map<int, dnnl::memory> args,
             std::byte* scratchpad);

// Runs a primitive whose implementation may want blocked layouts (created with format_tag::any) on
// the caller's plain buffers: inputs the primitive wants blocked are reordered into per-thread
// scratch before it runs, outputs reordered back after. The reorders are created once, in add();
// run() only executes.
class PrimitiveRunner {
 public:
  // Registers argument `arg` (DNNL_ARG_*) in call order: `plain` is the caller's layout, `chosen`
  // the one the primitive descriptor asks for.
  void add(int arg, const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen, bool output);
  void setPrimitive(Primitive prim);
  // One buffer per added argument, in the order added.
  void run(std::initializer_list<const void*> buffers) const;

 private:
  struct Arg {
    int id;
    dnnl::memory::desc plain, chosen;
    bool output;
    bool reorder;
    Primitive prim;  // plain -> chosen for inputs, chosen -> plain for outputs
    size_t offset;   // of the blocked copy in the scratch
  };
  std::vector<Arg> args_;
  Primitive prim_;
  size_t blockedBytes_ = 0;     // blocked copies, at the start of the scratch
  size_t scratchpadBytes_ = 0;  // largest scratchpad of the primitive and the reorders, after them
};

// Calls make() (which builds descriptors and primitives) and turns a dnnl::error into spec.fail
// naming what was being created.
template <typename F>
auto create(const KernelSpec& spec, const char* what, F&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const dnnl::error& e) {
    spec.fail("oneDNN could not create the {} primitive: {} (status {})", what, e.what(),
              static_cast<int>(e.status));
  }
}

// Spatial geometry of a convolution or pooling over the trailing dimensions of an
// [N, C, spatial...] tensor, in the conventions oneDNN wants (dilation 0 = dense; right padding
// chosen so that oneDNN's output-size formula reproduces the output shape, which may come from
// ceil_mode).
struct Window {
  int64_t nd = 0;                             // number of spatial dims
  Shape in, out, kernel, strides, dilations;  // dilations in ONNX convention (1 = dense)
  Shape padBegin, padEnd;                     // ONNX pads
  Shape dnnlPadEnd;                           // right padding for oneDNN

  dnnl::memory::dims dnnlStrides() const { return {strides.begin(), strides.end()}; }
  dnnl::memory::dims dnnlKernel() const { return {kernel.begin(), kernel.end()}; }
  dnnl::memory::dims dnnlDilations() const;
  dnnl::memory::dims dnnlPadBegin() const { return {padBegin.begin(), padBegin.end()}; }
  dnnl::memory::dims dnnlPadEndDims() const { return {dnnlPadEnd.begin(), dnnlPadEnd.end()}; }
};

// Reads kernel_shape (or `kernelFromWeights` when non-empty), strides, pads and dilations (defaults
// 1/0) from the canonical attributes; `x` and `y` are the [N, C, spatial...] input and output
// shapes.
Window makeWindow(const KernelSpec& spec, const Shape& x, const Shape& y,
                  const Shape& kernelFromWeights = {});

}  // namespace xtrain::device::dnnl_util

#pragma GCC visibility pop
