// Agreements: the small collectives by which the instances of a job decide something together
// (whether every one succeeded, whether they hold the same value, the largest request, everyone's
// text). Written once here for every user: the job's world communicator (comm/job.hpp), a session's
// checkpoint communicator, the xtrain tool's option and validation checks.
//
// Contract: each function is one or two collectives on `communicator`, so every rank calls it at
// the same point of that communicator's order (comm/communicator.hpp), with the same options. A
// null communicator stands for a job of one instance: the result is this instance's own, with no
// communication. Failures (timeout, mismatch, abort) propagate as the communicator throws them.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/types.hpp"

namespace xtrain::comm {

class Communicator;

struct AgreementOptions {
  std::optional<Milliseconds> timeout;  // unset: the communicator's
  std::string debugName = "agreement";  // names the collective in traces and timeout messages
};

// True on every rank when `mine` is true on every rank.
bool allTrue(Communicator* communicator, bool mine, const AgreementOptions& options = {});

// True on every rank when every rank passed the same value (one all-reduce of v and ~v with Max:
// max(v) == ~max(~v) == min(v); ~v, unlike -v, exists for every int64_t).
bool sameEverywhere(Communicator* communicator, int64_t mine, const AgreementOptions& options = {});

// The largest of the ranks' values, on every rank.
int64_t maxOf(Communicator* communicator, int64_t mine, const AgreementOptions& options = {});

// The element-wise sums of the ranks' vectors (the same length everywhere; integer sums wrap), on
// every rank. With zeros from all ranks but one, it hands that rank's values to everyone.
std::vector<int64_t> sumOf(Communicator* communicator, std::vector<int64_t> mine,
                           const AgreementOptions& options = {});

// Every rank's string, indexed by rank, on every rank (two all-gathers: the lengths, then the
// bytes padded to the longest). Strings may hold any bytes.
std::vector<std::string> gatherStrings(Communicator* communicator, const std::string& mine,
                                       const AgreementOptions& options = {});

}  // namespace xtrain::comm

#pragma GCC visibility pop
