// The optimizers of `xtrain --optimizer`, the hyperparameter flags each one accepts with their
// defaults, the library optimizer they build, and the learning-rate schedule.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "options.hpp"
#include "xtrain/optimizer.hpp"

namespace xtrain::tools {

// "sgd, adam, adamw, lamb, adamax, adagrad, rmsprop, centered-rmsprop, adadelta".
std::string optimizerNames();

// Checks o.optimizer, that every hyperparameter flag given applies to it and is in range, then
// fills the defaults of the values that apply (the others stay empty), and builds the optimizer
// once to let the library check the combination. Throws UsageError naming the flag and the
// optimizer.
void resolveOptimizerOptions(TrainOptions& o);

// The optimizer of resolved options with learning rate `lr` (non-constant, so that a schedule can
// change it with updateOptimizerFromHost; every other value is constant).
std::unique_ptr<Optimizer> makeOptimizer(const TrainOptions& o, float lr);

// "adam = Adam(Adam, L2Regularization): lr 0.001, weight-decay 0, beta1 0.9, ...".
std::string describeOptimizer(const TrainOptions& o);

// The learning rate of run `step` (0-based) of a training of `total` runs with base rate `base`
// and `warmup` warm-up runs (docs: the xtrain section of README.md):
//   step < warmup: base * (step + 1) / warmup
//   then constant: base;  linear: base * (total - step) / (total - warmup);
//        cosine: base * 0.5 * (1 + cos(pi * (step - warmup) / (total - warmup)))
double scheduledLearningRate(const std::string& schedule, double base, int64_t warmup, int64_t step,
                             int64_t total);

// Whether the schedule ever gives another rate than the base one (then xtrain sets the rate before
// every run).
bool scheduleChangesLearningRate(const TrainOptions& o);

}  // namespace xtrain::tools
