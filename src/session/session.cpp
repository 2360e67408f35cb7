// The public Session classes: thin wrappers over SessionImpl.
#include "xtrain/session.hpp"

#include "session/ir_json.hpp"
#include "session/session_impl.hpp"

namespace xtrain {

OwnedArray::OwnedArray(const TensorInfo& info)
    : info_(info), bytes_(static_cast<size_t>(info.nbytes())) {}

Session::Session(std::unique_ptr<session::SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

void Session::prepareDevice(bool loadEngine) {
  impl_->prepareDevice();
  if (loadEngine) impl_->loadEngine();
}
void Session::loadEngineAndConnectStreams() {
  impl_->loadEngine();
}
void Session::weightsFromHost() {
  impl_->weightsFromHost();
}
void Session::weightsToHost() {
  impl_->weightsToHost();
}
void Session::broadcastWeights(int rootRank) {
  impl_->broadcastWeights(rootRank);
}
void Session::readWeights(const WeightsIO& weights) {
  impl_->readWeights(weights);
}
void Session::writeWeights(const WeightsIO& weights) {
  impl_->writeWeights(weights);
}
void Session::run(IStepIO& stepio, const std::string& debugName) {
  impl_->run(stepio, debugName);
}
void Session::modelToHost(const std::string& path) {
  impl_->modelToHost(path, impl_->config().training);  // PopART writes a training state too
}
void Session::modelToHost(const std::string& path, bool withOptimizerState) {
  impl_->modelToHost(path, withOptimizerState);
}
void Session::updateExternallySavedTensorLocations(const std::string& fromLocation,
                                                    const std::string& toLocation) {
  impl_->updateExternallySavedTensorLocations(fromLocation, toLocation);
}
void Session::resetHostWeights(const std::string& model, bool ignoreWeightsWithoutHostWeight) {
  impl_->resetHostWeights(model, ignoreWeightsWithoutHostWeight);
}

TensorInfo Session::getInfo(const TensorId& id) const {
  return impl_->graph().tensor(id).info;
}
bool Session::hasInfo(const TensorId& id) const {
  return impl_->graph().hasTensor(id);
}
bool Session::isWeight(const TensorId& id) const {
  return impl_->graph().hasTensor(id) &&
         impl_->graph().tensor(id).kind == ir::TensorKind::Variable;
}
std::vector<TensorId> Session::getTensorIds() const {
  std::vector<TensorId> ids;
  for (const auto& [id, t] : impl_->graph().tensors()) ids.push_back(id);
  return ids;
}
std::string Session::getSummaryReport(bool resetProfile) const {
  std::string report = impl_->profiler().summaryReport(impl_->figures());
  if (resetProfile) impl_->profiler().resetProfile();
  return report;
}
std::string Session::getReport() const {
  return impl_->profiler().reportJson(impl_->figures());
}
std::string Session::getSerializedGraph() const {
  return impl_->profiler().serializedGraph();
}
std::string Session::serializeIr(IrSerializationFormat format) const {
  if (format != IrSerializationFormat::JSON) {
    throw error("Session::serializeIr: format {} is not JSON, the one format there is",
                static_cast<int>(format));
  }
  return session::serializeIrJson(impl_->graph(), &impl_->pipeline());
}
uint64_t Session::getCycleCount(const std::string& id) const {
  return impl_->profiler().cycleCount(id);
}

void Session::setRandomSeed(uint64_t seed) {
  impl_->setRandomSeed(seed);
}
uint64_t Session::getRandomSeed() const {
  return impl_->random().seed();
}
std::vector<uint32_t> Session::getRNGState() const {
  return impl_->random().words();
}
void Session::setRNGState(const std::vector<uint32_t>& state) {
  impl_->random().setWords(state);
}

std::map<TensorId, std::unique_ptr<OwnedArray>> Session::initAnchorArrays() const {
  std::map<TensorId, std::unique_ptr<OwnedArray>> arrays;
  for (const auto& id : impl_->config().dataFlow.anchors()) {
    const TensorInfo info(impl_->graph().tensor(id).info.dataType(), impl_->anchorBufferShape(id));
    arrays.emplace(id, std::make_unique<OwnedArray>(info));
  }
  return arrays;
}

Shape Session::expectedInputBufferShape(const TensorId& id) const {
  return impl_->inputBufferShape(id);
}
Shape Session::expectedAnchorBufferShape(const TensorId& id) const {
  return impl_->anchorBufferShape(id);
}

const SessionOptions& Session::getSessionOptions() const {
  return impl_->config().options;
}
std::shared_ptr<DeviceInfo> Session::getDevice() const {
  return impl_->config().device;
}

namespace {

// PopART refuses a pattern set without a mandatory pattern while its runtime asserts are on; the
// set has no other effect here (xtrain/patterns.hpp).
void checkPatterns(const Patterns& patterns) {
  if (patterns.getRuntimeAssertsOn()) patterns.ensureAllMandatoryPreAliasPatternsAreEnabled();
}

// What every session is made of; training adds its loss and optimizer.
session::SessionConfig sessionConfig(const std::string& model, const DataFlow& dataFlow,
                                     std::shared_ptr<DeviceInfo> deviceInfo,
                                     const InputShapeInfo& inputShapeInfo,
                                     const SessionOptions& options, const Patterns& patterns) {
  session::SessionConfig config;
  config.model = model;
  config.dataFlow = dataFlow;
  config.device = std::move(deviceInfo);
  config.inputShapes = inputShapeInfo.getInfos();
  config.options = options;
  config.patterns = patterns;
  return config;
}

}  // namespace

std::unique_ptr<InferenceSession> InferenceSession::createFromOnnxModel(
    const std::string& model, const DataFlow& dataFlow, std::shared_ptr<DeviceInfo> deviceInfo,
    const InputShapeInfo& inputShapeInfo, const SessionOptions& userOptions,
    const Patterns& patterns) {
  checkPatterns(patterns);
  session::SessionConfig config =
      sessionConfig(model, dataFlow, std::move(deviceInfo), inputShapeInfo, userOptions,
                    patterns);
  auto impl = std::make_unique<session::SessionImpl>(std::move(config));
  return std::unique_ptr<InferenceSession>(new InferenceSession(std::move(impl)));
}

std::unique_ptr<TrainingSession> TrainingSession::createFromOnnxModel(
    const std::string& model, const DataFlow& dataFlow, const TensorId& loss,
    const Optimizer& optimizer, std::shared_ptr<DeviceInfo> deviceInfo,
    const InputShapeInfo& inputShapeInfo, const SessionOptions& userOptions,
    const Patterns& patterns) {
  checkPatterns(patterns);
  session::SessionConfig config =
      sessionConfig(model, dataFlow, std::move(deviceInfo), inputShapeInfo, userOptions,
                    patterns);
  config.training = true;
  config.loss = loss;
  config.optimizer = optimizer.clone();
  auto impl = std::make_unique<session::SessionImpl>(std::move(config));
  return std::unique_ptr<TrainingSession>(new TrainingSession(std::move(impl)));
}

void TrainingSession::saveCheckpoint(const std::string& path, const CheckpointOptions& options) {
  impl_->saveCheckpoint(path, options);
}
CheckpointInfo TrainingSession::loadCheckpoint(const std::string& path) {
  return impl_->loadCheckpoint(path);
}
std::optional<CheckpointInfo> TrainingSession::loadLatestCheckpoint(const std::string& directory) {
  return impl_->loadLatestCheckpoint(directory);
}
void TrainingSession::waitForCheckpoint() {
  impl_->waitForCheckpoint();
}

float TrainingSession::getLossScaling() const {
  return impl_->updateControl().lossScaling();
}
int64_t TrainingSession::getSkippedSteps() const {
  return impl_->updateControl().skippedSteps();
}
std::vector<TensorId> TrainingSession::getTrainedWeightIds() const {
  std::vector<TensorId> out;
  for (const auto& u : impl_->optimizerGraph().updates) out.push_back(u.weight);
  return out;
}
std::vector<float> TrainingSession::getGlobalGradientNorms() const {
  return impl_->updateControl().clipNorms();
}
TrainingSession::StepTimes TrainingSession::getStepTimes() const {
  return {impl_->stepCount(), impl_->profiler().runSeconds(), impl_->profiler().reductionSeconds()};
}

void TrainingSession::updateOptimizerFromHost(const Optimizer* optimizer) {
  if (optimizer == nullptr) throw error("updateOptimizerFromHost: no optimizer given");
  impl_->updateOptimizerFromHost(*optimizer);
}

}  // namespace xtrain
