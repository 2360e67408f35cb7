// Sessions (PopART's TrainingSession and InferenceSession): compile an ONNX model for a simulated
// IPU device, move weights between host and device, and run steps.
//
// Life cycle: createFromOnnxModel -> prepareDevice -> weightsFromHost -> run ... -> weightsToHost
// -> readWeights / modelToHost. Host-side weights are a copy: writeWeights changes the host copy,
// weightsFromHost sends it to the device; weightsToHost fetches the device's values into the host
// copy, readWeights copies them out. A session is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xtrain/api.hpp"
#include "xtrain/checkpoint.hpp"
#include "xtrain/dataflow.hpp"
#include "xtrain/devicemanager.hpp"
#include "xtrain/ndarraywrapper.hpp"
#include "xtrain/optimizer.hpp"
#include "xtrain/patterns.hpp"
#include "xtrain/sessionoptions.hpp"
#include "xtrain/stepio.hpp"
#include "xtrain/tensornames.hpp"

namespace xtrain {

// Shapes for graph inputs whose shape the model leaves open.
class XTRAIN_API InputShapeInfo {
 public:
  void add(const TensorId& id, const TensorInfo& info) { infos_[id] = info; }
  bool has(const TensorId& id) const { return infos_.count(id) != 0; }
  const TensorInfo& get(const TensorId& id) const { return infos_.at(id); }
  const std::map<TensorId, TensorInfo>& getInfos() const { return infos_; }

 private:
  std::map<TensorId, TensorInfo> infos_;
};

// A host array that owns its memory: what initAnchorArrays returns.
class XTRAIN_API OwnedArray : public IArray {
 public:
  explicit OwnedArray(const TensorInfo& info);
  void* data() override { return bytes_.data(); }
  DataType dataType() const override { return info_.dataType(); }
  size_t rank() const override { return info_.shape().size(); }
  int64_t dim(size_t index) const override { return info_.shape().at(index); }
  size_t nelms() const override { return static_cast<size_t>(info_.nelms()); }
  const Shape shape() const override { return info_.shape(); }
  const TensorInfo& info() const { return info_; }
  template <typename T>
  T* dataAs() {
    if (dataTypeOf<T>() != info_.dataType()) {
      throw error("OwnedArray of {} read as {}", info_.toString(), dataTypeName(dataTypeOf<T>()));
    }
    return reinterpret_cast<T*>(bytes_.data());
  }

 private:
  TensorInfo info_;
  std::vector<unsigned char> bytes_;
};

namespace session {
class SessionImpl;
}

class XTRAIN_API Session {
 public:
  virtual ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Compiles the programs and checks memory: throws OutOfMemoryException when an IPU overflows.
  // With loadEngine (PopART's default) the engine is also loaded, as loadEngineAndConnectStreams
  // does. Logs "Graph compiled" and "Engine loaded" (info), as PopART does.
  void prepareDevice(bool loadEngine = true);
  // Loads the compiled engine onto the device (throws xtrain::error before prepareDevice: there is
  // no compiled engine). weightsFromHost and run load it themselves when it is not loaded. On a
  // simulated device loading moves nothing: what it marks is the order of PopART's calls.
  void loadEngineAndConnectStreams();
  void weightsFromHost();
  void weightsToHost();
  // Copies host weights (and optimizer state, e.g. "Accl___w") into / out of user buffers. Each
  // buffer must have the tensor's type and element count.
  void readWeights(const WeightsIO& weights);
  void writeWeights(const WeightsIO& weights);
  // Runs one step: batchesPerStep batches of accumulationFactor micro-batches on every local
  // replica.
  void run(IStepIO& stepio, const std::string& debugName = "");
  // Copies the weights and optimizer state of instance `rootRank` (its first replica) to every
  // replica of every instance (a broadcast across the instances with distributed replication).
  // Collective: every instance calls it. rootRank must be in [0, number of instances).
  void broadcastWeights(int rootRank = 0);
  // Writes the ONNX model with the device's current weights, and for a training session its
  // optimizer state as initializers with PopART's names (Accl___<w> velocity, Accum___<w>
  // accumulator, Adam's Accl1___/Accl2___/Step___, ...), as PopART's modelToHost does. A model
  // holding such initializers initialises a training session's optimizer state from them. With
  // several instances it is collective (every instance calls it; it fetches grouped and sharded
  // weights from all of them) and the first instance writes the file.
  void modelToHost(const std::string& path);
  // Same; withOptimizerState = false leaves the optimizer state out (weights only: an inference
  // model), true asks for it (an error for an inference session).
  void modelToHost(const std::string& path, bool withOptimizerState);
  // Moves the data of the model's initializers stored externally in the file fromLocation to the
  // new file toLocation (their data as that file holds it now), so that modelToHost writes them
  // there from then on (PopART's Session::updateExternallySavedTensorLocations). A runtime_error
  // when toLocation exists, fromLocation does not, or no initializer is stored in fromLocation.
  void updateExternallySavedTensorLocations(const std::string& fromLocation,
                                            const std::string& toLocation);
  // Loads initializer values from an ONNX model (path or bytes) into the host weights; call
  // weightsFromHost after. A weight missing from the model is an error unless
  // ignoreWeightsWithoutHostWeight.
  void resetHostWeights(const std::string& modelProtoOrPath,
                        bool ignoreWeightsWithoutHostWeight = false);

  TensorInfo getInfo(const TensorId& id) const;
  bool hasInfo(const TensorId& id) const;
  // True for a weight of the model (trainable or not): a tensor that weightsFromHost sets, not
  // one the host feeds each run.
  bool isWeight(const TensorId& id) const;
  std::vector<TensorId> getTensorIds() const;
  std::vector<TensorId> getAllTensorIds() const { return getTensorIds(); }
  // The text report (docs/reports.md): what the session compiled, memory per simulated IPU by
  // tensor class, and the execution profile since it was last reset (per-op time by phase,
  // collectives per communicator, host transfers, runs). resetProfile: the execution profile is
  // zeroed after the report is made (memory and the steps run are not).
  std::string getSummaryReport(bool resetProfile = true) const;
  // The same as getSummaryReport as a JSON document (schema "xtrain.report", docs/reports.md),
  // without resetting the profile. After prepareDevice() (an error before).
  std::string getReport() const;
  // The lowered programs as JSON (schema "xtrain.serialized-graph"): each phase's instructions
  // with their op, tensors, FLOPs and simulated cycles, and every tensor's type and shape. After
  // prepareDevice().
  std::string getSerializedGraph() const;
  // The IR as PopART's serializeIr writes it (JSON, the only format): {"maingraph": [op, ...]},
  // each op with its type, name, domain, version, inputs, outputs (name, shape, type, index) and
  // attributes as strings, its placement among them (__ipu_number; docs/model-parallelism.md).
  // Available from session creation on.
  std::string serializeIr(IrSerializationFormat format = IrSerializationFormat::JSON) const;
  // The simulated clock's cycles of the last run() on replica 0 (0 before the first run): needs
  // SessionOptions::instrumentWithHardwareCycleCounter (an error without it). id "" is the whole
  // program, the only counter there is (another id is an error).
  uint64_t getCycleCount(const std::string& id = "") const;

  void setRandomSeed(uint64_t seed);
  uint64_t getRandomSeed() const;
  std::vector<uint32_t> getRNGState() const;
  void setRNGState(const std::vector<uint32_t>& state);

  // One array per anchor, shaped as DataFlow and replication say (section 6).
  std::map<TensorId, std::unique_ptr<OwnedArray>> initAnchorArrays() const;
  // The shape run() expects for an input or anchor buffer.
  Shape expectedInputBufferShape(const TensorId& id) const;
  Shape expectedAnchorBufferShape(const TensorId& id) const;

  const SessionOptions& getSessionOptions() const;
  std::shared_ptr<DeviceInfo> getDevice() const;

  session::SessionImpl& impl() { return *impl_; }

 protected:
  explicit Session(std::unique_ptr<session::SessionImpl> impl);
  std::unique_ptr<session::SessionImpl> impl_;
};

class XTRAIN_API InferenceSession : public Session {
 public:
  static std::unique_ptr<InferenceSession> createFromOnnxModel(
      const std::string& model, const DataFlow& dataFlow, std::shared_ptr<DeviceInfo> deviceInfo,
      const InputShapeInfo& inputShapeInfo = {}, const SessionOptions& userOptions = {},
      const Patterns& patterns = Patterns());

 private:
  using Session::Session;
};

class XTRAIN_API TrainingSession : public Session {
 public:
  static std::unique_ptr<TrainingSession> createFromOnnxModel(
      const std::string& model, const DataFlow& dataFlow, const TensorId& loss,
      const Optimizer& optimizer, std::shared_ptr<DeviceInfo> deviceInfo,
      const InputShapeInfo& inputShapeInfo = {}, const SessionOptions& userOptions = {},
      const Patterns& patterns = Patterns());

  // Replaces non-constant hyperparameters on the device (e.g. a learning-rate schedule). Changing a
  // constant value or the optimizer's type throws xtrain::error naming it.
  void updateOptimizerFromHost(const Optimizer* optimizer);
  // The loss scaling factor in force: the optimizer's, or with automatic loss scaling the current
  // S.
  float getLossScaling() const;
  // Steps whose update automatic loss scaling skipped (a gradient was inf or nan).
  int64_t getSkippedSteps() const;
  // The weights the optimizer updates: those the loss depends on (xtrain extension). Empty when no
  // weight reaches the loss: as PopART's, such a session runs (the model in training mode, with
  // any anchored gradients) but trains nothing, with a warning.
  std::vector<TensorId> getTrainedWeightIds() const;
  // Gradient clipping (the optimizer's ClipNormSettings): the global norm of each clip group's
  // reduced, unscaled gradients as the latest clipped update computed it (on the first local
  // replica), in the settings' order. Empty before the first update and without clipping; an
  // update that automatic loss scaling skipped computes none and leaves the previous values.
  std::vector<float> getGlobalGradientNorms() const;
  // The time of the steps run so far: in run() and, within it, in the gradient reduction across
  // the replicas (the figures of getSummaryReport's "run:" line). The difference of two readings
  // gives the steps between them, e.g. one step's share of time spent reducing gradients.
  struct StepTimes {
    int64_t steps = 0;
    double runSeconds = 0;
    double reductionSeconds = 0;
  };
  StepTimes getStepTimes() const;

  // Checkpoints (docs/checkpoint-format.md). Collective: with several instances every instance
  // calls them with the same path. saveCheckpoint writes the directory `path` (its parent must
  // exist): weights, optimizer state, random state and options' data position, each instance
  // writing its share; `path` appears complete or not at all, and <parent>/latest names it
  // afterwards. loadCheckpoint reads a checkpoint (its directory or checkpoint.h5), written by any
  // replica layout, checks format, checksums, model fingerprint, tensors, shapes and types (nothing
  // is loaded unless everything matches), puts its state on every replica and returns what it
  // recorded.
  void saveCheckpoint(const std::string& path, const CheckpointOptions& options = {});
  CheckpointInfo loadCheckpoint(const std::string& path);
  // The newest complete checkpoint of `directory` (following its `latest`), loaded as
  // loadCheckpoint does; nullopt, loading nothing, when there is none. Collective: the instances
  // agree on the checkpoint (an error when they see different ones).
  std::optional<CheckpointInfo> loadLatestCheckpoint(const std::string& directory);
  // Waits for an asynchronous saveCheckpoint; rethrows its failure.
  void waitForCheckpoint();

 private:
  using Session::Session;
};

}  // namespace xtrain
