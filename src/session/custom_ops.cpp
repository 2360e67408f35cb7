// The bridge from the public custom-op API (include/xtrain/customop.hpp) to the internal
// registries: an OpDef in the ir's OpRegistry (shape inference, gradient), a kernel factory in the
// device's KernelRegistry, and an ONNX schema (checker, Builder shape inference). Lives in the
// session module, which sees both ir and device.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>

#include "device/kernel.hpp"
#include "ir/onnx/custom_schemas.hpp"
#include "ir/op_registry.hpp"
#include "xtrain/customop.hpp"

namespace xtrain {

namespace {

const std::set<std::string>& reservedDomains() {
  static const std::set<std::string> domains = {"",
                                                ir::kOnnxDomain,
                                                "ai.onnx.ml",
                                                "ai.xtrain",
                                                ir::kGraphcoreDomain,
                                                "ai.onnx.training",
                                                "ai.onnx.preview.training"};
  return domains;
}

// Inputs as the user's functions see them: one entry per input the op can have (maxInputs), so
// that trailing absent optional inputs are there as unset infos (null buffers); a variadic op's
// entries are the node's inputs.
size_t paddedInputCount(const CustomOpDefinition& def, size_t nodeInputs) {
  return def.maxInputs < 0 ? nodeInputs : std::max(nodeInputs, static_cast<size_t>(def.maxInputs));
}

std::vector<TensorInfo> callInfer(const CustomOpDefinition& def, std::vector<TensorInfo> in,
                                  const CustomOpAttributes& attrs) {
  in.resize(paddedInputCount(def, in.size()));
  std::vector<TensorInfo> out = def.inferShapes(in, attrs);
  if (out.size() != static_cast<size_t>(def.numOutputs)) {
    throw error("its shape function returned {} output infos; the op has {} outputs", out.size(),
                def.numOutputs);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].isSet()) throw error("its shape function left the type of output {} unset", i);
  }
  return out;
}

class GradBuilder final : public CustomOpGradBuilder {
 public:
  GradBuilder(const CustomOpDefinition& def, ir::GradContext& ctx)
      : ctx_(ctx),
        attrs_(ctx.attrs().all()),
        numInputs_(paddedInputCount(def, ctx.op().inputs.size())) {}

  size_t numInputs() const override { return numInputs_; }
  size_t numOutputs() const override { return ctx_.op().outputs.size(); }
  // "" for an absent optional input.
  TensorId input(size_t i) const override {
    checkIndex(i, numInputs_, "input");
    return ctx_.op().hasInput(i) ? ctx_.op().inputs[i] : TensorId();
  }
  TensorId output(size_t i) const override {
    checkIndex(i, numOutputs(), "output");
    return ctx_.op().outputs[i];
  }
  TensorInfo inputInfo(size_t i) const override {
    checkIndex(i, numInputs_, "input");
    return ctx_.op().hasInput(i) ? ctx_.inputInfo(i) : TensorInfo();
  }
  TensorInfo outputInfo(size_t i) const override {
    checkIndex(i, numOutputs(), "output");
    return ctx_.op().hasOutput(i) ? ctx_.outputInfo(i) : TensorInfo();
  }
  const CustomOpAttributes& attributes() const override { return attrs_; }
  bool needsGrad(size_t i) const override { return ctx_.needsGrad(i); }
  TensorId gradOut(size_t i) override {
    checkIndex(i, numOutputs(), "output");
    return ctx_.gradOutOrZeros(i);
  }

  std::vector<TensorId> op(const std::string& domain, const std::string& type,
                           const std::vector<TensorId>& inputs, unsigned numOutputs,
                           const CustomOpAttributes& attributes) override {
    Attributes a;
    for (const auto& [name, value] : attributes) a.set(name, value);
    const std::string d = domain.empty() ? std::string(ir::kOnnxDomain) : domain;
    return ctx_.emitMulti(type, inputs, static_cast<int>(numOutputs), std::move(a), d);
  }
  TensorId constant(const std::vector<float>& values, const Shape& shape) override {
    if (static_cast<int64_t>(values.size()) != shapeNelms(shape)) {
      throw error("{}: gradient constant of shape {} given {} values", ctx_.op().describe(),
                  shapeToString(shape), values.size());
    }
    HostTensor t(TensorInfo(DataType::FLOAT, shape));
    std::copy(values.begin(), values.end(), t.data<float>());
    return ctx_.constant(std::move(t), ctx_.op().outputs.at(0) + "_grad_const");
  }
  void setGradIn(size_t i, const TensorId& g) override {
    checkIndex(i, numInputs_, "input");
    if (ctx_.needsGrad(i)) ctx_.setGradIn(i, g);
  }

 private:
  void checkIndex(size_t i, size_t n, const char* what) const {
    if (i >= n) {
      throw error("{}: the gradient function asked for {} {}; the node has {}",
                  ctx_.op().describe(), what, i, n);
    }
  }

  ir::GradContext& ctx_;
  CustomOpAttributes attrs_;
  size_t numInputs_;
};

class CustomKernel final : public device::Kernel {
 public:
  CustomKernel(CustomOpKernel run, CustomOpKernelArgs args, std::string description)
      : run_(std::move(run)), args_(std::move(args)), description_(std::move(description)) {}
  void run(const device::KernelIO& io) override {
    for (size_t i = 0; i < args_.inputs.size(); ++i) {
      args_.inputs[i] = io.hasIn(i) ? io.in(i).raw() : nullptr;
    }
    for (size_t i = 0; i < args_.outputs.size(); ++i) {
      args_.outputs[i] = io.hasOut(i) ? io.out(i).raw() : nullptr;
    }
    args_.seed = io.seed;
    try {
      run_(args_);
    } catch (const error&) {
      throw;
    } catch (const std::exception& e) {
      throw error("{}: the custom op's kernel failed: {}", description_, e.what());
    }
  }

 private:
  CustomOpKernel run_;
  CustomOpKernelArgs args_;
  std::string description_;
};

}  // namespace

bool isCustomOpRegistered(const std::string& domain, const std::string& type) {
  return !reservedDomains().count(domain) &&
         ir::OpRegistry::instance().find(domain, type) != nullptr;
}

namespace {

// Throws naming the custom op and what is wrong with its definition, or that it exists already.
void checkDefinition(const CustomOpDefinition& d) {
  const std::string name = d.id.domain + "::" + d.id.type;
  if (d.id.type.empty()) throw error("registerCustomOp: the op type must not be empty");
  if (reservedDomains().count(d.id.domain)) {
    throw error(
        "registerCustomOp: custom op {}: domain '{}' belongs to ONNX or xtrain; give custom ops a "
        "domain of their own (e.g. \"com.acme\")",
        name, d.id.domain);
  }
  if (d.id.version < 1) {
    throw error("registerCustomOp: custom op {}: version {}; versions start at 1", name,
                d.id.version);
  }
  if (!d.inferShapes) {
    throw error("registerCustomOp: custom op {} has no shape function (inferShapes)", name);
  }
  if (!d.kernel) {
    throw error("registerCustomOp: custom op {} has no kernel factory (kernel)", name);
  }
  if (d.minInputs < 0 || (d.maxInputs >= 0 && d.maxInputs < d.minInputs) || d.numOutputs < 1) {
    throw error(
        "registerCustomOp: custom op {}: inputs {} to {} and {} outputs; expected 0 <= minInputs "
        "<= maxInputs (or maxInputs -1) and numOutputs >= 1",
        name, d.minInputs, d.maxInputs, d.numOutputs);
  }
  if (ir::OpRegistry::instance().find(d.id.domain, d.id.type) != nullptr ||
      device::KernelRegistry::instance().has(d.id.domain, d.id.type)) {
    throw error("registerCustomOp: custom op {} is already registered", name);
  }
}

// The ONNX schema, so that ONNX's checker and the Builder's shape inference know the node.
void registerSchema(const std::shared_ptr<const CustomOpDefinition>& def) {
  ir::onnxutil::CustomSchemaSpec schema;
  schema.domain = def->id.domain;
  schema.type = def->id.type;
  schema.version = def->id.version;
  schema.minInputs = def->minInputs;
  schema.maxInputs = def->maxInputs;
  schema.numOutputs = def->numOutputs;
  schema.attributeNames = def->attributeNames;
  schema.infer = [def](const std::vector<TensorInfo>& in, const Attributes& attrs) {
    return callInfer(*def, in, attrs.all());
  };
  ir::onnxutil::registerCustomSchema(schema);
}

// The IR's OpDef: canonicalisation (the opset), shape inference and the gradient, from the user's
// functions.
void registerOpDef(const std::shared_ptr<const CustomOpDefinition>& def) {
  ir::OpDef op;
  op.type = def->id.type;
  op.domain = def->id.domain;
  op.minInputs = def->minInputs;
  op.maxInputs = def->maxInputs;
  op.minOutputs = def->numOutputs;
  op.maxOutputs = def->numOutputs;
  op.canonicalize = [def](ir::Op& o, const ir::Graph&) {
    if (o.opset != 0 && o.opset < def->id.version) {
      throw error(
          "{}: custom op {} exists since version {} of domain '{}'; the model imports that "
          "domain at opset {}",
          o.describe(), def->id.toString(), def->id.version, def->id.domain, o.opset);
    }
  };
  op.infer = [def](const ir::ShapeContext& ctx) {
    std::vector<TensorInfo> in(ctx.numInputs());
    for (size_t i = 0; i < in.size(); ++i) {
      if (ctx.hasInput(i)) in[i] = ctx.input(i);
    }
    try {
      return callInfer(*def, in, ctx.attrs().all());
    } catch (const std::exception& e) {
      ctx.fail("{}", e.what());
    }
  };
  if (def->grad) {
    op.grad = [def](ir::GradContext& ctx) {
      GradBuilder builder(*def, ctx);
      try {
        def->grad(builder);
      } catch (const error&) {
        throw;
      } catch (const std::exception& e) {
        throw error("{}: the custom op's gradient function failed: {}", ctx.op().describe(),
                    e.what());
      }
    };
  }
  ir::OpRegistry::instance().add(std::move(op));
}

// The CPU kernel factory: the user's kernel with its arguments fixed at lowering. Called once per
// node (docs/custom-ops.md): the user's code reads the thread count, if at all, when it runs.
void registerKernel(const std::shared_ptr<const CustomOpDefinition>& def) {
  device::KernelRegistry::instance().add(
      def->id.domain, def->id.type,
      [def](const device::KernelSpec& spec) -> std::unique_ptr<device::Kernel> {
        auto isHalf = [](const TensorInfo& t) { return t.dataType() == DataType::FLOAT16; };
        if (!def->supportsFloat16 &&
            (std::any_of(spec.inputs.begin(), spec.inputs.end(), isHalf) ||
             std::any_of(spec.outputs.begin(), spec.outputs.end(), isHalf))) {
          spec.fail("the custom op's kernel takes no FLOAT16 (it runs promoted to FLOAT)");
        }
        CustomOpKernelArgs args;
        const size_t numInputs = paddedInputCount(*def, spec.inputs.size());
        args.inputs.assign(numInputs, nullptr);
        args.outputs.assign(spec.outputs.size(), nullptr);
        args.inputInfos = spec.inputs;
        args.inputInfos.resize(numInputs);
        args.outputInfos = spec.outputs;
        args.attributes = spec.attrs.all();
        CustomOpKernel run;
        try {
          run = def->kernel(args.inputInfos, args.outputInfos, args.attributes);
        } catch (const std::exception& e) {
          spec.fail("{}", e.what());
        }
        if (!run) spec.fail("the custom op's kernel factory returned no kernel");
        return std::make_unique<CustomKernel>(std::move(run), std::move(args), spec.description);
      },
      device::KernelThreadCount::ReadWhenRun);
}

}  // namespace

void registerCustomOp(CustomOpDefinition definition) {
  auto def = std::make_shared<const CustomOpDefinition>(std::move(definition));
  checkDefinition(*def);
  registerSchema(def);
  registerOpDef(def);
  registerKernel(def);
}

CustomOpRegistrar::CustomOpRegistrar(CustomOpDefinition definition) {
  try {
    registerCustomOp(std::move(definition));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xtrain: %s\n", e.what());
    std::abort();
  }
}

}  // namespace xtrain
