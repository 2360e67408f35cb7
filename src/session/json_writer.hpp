// JsonWriter: a small streaming JSON writer for the session's reports (getReport,
// getSerializedGraph). It writes what it is told, in order, with commas and string escapes; the
// caller nests begin/end calls correctly (an unbalanced writer is an internal_error in str()).
// Numbers: integers as they are, doubles with 9 significant digits (non-finite ones as null, which
// JSON has no other way to say).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xtrain::session {

class JsonWriter {
 public:
  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  // The next member's name (inside an object); a value or begin* follows.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(int64_t n);
  JsonWriter& value(uint64_t n);
  JsonWriter& value(int n) { return value(static_cast<int64_t>(n)); }
  JsonWriter& value(double d);
  JsonWriter& null();

  // key(name).value(v) in one call.
  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    return key(name).value(v);
  }

  // The document; every object and array must be closed.
  std::string str() const;

  static std::string quoted(std::string_view s);

 private:
  // Writes the comma before a value or key when one is due.
  void separate();

  std::string out_;
  // Per open container: whether it has a member yet.
  std::vector<bool> hasMember_;
  bool afterKey_ = false;
};

}  // namespace xtrain::session

#pragma GCC visibility pop
