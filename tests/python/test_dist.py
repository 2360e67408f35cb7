"""xtrain.dist (PopDist's helpers): alone, and under `xrun -n 2` with a replicated training
session per instance (bounded by timeouts)."""
import json
import subprocess
import sys
import textwrap
import unittest

import xtrain
import xtrain.dist
from xtrain import dist

from python_testing import HERE, clean_env, results_under_xrun


def run_python(code, env, timeout=120):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, timeout=timeout,
                          capture_output=True, text=True)


class DistAloneTest(unittest.TestCase):
    def test_names(self):
        self.assertIs(xtrain.dist.getNumInstances, dist.getNumInstances)
        self.assertEqual(dist.kPreemptedExitCode, 75)
        for name in ["getNumInstances", "getInstanceIndex", "getNumTotalReplicas",
                     "getReplicaIndexOffset", "getNumLocalReplicas", "isPopdistEnvSet",
                     "configureSessionOptions", "getDevice", "handlePreemption",
                     "preemptionRequested", "preemptionAgreed", "preemptionSignal", "getJobId"]:
            self.assertTrue(callable(getattr(dist, name)), name)

    def test_single_instance(self):
        r = run_python("""
            import json, xtrain
            from xtrain import dist
            o = xtrain.SessionOptions()
            dist.configureSessionOptions(o)
            print(json.dumps([dist.isPopdistEnvSet(), dist.isDistributed(), dist.getNumInstances(),
                              dist.getInstanceIndex(), dist.getNumLocalReplicas(),
                              dist.getNumTotalReplicas(), dist.getReplicaIndexOffset(),
                              o.enableDistributedReplicatedGraphs, o.replicatedGraphCount]))
        """, clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), [False, False, 1, 0, 1, 1, 0, False, 1])

    def test_environment_is_read(self):
        r = run_python("""
            import json, xtrain
            from xtrain import dist
            o = xtrain.SessionOptions()
            dist.configureSessionOptions(o)
            print(json.dumps([dist.getNumInstances(), dist.getInstanceIndex(),
                              dist.getNumLocalReplicas(), dist.getNumTotalReplicas(),
                              dist.getReplicaIndexOffset(), o.enableReplicatedGraphs,
                              o.replicatedGraphCount, o.enableDistributedReplicatedGraphs,
                              o.globalReplicationFactor, o.globalReplicaOffset]))
        """, clean_env(POPDIST_NUM_TOTAL_REPLICAS="8", POPDIST_NUM_LOCAL_REPLICAS="2",
                       POPDIST_REPLICA_INDEX_OFFSET="4", XTRAIN_NUM_INSTANCES="4",
                       XTRAIN_INSTANCE_INDEX="2", POPDIST_NUM_IPUS_PER_REPLICA="1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), [4, 2, 2, 8, 4, True, 2, True, 8, 4])

    def test_job_id(self):
        # xrun's job id, the same in every instance; this process's own outside a launcher.
        code = "import os; from xtrain import dist; print(repr(dist.getJobId()), os.getpid())"
        r = run_python(code, clean_env(XTRAIN_NUM_INSTANCES="2", XTRAIN_INSTANCE_INDEX="1",
                                       XTRAIN_JOB_ID="20261129T231500-42-0badc0de"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split()[0], "'20261129T231500-42-0badc0de'")
        r = run_python(code, clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        job, pid = r.stdout.split()
        self.assertEqual(job, "'pid-%s'" % pid)

    def test_malformed_environment(self):
        r = run_python("""
            import xtrain
            from xtrain import dist
            try:
                dist.getNumInstances()
            except xtrain.popart_exception as e:
                print("error:", e)
        """, clean_env(XTRAIN_NUM_INSTANCES="two"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("XTRAIN_NUM_INSTANCES", r.stdout)

    def test_preemption(self):
        r = run_python("""
            import os, signal, xtrain
            from xtrain import dist
            try:
                dist.preemptionRequested()
            except xtrain.popart_exception as e:
                print("before:", "handlePreemption" in str(e))
            dist.handlePreemption()
            print(dist.preemptionRequested(), dist.preemptionSignal())
            os.kill(os.getpid(), signal.SIGUSR1)
            print(dist.preemptionRequested(), dist.preemptionSignal() == signal.SIGUSR1,
                  dist.preemptionAgreed())
        """, clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["before:", "True", "False", "0", "True", "True",
                                            "True"])


TRAIN_SCRIPT = """
import hashlib, json, sys
import numpy as np
sys.path.insert(0, %r)
from python_testing import linear_model, sgd
import xtrain as popart
from xtrain import dist

opts = popart.SessionOptions()
dist.configureSessionOptions(opts)
device = dist.getDevice()
L = dist.getNumLocalReplicas()
session = popart.TrainingSession(
    linear_model(), popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}), "loss",
    sgd(0.05, 0.9), device, userOptions=opts)
session.prepareDevice()
session.weightsFromHost()
anchors = session.initAnchorArrays()
rng = np.random.RandomState(10 + dist.getInstanceIndex())
shape = [L] if L > 1 else []
x = rng.rand(*(shape + [2, 4])).astype(np.float32)
t = rng.rand(*(shape + [2, 3])).astype(np.float32)
stepio = popart.PyStepIO({"x": x, "t": t}, anchors)
for _ in range(3):
    session.run(stepio)
session.weightsToHost()
w = np.zeros((4, 3), np.float32)
session.readWeights(popart.PyWeightsIO({"w": w}))
print("RESULT " + json.dumps({
    "instance": dist.getInstanceIndex(), "instances": dist.getNumInstances(),
    "local": L, "total": dist.getNumTotalReplicas(), "offset": dist.getReplicaIndexOffset(),
    "popdist": dist.isPopdistEnvSet(), "ipus": device.numIpus,
    "global": opts.globalReplicationFactor, "anchor": list(anchors["loss"].shape),
    "w": hashlib.sha256(w.tobytes()).hexdigest()}), flush=True)
""" % HERE


class XrunTest(unittest.TestCase):
    def test_xrun_two_instances(self):
        results = results_under_xrun(self, TRAIN_SCRIPT, timeout=150)
        for d in results:
            self.assertEqual((d["instances"], d["local"], d["total"], d["ipus"], d["global"],
                              d["popdist"], d["anchor"]), (2, 2, 4, 2, 4, True, [2]))
        self.assertEqual([d["offset"] for d in results], [0, 2])
        # data-parallel: every instance ends with the same weights
        self.assertEqual(results[0]["w"], results[1]["w"])


if __name__ == "__main__":
    unittest.main()
