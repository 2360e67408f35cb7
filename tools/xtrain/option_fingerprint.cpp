#include "option_fingerprint.hpp"

#include <optional>

#include "comm/world.hpp"
#include "common/launch_environment.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::tools {
namespace {

const std::string kUnset = "-";

template <typename T>
std::string valueText(const std::optional<T>& v) {
  return v ? format("{}", *v) : kUnset;
}

std::string switchText(bool on) {
  return on ? "on" : "off";
}

// Key of instance `i`'s fingerprint in the job's store (which prefixes the job id).
std::string storeKey(int i) {
  return "xtrain/options/" + std::to_string(i);
}

}  // namespace

OptionFingerprint optionFingerprint(const TrainOptions& o) {
  return {
      {"--optimizer", o.optimizer},
      {"--lr", valueText(o.lr)},
      {"--momentum", valueText(o.momentum)},
      {"--weight-decay", valueText(o.weightDecay)},
      {"--dampening", valueText(o.dampening)},
      {"--beta1", valueText(o.beta1)},
      {"--beta2", valueText(o.beta2)},
      {"--eps", valueText(o.eps)},
      {"--max-weight-norm", valueText(o.maxWeightNorm)},
      {"--alpha", valueText(o.alpha)},
      {"--loss-scaling", valueText(o.lossScaling)},
      {"--clip-norm", valueText(o.clipNorm)},
      {"--nesterov", switchText(o.nesterov)},
      {"--lr-schedule", o.lrSchedule},
      {"--warmup-steps", std::to_string(o.warmupSteps)},
      {"--micro-batch-size", std::to_string(o.microBatchSize)},
      {"--batches-per-step", std::to_string(o.batchesPerStep)},
      {"--accumulation-factor", std::to_string(o.accumulationFactor)},
      {"--steps", valueText(o.steps)},
      {"--epochs", valueText(o.epochs)},
      {"--reduction", o.reduction},
      {"--seed", std::to_string(o.seed)},
      {"--batchnorm-running-var", o.batchNormRunningVariance},
      {"--model", o.model.empty() ? "(built-in example)" : "(a model file)"},
      // Checkpoints and the saved model are collectives: whether they happen must agree.
      {"--checkpoint-dir", o.checkpointDir.empty() ? "(none)" : "(given)"},
      {"--checkpoint-every", std::to_string(o.checkpointEvery)},
      {"--checkpoint-async", switchText(o.checkpointAsync)},
      {"--resume", o.resume.empty() || o.resume == "auto" ? o.resume : "(a checkpoint path)"},
      {"--save-model", o.saveModel.empty() ? "(none)" : "(given)"},
      // Validation is collective too: the instances combine their shares of it.
      {"--val-data", o.valData.empty() ? "(none)" : "(given)"},
      {"--val-every", std::to_string(o.valEvery)},
  };
}

std::string encodeFingerprint(const OptionFingerprint& f) {
  std::string out;
  for (const auto& [flag, value] : f) out += flag + "=" + value + "\n";
  return out;
}

OptionFingerprint decodeFingerprint(const std::string& text) {
  OptionFingerprint out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? end : end - start);
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      throw error("an instance's option fingerprint has a malformed line '{}'", line);
    }
    out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string describeDifferences(const OptionFingerprint& first, const OptionFingerprint& other,
                                int otherIndex) {
  std::string out;
  auto add = [&](const std::string& clause) { out += (out.empty() ? "" : "; ") + clause; };
  for (size_t i = 0; i < std::max(first.size(), other.size()); ++i) {
    if (i >= first.size() || i >= other.size() || first[i].first != other[i].first) {
      // Another xtrain version: the lists themselves differ.
      add(format("instance {} lists different options (another xtrain version?)", otherIndex));
      break;
    }
    if (first[i].second != other[i].second) {
      add(format("{}: instance 0 has {}, instance {} has {}", first[i].first, first[i].second,
                 otherIndex, other[i].second));
    }
  }
  return out;
}

void checkOptionsAgreeAcrossInstances(const TrainOptions& o) {
  const LaunchEnvironment env = readLaunchEnvironment();
  if (env.numInstances <= 1) return;
  const auto store = comm::createJobStore();
  const OptionFingerprint mine = optionFingerprint(o);
  store->set(storeKey(env.instanceIndex), encodeFingerprint(mine));
  const OptionFingerprint first =
      env.instanceIndex == 0 ? mine : decodeFingerprint(store->get(storeKey(0)));
  // Every instance checks all of them in order, so every instance reports the same difference.
  for (int i = 1; i < env.numInstances; ++i) {
    const OptionFingerprint other =
        i == env.instanceIndex ? mine : decodeFingerprint(store->get(storeKey(i)));
    const std::string differences = describeDifferences(first, other, i);
    if (!differences.empty()) {
      throw error(
          "the instances of this job were started with different training options: {} (every "
          "instance must be given the same options)",
          differences);
    }
  }
}

}  // namespace xtrain::tools
