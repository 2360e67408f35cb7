#include "session/option_strings.hpp"

#include <set>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::session {

namespace {

// `text` with each NUL shown as \0, so that the message itself is not cut.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\0') {
      out += "\\0";
    } else {
      out += c;
    }
  }
  return out;
}

void check(std::string_view text, const std::string& option) {
  const size_t at = text.find('\0');
  if (at == std::string_view::npos) return;
  throw error(
      "SessionOptions::{} = \"{}\" holds a NUL byte (at byte {}): expected text without one (a "
      "path or name would end at it, silently becoming \"{}\")",
      option, shown(text), at, shown(text.substr(0, at)));
}

void checkKey(std::string_view key, std::string_view member) {
  const size_t at = key.find('\0');
  if (at == std::string_view::npos) return;
  throw error(
      "SessionOptions::{}: the key \"{}\" holds a NUL byte (at byte {}): expected a key "
      "without one",
      member, shown(key), at);
}

template <typename Container>
void checkEach(const Container& texts, const std::string& member) {
  size_t i = 0;
  for (const std::string& text : texts) check(text, member + "[" + std::to_string(i++) + "]");
}

}  // namespace

void refuseNulBytes(const std::map<std::string, std::string>& options, std::string_view member) {
  for (const auto& [key, value] : options) {
    checkKey(key, member);
    check(value, std::string(member) + "[\"" + key + "\"]");
  }
}

void refuseNulBytes(const SessionOptions& options) {
  refuseNulBytes(options.engineOptions, "engineOptions");
  refuseNulBytes(options.reportOptions, "reportOptions");
  refuseNulBytes(options.convolutionOptions, "convolutionOptions");
  refuseNulBytes(options.lstmOptions, "lstmOptions");
  refuseNulBytes(options.matmulOptions, "matmulOptions");
  refuseNulBytes(options.gclOptions, "gclOptions");
  check(options.logDir, "logDir");
  check(options.cachePath, "cachePath");
  check(options.partialsTypeMatMuls, "partialsTypeMatMuls");
  check(options.customCodeletCompileFlags, "customCodeletCompileFlags");
  check(options.kahnTieBreaker, "kahnTieBreaker");
  check(options.serializedPoprithmsShiftGraphsDir, "serializedPoprithmsShiftGraphsDir");
  check(options.serializedPoprithmsAnnealGraphsDir, "serializedPoprithmsAnnealGraphsDir");
  checkEach(options.customCodelets, "customCodelets");
  checkEach(options.dotChecks, "dotChecks");
  for (const auto& [key, values] : options.experimentalSettings.customTransformApplierSettings) {
    checkKey(key, "experimentalSettings.customTransformApplierSettings");
    checkEach(values, "experimentalSettings.customTransformApplierSettings[\"" + key + "\"]");
  }
}

}  // namespace xtrain::session
