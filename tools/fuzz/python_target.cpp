// The python target: a small program that uses the built package as PopART's (`import xtrain as
// popart`), builds a model and a session and calls one API with one hostile argument: a value of the
// boundary set, a wrong type, None, a numpy array of the wrong dtype or shape, a huge list. The call
// must return or raise a Python exception; the program then prints its last line. A crash, an
// abort, a hang, or an end before that line (the interpreter killed from inside) is a defect.
#include <algorithm>

#include "targets.hpp"

namespace xfuzz {

namespace {

// Run before the call: the model (Builder), a session on a CPU device, one step. Names the call
// templates use: X, LABELS, LOSS, builder(), model(), session(...), ready(...), run(s), cpu().
constexpr const char* kPrelude = R"(import sys
import numpy as np
import xtrain as popart

X = np.ones((2, 4), np.float32)
LABELS = np.zeros((2,), np.int32)


def builder():
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 4]), "x")
    w = b.addInitializedInputTensor(np.full((4, 3), 0.1, np.float32), "w")
    return b, x, w


def model():
    b, x, w = builder()
    p = b.aiOnnx.softmax([b.aiOnnx.matmul([x, w])], axis=1)
    labels = b.addInputTensor(popart.TensorInfo("INT32", [2]), "labels")
    loss = b.aiGraphcore.nllloss([p, labels])
    b.addOutputTensor(loss)
    return b.getModelProto(), loss


PROTO, LOSS = model()


def cpu():
    return popart.DeviceManager().createCpuDevice()


def session(options=None, optimizer=None, dataflow=None, loss=None, proto=None):
    kwargs = dict(fnModel=PROTO if proto is None else proto,
                  dataFlow=dataflow or popart.DataFlow(1, {LOSS: popart.AnchorReturnType("ALL")}),
                  loss=LOSS if loss is None else loss,
                  optimizer=optimizer or popart.SGD({"defaultLearningRate": (0.1, False)}),
                  deviceInfo=cpu())
    if options is not None:
        kwargs["userOptions"] = options
    return popart.TrainingSession(**kwargs)


def ready(s):
    s.prepareDevice()
    s.weightsFromHost()
    return s


def run(s):
    ready(s)
    anchors = s.initAnchorArrays()
    s.run(popart.PyStepIO({"x": X, "labels": LABELS}, anchors))
    return s


)";

// PopART's SessionOptions members a user sets (docs/session-options.md).
const std::vector<std::string>& optionMembers() {
  static const std::vector<std::string> v{
      "replicatedGraphCount", "enableReplicatedGraphs", "globalReplicationFactor", "globalReplicaOffset",
      "enableDistributedReplicatedGraphs", "accumulationFactor", "enableGradientAccumulation", "numIOTiles",
      "engineOptions", "reportOptions", "logDir", "enableStochasticRounding", "enableFloatingPointChecks",
      "autoRecomputation", "virtualGraphMode", "enableOutlining", "outlineThreshold", "enablePipelining",
      "syntheticDataMode", "accumulationAndReplicationReductionType", "constantWeights",
      "instrumentWithHardwareCycleCounter", "enableLoadAndOffloadRNGState", "compilationProgressTotal",
      "swapLimitScheduler", "timeLimitScheduler", "kahnTieBreaker", "cachePath", "enableEngineCaching",
      "defaultPrefetchBufferingDepth", "replicatedCollectivesSettings", "executionPhaseSettings",
      "batchSerializationSettings", "automaticLossScalingSettings", "weightTensorLocationSettings"};
  return v;
}

// One API call with the hostile value V (replaced by its expression).
const std::vector<std::string>& calls() {
  static const std::vector<std::string> v{
      // SessionOptions: a member set, then a session with them trains a step.
      "opts = popart.SessionOptions()\nsetattr(opts, MEMBER, V)\nrun(session(options=opts))",
      "opts = popart.SessionOptions()\nopts.engineOptions = {\"trace.file\": V}\nrun(session(options=opts))",
      "opts = popart.SessionOptions()\nopts.engineOptions = {\"trace.file\": \"t.json\", \"trace.steps\": V}\n"
      "run(session(options=opts))",
      "opts = popart.SessionOptions()\nopts.engineOptions = {V: \"1\"}\nrun(session(options=opts))",
      "opts = popart.SessionOptions()\nopts.reportOptions = {\"autoReport.directory\": V}\n"
      "run(session(options=opts))",
      // DataFlow and anchors.
      "run(session(dataflow=popart.DataFlow(V, {LOSS: popart.AnchorReturnType(\"ALL\")})))",
      "run(session(dataflow=popart.DataFlow(1, V)))",
      "run(session(dataflow=popart.DataFlow(1, {LOSS: popart.AnchorReturnType(\"EVERYN\", V)})))",
      "run(session(dataflow=popart.DataFlow(1, {V: popart.AnchorReturnType(\"ALL\")})))",
      "popart.AnchorReturnType(V)",
      // PyStepIO and run().
      "s = ready(session())\ns.run(popart.PyStepIO({\"x\": V, \"labels\": LABELS}, s.initAnchorArrays()))",
      "s = ready(session())\ns.run(popart.PyStepIO({\"x\": X, \"labels\": V}, s.initAnchorArrays()))",
      "s = ready(session())\ns.run(popart.PyStepIO(V, s.initAnchorArrays()))",
      "s = ready(session())\ns.run(popart.PyStepIO({\"x\": X, \"labels\": LABELS}, V))",
      "s = ready(session())\ns.run(popart.PyStepIO({\"x\": X, \"labels\": LABELS}, {LOSS: V}))",
      "s = ready(session())\ns.run(V)",
      // Builder.
      "b = popart.Builder()\nb.addInputTensor(popart.TensorInfo(\"FLOAT\", V), \"x\")\nb.getModelProto()",
      "popart.TensorInfo(V, [2, 4])",
      "b = popart.Builder()\nb.addInitializedInputTensor(V, \"w\")\nb.getModelProto()",
      "b, x, w = builder()\nb.aiOnnx.matmul(V)\nb.getModelProto()",
      "b, x, w = builder()\nb.aiOnnx.softmax([b.aiOnnx.matmul([x, w])], axis=V)\nb.getModelProto()",
      "b, x, w = builder()\nb.aiOnnx.gemm([x, w], alpha=V)\nb.getModelProto()",
      "b, x, w = builder()\nb.addOutputTensor(V)\nb.getModelProto()",
      "b, x, w = builder()\nb.aiOnnx.transpose([x], perm=V)\nb.getModelProto()",
      "b, x, w = builder()\nb.aiGraphcore.scale([x], V)\nb.getModelProto()",
      "b, x, w = builder()\nb.aiOnnx.constant(V)\nb.getModelProto()",
      "b, x, w = builder()\nb.aiOnnx.split([x], num_outputs=V, axis=1)\nb.getModelProto()",
      // Optimizers: in a session, and swapped in after a step.
      "run(session(optimizer=popart.SGD({\"defaultLearningRate\": (V, False)})))",
      "run(session(optimizer=popart.SGD({\"defaultMomentum\": (V, True)})))",
      "run(session(optimizer=popart.SGD(V)))",
      "run(session(optimizer=popart.Adam({\"defaultLearningRate\": (V, False)})))",
      "run(session(optimizer=popart.Adam({\"defaultBeta2\": (V, True)})))",
      "s = run(session())\ns.updateOptimizerFromHost(popart.SGD({\"defaultLearningRate\": (V, False)}))\nrun(s)",
      "s = run(session())\ns.updateOptimizerFromHost(V)",
      // Sessions.
      "run(session(proto=V))",
      "run(session(loss=V))",
      "popart.InferenceSession(fnModel=PROTO, dataFlow=V, deviceInfo=cpu())",
      "popart.TrainingSession(fnModel=PROTO, dataFlow=popart.DataFlow(1, {}), loss=LOSS,\n"
      "                       optimizer=popart.ConstSGD(0.1), deviceInfo=V)",
      "s = run(session())\ns.getInfo(V)",
      "s = run(session())\ns.modelToHost(V)",
      "s = run(session())\ns.resetHostWeights(V)",
      // Devices.
      "popart.DeviceManager().acquireAvailableDevice(V)",
      "popart.DeviceManager().acquireAvailableDevice(1, V)",
      "popart.DeviceManager().acquireDeviceById(V)",
      "popart.DeviceManager().createIpuModelDevice(V)",
      "popart.DeviceManager().enumerateDevices(numIpus=V)",
      // Checkpoints.
      "s = run(session())\ns.saveCheckpoint(V)",
      "s = run(session())\ns.saveCheckpoint(\"ck/ckpt-00000001\", epoch=V)",
      "s = run(session())\ns.saveCheckpoint(\"ck/ckpt-00000001\", samplesSeen=V)",
      "s = run(session())\ns.saveCheckpoint(\"ck/ckpt-00000001\", dataPosition=V)",
      "s = ready(session())\ns.loadCheckpoint(V)",
      "s = ready(session())\ns.loadLatestCheckpoint(V)",
  };
  return v;
}

// Hostile arguments, as Python expressions: the boundary set, wrong types, numpy arrays of the
// wrong dtype or shape, huge containers.
const std::vector<std::string>& hostileValues() {
  static const std::vector<std::string> v{
      "0", "-1", "1", "2**31 - 1", "2**31", "2**32", "2**62", "2**63 - 1", "2**63", "2**64", "-2**63", "10**100",
      "float('nan')", "float('inf')", "float('-inf')", "1e-45", "-0.5", "''", "'x' * 100000", "'abc'", "'--'",
      "'a\\0b'", "'\\ud800'", "None", "True", "[]", "{}", "()", "object()", "lambda: 0", "b'abc'",
      "[0] * 1000000", "[-1, -1]", "[2**63, 1]", "[[[[0]]]]", "{'a': object()}", "{None: None}",
      "np.zeros((2, 4), np.float64)", "np.zeros((2, 4), np.int64)", "np.zeros((3,), np.float32)",
      "np.zeros((0,), np.float32)", "np.zeros((2, 4), np.float32)[:, ::2]", "np.ones((4, 2), np.float32).T",
      "np.array(['a', 'b'])", "np.zeros((1,) * 32, np.float32)", "np.array(2**63, dtype=np.uint64)",
      "np.float32('nan')", "np.int64(-1)", "np.zeros((2, 4), dtype=object)", "np.zeros((2, 4), np.float16)",
      "np.zeros((2, 4), bool)", "np.full((2,), 2**31 - 1, np.int32)", "np.full((2,), -5, np.int32)",
      "popart.SessionOptions()", "popart.SGD()"};
  return v;
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string indented(const std::string& code) { return "    " + replaceAll(code, "\n", "\n    "); }

}  // namespace

// The program of one call: the prelude, then the call in a try whose outcome is printed, then the
// line that shows the interpreter got to the end.
std::string pythonProgram(const std::string& call, const std::string& value) {
  return std::string(kPrelude) + "V = " + value + "\ntry:\n" + indented(call) +
         "\n    print(\"xfuzz-python: returned\")\n"
         "except Exception as e:\n"
         "    print(\"xfuzz-python: raised %s: %s\" % (type(e).__name__, str(e)[:300]))\n"
         "print(\"" + kPythonDone + "\")\n";
}

Case makePythonCase(const Pristine& p, const fs::path& caseDir, Rng& rng) {
  std::string call = rng.pick(calls());
  const std::string value = rng.pick(hostileValues());
  call = replaceAll(call, "MEMBER", "\"" + rng.pick(optionMembers()) + "\"");
  writeFile(caseDir / "case.py", pythonProgram(call, value));
  Case c;
  c.mutation = "V = " + (value.size() > 60 ? value.substr(0, 60) + "..." : value) + "; " + replaceAll(call, "\n", "; ");
  Command cmd;
  cmd.args = {p.python, "case.py"};
  cmd.allowedExits = {0};
  cmd.requiredOutput = kPythonDone;
  cmd.timeoutAtLeast = std::chrono::seconds(60);
  c.commands.push_back(std::move(cmd));
  return c;
}

}  // namespace xfuzz
