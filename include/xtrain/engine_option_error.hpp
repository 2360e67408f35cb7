// xtrain::engine_option_error: SessionOptions::engineOptions names an option no engine has.
#pragma once

#include <string>

#include "xtrain/api.hpp"
#include "xtrain/popart_error.hpp"

namespace xtrain {

// An engine option (SessionOptions::engineOptions) that is not an option of the engine. PopART
// passes engine options to Poplar, which refuses an unknown one with a poplar_exception whose
// message ends "Unrecognised option '<key>'": that is popartMessage(), and Python raises it as
// poplar_exception (args[0] Poplar's words, str() xtrain's message listing the known keys).
class XTRAIN_API engine_option_error : public popart_worded_error {
 public:
  engine_option_error(const std::string& key, const std::string& what)
      : popart_worded_error("Unrecognised option '" + key + "'", what) {}
};

}  // namespace xtrain
