#include "trainer.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/dataset_reader.hpp"
#include "checkpoint_dir.hpp"
#include "common/checked_math.hpp"
#include "common/timeline.hpp"
#include "common/env_switch.hpp"
#include "data_source.hpp"
#include "input_checks.hpp"
#include "input_shapes.hpp"
#include "loss_blame.hpp"
#include "ir/onnx/model_file.hpp"
#include "ir/onnx/onnx_import.hpp"
#include "metrics_file.hpp"
#include "optimizer_flags.hpp"
#include "option_fingerprint.hpp"
#include "test_hooks.hpp"
#include "toolkit/example_models.hpp"
#include "validation.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/format.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/session.hpp"

namespace xtrain::tools {

namespace {

// A seeded shuffle per epoch; hands out the next n sample indices, starting a new epoch when
// needed.
class SampleOrder {
 public:
  SampleOrder(int64_t samples, uint64_t seed) : samples_(samples), seed_(seed) { reshuffle(); }
  std::vector<int64_t> next(int64_t n) {
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(n));
    while (static_cast<int64_t>(out.size()) < n) {
      if (pos_ == samples_) {
        ++epoch_;
        reshuffle();
      }
      out.push_back(order_[static_cast<size_t>(pos_++)]);
    }
    seen_ += n;
    return out;
  }
  int64_t epoch() const { return epoch_; }
  int64_t samplesSeen() const { return seen_; }
  // Where the order is: what a checkpoint records, and seek() restores.
  std::vector<int64_t> position() const { return {epoch_, pos_, seen_}; }
  void seek(const std::vector<int64_t>& p) {
    if (p.size() != 3 || p[0] < 0 || p[1] < 0 || p[1] > samples_) {
      throw error(
          "the checkpoint's data position does not fit this data set of {} samples (was it "
          "written for another data set?)",
          samples_);
    }
    epoch_ = p[0];
    reshuffle();
    pos_ = p[1];
    seen_ = p[2];
  }

 private:
  void reshuffle() {
    order_.resize(static_cast<size_t>(samples_));
    std::iota(order_.begin(), order_.end(), 0);
    std::mt19937_64 rng(seed_ * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(epoch_));
    std::shuffle(order_.begin(), order_.end(), rng);
    pos_ = 0;
  }
  int64_t samples_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  int64_t pos_ = 0;
  int64_t seen_ = 0;
  std::vector<int64_t> order_;
};

// The samples steps [0, steps) of a run took (every instance's), each once, in index order: the
// order replayed from `start`, where the run began. Only for the message of a failed run.
std::vector<int64_t> samplesOfSteps(int64_t numSamples, uint64_t seed,
                                    const std::vector<int64_t>& start, int64_t steps,
                                    int64_t samplesPerStep) {
  SampleOrder replay(numSamples, seed);
  replay.seek(start);
  std::vector<bool> taken(static_cast<size_t>(numSamples));
  int64_t distinct = 0;
  for (int64_t s = 0; s < steps && distinct < numSamples; ++s) {
    for (int64_t i : replay.next(samplesPerStep)) {
      if (!taken[static_cast<size_t>(i)]) ++distinct;
      taken[static_cast<size_t>(i)] = true;
    }
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < numSamples; ++i) {
    if (taken[static_cast<size_t>(i)]) out.push_back(i);
  }
  return out;
}

}  // namespace

int train(const TrainOptions& o, std::ostream& out) {
  // Under a launcher (xrun -n N, mpirun, srun) the job's layout comes from the environment: this
  // instance's local replicas, and its place among all replicas.
  const bool launched = dist::isPopdistEnvSet();
  const int64_t instances = launched ? dist::getNumInstances() : 1;
  const int64_t instance = launched ? dist::getInstanceIndex() : 0;
  int64_t localReplicas = o.replicas;
  if (launched) {
    localReplicas = dist::getNumLocalReplicas();
    if (o.replicas != 1 && o.replicas != localReplicas) {
      throw error(
          "--replicas {} disagrees with the launcher, which gave this instance {} local replicas; "
          "set the layout with xrun's --num-replicas instead",
          o.replicas, localReplicas);
    }
  }
  if (launched) checkOptionsAgreeAcrossInstances(o);  // before any step: exit 2 on a difference
  const int64_t globalReplicas = localReplicas * instances;
  const int64_t replicaOffset = instance * localReplicas;
  // Progress lines from the first instance only; every instance reports errors.
  std::ostringstream silent;
  std::ostream& progress = instance == 0 ? out : silent;

  std::string model;
  TensorId loss = o.loss;
  std::unique_ptr<DataSource> source;
  InputShapeInfo shapes;
  std::map<TensorId, TensorInfo> inputs;  // per micro-batch, batch dimension first
  const bool example = o.model.empty();
  // For validation: the model for a micro-batch of n samples, its bytes (to find the classifier
  // behind the loss) and its floating-point initializers (the state to copy).
  std::string modelBytes;
  std::function<std::string(int64_t)> modelFor;
  std::function<InputShapeInfo(int64_t)> shapesFor;
  std::vector<TensorId> weightIds;

  if (example) {
    MlpSpec spec;
    spec.layers = {32, 64, 8};
    spec.microBatch = o.microBatchSize;
    spec.seed = 1;
    BuiltModel m = buildMlp(spec);
    model = m.proto;
    loss = m.loss;
    inputs[m.input] = TensorInfo(DataType::FLOAT, {o.microBatchSize, 32});
    inputs[m.labels] = TensorInfo(DataType::INT32, {o.microBatchSize});
    source = exampleSource(makeSyntheticClassification(4096, 32, 8, 1234), m.input, m.labels);
    progress << "xtrain: built-in example: MLP 32-64-8 on 4096 synthetic samples of 8 classes\n";
    if (!o.valData.empty()) {
      modelBytes = m.proto;
      modelFor = [spec](int64_t n) {
        MlpSpec s = spec;
        s.microBatch = n;
        return buildMlp(s).proto;
      };
      shapesFor = [](int64_t) { return InputShapeInfo(); };
      weightIds = Builder::createFromOnnxModel(m.proto)->getTrainableTensorIds();
    }
  } else {
    model = o.model;
    // A model given through a FIFO (process substitution, `--model <(...)`) can be read only once:
    // its bytes go to the input declarations below and the session.
    struct stat st {};
    if (::stat(o.model.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
      model = ir::readModelFile(o.model);
    }
    // The model's inputs and their per-micro-batch shapes: the batch dimension is the micro-batch,
    // dimensions the model leaves open (a dynamic-axes export) are the data set's. A regular file
    // is read here and again by the session: handing the session bytes read once instead costs
    // more (createFromOnnxModel copies them twice and keeps one copy besides its own: +1 model
    // size resident, +1-7% start-up CPU measured on the bench models), and messages would name
    // "ONNX model bytes" rather than the file.
    const std::vector<ir::DeclaredInput> declared = ir::declaredInputs(model);
    // One reader: the datasets' shapes first, then the samples of every step.
    auto reader = std::make_unique<checkpoint::DatasetReader>(
        o.data, checkpoint::DatasetReader::residentBytesFromEnvironment());
    std::map<TensorId, TensorInfo> dataInfos;
    for (const auto& in : declared) {
      if (reader->has(in.id)) dataInfos.emplace(in.id, reader->info(in.id));
    }
    inputs = bindInputShapes(declared, dataInfos, o.microBatchSize, o.model, o.data);
    for (const auto& [id, info] : inputs) shapes.add(id, info);
    source = openHdf5Source(std::move(reader), inputs);
    if (!o.valData.empty()) {
      modelBytes = model == o.model ? ir::readModelFile(o.model) : model;
      modelFor = [model](int64_t) { return model; };
      shapesFor = [inputs](int64_t n) {
        InputShapeInfo s;
        for (const auto& [id, info] : inputs) {
          Shape shape = info.shape();
          shape[0] = n;
          s.add(id, TensorInfo(info.dataType(), shape));
        }
        return s;
      };
      weightIds = Builder::createFromOnnxModel(model)->getTrainableTensorIds();
    }
  }
  // The validation set is checked before anything is compiled or written.
  std::unique_ptr<DataSource> valSource;
  if (!o.valData.empty()) valSource = openValidationData(o.valData, inputs);

  // One step trains on samplesPerStep samples over all replicas of the job. Checked before the
  // session is built: absurd counts are bad usage, never a wrapped size or an allocation.
  const int64_t samplesPerStep =
      checkedProduct("the samples of one step", {{"--batches-per-step", o.batchesPerStep},
                                                 {"--accumulation-factor", o.accumulationFactor},
                                                 {"replicas", globalReplicas},
                                                 {"--micro-batch-size", o.microBatchSize}});
  if (source->numSamples() < samplesPerStep) {
    throw error(
        "the data set has {} samples, fewer than one step needs ({} = batches-per-step {} x "
        "accumulation-factor {} x replicas {} x micro-batch-size {})",
        source->numSamples(), samplesPerStep, o.batchesPerStep, o.accumulationFactor,
        globalReplicas, o.microBatchSize);
  }
  // Output paths are checked before the first step, so a typo costs no training.
  checkOutputs(o, instance);
  // Instance 0 writes the metrics; opened now, so a path that cannot be written is bad input.
  std::unique_ptr<MetricsFile> metrics;
  if (!o.metrics.empty() && instance == 0) {
    metrics = std::make_unique<MetricsFile>(o.metrics, /*append=*/!o.resume.empty());
  }
  // Held until training ends: no other job writes checkpoints into the directory meanwhile.
  const CheckpointDirectoryLock checkpointLock = lockCheckpointDirectory(o, instance);
  // Before the first step, so before any checkpoint: xrun's later attempts know the job had it.
  tellXrunTheCheckpointDirectoryExists(o);

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

  std::map<TensorId, AnchorReturnType> anchors{{loss, AnchorReturnType("ALL")}};
  for (const auto& a : o.anchors) {
    if (a.tensor == loss) continue;
    anchors.emplace(a.tensor, a.returnType == "EVERYN" ? AnchorReturnType("EVERYN", a.period)
                                                       : AnchorReturnType(a.returnType));
  }
  DataFlow dataFlow(static_cast<int>(o.batchesPerStep), anchors);
  const std::unique_ptr<Optimizer> optimizer = makeOptimizer(o, *o.lr);

  std::shared_ptr<DeviceInfo> device;
  if (launched) {
    device = dist::getDevice();
  } else {
    if ((o.replicas & (o.replicas - 1)) != 0) {
      throw error(
          "--replicas {} must be a power of two (simulated IPU devices have 1, 2, 4, ... IPUs)",
          o.replicas);
    }
    device =
        DeviceManager::createDeviceManager().acquireAvailableDevice(static_cast<int>(o.replicas));
  }
  auto session = TrainingSession::createFromOnnxModel(model, dataFlow, loss, *optimizer, device,
                                                      shapes, options);
  session->prepareDevice();
  session->setRandomSeed(o.seed);
  session->weightsFromHost();
  std::unique_ptr<Validator> validator;
  if (valSource) {
    ValidationSetup vs;
    vs.dataPath = o.valData;
    vs.model = modelFor;
    vs.shapes = shapesFor;
    vs.inputs = inputs;
    vs.microBatch = o.microBatchSize;
    vs.loss = loss;
    vs.head = findClassificationHead(modelBytes, loss);
    vs.weights = weightIds;
    vs.instance = instance;
    vs.instances = instances;
    const bool classifier = vs.head.has_value();
    validator = std::make_unique<Validator>(std::move(vs), std::move(valSource), *session);
    progress << "xtrain: validation on " << validator->numSamples() << " samples of " << o.valData;
    if (o.valEvery > 0)
      progress << " every " << o.valEvery << " steps";
    else
      progress << " at the end of every epoch";
    progress << " and at the end; "
             << (classifier ? "top-1 accuracy of the classifier"
                            : "no classification loss: loss only")
             << "\n";
  }

  const int64_t L = localReplicas, G = globalReplicas, af = o.accumulationFactor,
                bps = o.batchesPerStep, mb = o.microBatchSize;
  int64_t steps = 100;
  if (o.steps)
    steps = *o.steps;
  else if (o.epochs)
    steps = std::max<int64_t>(
        1, checkedProduct("the samples of --epochs",
                          {{"--epochs", *o.epochs}, {"samples", source->numSamples()}}) /
               samplesPerStep);
  else if (!example)
    steps = std::max<int64_t>(1, source->numSamples() / samplesPerStep);

  progress << "xtrain: optimizer " << describeOptimizer(o) << "; lr schedule " << o.lrSchedule;
  if (o.warmupSteps > 0) progress << " after " << o.warmupSteps << " warm-up steps";
  progress << "\n";

  // Host buffers for one step: [bps, af, L] + micro-batch shape.
  std::map<TensorId, std::unique_ptr<OwnedArray>> inputArrays;
  std::map<TensorId, IArray&> inputRefs;
  for (const auto& [id, info] : inputs) {
    inputArrays[id] = std::make_unique<OwnedArray>(
        TensorInfo(info.dataType(), session->expectedInputBufferShape(id)));
    inputRefs.emplace(id, *inputArrays[id]);
  }
  auto anchorArrays = session->initAnchorArrays();
  std::map<TensorId, IArray&> anchorRefs;
  for (auto& [id, arr] : anchorArrays) anchorRefs.emplace(id, *arr);
  StepIO stepio(inputRefs, anchorRefs);

  SampleOrder order(source->numSamples(), o.seed);
  // Evaluates after `step` steps (collective); instance 0 prints. Its time is left out of the
  // training throughput.
  double validationSeconds = 0;
  auto validate = [&](int64_t step) {
    const auto t0 = std::chrono::steady_clock::now();
    const timeline::Span traced(timeline::Category::Host, "validation");
    const std::optional<ValidationResult> r = validator->evaluate(step);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    validationSeconds += secs;
    if (!r) return r;
    progress << "validation  step " << step << "  epoch " << std::fixed << std::setprecision(2)
             << static_cast<double>(order.samplesSeen()) / static_cast<double>(source->numSamples())
             << "  loss " << std::setprecision(6) << r->loss;
    if (r->accuracy) {
      progress << "  accuracy " << std::setprecision(2) << 100.0 * *r->accuracy << "% ("
               << r->correct << "/" << r->counted << ")";
    }
    progress << "  (" << r->samples << " samples, " << std::setprecision(2) << secs << " s)\n"
             << std::defaultfloat;
    return r;
  };
  int64_t firstStep = 0;
  std::optional<CheckpointInfo> resumed;
  if (o.resume == "auto") {
    // The one a resume takes unless it does not verify (instance 0 prints).
    std::string newest;
    if (instance == 0) {
      const auto order = checkpoint::resumeOrder(o.checkpointDir);
      if (!order.empty()) newest = order.front().path;
    }
    // Collective: every instance resumes from the same checkpoint, or all start afresh.
    resumed = session->loadLatestCheckpoint(o.checkpointDir);
    const JobRestart restart = jobRestart();
    if (!resumed && restart.count > 0) {
      // refuseToStartAfreshOnRestart ruled out a missing directory and removed checkpoints.
      progress << "xtrain: " << restart.describe() << ": no checkpoint in " << o.checkpointDir
               << " (the earlier attempts failed before writing one), "
               << "starting afresh\n";
    } else if (!resumed) {
      progress << "xtrain: no checkpoint in " << o.checkpointDir << ", starting afresh\n";
    } else if (!newest.empty() && resumed->path != newest) {
      progress << "xtrain: the newest checkpoint " << newest
               << " does not verify (see above); falling back to " << resumed->path
               << ", the newest one that does\n";
    }
  } else if (!o.resume.empty()) {
    resumed = session->loadCheckpoint(o.resume);
  }
  if (resumed) {
    const CheckpointInfo& info = *resumed;
    const std::string& resumeFrom = info.path;
    order.seek(info.dataPosition);
    firstStep = info.step;
    progress << "xtrain: resumed from " << resumeFrom << " at step " << firstStep << " (written by "
             << info.instances << " instance(s), " << info.globalReplicationFactor << " replicas)";
    if (const JobRestart restart = jobRestart(); o.resume == "auto" && restart.count > 0) {
      progress << " on " << restart.describe();
    }
    progress << "\n";
  }
  if (!o.checkpointDir.empty()) std::filesystem::create_directories(o.checkpointDir);
  // Instance 0 removes old checkpoints; a failure to remove one is not worth ending the job for.
  auto prune = [&] {
    if (instance != 0 || o.keepLast <= 0) return;
    try {
      checkpoint::prune(o.checkpointDir, static_cast<int>(o.keepLast));
    } catch (const std::exception& e) {
      logging::checkpoint::warn("--keep-last: could not remove old checkpoints: {}", e.what());
    }
  };
  auto saveCheckpoint = [&](int64_t step) {
    const std::string path =
        (std::filesystem::path(o.checkpointDir) / checkpoint::checkpointName(step)).string();
    CheckpointOptions co;
    co.epoch = order.epoch();
    co.samplesSeen = order.samplesSeen();
    co.dataPosition = order.position();
    co.asynchronous = o.checkpointAsync;
    // The previous save is complete before pruning, so --keep-last holds during the run, also with
    // asynchronous saves.
    session->waitForCheckpoint();
    prune();
    session->saveCheckpoint(path, co);
    if (!o.checkpointAsync) {
      prune();
      progress << "xtrain: saved checkpoint " << path << "\n";
    }
  };
  // Preempted after `done` steps (of a run of `steps`): with --checkpoint-dir a checkpoint of that
  // step (unless --checkpoint-every has just written it); no instance exits before every instance
  // has saved its share. The exit code tells xrun and the scheduler to run the job again.
  auto stopForPreemption = [&](int64_t done) {
    const int sig = dist::preemptionSignal();
    const std::string signal = sig == SIGUSR1   ? "SIGUSR1"
                               : sig == SIGTERM ? "SIGTERM"
                                                : "signal " + std::to_string(sig);
    std::string outcome;
    if (!o.checkpointDir.empty()) {
      const bool written = o.checkpointEvery > 0 && done % o.checkpointEvery == 0;
      if (!written) saveCheckpoint(done);
      session->waitForCheckpoint();
      prune();
      outcome = format(
          "run the same command with --resume auto to continue from {}",
          (std::filesystem::path(o.checkpointDir) / checkpoint::checkpointName(done)).string());
    } else {
      outcome = format(
          "no --checkpoint-dir, so the {} steps trained are lost (with --checkpoint-dir DIR and "
          "--resume auto a preempted run continues where it stopped)",
          done - firstStep);
    }
    dist::preemptionAgreed();  // a barrier: every instance has saved
    if (instance == 0) {
      std::cerr << format("xtrain: preempted by {} after step {} of {}; {}\n", signal, done, steps,
                          outcome)
                << std::flush;
    }
    return dist::kPreemptedExitCode;
  };
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto lastPrint = start - std::chrono::seconds(2);
  double firstLoss = std::nan(""), lastLoss = std::nan("");
  const std::vector<int64_t> startPosition = order.position();
  for (int64_t step = firstStep; step < steps; ++step) {
    killSelfIfAskedAt(step);        // tests only (test_hooks.hpp)
    timeline::enterStep(step + 1);  // the timeline numbers steps as this loop does
    const auto stepStart = clock::now();
    // Every instance draws the same global order, laid out [bps][af][G][mb], and keeps its own
    // replicas' part: the job trains on the samples a single instance with G replicas would.
    const std::vector<int64_t> global = order.next(samplesPerStep);
    std::vector<int64_t> samples;
    samples.reserve(static_cast<size_t>(bps * af * L * mb));
    for (int64_t ba = 0; ba < bps * af; ++ba) {
      const auto begin = global.begin() + (ba * G + replicaOffset) * mb;
      samples.insert(samples.end(), begin, begin + L * mb);
    }
    {
      timeline::Span loading(timeline::Category::Data, "load batch");
      loading.arg("samples", static_cast<int64_t>(samples.size()));
      for (const auto& [id, info] : inputs) {
        source->fill(id, info, samples, inputArrays[id]->data());
        if (!example) requireFiniteSamples(*inputArrays[id], id, o.data, samples);
      }
    }
    // The schedule is a function of the step, so a resumed run continues it where the
    // checkpoint left off and sets the rates of an uninterrupted run.
    float lr = *o.lr;
    if (scheduleChangesLearningRate(o)) {
      lr = static_cast<float>(
          scheduledLearningRate(o.lrSchedule, *o.lr, o.warmupSteps, step, steps));
      session->updateOptimizerFromHost(makeOptimizer(o, lr).get());
    }
    const TrainingSession::StepTimes timesBefore = session->getStepTimes();
    session->run(stepio, "step" + std::to_string(step));
    const TrainingSession::StepTimes timesAfter = session->getStepTimes();
    OwnedArray& lossArray = *anchorArrays.at(loss);
    double sum = 0;
    // The loss is FLOAT, or FLOAT16 for a FLOAT16 model.
    if (lossArray.dataType() == DataType::FLOAT16) {
      const auto* lv = static_cast<const uint16_t*>(lossArray.data());
      for (size_t i = 0; i < lossArray.nelms(); ++i) sum += halfToFloat(lv[i]);
    } else {
      const float* lv = lossArray.dataAs<float>();
      for (size_t i = 0; i < lossArray.nelms(); ++i) sum += lv[i];
    }
    const double meanLoss = sum / static_cast<double>(lossArray.nelms());
    if (!std::isfinite(meanLoss)) {
      // The data is inspected only now: this step's samples, then those of the earlier steps.
      std::optional<OverflowingValue> culprit;
      bool inThisStep = false;
      if (!example) {
        std::vector<int64_t> current(global);
        std::sort(current.begin(), current.end());
        current.erase(std::unique(current.begin(), current.end()), current.end());
        culprit = findOverflowingValue(*source, inputs, current);
        inThisStep = culprit.has_value();
        if (!culprit) {
          culprit = findOverflowingValue(
              *source, inputs,
              samplesOfSteps(source->numSamples(), o.seed, startPosition, step - firstStep,
                             samplesPerStep));
        }
      }
      throwNonFiniteLoss(meanLoss, step + 1, culprit, inThisStep, o.data);
    }
    if (step == firstStep) firstLoss = meanLoss;
    lastLoss = meanLoss;
    const auto now = clock::now();
    const double stepSeconds = std::chrono::duration<double>(now - stepStart).count();
    const double elapsed = std::chrono::duration<double>(now - start).count() - validationSeconds;
    if (!o.checkpointDir.empty() && o.checkpointEvery > 0 && (step + 1) % o.checkpointEvery == 0 &&
        step + 1 != steps) {
      saveCheckpoint(step + 1);
    }
    if (steps <= 100 || now - lastPrint >= std::chrono::seconds(1) || step + 1 == steps) {
      lastPrint = now;
      progress << "step " << std::setw(6) << step + 1 << "/" << steps << "  epoch " << order.epoch()
               << "  loss " << std::fixed << std::setprecision(6) << meanLoss << std::defaultfloat
               << "  lr " << lr << std::fixed << "  samples/s " << std::setprecision(1)
               << static_cast<double>(step + 1 - firstStep) * static_cast<double>(samplesPerStep) /
                      elapsed
               << "\n"
               << std::defaultfloat;
    }
    std::optional<ValidationResult> validation;
    if (validator) {
      // Every --val-every steps, or when this step completed an epoch; and after the last step.
      const int64_t seen = order.samplesSeen(), n = source->numSamples();
      const bool epochEnded = seen / n > (seen - samplesPerStep) / n;
      if (step + 1 == steps || (o.valEvery > 0 ? (step + 1) % o.valEvery == 0 : epochEnded)) {
        validation = validate(step + 1);
      }
    }
    if (metrics) {
      StepMetrics m;
      m.step = step + 1;
      m.epoch =
          static_cast<double>(order.samplesSeen()) / static_cast<double>(source->numSamples());
      m.loss = meanLoss;
      m.learningRate = lr;
      m.stepSeconds = stepSeconds;
      m.samplesPerSecond = static_cast<double>(samplesPerStep) / stepSeconds;
      const double runSeconds = timesAfter.runSeconds - timesBefore.runSeconds;
      m.reductionShare =
          runSeconds > 0 ? (timesAfter.reductionSeconds - timesBefore.reductionSeconds) / runSeconds
                         : 0.0;
      m.lossScale = session->getLossScaling();
      if (o.clipNorm) {
        const std::vector<float> norms = session->getGlobalGradientNorms();
        if (!norms.empty()) m.gradientNorm = norms.front();
      }
      if (validation) {
        m.validationLoss = validation->loss;
        m.validationAccuracy = validation->accuracy;
        m.validationSamples = validation->samples;
      }
      m.wallTime =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      metrics->write(m);
    }
    // A preemption request (SIGUSR1/SIGTERM to any instance): every instance stops after this
    // same step. The last step ends the run normally anyway.
    if (step + 1 < steps && dist::preemptionAgreed()) return stopForPreemption(step + 1);
  }
  if (!o.checkpointDir.empty() && firstStep < steps) {
    saveCheckpoint(steps);
    session->waitForCheckpoint();
    prune();
  }
  const double seconds =
      std::chrono::duration<double>(clock::now() - start).count() - validationSeconds;
  const int64_t trained = std::max<int64_t>(0, steps - firstStep);
  const double trainedSamples = static_cast<double>(trained) * static_cast<double>(samplesPerStep);
  progress << "xtrain: trained " << trained << " steps (" << std::fixed << std::setprecision(0)
           << trainedSamples << " samples) in " << std::defaultfloat << std::setprecision(3)
           << seconds << " s, " << std::setprecision(1) << std::fixed << trainedSamples / seconds
           << " samples/s; loss " << std::setprecision(6) << firstLoss << " -> " << lastLoss;
  if (validator) {
    progress << "; validation took " << std::setprecision(2) << validationSeconds << " s more";
  }
  progress << "\n" << std::defaultfloat;
  // XTRAIN_PROFILE_OPS=1: where the steps went (kernel time by phase, by op type, top ops), summed
  // over the steps this run trained.
  if (readBoolSwitch("XTRAIN_PROFILE_OPS", false)) {
    const std::string report = session->getSummaryReport();
    const size_t at = report.find("execution profile");
    if (at != std::string::npos) progress << "xtrain: " << report.substr(at);
  }
  if (!o.saveModel.empty()) {
    session->modelToHost(o.saveModel);  // collective; instance 0 writes
    if (instance == 0) out << "xtrain: wrote the trained model to " << o.saveModel << "\n";
  }
  return 0;
}

}  // namespace xtrain::tools
