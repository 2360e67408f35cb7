#include "common/attributes.hpp"

#include "xtrain/error.hpp"

namespace xtrain {

template <typename T>
const T& Attributes::get(const std::string& name, const char* typeName) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    throw error("{}: missing required attribute '{}' (expected {})", owner_.empty() ? "op" : owner_,
                name, typeName);
  }
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  // ints are accepted where a float is expected, as ONNX writers are not always careful.
  throw error("{}: attribute '{}' has the wrong type (expected {})", owner_.empty() ? "op" : owner_,
              name, typeName);
}

int64_t Attributes::getInt(const std::string& name) const { return get<int64_t>(name, "an int"); }
int64_t Attributes::getInt(const std::string& name, int64_t fallback) const {
  return has(name) ? getInt(name) : fallback;
}
float Attributes::getFloat(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  }
  return get<float>(name, "a float");
}
float Attributes::getFloat(const std::string& name, float fallback) const {
  return has(name) ? getFloat(name) : fallback;
}
const std::string& Attributes::getString(const std::string& name) const {
  return get<std::string>(name, "a string");
}
std::string Attributes::getString(const std::string& name, const std::string& fallback) const {
  return has(name) ? getString(name) : fallback;
}
const std::vector<int64_t>& Attributes::getInts(const std::string& name) const {
  return get<std::vector<int64_t>>(name, "a list of ints");
}
std::vector<int64_t> Attributes::getInts(const std::string& name,
                                         const std::vector<int64_t>& fallback) const {
  return has(name) ? getInts(name) : fallback;
}
const std::vector<float>& Attributes::getFloats(const std::string& name) const {
  return get<std::vector<float>>(name, "a list of floats");
}
const std::vector<std::string>& Attributes::getStrings(const std::string& name) const {
  return get<std::vector<std::string>>(name, "a list of strings");
}

}  // namespace xtrain
