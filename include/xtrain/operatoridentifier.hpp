// PopART's name for what identifies an op: its domain, type and the opset version of the domain
// that introduced it. Custom ops (xtrain/customop.hpp) are registered under one; Builder::customOp
// takes one as PopART's C++ Builder does.
#pragma once

#include <string>
#include <tuple>
#include <utility>

#include "xtrain/api.hpp"

namespace xtrain {

struct XTRAIN_API OperatorIdentifier {
  OperatorIdentifier(std::string domain_, std::string type_, int version_ = 1)
      : domain(std::move(domain_)), type(std::move(type_)), version(version_) {}
  std::string domain;
  std::string type;
  int version = 1;
  // "com.acme::LeakyCube-1"
  std::string toString() const { return domain + "::" + type + "-" + std::to_string(version); }
  bool operator==(const OperatorIdentifier& other) const = default;
  // By domain, type, then version: the key order of OpManager's definitions.
  bool operator<(const OperatorIdentifier& other) const {
    return std::tie(domain, type, version) < std::tie(other.domain, other.type, other.version);
  }
};

}  // namespace xtrain
