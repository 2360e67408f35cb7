// The table of every SessionOptions member, made from the list next to the struct
// (include/xtrain/sessionoptions_members.hpp): its name (PopART's), what xtrain does with it on a
// simulated IPU and why, type-erased so that the session's option checks and the debug lines of
// options with no effect can loop over it.
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <string>
#include <vector>

#include "xtrain/sessionoptions.hpp"
#include "xtrain/sessionoptions_members.hpp"

namespace xtrain::session {

using OptionState = SessionOptionState;

// "honoured", "accepted, no effect", "refused when set": the words of the doc's state column.
const char* toString(OptionState state);

struct OptionEntry {
  std::string name;  // the member's name, e.g. "outlineThreshold"
  OptionState state;
  std::string reason;       // why, in a phrase (for the doc, the debug line and the refusal)
  std::string defaultText;  // the default as the doc shows it
  std::string range;        // the values session creation accepts, "" when any of the type
  // Whether the options hold the default (for a Refused member: nothing to refuse).
  std::function<bool(const SessionOptions&)> isDefault;
  // The member's value, for the debug line and the refusal.
  std::function<std::string(const SessionOptions&)> value;
};

// Every member of SessionOptions (and enableExplicitIR), in the header's order.
const std::vector<OptionEntry>& sessionOptionTable();

}  // namespace xtrain::session

#pragma GCC visibility pop
