#include "comm/agreement.hpp"

#include <algorithm>

#include "comm/communicator.hpp"

namespace xtrain::comm {
namespace {

void allReduceInt64s(Communicator& communicator, std::vector<int64_t>& values,
                     CollectiveOperator op, const AgreementOptions& options) {
  AllReduceOptions o;
  o.op = op;
  o.timeout = options.timeout;
  o.debugName = options.debugName;
  communicator.allReduceSync(BufferView{values.data(), values.size(), DataType::INT64}, o);
}

}  // namespace

bool allTrue(Communicator* communicator, bool mine, const AgreementOptions& options) {
  if (communicator == nullptr) return mine;
  std::vector<int64_t> flag{mine ? 1 : 0};
  allReduceInt64s(*communicator, flag, CollectiveOperator::Min, options);
  return flag[0] == 1;
}

bool sameEverywhere(Communicator* communicator, int64_t mine, const AgreementOptions& options) {
  if (communicator == nullptr) return true;
  std::vector<int64_t> both{mine, ~mine};
  allReduceInt64s(*communicator, both, CollectiveOperator::Max, options);
  return both[0] == ~both[1];
}

int64_t maxOf(Communicator* communicator, int64_t mine, const AgreementOptions& options) {
  if (communicator == nullptr) return mine;
  std::vector<int64_t> value{mine};
  allReduceInt64s(*communicator, value, CollectiveOperator::Max, options);
  return value[0];
}

std::vector<int64_t> sumOf(Communicator* communicator, std::vector<int64_t> mine,
                           const AgreementOptions& options) {
  if (communicator != nullptr && !mine.empty()) {
    allReduceInt64s(*communicator, mine, CollectiveOperator::Add, options);
  }
  return mine;
}

std::vector<std::string> gatherStrings(Communicator* communicator, const std::string& mine,
                                       const AgreementOptions& options) {
  if (communicator == nullptr) return {mine};
  const auto ranks = static_cast<size_t>(communicator->size());
  AllGatherOptions o;
  o.timeout = options.timeout;
  o.debugName = options.debugName;
  auto length = static_cast<int64_t>(mine.size());
  std::vector<int64_t> lengths(ranks);
  communicator->allGatherSync(BufferView{&length, 1, DataType::INT64},
                              BufferView{lengths.data(), lengths.size(), DataType::INT64}, o);
  // Padded to the longest, at least one byte: a collective of zero elements carries nothing to
  // check the ranks' agreement on.
  const auto longest =
      static_cast<size_t>(std::max<int64_t>(1, *std::max_element(lengths.begin(), lengths.end())));
  std::string padded = mine;
  padded.resize(longest, '\0');
  std::string all(longest * ranks, '\0');
  communicator->allGatherSync(BufferView{padded.data(), longest, DataType::UINT8},
                              BufferView{all.data(), all.size(), DataType::UINT8}, o);
  std::vector<std::string> out(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    out[r] = all.substr(r * longest, static_cast<size_t>(lengths[r]));
  }
  return out;
}

}  // namespace xtrain::comm
