#include "testing/reference_data.hpp"

#include <charconv>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::testing {

const HostTensor& ReferenceData::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) {
    throw error("reference data {} has no tensor named '{}' ({} tensors loaded)",
                path.empty() ? std::string("<unnamed>") : path, name, tensors.size());
  }
  return it->second;
}

namespace {

std::vector<std::string_view> splitWhitespace(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw error("{}:{}: {}", path_, lineNo_, what);
  }

  template <typename T>
  T parseNumber(std::string_view text, const char* what) const {
    T value{};
    const char* first = text.data();
    const char* last = text.data() + text.size();
    std::from_chars_result r;
    if constexpr (std::is_floating_point_v<T>) {
      r = std::from_chars(first, last, value, std::chars_format::general);
    } else {
      r = std::from_chars(first, last, value);
    }
    if (r.ec != std::errc() || r.ptr != last) {
      fail(format("cannot parse {} '{}'", what, std::string(text)));
    }
    return value;
  }

  ReferenceData run() {
    std::ifstream in(path_);
    if (!in) throw error("cannot open reference data file {}", path_);
    ReferenceData data;
    data.path = path_;
    std::string line;
    while (nextLine(in, line)) {
      auto tokens = splitWhitespace(line);
      if (tokens.empty() || tokens[0].front() == '#') continue;
      if (tokens[0] == "hyper") {
        parseHyper(tokens, data);
      } else if (tokens[0] == "tensor") {
        parseTensor(tokens, in, data);
      } else {
        fail(
            format("unknown line kind '{}'; expected '# comment', 'hyper key=value ...' or "
                   "'tensor <name> <dtype> <rank> <dims...>'",
                   std::string(tokens[0])));
      }
    }
    if (in.bad()) throw error("error reading reference data file {}", path_);
    return data;
  }

 private:
  bool nextLine(std::ifstream& in, std::string& line) {
    if (!std::getline(in, line)) return false;
    ++lineNo_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  }

  void parseHyper(const std::vector<std::string_view>& tokens, ReferenceData& data) const {
    for (size_t i = 1; i < tokens.size(); ++i) {
      auto eq = tokens[i].find('=');
      if (eq == std::string_view::npos || eq == 0) {
        fail(format("hyper entry '{}' is not key=value", std::string(tokens[i])));
      }
      std::string key(tokens[i].substr(0, eq));
      if (!data.hyper.emplace(key, std::string(tokens[i].substr(eq + 1))).second) {
        fail(format("duplicate hyper key '{}'", key));
      }
    }
  }

  void parseTensor(const std::vector<std::string_view>& tokens, std::ifstream& in,
                   ReferenceData& data) {
    if (tokens.size() < 4)
      fail("tensor header needs 'tensor <name> <FLOAT|INT64> <rank> <dims...>'");
    const std::string name(tokens[1]);
    const std::string dtype(tokens[2]);
    if (dtype != "FLOAT" && dtype != "INT64") {
      fail(format("tensor '{}' has dtype '{}'; expected FLOAT or INT64", name, dtype));
    }
    const auto rank = parseNumber<int64_t>(tokens[3], "rank");
    if (rank < 0 || static_cast<size_t>(rank) != tokens.size() - 4) {
      fail(format("tensor '{}' has rank {} but {} dims", name, std::string(tokens[3]),
                  tokens.size() - 4));
    }
    Shape shape;
    int64_t nelms = 1;
    for (size_t i = 4; i < tokens.size(); ++i) {
      const auto d = parseNumber<int64_t>(tokens[i], "dimension");
      if (d < 0) fail(format("tensor '{}' has negative dimension {}", name, d));
      if (d > 0 && nelms > std::numeric_limits<int32_t>::max() / d) {
        fail(format("tensor '{}' is too large", name));
      }
      nelms *= d;
      shape.push_back(d);
    }
    if (data.tensors.count(name)) fail(format("duplicate tensor '{}'", name));

    const int64_t headerLine = lineNo_;
    std::string values;
    if (!nextLine(in, values)) {
      fail(format("tensor '{}' (declared on line {}) has no values line", name, headerLine));
    }
    auto tokensV = splitWhitespace(values);
    if (static_cast<int64_t>(tokensV.size()) != nelms) {
      fail(format("tensor '{}' of shape {} needs {} values, the line has {}", name,
                  shapeToString(shape), nelms, tokensV.size()));
    }
    HostTensor t;
    if (dtype == "FLOAT") {
      std::vector<float> v;
      v.reserve(tokensV.size());
      for (auto tok : tokensV) v.push_back(parseNumber<float>(tok, "FLOAT value"));
      t = HostTensor::fromVector<float>(shape, v);
    } else {
      std::vector<int64_t> v;
      v.reserve(tokensV.size());
      for (auto tok : tokensV) v.push_back(parseNumber<int64_t>(tok, "INT64 value"));
      t = HostTensor::fromVector<int64_t>(shape, v);
    }
    data.tensors.emplace(name, std::move(t));
  }

  std::string path_;
  int64_t lineNo_ = 0;
};

}  // namespace

ReferenceData loadReferenceData(const std::string& path) {
  return Parser(path).run();
}

}  // namespace xtrain::testing
