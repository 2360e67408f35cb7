// Basic names shared by the whole API (PopART's names.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xtrain {

using TensorId = std::string;
using TensorIds = std::vector<TensorId>;
using Shape = std::vector<int64_t>;
using OpId = int64_t;

}  // namespace xtrain
