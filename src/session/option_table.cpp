#include "session/option_table.hpp"

#include <concepts>
#include <utility>

#include "session/option_values.hpp"
#include "xtrain/sessionoptions_members.hpp"

namespace xtrain::session {

namespace {

const SessionOptions& defaults() {
  static const SessionOptions d;
  return d;
}

template <class T>
OptionEntry entry(const SessionOptionMember<T>& m) {
  // A member whose type has no operator== (the std::function) must give isDefault; the table test
  // calls isDefault of every entry.
  std::function<bool(const SessionOptions&)> isDefault;
  if (m.isDefault != nullptr) {
    isDefault = [p = m.member, f = m.isDefault](const SessionOptions& o) { return f(o.*p); };
  } else if constexpr (std::equality_comparable<T>) {
    isDefault = [p = m.member](const SessionOptions& o) { return o.*p == defaults().*p; };
  }
  return {m.name,
          m.state,
          m.reason,
          m.defaultText,
          m.range,
          std::move(isDefault),
          [p = m.member](const SessionOptions& o) { return showValue(o.*p); }};
}

// A method holds nothing of its own: always "the default", nothing to show.
OptionEntry entry(const SessionOptionMethod& m) {
  return {m.name,
          m.state,
          m.reason,
          m.defaultText,
          "",
          [](const SessionOptions&) { return true; },
          [](const SessionOptions&) { return std::string(); }};
}

}  // namespace

const char* toString(OptionState state) {
  switch (state) {
    case OptionState::Honoured: return "honoured";
    case OptionState::NoEffect: return "accepted, no effect";
    case OptionState::Refused: return "refused when set";
  }
  return "?";
}

const std::vector<OptionEntry>& sessionOptionTable() {
  static const std::vector<OptionEntry> table = [] {
    std::vector<OptionEntry> t;
    forEachSessionOptionMember([&t](const auto& m) { t.push_back(entry(m)); });
    return t;
  }();
  return table;
}

}  // namespace xtrain::session
