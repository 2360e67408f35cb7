// TrainingJob's set up, resume and finish (the steps are in training_steps.cpp).
#include "trainer.hpp"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <limits>

#include "common/checked_math.hpp"
#include "common/env_switch.hpp"
#include "input_checks.hpp"
#include "model_parallel_flags.hpp"
#include "optimizer_flags.hpp"
#include "option_fingerprint.hpp"
#include "placement_check.hpp"
#include "placement_summary.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/dist.hpp"

namespace xtrain::tools {

namespace {

JobLayout jobLayout(const TrainOptions& o) {
  JobLayout l;
  l.launched = dist::isPopdistEnvSet();
  l.localReplicas = o.replicas;
  if (l.launched) {
    l.instances = dist::getNumInstances();
    l.instance = dist::getInstanceIndex();
    l.localReplicas = dist::getNumLocalReplicas();
    if (o.replicas != 1 && o.replicas != l.localReplicas) {
      throw error(
          "--replicas {} disagrees with the launcher, which gave this instance {} local replicas; "
          "set the layout with xrun's --num-replicas instead",
          o.replicas, l.localReplicas);
    }
    // As --replicas: the launcher's layout wins, a different explicit value is a mistake.
    l.ipusPerReplica = dist::getNumIpusPerReplica();
    if (o.ipusPerReplica != 1 && o.ipusPerReplica != l.ipusPerReplica) {
      throw error(
          "--ipus-per-replica {} disagrees with the launcher, which gave each replica {} IPUs; "
          "set it with xrun's --ipus-per-replica instead",
          o.ipusPerReplica, l.ipusPerReplica);
    }
    checkOptionsAgreeAcrossInstances(o);  // before any step: exit 2 on a difference
  } else {
    l.ipusPerReplica = o.ipusPerReplica;
  }
  checkIpusPerReplica(o, l.ipusPerReplica);
  l.globalReplicas = l.localReplicas * l.instances;
  l.replicaOffset = l.instance * l.localReplicas;
  return l;
}

SessionOptions sessionOptions(const TrainOptions& o, bool launched) {
  SessionOptions options;
  if (launched) {
    dist::configureSessionOptions(options);
  } else if (o.replicas > 1) {
    options.enableReplicatedGraphs = true;
    options.replicatedGraphCount = o.replicas;
  }
  if (o.accumulationFactor > 1) {
    options.enableGradientAccumulation = true;
    options.accumulationFactor = o.accumulationFactor;
  }
  options.accumulationAndReplicationReductionType =
      o.reduction == "mean" ? ReductionType::Mean : ReductionType::Sum;
  options.batchNormRunningVariance = o.batchNormRunningVariance;
  applyModelParallelOptions(o, options);
  return options;
}

// The device of a job without a launcher: --replicas x --ipus-per-replica IPUs (the session gives
// each replica device IPUs / replicas of them). A pool too small is named by the flags.
std::shared_ptr<DeviceInfo> acquireDevice(int64_t replicas, int64_t ipusPerReplica) {
  const int64_t ipus = checkedProduct(
      "the IPUs of the device", {{"--replicas", replicas}, {"--ipus-per-replica", ipusPerReplica}});
  try {
    if (ipus > std::numeric_limits<int>::max()) throw error("more IPUs than any pool has");
    return DeviceManager::createDeviceManager().acquireAvailableDevice(static_cast<int>(ipus));
  } catch (const runtime_error&) {
    throw;  // a busy pool is not bad usage
  } catch (const internal_error&) {
    throw;
  } catch (const error& e) {
    throw error(
        "--replicas {} x --ipus-per-replica {} needs a device of {} simulated IPUs: {}; use fewer "
        "replicas or IPUs per replica",
        replicas, ipusPerReplica, ipus, e.what());
  }
}

DataFlow dataFlow(const TrainOptions& o, const TensorId& loss) {
  std::map<TensorId, AnchorReturnType> anchors{{loss, AnchorReturnType("ALL")}};
  for (const auto& a : o.anchors) {
    if (a.tensor == loss) continue;
    anchors.emplace(a.tensor, a.returnType == "EVERYN" ? AnchorReturnType("EVERYN", a.period)
                                                       : AnchorReturnType(a.returnType));
  }
  return DataFlow(static_cast<int>(o.batchesPerStep), anchors);
}

}  // namespace

TrainingJob::TrainingJob(const TrainOptions& options, std::ostream& out)
    : o_(options),
      out_(out),
      layout_(jobLayout(options)),
      progress_(layout_.instance == 0 ? out : silent_),
      checkpointDir_(options.checkpointDir) {
  in_ = loadTrainingInputs(o_, progress_);
  // The validation set is checked before anything is compiled or written.
  if (!o_.valData.empty()) valSource_ = openValidationData(o_.valData, in_.inputs);
  checkStepFitsData();
  openOutputs();
  buildSession();
  buildValidator();
  steps_ = totalSteps();
  progress_ << "xtrain: optimizer " << describeOptimizer(o_) << "; lr schedule " << o_.lrSchedule;
  if (o_.warmupSteps > 0) progress_ << " after " << o_.warmupSteps << " warm-up steps";
  progress_ << "\n";
  makeStepBuffers();
  order_ = std::make_unique<SampleOrder>(in_.source->numSamples(), o_.seed);
}

TrainingJob::~TrainingJob() = default;

// One step trains on samplesPerStep samples over all replicas of the job. Checked before the
// session is built: absurd counts are bad usage, never a wrapped size or an allocation.
void TrainingJob::checkStepFitsData() {
  samplesPerStep_ =
      checkedProduct("the samples of one step", {{"--batches-per-step", o_.batchesPerStep},
                                                 {"--accumulation-factor", o_.accumulationFactor},
                                                 {"replicas", layout_.globalReplicas},
                                                 {"--micro-batch-size", o_.microBatchSize}});
  if (in_.source->numSamples() < samplesPerStep_) {
    throw error(
        "the data set has {} samples, fewer than one step needs ({} = batches-per-step {} x "
        "accumulation-factor {} x replicas {} x micro-batch-size {})",
        in_.source->numSamples(), samplesPerStep_, o_.batchesPerStep, o_.accumulationFactor,
        layout_.globalReplicas, o_.microBatchSize);
  }
}

void TrainingJob::openOutputs() {
  // Output paths are checked before the first step, so a typo costs no training.
  checkOutputs(o_, layout_.instance);
  // Instance 0 writes the metrics; opened now, so a path that cannot be written is bad input.
  if (!o_.metrics.empty() && layout_.instance == 0) {
    metrics_ = std::make_unique<MetricsFile>(o_.metrics, /*append=*/!o_.resume.empty());
  }
  // Held until training ends: no other job writes checkpoints into the directory meanwhile.
  checkpointLock_ = lockCheckpointDirectory(o_, layout_.instance);
  // Before the first step, so before any checkpoint: xrun's later attempts know the job had it.
  tellXrunTheCheckpointDirectoryExists(o_);
}

void TrainingJob::buildSession() {
  const SessionOptions options = sessionOptions(o_, layout_.launched);
  const DataFlow flow = dataFlow(o_, in_.loss);
  optimizer_ = makeOptimizer(o_, *o_.lr);
  if (layout_.launched) {
    device_ = dist::getDevice();
  } else {
    if ((o_.replicas & (o_.replicas - 1)) != 0) {
      throw error(
          "--replicas {} must be a power of two (simulated IPU devices have 1, 2, 4, ... IPUs)",
          o_.replicas);
    }
    device_ = acquireDevice(o_.replicas, layout_.ipusPerReplica);
  }
  session_ = TrainingSession::createFromOnnxModel(in_.model, flow, in_.loss, *optimizer_, device_,
                                                  in_.shapes, options);
  checkManualPlacementFits(o_, *session_, layout_.ipusPerReplica);
  if (session_->getTrainedWeightIds().empty()) {
    throw error(
        "no trainable weight reaches the loss '{}': it does not depend on any of the model's "
        "weights, so training would change nothing (is it the right tensor?)",
        in_.loss);
  }
  session_->prepareDevice();
  if (usesModelParallelism(o_, layout_.ipusPerReplica)) {
    progress_ << describePlacement(o_, *session_, layout_.ipusPerReplica);
  }
  session_->setRandomSeed(o_.seed);
  session_->weightsFromHost();
}

void TrainingJob::buildValidator() {
  if (!valSource_) return;
  ValidationSetup vs;
  vs.dataPath = o_.valData;
  vs.model = in_.modelFor;
  vs.shapes = in_.shapesFor;
  vs.inputs = in_.inputs;
  vs.microBatch = o_.microBatchSize;
  vs.loss = in_.loss;
  vs.head = findClassificationHead(in_.modelBytes, in_.loss);
  vs.weights = in_.weightIds;
  vs.instance = layout_.instance;
  vs.instances = layout_.instances;
  const bool classifier = vs.head.has_value();
  validator_ = std::make_unique<Validator>(std::move(vs), std::move(valSource_), *session_);
  progress_ << "xtrain: validation on " << validator_->numSamples() << " samples of " << o_.valData;
  if (o_.valEvery > 0)
    progress_ << " every " << o_.valEvery << " steps";
  else
    progress_ << " at the end of every epoch";
  progress_ << " and at the end; "
            << (classifier ? "top-1 accuracy of the classifier"
                           : "no classification loss: loss only")
            << "\n";
}

// --steps; else --epochs over the data; else one epoch of --data or 100 steps of the example.
int64_t TrainingJob::totalSteps() const {
  const int64_t samples = in_.source->numSamples();
  if (o_.steps) return *o_.steps;
  if (o_.epochs) {
    return std::max<int64_t>(1, checkedProduct("the samples of --epochs",
                                               {{"--epochs", *o_.epochs}, {"samples", samples}}) /
                                    samplesPerStep_);
  }
  if (!in_.example) return std::max<int64_t>(1, samples / samplesPerStep_);
  return 100;
}

void TrainingJob::makeStepBuffers() {
  std::map<TensorId, IArray&> inputRefs;
  for (const auto& [id, info] : in_.inputs) {
    inputArrays_[id] = std::make_unique<OwnedArray>(
        TensorInfo(info.dataType(), session_->expectedInputBufferShape(id)));
    inputRefs.emplace(id, *inputArrays_[id]);
  }
  anchorArrays_ = session_->initAnchorArrays();
  std::map<TensorId, IArray&> anchorRefs;
  for (auto& [id, arr] : anchorArrays_) anchorRefs.emplace(id, *arr);
  stepio_ = std::make_unique<StepIO>(inputRefs, anchorRefs);
}

void TrainingJob::resume() {
  std::optional<CheckpointInfo> resumed;
  if (o_.resume == "auto") {
    // The one a resume takes unless it does not verify (instance 0 prints).
    std::string newest;
    if (layout_.instance == 0) {
      const auto order = checkpointDir_.resumeOrder();
      if (!order.empty()) newest = order.front().path;
    }
    // Collective: every instance resumes from the same checkpoint, or all start afresh.
    resumed = session_->loadLatestCheckpoint(o_.checkpointDir);
    const JobRestart restart = jobRestart();
    if (!resumed && restart.count > 0) {
      // refuseToStartAfreshOnRestart ruled out a missing directory and removed checkpoints.
      progress_ << "xtrain: " << restart.describe() << ": no checkpoint in " << o_.checkpointDir
                << " (the earlier attempts failed before writing one), "
                << "starting afresh\n";
    } else if (!resumed) {
      progress_ << "xtrain: no checkpoint in " << o_.checkpointDir << ", starting afresh\n";
    } else if (!newest.empty() && resumed->path != newest) {
      progress_ << "xtrain: the newest checkpoint " << newest
                << " does not verify (see above); falling back to " << resumed->path
                << ", the newest one that does\n";
    }
  } else if (!o_.resume.empty()) {
    resumed = session_->loadCheckpoint(o_.resume);
  }
  if (resumed) {
    const CheckpointInfo& info = *resumed;
    order_->seek(info.dataPosition);
    firstStep_ = info.step;
    progress_ << "xtrain: resumed from " << info.path << " at step " << firstStep_
              << " (written by " << info.instances << " instance(s), "
              << info.globalReplicationFactor << " replicas)";
    if (const JobRestart restart = jobRestart(); o_.resume == "auto" && restart.count > 0) {
      progress_ << " on " << restart.describe();
    }
    progress_ << "\n";
  }
  if (!o_.checkpointDir.empty()) std::filesystem::create_directories(o_.checkpointDir);
}

void TrainingJob::finish() {
  if (!o_.checkpointDir.empty() && firstStep_ < steps_) {
    saveCheckpoint(steps_);
    session_->waitForCheckpoint();
    prune();
  }
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start_).count() - validationSeconds_;
  const int64_t trained = std::max<int64_t>(0, steps_ - firstStep_);
  const double trainedSamples = static_cast<double>(trained) * static_cast<double>(samplesPerStep_);
  progress_ << "xtrain: trained " << trained << " steps (" << std::fixed << std::setprecision(0)
            << trainedSamples << " samples) in " << std::defaultfloat << std::setprecision(3)
            << seconds << " s, " << std::setprecision(1) << std::fixed << trainedSamples / seconds
            << " samples/s; loss " << std::setprecision(6) << firstLoss_ << " -> " << lastLoss_;
  if (validator_) {
    progress_ << "; validation took " << std::setprecision(2) << validationSeconds_ << " s more";
  }
  progress_ << "\n" << std::defaultfloat;
  // XTRAIN_PROFILE_OPS=1: where the steps went (kernel time by phase, by op type, top ops), summed
  // over the steps this run trained.
  if (readBoolSwitch("XTRAIN_PROFILE_OPS", false)) {
    const std::string report = session_->getSummaryReport();
    const size_t at = report.find("execution profile");
    if (at != std::string::npos) progress_ << "xtrain: " << report.substr(at);
  }
  if (!o_.saveModel.empty()) {
    session_->modelToHost(o_.saveModel);  // collective; instance 0 writes
    if (layout_.instance == 0)
      out_ << "xtrain: wrote the trained model to " << o_.saveModel << "\n";
  }
}

int train(const TrainOptions& options, std::ostream& out) {
  TrainingJob job(options, out);
  job.resume();
  const int code = job.runSteps();
  if (code != 0) return code;
  job.finish();
  return 0;
}

}  // namespace xtrain::tools
