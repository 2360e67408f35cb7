"""Shared set-up of the Python tests (not itself a test: ctest runs only test_*.py).

- PrivatePool: a unittest mixin giving each test a private pool of 8 simulated IPUs (its own lock
  directory and pool size), restoring the environment and removing the directory afterwards, so a
  test never meets another job's IPUs.
- linear_model / sgd / initializers: the small model most tests train.
- BIN_DIR, clean_env: the build's programs (xrun, xtrain) and an environment without a launcher's
  variables, for tests that start processes.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import xtrain as popart

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.normpath(os.path.join(HERE, "..", ".."))
BIN_DIR = os.environ.get("XTRAIN_BIN_DIR", os.path.join(SOURCE_DIR, "build", "bin"))
LAUNCHER_PREFIXES = ("XTRAIN_", "POPDIST_", "OMPI_", "PMI", "PMIX_", "SLURM_")
_POOL_VARIABLES = ("XTRAIN_NUM_IPUS", "XTRAIN_IPU_LOCK_DIR", "XTRAIN_IPU_IDS")


class PrivatePool:
    """A private pool of 8 simulated IPUs; self.tmp is a scratch directory removed afterwards."""

    def setUp(self):
        self._saved = {k: os.environ.get(k) for k in _POOL_VARIABLES}
        self.tmp = tempfile.mkdtemp(prefix="xtrain-test-%s-" % type(self).__name__)
        os.environ["XTRAIN_NUM_IPUS"] = "8"
        os.environ["XTRAIN_IPU_LOCK_DIR"] = os.path.join(self.tmp, "locks")
        os.makedirs(os.environ["XTRAIN_IPU_LOCK_DIR"])
        os.environ.pop("XTRAIN_IPU_IDS", None)

    def tearDown(self):
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.tmp, ignore_errors=True)


def clean_env(**extra):
    """os.environ without a launcher's variables, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    env.update(extra)
    return env


def results_under_xrun(test, script_text, timeout, instances=2, replicas=4, xrun_args=()):
    """Runs script_text as `xrun -n instances --num-replicas replicas [xrun_args] python3 SCRIPT`
    on a private pool of 8 IPUs (one kernel thread each) and returns the JSON objects its instances
    printed after "RESULT ", sorted by their "instance"; skips the test when xrun is not built."""
    xrun = os.path.join(BIN_DIR, "xrun")
    if not os.path.exists(xrun):
        test.skipTest("no " + xrun)
    tmp = tempfile.mkdtemp(prefix="xtrain-test-xrun-")
    try:
        script = os.path.join(tmp, "train.py")
        with open(script, "w") as f:
            f.write(script_text)
        env = clean_env(XTRAIN_NUM_IPUS="8", XTRAIN_IPU_LOCK_DIR=os.path.join(tmp, "locks"),
                        OMP_NUM_THREADS="1")
        os.makedirs(env["XTRAIN_IPU_LOCK_DIR"])
        r = subprocess.run([xrun, "-n", str(instances), "--num-replicas", str(replicas),
                            "--timeout", str(timeout), "--no-tag-output", *xrun_args,
                            sys.executable, script],
                           env=env, capture_output=True, text=True, timeout=timeout + 50)
        test.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        results = sorted((json.loads(line.split("RESULT ", 1)[1])
                          for line in r.stdout.splitlines() if "RESULT " in line),
                         key=lambda d: d["instance"])
        test.assertEqual([d["instance"] for d in results], list(range(instances)),
                         r.stdout + r.stderr)
        return results
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def linear_model(batch=2, inputs=4, outputs=3, seed=0):
    """y = x @ w + b; loss = mean((y - t)^2). Returns the serialized ModelProto."""
    rng = np.random.RandomState(seed)
    w = numpy_helper.from_array(rng.randn(inputs, outputs).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(outputs, np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]),
             helper.make_node("Add", ["xw", "b"], ["y"]),
             helper.make_node("Sub", ["y", "t"], ["d"]),
             helper.make_node("Mul", ["d", "d"], ["d2"]),
             helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0)]
    graph = helper.make_graph(
        nodes, "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, inputs]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [batch, outputs])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, outputs])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def run_once(b, outs, feeds, loss=None):
    """Runs Builder b's model once on a CPU device (a training session with SGD lr 0 when loss is
    given) and returns the anchors of outs."""
    df = popart.DataFlow(1, {o: popart.AnchorReturnType("All") for o in outs})
    dev = popart.DeviceManager().createCpuDevice()
    if loss is None:
        s = popart.InferenceSession(fnModel=b.getModelProto(), dataFlow=df, deviceInfo=dev)
    else:
        s = popart.TrainingSession(fnModel=b.getModelProto(), dataFlow=df, loss=loss,
                                   optimizer=popart.ConstSGD(0.0), deviceInfo=dev)
    s.prepareDevice()
    s.weightsFromHost()
    anchors = s.initAnchorArrays()
    s.run(popart.PyStepIO(feeds, anchors))
    return anchors


def sgd(lr=0.05, momentum=0.0):
    return popart.SGD({"defaultLearningRate": (lr, False), "defaultMomentum": (momentum, True)})


def initializers(path_or_bytes):
    """{name: array} of a model's initializers (a file name or serialized bytes)."""
    m = onnx.load(path_or_bytes) if isinstance(path_or_bytes, str) else \
        onnx.load_from_string(path_or_bytes)
    return {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
