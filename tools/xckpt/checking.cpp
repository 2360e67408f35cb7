// xckpt verify and xckpt diff.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "checkpoint/checkpoint.hpp"
#include "commands.hpp"
#include "text.hpp"

namespace xtrain::tools::xckpt {

namespace ckpt = xtrain::checkpoint;

namespace {

// Element i of a numeric tensor as doubles (two components for complex types); nullopt for types
// with no numeric reading here (FLOAT8), which are compared bytewise.
std::optional<std::vector<double>> numbers(const HostTensor& t) {
  const int64_t n = t.nelms();
  std::vector<double> v;
  switch (t.dataType()) {
    case DataType::FLOAT: {
      const auto s = t.span<float>();
      v.assign(s.begin(), s.end());
      return v;
    }
    case DataType::BFLOAT16: {
      v.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, t.raw() + 2 * i, 2);
        const uint32_t bits = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        v[static_cast<size_t>(i)] = f;
      }
      return v;
    }
    case DataType::COMPLEX64:
    case DataType::COMPLEX128: {
      const bool single = t.dataType() == DataType::COMPLEX64;
      v.resize(static_cast<size_t>(2 * n));
      for (size_t i = 0; i < v.size(); ++i) {
        if (single) {
          float f;
          std::memcpy(&f, t.raw() + 4 * i, 4);
          v[i] = f;
        } else {
          std::memcpy(&v[i], t.raw() + 8 * i, 8);
        }
      }
      return v;
    }
    case DataType::FLOAT8_143:
    case DataType::FLOAT8_152: return std::nullopt;
    default:
      v.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = t.getAsDouble(i);
      return v;
  }
}

struct Difference {
  double maxAbs = 0;
  double maxRel = 0;  // |a - b| / max(|a|, |b|)
};

// NaN equals NaN here (a checkpoint compared with itself is identical); NaN against a number is an
// infinite difference.
Difference compare(const std::vector<double>& a, const std::vector<double>& b) {
  Difference d;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) d.maxAbs = d.maxRel = INFINITY;
      continue;
    }
    if (a[i] == b[i]) continue;  // also equal infinities
    const double abs = std::fabs(a[i] - b[i]);
    const double rel = abs / std::max(std::fabs(a[i]), std::fabs(b[i]));
    d.maxAbs = std::max(d.maxAbs, abs);
    d.maxRel = std::max(d.maxRel, rel);
  }
  return d;
}

void attributeDifferences(const ckpt::Attributes& a, const ckpt::Attributes& b, std::ostream& out) {
  auto row = [&](const char* name, const auto& x, const auto& y) {
    if (x != y) out << "attribute " << name << ": " << x << " vs " << y << "\n";
  };
  row("formatVersion", a.formatVersion, b.formatVersion);
  row("step", a.step, b.step);
  row("epoch", a.epoch, b.epoch);
  row("samplesSeen", a.samplesSeen, b.samplesSeen);
  row("globalReplicationFactor", a.globalReplicationFactor, b.globalReplicationFactor);
  row("instances", a.instances, b.instances);
  row("optimizerType", a.optimizerType, b.optimizerType);
  row("graphFingerprint", a.graphFingerprint, b.graphFingerprint);
  row("creationTime", a.creationTime, b.creationTime);
  row("xtrainVersion", a.xtrainVersion, b.xtrainVersion);
  std::set<std::string> names;
  for (const auto& [n, v] : a.hyperparameters) names.insert(n);
  for (const auto& [n, v] : b.hyperparameters) names.insert(n);
  for (const auto& n : names) {
    const auto ia = a.hyperparameters.find(n), ib = b.hyperparameters.find(n);
    const std::string va = ia == a.hyperparameters.end() ? "(absent)" : std::to_string(ia->second);
    const std::string vb = ib == b.hyperparameters.end() ? "(absent)" : std::to_string(ib->second);
    row(("hyperparameter " + n).c_str(), va, vb);
  }
}

}  // namespace

int verify(const Args& args, std::ostream& out) {
  const std::string path = positional(args, 1, "verify")[0];
  // A path that does not exist is a bad argument (exit 2); anything wrong with what exists is a
  // finding (exit 1).
  if (!std::filesystem::exists(path)) throw error("'{}' does not exist", path);
  const auto problems = ckpt::verify(path);
  if (problems.empty()) {
    const auto datasets = ckpt::listDatasets(path);
    out << "ok: " << path << ": " << datasets.size()
        << " datasets, structure and checksums sound\n";
    return 0;
  }
  for (const auto& p : problems) out << "problem: " << p << "\n";
  out << path << ": damaged, " << problems.size() << " problem" << (problems.size() == 1 ? "" : "s")
      << " found\n";
  return 1;
}

int diff(const Args& args, std::ostream& out) {
  const Args paths = positional(args, 2, "diff");
  const ckpt::Contents a = ckpt::read(paths[0]);
  const ckpt::Contents b = ckpt::read(paths[1]);
  attributeDifferences(a.attributes, b.attributes, out);

  std::set<std::string> all;
  size_t width = 0;
  for (const auto& [p, t] : a.datasets) all.insert(p);
  for (const auto& [p, t] : b.datasets) all.insert(p);
  for (const auto& p : all) width = std::max(width, p.size());
  size_t differing = 0;
  for (const auto& p : all) {
    const auto ia = a.datasets.find(p), ib = b.datasets.find(p);
    out << padded(p, width + 2);
    if (ib == b.datasets.end() || ia == a.datasets.end()) {
      out << "only in " << (ib == b.datasets.end() ? "A (" + paths[0] : "B (" + paths[1]) << ")\n";
      ++differing;
      continue;
    }
    const HostTensor& x = ia->second;
    const HostTensor& y = ib->second;
    if (x.info() != y.info()) {
      out << "differ in type or shape: " << x.info().toString() << " vs " << y.info().toString()
          << "\n";
      ++differing;
      continue;
    }
    out << padded(x.info().toString(), 20);
    const auto nx = numbers(x), ny = numbers(y);
    if (!nx || !ny) {
      const bool same = x.nbytes() == 0 || std::memcmp(x.raw(), y.raw(), x.nbytes()) == 0;
      out << (same ? "identical" : "bytes differ") << "\n";
      differing += same ? 0 : 1;
      continue;
    }
    const Difference d = compare(*nx, *ny);
    out << "max_abs " << padded(shortNumber(d.maxAbs), 11) << "max_rel " << shortNumber(d.maxRel)
        << "\n";
    if (d.maxAbs != 0 || d.maxRel != 0) ++differing;
  }
  out << differing << " of " << all.size() << " datasets differ\n";
  return differing == 0 ? 0 : 1;
}

}  // namespace xtrain::tools::xckpt
