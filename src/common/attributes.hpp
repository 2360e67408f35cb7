// Attributes of an op: a small typed map shared by the IR (which reads them from ONNX) and the device kernels
// (which read them to run). Getters that take no default throw xtrain::error naming the attribute and the op.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace xtrain {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>>;

class Attributes {
 public:
  // `owner` names the op in error messages, e.g. "Conv 'conv1'".
  void setOwner(std::string owner) { owner_ = std::move(owner); }
  const std::string& owner() const { return owner_; }

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  void erase(const std::string& name) { values_.erase(name); }

  int64_t getInt(const std::string& name) const;
  int64_t getInt(const std::string& name, int64_t fallback) const;
  float getFloat(const std::string& name) const;
  float getFloat(const std::string& name, float fallback) const;
  const std::string& getString(const std::string& name) const;
  std::string getString(const std::string& name, const std::string& fallback) const;
  const std::vector<int64_t>& getInts(const std::string& name) const;
  std::vector<int64_t> getInts(const std::string& name, const std::vector<int64_t>& fallback) const;
  const std::vector<float>& getFloats(const std::string& name) const;
  const std::vector<std::string>& getStrings(const std::string& name) const;

  const std::map<std::string, AttrValue>& all() const { return values_; }
  bool operator==(const Attributes& other) const { return values_ == other.values_; }

 private:
  template <typename T>
  const T& get(const std::string& name, const char* typeName) const;

  std::string owner_;
  std::map<std::string, AttrValue> values_;
};

}  // namespace xtrain

#pragma GCC visibility pop
