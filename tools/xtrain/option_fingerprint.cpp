#include "option_fingerprint.hpp"

#include "comm/job.hpp"
#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::tools {

OptionFingerprint optionFingerprint(const TrainOptions& o) {
  return trainFlags().fingerprint(o);
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
  comm::Job& job = comm::Job::current();
  if (job.instances() <= 1) return;
  const std::vector<std::string> all =
      job.gatherStrings(encodeFingerprint(optionFingerprint(o)), "option fingerprints");
  const OptionFingerprint first = decodeFingerprint(all[0]);
  // Every instance checks all of them in order, so every instance reports the same difference.
  for (int i = 1; i < job.instances(); ++i) {
    const std::string differences =
        describeDifferences(first, decodeFingerprint(all[static_cast<size_t>(i)]), i);
    if (!differences.empty()) {
      throw error(
          "the instances of this job were started with different training options: {} (every "
          "instance must be given the same options)",
          differences);
    }
  }
}

}  // namespace xtrain::tools
