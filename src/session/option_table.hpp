// The table of every SessionOptions member: its name (PopART's), what xtrain does with it on a
// simulated IPU, and why. One place that the session's option checks, the debug lines of options
// with no effect and the test that keeps docs/session-options.md complete all read.
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <string>
#include <vector>

#include "xtrain/sessionoptions.hpp"

namespace xtrain::session {

enum class OptionState {
  Honoured,  // takes effect (some values may still be refused; the reason says which)
  NoEffect,  // accepted; a value other than the default is logged once per session at debug level
  Refused,   // a value other than the default is an error at session creation (not implemented)
};

// "honoured", "accepted, no effect", "refused when set": the words of the doc's state column.
const char* toString(OptionState state);

struct OptionEntry {
  std::string name;  // the member's name, e.g. "outlineThreshold"
  OptionState state;
  std::string reason;       // why, in a phrase (for the doc, the debug line and the refusal)
  std::string defaultText;  // the default as the doc shows it
  // Whether the options hold the default (for a Refused member: nothing to refuse).
  std::function<bool(const SessionOptions&)> isDefault;
  // The member's value, for the debug line and the refusal.
  std::function<std::string(const SessionOptions&)> value;
};

// Every member of SessionOptions (and enableExplicitIR), in the header's order.
const std::vector<OptionEntry>& sessionOptionTable();

}  // namespace xtrain::session

#pragma GCC visibility pop
