#include "validation.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "comm/job.hpp"
#include "input_checks.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::tools {

namespace {

double elementAsDouble(OwnedArray& a, size_t i) {
  switch (a.dataType()) {
    case DataType::FLOAT: return a.dataAs<float>()[i];
    case DataType::FLOAT16: return halfToFloat(static_cast<const uint16_t*>(a.data())[i]);
    case DataType::DOUBLE: return a.dataAs<double>()[i];
    case DataType::INT32: return a.dataAs<int32_t>()[i];
    case DataType::INT64: return static_cast<double>(a.dataAs<int64_t>()[i]);
    default:
      throw error("validation: tensor of type {} is not a number xtrain reads here",
                  dataTypeName(a.dataType()));
  }
}

std::vector<float> asFloats(OwnedArray& a) {
  std::vector<float> out(a.nelms());
  if (a.dataType() == DataType::FLOAT) {
    std::copy(a.dataAs<float>(), a.dataAs<float>() + a.nelms(), out.begin());
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(elementAsDouble(a, i));
  }
  return out;
}

std::vector<int64_t> asIndices(OwnedArray& a) {
  std::vector<int64_t> out(a.nelms());
  if (a.dataType() == DataType::INT32) {
    std::copy(a.dataAs<int32_t>(), a.dataAs<int32_t>() + a.nelms(), out.begin());
  } else if (a.dataType() == DataType::INT64) {
    std::copy(a.dataAs<int64_t>(), a.dataAs<int64_t>() + a.nelms(), out.begin());
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(elementAsDouble(a, i));
  }
  return out;
}

std::string encode(const ValidationResult& r) {
  std::ostringstream s;
  s.precision(17);
  s << r.samples << " " << r.loss << " " << r.correct << " " << r.counted;
  return s.str();
}

ValidationResult decode(const std::string& text, int64_t instance) {
  std::istringstream s(text);
  ValidationResult r;
  if (!(s >> r.samples >> r.loss >> r.correct >> r.counted)) {
    throw runtime_error("validation: instance {} sent a malformed result '{}'", instance, text);
  }
  return r;
}

}  // namespace

// The evaluation session for batches of n samples, and the batches (first sample) it runs.
struct Validator::Part {
  int64_t n = 0;
  std::vector<int64_t> starts;
  std::map<TensorId, TensorInfo> inputs;
  std::unique_ptr<InferenceSession> session;
  std::map<TensorId, std::unique_ptr<OwnedArray>> inputArrays;
  std::map<TensorId, std::unique_ptr<OwnedArray>> anchors;
};

std::unique_ptr<DataSource> openValidationData(const std::string& path,
                                               const std::map<TensorId, TensorInfo>& inputs) {
  try {
    return openHdf5Source(path, inputs);
  } catch (const runtime_error&) {
    throw;
  } catch (const error& e) {
    throw error("--val-data {}: {}", path, e.what());
  }
}

Validator::Validator(ValidationSetup setup, std::unique_ptr<DataSource> data,
                     TrainingSession& training)
    : setup_(std::move(setup)), training_(training), data_(std::move(data)) {
  const int64_t samples = data_->numSamples(), mb = setup_.microBatch;
  const int64_t batches = (samples + mb - 1) / mb;
  const int64_t last = samples - (batches - 1) * mb;  // samples in the last batch
  std::map<int64_t, std::vector<int64_t>> startsBySize;
  for (int64_t b = setup_.instance; b < batches; b += setup_.instances) {
    startsBySize[b + 1 == batches ? last : mb].push_back(b * mb);
  }
  const bool labelsAreInput = setup_.head && setup_.inputs.count(setup_.head->labels) > 0;
  for (auto& [n, starts] : startsBySize) {
    auto part = std::make_unique<Part>();
    part->n = n;
    part->starts = std::move(starts);
    for (const auto& [id, info] : setup_.inputs) {
      Shape s = info.shape();
      s[0] = n;
      part->inputs.emplace(id, TensorInfo(info.dataType(), s));
    }
    std::map<TensorId, AnchorReturnType> anchors{{setup_.loss, AnchorReturnType("ALL")}};
    if (setup_.head) {
      anchors.emplace(setup_.head->scores, AnchorReturnType("ALL"));
      if (!labelsAreInput) anchors.emplace(setup_.head->labels, AnchorReturnType("ALL"));
    }
    // A host CPU device: the training job holds the simulated IPUs it was given (under a launcher
    // one set per instance), and evaluation needs no replication.
    auto device = DeviceManager::createDeviceManager().createCpuDevice();
    part->session = InferenceSession::createFromOnnxModel(setup_.model(n), DataFlow(1, anchors),
                                                          device, setup_.shapes(n));
    part->session->prepareDevice();
    for (const auto& [id, info] : part->inputs) {
      part->inputArrays[id] = std::make_unique<OwnedArray>(
          TensorInfo(info.dataType(), part->session->expectedInputBufferShape(id)));
    }
    part->anchors = part->session->initAnchorArrays();
    parts_.push_back(std::move(part));
  }
  // The state to copy: the candidates both sessions hold as weights (an initializer the training
  // session folded into a constant, say, is not one).
  for (const auto& id : setup_.weights) {
    if (!training_.hasInfo(id)) continue;
    OwnedArray probe(training_.getInfo(id));
    try {
      WeightsIO io;
      io.insert(id, MutableVoidData(probe.data(), probe.info()));
      training_.readWeights(io);
      for (auto& part : parts_) {
        if (!part->session->hasInfo(id)) throw error("not in the evaluation session");
        part->session->writeWeights(io);
      }
    } catch (const runtime_error&) {
      throw;
    } catch (const error&) {
      continue;
    }
    weights_.push_back(id);
  }
}

Validator::~Validator() = default;

int64_t Validator::numSamples() const {
  return data_->numSamples();
}

ValidationResult Validator::evaluateShare() {
  training_.weightsToHost();
  std::map<TensorId, std::unique_ptr<OwnedArray>> buffers;
  WeightsIO io;
  for (const auto& id : weights_) {
    buffers[id] = std::make_unique<OwnedArray>(training_.getInfo(id));
    io.insert(id, MutableVoidData(buffers[id]->data(), buffers[id]->info()));
  }
  training_.readWeights(io);
  ValidationResult r;
  double lossSum = 0;
  for (auto& part : parts_) {
    Session& s = *part->session;
    s.writeWeights(io);
    s.weightsFromHost();
    std::map<TensorId, IArray&> inputRefs, anchorRefs;
    for (auto& [id, a] : part->inputArrays) inputRefs.emplace(id, *a);
    for (auto& [id, a] : part->anchors) anchorRefs.emplace(id, *a);
    StepIO stepio(inputRefs, anchorRefs);
    std::vector<int64_t> samples(static_cast<size_t>(part->n));
    for (const int64_t start : part->starts) {
      for (int64_t i = 0; i < part->n; ++i) samples[static_cast<size_t>(i)] = start + i;
      for (const auto& [id, info] : part->inputs) {
        data_->fill(id, info, samples, part->inputArrays[id]->data());
        requireFiniteSamples(*part->inputArrays[id], id, setup_.dataPath, samples);
      }
      s.run(stepio, "validation");
      OwnedArray& loss = *part->anchors.at(setup_.loss);
      double sum = 0;
      for (size_t i = 0; i < loss.nelms(); ++i) sum += elementAsDouble(loss, i);
      const double batchLoss = sum / static_cast<double>(std::max<size_t>(1, loss.nelms()));
      if (!std::isfinite(batchLoss)) {
        throw runtime_error("validation: the loss is {} on the samples {}..{} of --val-data {}",
                            batchLoss, start, start + part->n - 1, setup_.dataPath);
      }
      lossSum += batchLoss * static_cast<double>(part->n);
      r.samples += part->n;
      if (!setup_.head) continue;
      const ClassificationHead& h = *setup_.head;
      OwnedArray& scoresArray = *part->anchors.at(h.scores);
      OwnedArray& labelsArray = part->inputArrays.count(h.labels) > 0
                                    ? *part->inputArrays.at(h.labels)
                                    : *part->anchors.at(h.labels);
      const std::vector<float> scores = asFloats(scoresArray);
      const std::vector<int64_t> labels = asIndices(labelsArray);
      const Shape shape = s.getInfo(h.scores).shape();
      if (shape.size() < 2 || labels.empty() || scores.size() % labels.size() != 0) {
        throw error(
            "validation: the scores '{}' ({}) of the model's {} do not fit its labels '{}' ({} "
            "values)",
            h.scores, shapeToString(shape), h.opType, h.labels, labels.size());
      }
      const size_t classes = scores.size() / labels.size();
      const size_t inner = labels.size() / static_cast<size_t>(shape[0]);
      for (size_t j = 0; j < labels.size(); ++j) {
        if (h.ignoreIndex && labels[j] == *h.ignoreIndex) continue;
        const size_t sample = j / inner, k = j % inner;
        const float* base = scores.data() + sample * classes * inner + k;
        size_t best = 0;
        for (size_t c = 1; c < classes; ++c) {
          if (base[c * inner] > base[best * inner]) best = c;
        }
        r.correct += static_cast<int64_t>(best) == labels[j] ? 1 : 0;
        ++r.counted;
      }
    }
  }
  r.loss = lossSum;  // a sum until the instances' shares are combined
  return r;
}

std::optional<ValidationResult> Validator::evaluate(int64_t index) {
  ValidationResult total = evaluateShare();
  if (setup_.instances > 1) {
    // Every instance sends its sums; instance 0 adds them in instance order.
    const std::vector<std::string> all =
        comm::Job::current().gatherStrings(encode(total), format("validation {}", index));
    if (setup_.instance != 0) return std::nullopt;
    for (int64_t i = 1; i < setup_.instances; ++i) {
      const ValidationResult other = decode(all.at(static_cast<size_t>(i)), i);
      total.samples += other.samples;
      total.loss += other.loss;
      total.correct += other.correct;
      total.counted += other.counted;
    }
  }
  total.loss /= static_cast<double>(std::max<int64_t>(1, total.samples));
  if (setup_.head && total.counted > 0) {
    total.accuracy = static_cast<double>(total.correct) / static_cast<double>(total.counted);
  }
  return total;
}

}  // namespace xtrain::tools
