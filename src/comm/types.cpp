#include "comm/types.hpp"

#include <limits>
#include <string>

#include "common/env_value.hpp"

namespace xtrain::comm {

size_t BufferView::bytes() const {
  const size_t elem = dataTypeSize(type);
  if (elem != 0 && count > std::numeric_limits<size_t>::max() / elem) {
    throw error("buffer of {} elements of {} overflows size_t", count, dataTypeName(type));
  }
  return count * elem;
}

Milliseconds parseDuration(std::string_view text, std::string_view what) {
  return secondsToMilliseconds(parseDurationSeconds(text, what));
}

Milliseconds defaultTimeout() {
  return readEnvDuration("XTRAIN_COMM_TIMEOUT").value_or(Milliseconds(300'000));
}

}  // namespace xtrain::comm
