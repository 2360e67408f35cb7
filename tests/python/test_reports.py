"""The profiling surface from Python (docs/reports.md): getSummaryReport(resetProfile),
getReport() as JSON, getSerializedGraph() as JSON bytes, getCycleCount() and its error."""
import json
import os
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool, linear_model, sgd


def train(session, steps):
    rng = np.random.RandomState(3)
    anchors = session.initAnchorArrays()
    for _ in range(steps):
        stepio = popart.PyStepIO({"x": rng.rand(2, 4).astype(np.float32),
                                  "t": rng.rand(2, 3).astype(np.float32)}, anchors)
        session.run(stepio)


def make_session(opts=None):
    session = popart.TrainingSession(
        fnModel=linear_model(), dataFlow=popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}),
        loss="loss", optimizer=sgd(0.05), deviceInfo=popart.DeviceManager().createCpuDevice(),
        userOptions=opts or popart.SessionOptions())
    session.prepareDevice()
    session.weightsFromHost()
    return session


class ReportTest(PrivatePool, unittest.TestCase):
    def test_report_json_and_reset(self):
        session = make_session()
        train(session, 3)
        report = json.loads(session.getReport())
        self.assertEqual(report["schema"], "xtrain.report")
        execution = report["execution"]
        self.assertEqual(execution["runs"], 3)
        self.assertEqual(execution["hostTransfers"]["inputs"]["count"], 6)  # x and t, 3 runs
        self.assertEqual(execution["hostTransfers"]["anchors"]["count"], 3)
        self.assertEqual({"Forward", "Backward", "Update"}, set(execution["phases"]))
        seconds = sum(op["seconds"] for op in execution["ops"])
        self.assertGreater(seconds, 0)
        self.assertLessEqual(seconds, execution["runSeconds"])
        self.assertIn("execution profile: 3 run(s)", session.getSummaryReport(resetProfile=False))
        self.assertIn("execution profile: 3 run(s)", session.getSummaryReport())  # then reset
        self.assertIn("no run() since the profile was reset", session.getSummaryReport())
        self.assertEqual(json.loads(session.getReport())["execution"]["runs"], 0)

    def test_serialized_graph(self):
        graph = session_graph = make_session().getSerializedGraph()
        self.assertIsInstance(session_graph, bytes)
        doc = json.loads(graph)
        self.assertEqual(doc["schema"], "xtrain.serialized-graph")
        types = [i["type"] for p in doc["programs"] for i in p["instructions"]]
        self.assertIn("MatMul", types)

    def test_cycle_count(self):
        session = make_session()
        with self.assertRaisesRegex(popart.popart_exception, "instrumentWithHardwareCycleCounter"):
            session.getCycleCount()
        opts = popart.SessionOptions()
        opts.instrumentWithHardwareCycleCounter = True
        counted = [make_session(opts), make_session(opts)]
        for s in counted:
            # As PopART: no count before the first run.
            with self.assertRaisesRegex(popart.popart_exception,
                                        "^Must call run before getCycleCount"):
                s.getCycleCount()
            train(s, 1)
        self.assertGreater(counted[0].getCycleCount(), 0)
        self.assertEqual(counted[0].getCycleCount(), counted[1].getCycleCount(id=""))
        with self.assertRaisesRegex(popart.popart_exception, "unknown cycle counter id"):
            counted[0].getCycleCount("inner")

    def test_auto_report(self):
        opts = popart.SessionOptions()
        directory = os.path.join(self.tmp, "reports")
        opts.engineOptions = {"autoReport.all": "true", "autoReport.directory": directory}
        opts.reportOptions = {"showExecutionSteps": "true"}
        session = make_session(opts)
        self.assertTrue(os.path.exists(os.path.join(directory, "serialized_graph.json")))
        for runs in (1, 2):
            train(session, 1)
            with open(os.path.join(directory, "report.json")) as f:
                self.assertEqual(json.load(f)["execution"]["runs"], runs)
            with open(os.path.join(directory, "summary.txt")) as f:
                self.assertIn("every op (showExecutionSteps)", f.read())
        bad = popart.SessionOptions()
        bad.engineOptions = {"autoReport.everything": "true"}
        with self.assertRaisesRegex(popart.popart_exception, "autoReport.everything"):
            make_session(bad)


if __name__ == "__main__":
    unittest.main()
