// The training options every instance of a job must share, and their check at start-up.
//
// Instances started with different --lr or --micro-batch-size (a per-instance environment, a
// wrapper script) would otherwise train together and exit 0 with a model no single setting
// describes; a different --steps or checkpoint setting would leave one instance waiting in a
// collective the others never issue. Which flags take part is a column of xtrain's flag table
// (train_flags.cpp): paths (--model, --data, --checkpoint-dir, --save-model) may differ between
// hosts, so only whether they are given takes part; --log-level and --anchor change no collective
// and are left out, and --replicas is checked against the launcher's layout instead.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "options.hpp"

namespace xtrain::tools {

// (flag, value) for each training-relevant option, in the table's order; "-" for an unset value.
using OptionFingerprint = flags::Fingerprint;
OptionFingerprint optionFingerprint(const TrainOptions& o);

// One "flag=value" line per option, and back. decode throws xtrain::error on a malformed text.
std::string encodeFingerprint(const OptionFingerprint& f);
OptionFingerprint decodeFingerprint(const std::string& text);

// "" when `other` (instance `otherIndex`) has instance 0's options; otherwise one clause per
// differing option: "--lr: instance 0 has 0.05, instance 1 has 0.1".
std::string describeDifferences(const OptionFingerprint& first, const OptionFingerprint& other,
                                int otherIndex);

// Under a launcher with several instances: the instances gather their fingerprints over the job's
// world (comm/job.hpp) and each compares every one with instance 0's, so all of them stop with the
// same xtrain::error (exit 2) naming the first instance that differs, the option and both values.
// Bounded by the communication timeout (XTRAIN_COMM_TIMEOUT). A single process returns at once.
void checkOptionsAgreeAcrossInstances(const TrainOptions& o);

}  // namespace xtrain::tools
