// The training of `xtrain` as a job: set up (the layout, the inputs, the session), resume from a
// checkpoint, run the steps (feeding samples in a seeded order, printing progress, checkpoints,
// validation, metrics, preemption), finish (the last checkpoint, the summary, the saved model).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <vector>

#include "checkpoint_dir.hpp"
#include "metrics_file.hpp"
#include "options.hpp"
#include "sample_order.hpp"
#include "training_inputs.hpp"
#include "validation.hpp"
#include "xtrain/session.hpp"

namespace xtrain::tools {

// Where this instance is in the job: its local replicas and its place among all of them. Under a
// launcher (xrun -n N, mpirun, srun) from the environment, else --replicas of one process.
struct JobLayout {
  bool launched = false;
  int64_t instances = 1, instance = 0;
  int64_t localReplicas = 1, globalReplicas = 1, replicaOffset = 0;
  // The simulated IPUs of each replica: --ipus-per-replica, or the launcher's.
  int64_t ipusPerReplica = 1;
};

class TrainingJob {
 public:
  // Sets the job up: checks the options against the launcher and the other instances, reads the
  // inputs, checks the outputs, builds the session and the validator. Bad input throws
  // xtrain::error (exit 2) before anything is compiled or written; runtime faults
  // xtrain::runtime_error. Progress lines go to `out` on instance 0 only.
  TrainingJob(const TrainOptions& options, std::ostream& out);
  ~TrainingJob();

  // With --resume: continues from the checkpoint (auto: the newest that verifies), a collective.
  void resume();
  // Trains the remaining steps. Returns 0, or dist::kPreemptedExitCode when a preemption request
  // stopped every instance after the same step (having checkpointed it with --checkpoint-dir).
  int runSteps();
  // After the last step: the last checkpoint, the summary line, the profile, the saved model.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  // The session's step times before and after a step's run.
  struct StepTimesSpan {
    TrainingSession::StepTimes before, after;
  };

  // Set up.
  void checkStepFitsData();
  void openOutputs();
  void buildSession();
  void buildValidator();
  int64_t totalSteps() const;
  void makeStepBuffers();

  // One step.
  float learningRate(int64_t step);
  void loadSamples(const std::vector<int64_t>& global);
  double meanLoss();
  [[noreturn]] void blameNonFiniteLoss(double loss, int64_t step, std::vector<int64_t> global);
  void printProgress(int64_t step, double loss, float lr, Clock::time_point now);
  std::optional<ValidationResult> validateIfDue(int64_t step);
  std::optional<ValidationResult> validate(int64_t step);
  void writeMetrics(int64_t step, double loss, float lr, double stepSeconds,
                    const StepTimesSpan& times, const std::optional<ValidationResult>& validation);

  // Checkpoints and preemption.
  void saveCheckpoint(int64_t step);
  void prune();
  int stopForPreemption(int64_t done);

  const TrainOptions& o_;
  std::ostream& out_;
  JobLayout layout_;
  std::ostringstream silent_;
  std::ostream& progress_;  // out_ on instance 0, else silent_
  TrainingInputs in_;
  std::unique_ptr<DataSource> valSource_;  // until the validator takes it
  int64_t samplesPerStep_ = 0;
  std::unique_ptr<MetricsFile> metrics_;
  const checkpoint::CheckpointDirectory checkpointDir_;   // o_.checkpointDir (unused when empty)
  checkpoint::CheckpointDirectory::Lock checkpointLock_;  // held until training ends
  std::unique_ptr<Optimizer> optimizer_;
  std::shared_ptr<DeviceInfo> device_;
  std::unique_ptr<TrainingSession> session_;
  std::unique_ptr<Validator> validator_;
  int64_t steps_ = 0;
  // Host buffers for one step: [bps, af, L] + micro-batch shape.
  std::map<TensorId, std::unique_ptr<OwnedArray>> inputArrays_;
  std::map<TensorId, std::unique_ptr<OwnedArray>> anchorArrays_;
  std::unique_ptr<StepIO> stepio_;
  std::unique_ptr<SampleOrder> order_;
  int64_t firstStep_ = 0;
  std::vector<int64_t> startPosition_;
  // Validation's time is left out of the training throughput.
  double validationSeconds_ = 0;
  Clock::time_point start_, lastPrint_;
  double firstLoss_ = 0, lastLoss_ = 0;
};

// A whole training: set up, resume, run steps, finish. Returns the process exit code. Bad input
// throws xtrain::error; runtime faults xtrain::runtime_error.
int train(const TrainOptions& options, std::ostream& out);

}  // namespace xtrain::tools
