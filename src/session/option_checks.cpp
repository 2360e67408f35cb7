#include "session/option_checks.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "session/dot_writer.hpp"
#include "session/option_strings.hpp"
#include "session/option_table.hpp"
#include "session/option_values.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::session {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "" and "float": FLOAT accumulation; "half": FLOAT16 partials for FLOAT16 matmuls
// (useMatMulPartialsType, device/kernels/matmul_half_partials.hpp).
void checkPartialsType(const std::string& type) {
  const std::string t = lower(type);
  if (t.empty() || t == "float" || t == "half") return;
  throw error(
      "SessionOptions.partialsTypeMatMuls = \"{}\" is not a partials type: expected \"float\" or "
      "\"half\" (or \"\" for none)",
      type);
}

// createImplicitPipeliningFwdOnlyProgram has no effect in xtrain (one pipeline schedule), but
// the combinations PopART refuses are refused too, with PopART's words first: a program that
// PopART would not run must not run here either.
void checkImplicitPipeliningFwdOnly(const SessionOptions& options) {
  if (!options.createImplicitPipeliningFwdOnlyProgram) return;
  const char* problem = nullptr;
  if (options.explicitPipeliningEnabled()) {
    problem = "with explicit pipelining.";
  } else if (!options.implicitPipeliningEnabled()) {
    problem = "without implicit pipelining.";
  } else if (!options.enableGradientAccumulation || options.accumulationFactor < 1) {
    problem = "without gradient accumulation.";
  }
  if (problem == nullptr) return;
  throw error(
      "Implicit pipelining forward-only program is not supported {} "
      "(SessionOptions.createImplicitPipeliningFwdOnlyProgram = true needs enablePipelining, "
      "gradient accumulation and the implicit IR)",
      problem);
}

}  // namespace

void checkSessionOptions(const SessionOptions& options) {
  refuseNulBytes(options);
  // Values no PopART program could mean (a negative factor, ...) were refused before, by
  // checkOptionRanges, so the table's "not supported" is never said of them.
  for (const OptionEntry& e : sessionOptionTable()) {
    if (e.state == OptionState::Refused && !e.isDefault(options)) {
      throw error("SessionOptions.{} = {} is not supported yet (not implemented in xtrain): {}",
                  e.name, e.value(options), e.reason);
    }
  }
  checkPartialsType(options.partialsTypeMatMuls);
  if (options.autoRecomputation == RecomputationType::Pipeline && !options.enablePipelining) {
    throw error(
        "SessionOptions.autoRecomputation = Pipeline recomputes each pipeline stage's forward "
        "pass, but enablePipelining is false: set enablePipelining = true, or use Standard, "
        "NormOnly or RecomputeAll");
  }
  checkImplicitPipeliningFwdOnly(options);
  checkDotOptions(options);
  for (const OptionEntry& e : sessionOptionTable()) {
    if (e.state == OptionState::NoEffect && !e.isDefault(options)) {
      logging::session::debug("SessionOptions.{} = {} has no effect on a simulated IPU: {}", e.name,
                              e.value(options), e.reason);
    }
  }
}

}  // namespace xtrain::session
