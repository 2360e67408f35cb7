#include "session/step_buffers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string_view>
#include <utility>

#include "common/check.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

Shape withPrefix(const std::vector<int64_t>& prefix, const Shape& shape) {
  Shape out;
  for (auto d : prefix) {
    if (d != 1) out.push_back(d);
  }
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

void checkHostBuffer(const char* what, const TensorId& id, const TensorInfo& expected,
                     const TensorInfo& given) {
  if (given.dataType() != expected.dataType() || given.nelms() != expected.nelms()) {
    throw error("{}: buffer for '{}' is {} ({} elements), expected {} ({} elements)", what, id,
                given.toString(), given.nelms(), expected.toString(), expected.nelms());
  }
}

namespace {

// PopART feeds an INT32 input from INT64 host data (NumPy's default integer), converting each
// element; any other difference of type is an error.
bool convertsTo(DataType given, DataType tensor) {
  return given == tensor || (given == DataType::INT64 && tensor == DataType::INT32);
}

// Copies n elements of host data of type `given` into a micro-batch of the tensor's type.
void copyInput(void* dst, const void* src, int64_t n, DataType given, const TensorInfo& tensor,
               const TensorId& id) {
  if (given == tensor.dataType() || given == DataType::UNDEFINED) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dataTypeSize(tensor.dataType()));
    return;
  }
  static std::once_flag warned;
  std::call_once(warned, [&] {
    logging::session::warn(
        "run: input '{}' is given as INT64 for an INT32 tensor: each element is converted (as "
        "PopART does; warned once)",
        id);
  });
  auto* out = static_cast<int32_t*>(dst);
  const auto* in = static_cast<const int64_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    if (in[i] < std::numeric_limits<int32_t>::min() ||
        in[i] > std::numeric_limits<int32_t>::max()) {
      throw error("run: input '{}' element {} is {}, which INT32 (the tensor's type) cannot hold",
                  id, i, in[i]);
    }
    out[i] = static_cast<int32_t>(in[i]);
  }
}

// The type of the data an IStepIO callback gave (the tensor's when the callback says none):
// checked as checkHostBuffer does, INT64 accepted for INT32.
DataType checkCallbackInput(const TensorId& id, const TensorInfo& tensor, const TensorInfo& given) {
  if (!given.isSet()) return tensor.dataType();
  const bool int64 = given.dataType() == DataType::INT64 && tensor.dataType() == DataType::INT32;
  checkHostBuffer("run (IStepIO::in)", id, tensor,
                  int64 ? TensorInfo(DataType::INT32, given.shape()) : given);
  return given.dataType();
}

TensorInfo arrayInfo(IArray& a) {
  return TensorInfo(a.dataType(), a.shape());
}

void checkStepBuffer(const char* role, const TensorId& id, const TensorInfo& tensor,
                     const Shape& expectedShape, const TensorInfo& given, const std::string& how) {
  const TensorInfo expected(tensor.dataType(), expectedShape);
  if (std::string_view(role) == "input" ? !convertsTo(given.dataType(), tensor.dataType())
                                        : given.dataType() != tensor.dataType()) {
    throw error("run: {} '{}' buffer holds {} but the tensor is {}", role, id,
                dataTypeName(given.dataType()), dataTypeName(tensor.dataType()));
  }
  if (given.shape() != expectedShape && given.nelms() != expected.nelms()) {
    throw error(
        "run: {} '{}' buffer has shape {} ({} elements), expected shape {} ({} elements) = {} + {}",
        role, id, shapeToString(given.shape()), given.nelms(), shapeToString(expectedShape),
        expected.nelms(), how, shapeToString(tensor.shape()));
  }
}

void addInto(unsigned char* dst, const HostTensor& src) {
  const int64_t n = src.nelms();
  if (src.dataType() == DataType::FLOAT) {
    float* d = reinterpret_cast<float*>(dst);
    const float* s = src.data<float>();
    for (int64_t i = 0; i < n; ++i) d[i] += s[i];
    return;
  }
  HostTensor acc(src.info());
  std::memcpy(acc.raw(), dst, src.nbytes());
  for (int64_t i = 0; i < n; ++i) acc.setFromDouble(i, acc.getAsDouble(i) + src.getAsDouble(i));
  std::memcpy(dst, acc.raw(), src.nbytes());
}

}  // namespace

StepBuffers::StepBuffers(const ir::Graph& graph, const DataFlow& dataFlow,
                         SyntheticDataMode synthetic, int64_t bps, int64_t af, int64_t replicas,
                         IStepIO& stepio, uint64_t seed, const std::set<TensorId>& broadcast,
                         const std::set<TensorId>& unused)
    : dataFlow_(dataFlow),
      synthetic_(synthetic),
      bps_(bps),
      af_(af),
      replicas_(replicas),
      stepio_(stepio),
      whole_(dynamic_cast<StepIO*>(&stepio)),
      seed_(seed) {
  const std::string inputHow = "[batchesPerStep, accumulationFactor, replicas]";
  for (const auto& id : graph.inputs()) {
    const ir::Tensor& t = graph.tensor(id);
    if (t.kind != ir::TensorKind::Stream) continue;
    inputIds_.push_back(id);
    Input in;
    in.info = t.info;
    in.broadcast = broadcast.count(id) != 0;
    if (synthetic_ == SyntheticDataMode::Off && whole_ != nullptr) {
      auto it = whole_->inputs().find(id);
      const Shape expected = in.broadcast ? withPrefix({bps, af}, t.info.shape())
                                          : withPrefix({bps, af, replicas}, t.info.shape());
      if (it == whole_->inputs().end()) {
        throw error("run: the StepIO has no buffer for input '{}' (expected {} of shape {})", id,
                    dataTypeName(t.info.dataType()), shapeToString(expected));
      }
      checkStepBuffer("input", id, t.info, expected, arrayInfo(it->second),
                      in.broadcast
                          ? "[batchesPerStep, accumulationFactor] (broadcast to the replicas)"
                          : inputHow);
      in.data = static_cast<unsigned char*>(it->second.data());
      in.dataType = it->second.dataType();
    }
    inputs_.push_back(std::move(in));
  }
  if (whole_ != nullptr) {
    for (const auto& [id, arr] : whole_->inputs()) {
      if (std::find(inputIds_.begin(), inputIds_.end(), id) != inputIds_.end()) continue;
      if (unused.count(id) != 0) {
        logging::session::warn(
            "run: the StepIO has a buffer for '{}', a model input that no op uses: ignored", id);
        continue;
      }
      if (graph.hasTensor(id) && graph.tensor(id).kind == ir::TensorKind::Variable) {
        // PopART streams only the host inputs and passes over other names.
        logging::session::warn(
            "run: the StepIO has a buffer for '{}', a weight of the model, which the host does "
            "not feed (weightsFromHost and writeWeights set weights): ignored",
            id);
        continue;
      }
      throw error("run: the StepIO has a buffer for '{}', which is not an input of the model", id);
    }
  }
  for (const auto& id : dataFlow.anchors()) {
    const ir::Tensor& t = graph.tensor(id);
    anchorIds_.push_back(id);
    Anchor an{t.info, dataFlow.art(id), nullptr, {}};
    const int64_t L = replicas;
    Shape expected;
    std::string how;
    switch (an.art.id()) {
      case AnchorReturnTypeId::All:
        expected = withPrefix({bps, af, L}, t.info.shape());
        how = "[batchesPerStep, accumulationFactor, replicas]";
        break;
      case AnchorReturnTypeId::EveryN:
        expected = withPrefix({bps / an.art.rp(), af, L}, t.info.shape());
        how = "[batchesPerStep / N, accumulationFactor, replicas]";
        break;
      default: expected = withPrefix({L}, t.info.shape()); how = "[replicas]";
    }
    if (whole_ != nullptr) {
      auto it = whole_->outputs().find(id);
      if (it == whole_->outputs().end()) {
        throw error("run: the StepIO has no buffer for anchor '{}' (expected {} of shape {})", id,
                    dataTypeName(t.info.dataType()), shapeToString(expected));
      }
      checkStepBuffer("anchor", id, t.info, expected, arrayInfo(it->second), how);
      an.data = static_cast<unsigned char*>(it->second.data());
      if (an.art.id() == AnchorReturnTypeId::Sum) {
        std::memset(an.data, 0, static_cast<size_t>(t.info.nbytes() * L));
      }
    } else if (an.art.id() == AnchorReturnTypeId::Sum) {
      for (int64_t r = 0; r < L; ++r) an.sums.emplace_back(t.info);
    }
    anchors_.push_back(std::move(an));
  }
}

namespace {

// The value range of an integer element type, BOOL as {0, 1} (for RandomUniform).
std::pair<double, double> integerRange(DataType t) {
  switch (t) {
    case DataType::BOOL: return {0.0, 1.0};
    case DataType::INT8: return {-128.0, 127.0};
    case DataType::UINT8: return {0.0, 255.0};
    case DataType::INT16: return {-32768.0, 32767.0};
    case DataType::UINT16: return {0.0, 65535.0};
    case DataType::INT32: return {-2147483648.0, 2147483647.0};
    case DataType::UINT32: return {0.0, 4294967295.0};
    default:
      return {-9007199254740992.0, 9007199254740992.0};  // INT64/UINT64: doubles' exact range
  }
}

}  // namespace

// Zeros; RandomNormal: N(0, 1) (integer types: truncated toward zero, as PopART converts);
// RandomUniform: floating point in [-1, 1) (PopART spans the type's whole range, which overflows
// the first op it meets), integers over their type's whole range, BOOL 0 or 1.
void fillSynthetic(HostTensor& dst, SyntheticDataMode mode, uint64_t seed) {
  if (mode == SyntheticDataMode::Zeros) {
    dst.fillZero();
    return;
  }
  std::mt19937_64 rng(seed);
  const DataType type = dst.dataType();
  if (mode == SyntheticDataMode::RandomNormal) {
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int64_t i = 0; i < dst.nelms(); ++i) {
      const double v = normal(rng);
      dst.setFromDouble(i, isFloatingPoint(type) ? v : std::trunc(v));
    }
    return;
  }
  if (isFloatingPoint(type)) {
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    for (int64_t i = 0; i < dst.nelms(); ++i) dst.setFromDouble(i, uniform(rng));
    return;
  }
  const auto [low, high] = integerRange(type);
  std::uniform_int_distribution<int64_t> uniform(static_cast<int64_t>(low),
                                                 static_cast<int64_t>(high));
  for (int64_t i = 0; i < dst.nelms(); ++i) dst.setFromDouble(i, static_cast<double>(uniform(rng)));
}

void StepBuffers::readInput(size_t k, int64_t iteration, int64_t replica, HostTensor& dst) {
  Input& in = inputs_[k];
  const size_t bytes = dst.nbytes();
  if (synthetic_ != SyntheticDataMode::Off) {
    // Synthetic data is written once per replica and step, then reused.
    if (in.filled.empty()) in.filled.assign(static_cast<size_t>(replicas_), false);
    if (in.filled[static_cast<size_t>(replica)]) return;
    fillSynthetic(dst, synthetic_, seed_ + k);
    in.filled[static_cast<size_t>(replica)] = true;
    return;
  }
  if (in.data != nullptr) {
    const int64_t slot = in.broadcast ? iteration : iteration * replicas_ + replica;
    const int64_t n = dst.nelms();
    copyInput(dst.raw(), in.data + static_cast<size_t>(slot * n) * dataTypeSize(in.dataType), n,
              in.dataType, in.info, inputIds_[k]);
    return;
  }
  const TensorId& id = inputIds_[k];
  if (in.broadcast) {
    // One callback per micro-batch (replica 0 asks for it), shared by every replica.
    if (replica == 0) {
      ConstVoidData d = stepio_.in(id, in.info.nelms(), false, true);
      if (d.data == nullptr) throw error("run: the IStepIO returned no data for input '{}'", id);
      const DataType given = checkCallbackInput(id, in.info, d.info);
      in.current = HostTensor(in.info);
      copyInput(in.current.raw(), d.data, in.info.nelms(), given, in.info, id);
      stepio_.inComplete(id, in.info.nelms(), true);
    }
    std::memcpy(dst.raw(), in.current.raw(), bytes);
    return;
  }
  ConstVoidData d = stepio_.in(id, in.info.nelms(), false, false);
  if (d.data == nullptr) throw error("run: the IStepIO returned no data for input '{}'", id);
  const DataType given = checkCallbackInput(id, in.info, d.info);
  copyInput(dst.raw(), d.data, in.info.nelms(), given, in.info, id);
  stepio_.inComplete(id, in.info.nelms(), false);
}

void StepBuffers::writeAnchor(size_t k, int64_t iteration, int64_t replica, const HostTensor& src) {
  Anchor& an = anchors_[k];
  const TensorId& id = anchorIds_[k];
  const size_t bytes = src.nbytes();
  const int64_t last = bps_ * af_ - 1;
  int64_t slot = -1;  // where the value goes, in units of one replica's value
  switch (an.art.id()) {
    case AnchorReturnTypeId::All: slot = iteration * replicas_ + replica; break;
    case AnchorReturnTypeId::EveryN: {
      // Every N-th batch of the step with all af micro-batches of each kept batch: N counts
      // batches, not micro-batches (docs/replication-semantics.md section 6).
      const int64_t batch = iteration / af_;
      if ((batch + 1) % an.art.rp() == 0)
        slot = ((batch / an.art.rp()) * af_ + iteration % af_) * replicas_ + replica;
      break;
    }
    case AnchorReturnTypeId::Final:
      if (iteration == last) slot = replica;
      break;
    case AnchorReturnTypeId::Sum:
      if (an.data != nullptr)
        addInto(an.data + static_cast<size_t>(replica) * bytes, src);
      else
        addInto(reinterpret_cast<unsigned char*>(an.sums[static_cast<size_t>(replica)].raw()), src);
      return;
  }
  if (slot < 0) return;
  if (an.data != nullptr) {
    std::memcpy(an.data + static_cast<size_t>(slot) * bytes, src.raw(), bytes);
    return;
  }
  MutableVoidData d = stepio_.out(id, an.info.nelms());
  if (d.data == nullptr) throw error("run: the IStepIO returned no buffer for anchor '{}'", id);
  if (d.info.isSet()) checkHostBuffer("run (IStepIO::out)", id, an.info, d.info);
  std::memcpy(d.data, src.raw(), bytes);
  stepio_.outComplete(id);
}

void StepBuffers::finish() {
  for (size_t k = 0; k < anchors_.size(); ++k) {
    Anchor& an = anchors_[k];
    if (an.art.id() != AnchorReturnTypeId::Sum || an.data != nullptr) continue;
    for (const auto& sum : an.sums) {
      MutableVoidData d = stepio_.out(anchorIds_[k], an.info.nelms());
      if (d.data == nullptr) {
        throw error("run: the IStepIO returned no buffer for anchor '{}'", anchorIds_[k]);
      }
      std::memcpy(d.data, sum.raw(), sum.nbytes());
      stepio_.outComplete(anchorIds_[k]);
    }
  }
}

}  // namespace xtrain::session
