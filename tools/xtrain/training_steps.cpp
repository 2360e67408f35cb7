// TrainingJob's steps: samples in, the run, the loss, progress, checkpoints, validation, metrics
// and preemption.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "common/timeline.hpp"
#include "input_checks.hpp"
#include "loss_blame.hpp"
#include "optimizer_flags.hpp"
#include "test_hooks.hpp"
#include "trainer.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::tools {

int TrainingJob::runSteps() {
  start_ = Clock::now();
  lastPrint_ = start_ - std::chrono::seconds(2);
  firstLoss_ = lastLoss_ = std::nan("");
  startPosition_ = order_->position();
  for (int64_t step = firstStep_; step < steps_; ++step) {
    killSelfIfAskedAt(step);        // tests only (test_hooks.hpp)
    timeline::enterStep(step + 1);  // the timeline numbers steps as this loop does
    const auto stepStart = Clock::now();
    const std::vector<int64_t> global = order_->next(samplesPerStep_);
    loadSamples(global);
    const float lr = learningRate(step);
    const TrainingSession::StepTimes timesBefore = session_->getStepTimes();
    session_->run(*stepio_, "step" + std::to_string(step));
    const TrainingSession::StepTimes timesAfter = session_->getStepTimes();
    const double loss = meanLoss();
    if (!std::isfinite(loss)) blameNonFiniteLoss(loss, step, global);
    if (step == firstStep_) firstLoss_ = loss;
    lastLoss_ = loss;
    const auto now = Clock::now();
    const double stepSeconds = std::chrono::duration<double>(now - stepStart).count();
    if (!o_.checkpointDir.empty() && o_.checkpointEvery > 0 &&
        (step + 1) % o_.checkpointEvery == 0 && step + 1 != steps_) {
      saveCheckpoint(step + 1);
    }
    printProgress(step, loss, lr, now);
    const std::optional<ValidationResult> validation = validateIfDue(step);
    if (metrics_) {
      writeMetrics(step, loss, lr, stepSeconds, {timesBefore, timesAfter}, validation);
    }
    // A preemption request (SIGUSR1/SIGTERM to any instance): every instance stops after this
    // same step. The last step ends the run normally anyway.
    if (step + 1 < steps_ && dist::preemptionAgreed()) return stopForPreemption(step + 1);
  }
  return 0;
}

// Every instance draws the same global order, laid out [bps][af][G][mb], and keeps its own
// replicas' part: the job trains on the samples a single instance with G replicas would.
void TrainingJob::loadSamples(const std::vector<int64_t>& global) {
  const int64_t L = layout_.localReplicas, G = layout_.globalReplicas, mb = o_.microBatchSize,
                batches = o_.batchesPerStep * o_.accumulationFactor;
  std::vector<int64_t> samples;
  samples.reserve(static_cast<size_t>(batches * L * mb));
  for (int64_t ba = 0; ba < batches; ++ba) {
    const auto begin = global.begin() + (ba * G + layout_.replicaOffset) * mb;
    samples.insert(samples.end(), begin, begin + L * mb);
  }
  timeline::Span loading(timeline::Category::Data, "load batch");
  loading.arg("samples", static_cast<int64_t>(samples.size()));
  for (const auto& [id, info] : in_.inputs) {
    in_.source->fill(id, info, samples, inputArrays_[id]->data());
    if (!in_.example) requireFiniteSamples(*inputArrays_[id], id, o_.data, samples);
  }
}

// The schedule is a function of the step, so a resumed run continues it where the checkpoint left
// off and sets the rates of an uninterrupted run.
float TrainingJob::learningRate(int64_t step) {
  if (!scheduleChangesLearningRate(o_)) return *o_.lr;
  const auto lr = static_cast<float>(
      scheduledLearningRate(o_.lrSchedule, *o_.lr, o_.warmupSteps, step, steps_));
  session_->updateOptimizerFromHost(makeOptimizer(o_, lr).get());
  return lr;
}

// The mean of the step's loss anchor, FLOAT or, for a FLOAT16 model, FLOAT16.
double TrainingJob::meanLoss() {
  OwnedArray& lossArray = *anchorArrays_.at(in_.loss);
  double sum = 0;
  if (lossArray.dataType() == DataType::FLOAT16) {
    const auto* lv = static_cast<const uint16_t*>(lossArray.data());
    for (size_t i = 0; i < lossArray.nelms(); ++i) sum += halfToFloat(lv[i]);
  } else {
    const float* lv = lossArray.dataAs<float>();
    for (size_t i = 0; i < lossArray.nelms(); ++i) sum += lv[i];
  }
  return sum / static_cast<double>(lossArray.nelms());
}

// The data is inspected only now: this step's samples, then those of the earlier steps.
void TrainingJob::blameNonFiniteLoss(double loss, int64_t step, std::vector<int64_t> global) {
  std::optional<OverflowingValue> culprit;
  bool inThisStep = false;
  if (!in_.example) {
    std::sort(global.begin(), global.end());
    global.erase(std::unique(global.begin(), global.end()), global.end());
    culprit = findOverflowingValue(*in_.source, in_.inputs, global);
    inThisStep = culprit.has_value();
    if (!culprit) {
      culprit =
          findOverflowingValue(*in_.source, in_.inputs,
                               samplesOfSteps(in_.source->numSamples(), o_.seed, startPosition_,
                                              step - firstStep_, samplesPerStep_));
    }
  }
  throwNonFiniteLoss(loss, step + 1, culprit, inThisStep, o_.data);
}

// Every step of a short run, else at most once a second, and the last step.
void TrainingJob::printProgress(int64_t step, double loss, float lr, Clock::time_point now) {
  if (steps_ > 100 && now - lastPrint_ < std::chrono::seconds(1) && step + 1 != steps_) return;
  lastPrint_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count() - validationSeconds_;
  progress_ << "step " << std::setw(6) << step + 1 << "/" << steps_ << "  epoch " << order_->epoch()
            << "  loss " << std::fixed << std::setprecision(6) << loss << std::defaultfloat
            << "  lr " << lr << std::fixed << "  samples/s " << std::setprecision(1)
            << static_cast<double>(step + 1 - firstStep_) * static_cast<double>(samplesPerStep_) /
                   elapsed
            << "\n"
            << std::defaultfloat;
}

// Every --val-every steps, or when this step completed an epoch; and after the last step.
std::optional<ValidationResult> TrainingJob::validateIfDue(int64_t step) {
  if (!validator_) return std::nullopt;
  const int64_t seen = order_->samplesSeen(), n = in_.source->numSamples();
  const bool epochEnded = seen / n > (seen - samplesPerStep_) / n;
  if (step + 1 == steps_ || (o_.valEvery > 0 ? (step + 1) % o_.valEvery == 0 : epochEnded)) {
    return validate(step + 1);
  }
  return std::nullopt;
}

// Evaluates after `step` steps (collective); instance 0 prints.
std::optional<ValidationResult> TrainingJob::validate(int64_t step) {
  const auto t0 = Clock::now();
  const timeline::Span traced(timeline::Category::Host, "validation");
  const std::optional<ValidationResult> r = validator_->evaluate(step);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  validationSeconds_ += secs;
  if (!r) return r;
  progress_ << "validation  step " << step << "  epoch " << std::fixed << std::setprecision(2)
            << static_cast<double>(order_->samplesSeen()) /
                   static_cast<double>(in_.source->numSamples())
            << "  loss " << std::setprecision(6) << r->loss;
  if (r->accuracy) {
    progress_ << "  accuracy " << std::setprecision(2) << 100.0 * *r->accuracy << "% ("
              << r->correct << "/" << r->counted << ")";
  }
  progress_ << "  (" << r->samples << " samples, " << std::setprecision(2) << secs << " s)\n"
            << std::defaultfloat;
  return r;
}

void TrainingJob::writeMetrics(int64_t step, double loss, float lr, double stepSeconds,
                               const StepTimesSpan& times,
                               const std::optional<ValidationResult>& validation) {
  StepMetrics m;
  m.step = step + 1;
  m.epoch =
      static_cast<double>(order_->samplesSeen()) / static_cast<double>(in_.source->numSamples());
  m.loss = loss;
  m.learningRate = lr;
  m.stepSeconds = stepSeconds;
  m.samplesPerSecond = static_cast<double>(samplesPerStep_) / stepSeconds;
  const double runSeconds = times.after.runSeconds - times.before.runSeconds;
  m.reductionShare =
      runSeconds > 0 ? (times.after.reductionSeconds - times.before.reductionSeconds) / runSeconds
                     : 0.0;
  m.lossScale = session_->getLossScaling();
  if (o_.clipNorm) {
    const std::vector<float> norms = session_->getGlobalGradientNorms();
    if (!norms.empty()) m.gradientNorm = norms.front();
  }
  if (validation) {
    m.validationLoss = validation->loss;
    m.validationAccuracy = validation->accuracy;
    m.validationSamples = validation->samples;
  }
  m.wallTime =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  metrics_->write(m);
}

void TrainingJob::saveCheckpoint(int64_t step) {
  const std::string path = checkpointDir_.checkpointPath(step);
  CheckpointOptions co;
  co.epoch = order_->epoch();
  co.samplesSeen = order_->samplesSeen();
  co.dataPosition = order_->position();
  co.asynchronous = o_.checkpointAsync;
  // The previous save is complete before pruning, so --keep-last holds during the run, also with
  // asynchronous saves.
  session_->waitForCheckpoint();
  prune();
  session_->saveCheckpoint(path, co);
  if (!o_.checkpointAsync) {
    prune();
    progress_ << "xtrain: saved checkpoint " << path << "\n";
  }
}

// Instance 0 removes old checkpoints; a failure to remove one is not worth ending the job for.
void TrainingJob::prune() {
  if (layout_.instance != 0 || o_.keepLast <= 0) return;
  try {
    checkpointDir_.prune(static_cast<int>(o_.keepLast));
  } catch (const std::exception& e) {
    logging::checkpoint::warn("--keep-last: could not remove old checkpoints: {}", e.what());
  }
}

// Preempted after `done` steps: with --checkpoint-dir a checkpoint of that step (unless
// --checkpoint-every has just written it); no instance exits before every instance has saved its
// share. The exit code tells xrun and the scheduler to run the job again.
int TrainingJob::stopForPreemption(int64_t done) {
  const int sig = dist::preemptionSignal();
  const std::string signal = sig == SIGUSR1   ? "SIGUSR1"
                             : sig == SIGTERM ? "SIGTERM"
                                              : "signal " + std::to_string(sig);
  std::string outcome;
  if (!o_.checkpointDir.empty()) {
    const bool written = o_.checkpointEvery > 0 && done % o_.checkpointEvery == 0;
    if (!written) saveCheckpoint(done);
    session_->waitForCheckpoint();
    prune();
    outcome = format("run the same command with --resume auto to continue from {}",
                     checkpointDir_.checkpointPath(done));
  } else {
    outcome = format(
        "no --checkpoint-dir, so the {} steps trained are lost (with --checkpoint-dir DIR and "
        "--resume auto a preempted run continues where it stopped)",
        done - firstStep_);
  }
  dist::preemptionAgreed();  // a barrier: every instance has saved
  if (layout_.instance == 0) {
    std::cerr << format("xtrain: preempted by {} after step {} of {}; {}\n", signal, done, steps_,
                        outcome)
              << std::flush;
  }
  return dist::kPreemptedExitCode;
}

}  // namespace xtrain::tools
