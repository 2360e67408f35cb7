// Patterns: PopART's set of graph rewrites ("pre-alias patterns" and InPlace) that a session runs
// while it compiles, with PopART's names, levels, defaults and mandatory ones.
//
// In PopART the patterns rewrite the IR on its way to Poplar (a gradient op into simpler ops, an op
// into its in-place form); the numbers they compute do not change. xtrain lowers its IR to kernels
// without such rewrites, so a Patterns set changes nothing of what a session computes: it is
// accepted and checked as PopART checks it (unknown names, a mandatory pattern disabled while
// runtime asserts are on), and otherwise has no effect (docs/python.md, "Patterns").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "xtrain/api.hpp"

namespace xtrain {

enum class PatternsLevel {
  NoPatterns,  // none (not even the mandatory ones)
  Minimal,     // the mandatory patterns
  Default,     // the mandatory patterns and those on by default; InPlace on
  All,         // every pattern; InPlace on
};

class XTRAIN_API Patterns {
 public:
  // PatternsLevel::Default.
  Patterns();
  explicit Patterns(PatternsLevel level);
  // Exactly the patterns named (and "InPlace", "UpdateInplacePrioritiesForIpu"); an unknown name
  // throws xtrain::error ("Unknown pattern X").
  explicit Patterns(const std::vector<std::string>& names);
  static Patterns create(const std::vector<std::string>& names) { return Patterns(names); }

  // By PopART's name; an unknown name throws xtrain::error. "InPlace" and
  // "UpdateInplacePrioritiesForIpu" are accepted as well.
  bool isPatternEnabled(const std::string& name) const;
  Patterns& enablePattern(const std::string& name, bool enabled);

  bool isInPlaceEnabled() const { return inPlace_; }
  Patterns& enableInPlace(bool enabled);
  bool isUpdateInplacePrioritiesForIpuEnabled() const { return updateInplacePriorities_; }
  Patterns& enableUpdateInplacePrioritiesForIpu(bool enabled);

  // On by default: a session refuses a set that leaves a mandatory pattern disabled.
  Patterns& enableRuntimeAsserts(bool enabled);
  bool getRuntimeAssertsOn() const { return runtimeAsserts_; }

  // Throws xtrain::error "Pattern 'X' must be enabled" for the first mandatory pattern (by name)
  // that is disabled. Sessions call it when runtime asserts are on.
  void ensureAllMandatoryPreAliasPatternsAreEnabled() const;

  // The enabled pre-alias patterns, by name.
  std::vector<std::string> enabledPatternNames() const;

  // Every pre-alias pattern PopART registers, by name; whether `name` is mandatory (false for an
  // unknown name).
  static std::vector<std::string> getAllPreAliasPatternNames();
  static bool isMandatory(const std::string& name);

  bool operator==(const Patterns& other) const;
  bool operator!=(const Patterns& other) const { return !(*this == other); }

 private:
  std::map<std::string, bool> enabled_;  // every known pattern
  bool inPlace_ = false;
  bool updateInplacePriorities_ = false;
  bool runtimeAsserts_ = true;
};

}  // namespace xtrain
