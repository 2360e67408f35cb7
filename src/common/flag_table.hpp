// One declarative table of a tool's command-line flags, from which the tool's parser, its usage
// rows and the fingerprint of the options its instances must agree on are all made. A flag is
// written once, as a row: its names, the field it sets and how its value is read
// (common/flag_values.hpp), its help, its default, and whether the instances of a job must agree on
// it. (xtrain used to write a flag four times, a field, a help line, a branch of an if-chain and
// an entry of the agreement list, and each tool had its own number parsers.)
//
// Every refusal of the table throws FlagError in the tool's own words (a tool's custom setter may
// throw the tool's own usage error instead): Syntax holds those of the command line
// (an unknown flag, a missing value), the value parsers hold those of the values. Words are
// patterns with placeholders, {flag}, {arg}, {text}, ..., filled by fillPlaceholders.
//
//   FlagTable<Options> t(syntax);
//   t.value("--steps", "N", &Options::steps, integer<int64_t>(1, max, words)).help("how long");
//   t.toggle("--nesterov", &Options::nesterov).help("sgd: Nesterov momentum").agree();
//   Options o = t.parse(args);  // defaults first, then every flag in order
#pragma once
#pragma GCC visibility push(default)

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "xtrain/error.hpp"
#include "xtrain/format.hpp"

namespace xtrain::flags {

// A command line a table cannot accept: bad usage, the message in the tool's words.
class FlagError : public error {
 public:
  explicit FlagError(const std::string& message) : error(message) {}
};

// `pattern` with each {name} of `fields` replaced by its value; other braces stay as they are.
std::string fillPlaceholders(std::string_view pattern,
                             const std::vector<std::pair<std::string_view, std::string>>& fields);

// How a tool's command line reads, and the words of its refusals.
struct Syntax {
  // {arg}: the argument as written; {flag}: its name without "=value"; {hint}: " (did you mean
  // --x?)" for a long name sharing at least 4 leading characters with one of the table's, or "".
  std::string unknown = "unknown option '{arg}'";
  std::string needsValue = "{flag} needs a value";
  std::string takesNoValue = "{flag} takes no value";  // {arg} too
  bool inlineValues = true;                            // --flag=value as well as --flag value
  bool shortInline = false;  // -n4, -xVAR=1: a two-character flag followed by its value
  // The first argument that does not start with '-' (or the one after "--") and the rest are the
  // program's (xrun PROGRAM ARGS...): FlagTable::parse leaves them in `rest`. Without this or
  // positionalsAnywhere, such an argument is an unknown flag.
  bool programFollows = false;
  // Arguments that do not start with '-', and "-" itself, are positional wherever they stand
  // (xckpt export-onnx A B C --flag): FlagTable::parse leaves them in `rest`, in order.
  bool positionalsAnywhere = false;
};

// How usage rows are laid out: the flags at `indent` (plus `longOnlyIndent` for a row without a
// short name, so long names line up after "-n, "), the help at `column`. Flags that leave no space
// before the column are followed by three spaces and the help's first line when that line then
// ends within `width`, else the help starts on the next line.
struct UsageLayout {
  size_t indent = 2;
  size_t longOnlyIndent = 0;
  size_t column = 28;
  size_t width = 0;
};

// What parse hands a flag's setter: the name used, the value and the argument as written.
struct Given {
  std::string flag;
  std::string text;
  std::string arg;
};

// Reads a value for `flag` (the name used) from `text`, or throws FlagError.
template <typename T>
using Parser = std::function<T(const std::string& flag, const std::string& text)>;

namespace detail {

// The table without its options type: what the scanner and the usage writer need.
struct RowShape {
  std::vector<std::string> names;
  std::string valueName;  // "N"; empty for a switch
  bool takesValue = true;
  bool lenient = false;  // a switch that ignores "=value" instead of refusing it
  std::string help;      // lines separated by '\n'; "" for no row of its own
  std::string joinPrevious;
  std::string section;
  std::optional<std::string> defaultText;
};

// Scans `args`, calling apply(row, given) for every flag in order; returns the arguments that are
// not flags (the program and its arguments, or the positional ones).
std::vector<std::string> scan(const std::vector<std::string>& args, const Syntax& syntax,
                              const std::vector<const RowShape*>& rows,
                              const std::function<void(size_t, const Given&)>& apply);

std::string usageRows(const std::vector<const RowShape*>& rows, const UsageLayout& layout);

// The text of a value in a fingerprint: "-" for an empty optional, "on"/"off" for a bool.
template <typename T>
std::string valueText(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "on" : "off";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else {
    return format("{}", v);
  }
}
template <typename T>
std::string valueText(const std::optional<T>& v) {
  return v ? valueText(*v) : "-";
}

}  // namespace detail

// (flag, value) of every flag the instances must agree on, in the table's order.
using Fingerprint = std::vector<std::pair<std::string, std::string>>;

template <typename Options>
class FlagTable {
 public:
  using Setter = std::function<void(Options&, const Given&)>;
  using Describe = std::function<std::string(const Options&)>;

 private:
  struct Entry {
    detail::RowShape shape;
    Setter set;
    Describe fieldText;  // the field's value as a fingerprint shows it
    Describe agreement;  // set: the instances must agree on this text
  };

 public:
  // A row being declared: each call sets one of its columns.
  class Row {
   public:
    // Another name of the flag ("-h" beside "--help"); usage shows the names in order.
    Row& alias(std::string name) {
      row_->shape.names.push_back(std::move(name));
      return *this;
    }
    // The help, lines separated by '\n'; {default} stands for the default's text.
    Row& help(std::string text) {
      row_->shape.help = std::move(text);
      return *this;
    }
    // The value the field has when the flag is not given, read by the flag's own parser.
    Row& byDefault(std::string text) {
      row_->shape.defaultText = std::move(text);
      return *this;
    }
    // The instances of a job must agree on this flag's value (of the field it sets)...
    Row& agree() {
      if (!row_->fieldText) {
        throw internal_error("flag {} sets no single value to agree on: describe it in agree()",
                             row_->shape.names.front());
      }
      row_->agreement = row_->fieldText;
      return *this;
    }
    // ... or on `describe` of the options (for paths that may differ between hosts: whether one
    // is given).
    Row& agree(Describe describe) {
      row_->agreement = std::move(describe);
      return *this;
    }
    // Usage shows this flag on the previous one's row, after `separator` (", ", " | ").
    Row& sameRowAs(std::string separator) {
      row_->shape.joinPrevious = std::move(separator);
      return *this;
    }
    // Text usage prints before this flag's row (a heading, a blank line).
    Row& section(std::string text) {
      row_->shape.section = std::move(text);
      return *this;
    }
    // A switch that ignores "=value" rather than refusing it (--help=x asks for help).
    Row& lenient() {
      row_->shape.lenient = true;
      return *this;
    }

   private:
    friend class FlagTable;
    explicit Row(Entry* row) : row_(row) {}
    Entry* row_;
  };

  explicit FlagTable(Syntax syntax, UsageLayout layout = {})
      : syntax_(std::move(syntax)), layout_(layout) {}

  // A flag that sets `field` (a value, an optional or a vector, which gets one element per
  // occurrence) to what `parser` reads.
  template <typename Field, typename Value>
  Row value(std::string name, std::string valueName, Field Options::*field, Parser<Value> parser) {
    Entry& e = add(std::move(name), std::move(valueName), true);
    e.set = [field, parser](Options& o, const Given& g) {
      if constexpr (isVector<Field>::value) {
        (o.*field).push_back(parser(g.flag, g.text));
      } else {
        o.*field = parser(g.flag, g.text);
      }
    };
    if constexpr (!isVector<Field>::value) {
      e.fieldText = [field](const Options& o) { return detail::valueText(o.*field); };
    }
    return Row(&e);
  }

  // A switch: given, `field` is true.
  Row toggle(std::string name, bool Options::*field) {
    Entry& e = add(std::move(name), "", false);
    e.set = [field](Options& o, const Given&) { o.*field = true; };
    e.fieldText = [field](const Options& o) { return detail::valueText(o.*field); };
    return Row(&e);
  }

  // A flag whose value (or, with an empty valueName, whose presence) `set` applies itself.
  Row custom(std::string name, std::string valueName, Setter set) {
    const bool takesValue = !valueName.empty();
    Entry& e = add(std::move(name), std::move(valueName), takesValue);
    e.set = std::move(set);
    return Row(&e);
  }

  // Options with every default, then every flag of `args` applied in order. The arguments that
  // are not flags (Syntax::programFollows, Syntax::positionalsAnywhere) go to `rest`.
  Options parse(const std::vector<std::string>& args,
                std::vector<std::string>* rest = nullptr) const {
    Options o{};
    for (const auto& e : entries_) {
      if (e->shape.defaultText) {
        const std::string& name = e->shape.names.front();
        e->set(o, Given{name, *e->shape.defaultText, name});
      }
    }
    std::vector<std::string> others = detail::scan(
        args, syntax_, shapes(), [&](size_t row, const Given& g) { entries_[row]->set(o, g); });
    if (rest != nullptr) *rest = std::move(others);
    return o;
  }

  // The rows of the usage text, one per flag with help.
  std::string usage() const { return detail::usageRows(shapes(), layout_); }

  // The values of the flags marked agree(), in the table's order.
  Fingerprint fingerprint(const Options& o) const {
    Fingerprint out;
    for (const auto& e : entries_) {
      if (e->agreement) out.emplace_back(e->shape.names.front(), e->agreement(o));
    }
    return out;
  }

 private:
  template <typename T>
  struct isVector : std::false_type {};
  template <typename T>
  struct isVector<std::vector<T>> : std::true_type {};

  Entry& add(std::string name, std::string valueName, bool takesValue) {
    auto e = std::make_unique<Entry>();
    e->shape.names.push_back(std::move(name));
    e->shape.valueName = std::move(valueName);
    e->shape.takesValue = takesValue;
    entries_.push_back(std::move(e));
    return *entries_.back();
  }

  std::vector<const detail::RowShape*> shapes() const {
    std::vector<const detail::RowShape*> out;
    for (const auto& e : entries_) out.push_back(&e->shape);
    return out;
  }

  Syntax syntax_;
  UsageLayout layout_;
  // Stable addresses: Row points into its entry while the table grows.
  std::vector<std::unique_ptr<Entry>> entries_;
};

}  // namespace xtrain::flags

#pragma GCC visibility pop
