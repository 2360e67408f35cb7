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
        with self.assertRaises(popart.popart_exception) as caught:
            counted[0].getCycleCount("inner")
        self.assertTrue(caught.exception.args[0].endswith(
            "Invalid id for cycle counter, 'inner'. Make sure you have set "
            "SessionOption::hardwareInstrumentations correctly."))

    def test_inner_cycle_counters(self):
        # Inner: "inner_ipu_N" counts the run's last batch on IPU N of a replica; Outer ("") the
        # whole run. A model on two IPUs, 3 batches a step.
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [8, 8]), "x")
        with b.virtualGraph(0):
            h = b.aiOnnx.sin([x])
        with b.virtualGraph(1):
            y = b.aiOnnx.matmul([h, h])

        def counted(instrumentations, bps):
            opts = popart.SessionOptions()
            opts.instrumentWithHardwareCycleCounter = True
            opts.hardwareInstrumentations = instrumentations
            opts.virtualGraphMode = popart.VirtualGraphMode.Manual
            device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 2})
            session = popart.InferenceSession(fnModel=b.getModelProto(),
                                              dataFlow=popart.DataFlow(bps, [y]),
                                              userOptions=opts, deviceInfo=device)
            session.prepareDevice()
            anchors = session.initAnchorArrays()
            session.run(popart.PyStepIO({x: np.ones([bps, 8, 8], np.float32)}, anchors))
            return session

        both = counted({popart.Instrumentation.Outer, popart.Instrumentation.Inner}, 3)
        inner = both.getCycleCount("inner_ipu_0")
        self.assertGreater(inner, 0)
        self.assertEqual(both.getCycleCount("inner_ipu_1"), inner)  # the IPUs wait for each other
        # The run is its 3 batches, each the same (the anchors, All, are copied in their batch).
        self.assertEqual(both.getCycleCount(), 3 * inner)
        # One batch costs the same whatever the step's length.
        self.assertEqual(counted({popart.Instrumentation.Inner}, 1).getCycleCount("inner_ipu_0"),
                         inner)
        for bad in ("inner_ipu_2", "inner_ipu_", "inner_ipu_x", "inner_ipu_-1"):
            with self.assertRaisesRegex(popart.popart_exception,
                                        '"inner_ipu_0" to "inner_ipu_1"'):
                both.getCycleCount(bad)
        outer_only = counted({popart.Instrumentation.Outer}, 3)
        self.assertEqual(outer_only.getCycleCount(), both.getCycleCount())
        with self.assertRaises(popart.popart_exception) as caught:
            outer_only.getCycleCount("inner_ipu_0")
        self.assertTrue(caught.exception.args[0].endswith(
            "Make sure you have set SessionOption::hardwareInstrumentations correctly."))
        with self.assertRaisesRegex(popart.popart_exception, "Invalid id for cycle counter, ''"):
            counted({popart.Instrumentation.Inner}, 1).getCycleCount()

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

    def test_unknown_engine_option_is_poplars_error(self):
        # PopART hands engine options to Poplar, which refuses an unknown one with a
        # poplar_exception ending "Unrecognised option '<key>'"; str() is xtrain's message.
        bad = popart.SessionOptions()
        bad.engineOptions = {"opt.noSuchThing": "1"}
        with self.assertRaises(popart.poplar_exception) as caught:
            make_session(bad)
        self.assertTrue(caught.exception.args[0].endswith("Unrecognised option 'opt.noSuchThing'"))
        self.assertIn("the known keys are", str(caught.exception))
        self.assertNotIsInstance(caught.exception, popart.poplar_runtime_error)

    def test_stream_buffer_overlap_values(self):
        # Accepted with no effect (the stream buffers are host memory); its value is still checked.
        for value in ("none", "hostRearrangeOnly", "any"):
            opts = popart.SessionOptions()
            opts.engineOptions = {"exchange.streamBufferOverlap": value}
            train(make_session(opts), 1)
        bad = popart.SessionOptions()
        bad.engineOptions = {"exchange.streamBufferOverlap": "some"}
        with self.assertRaisesRegex(popart.popart_exception,
                                    '"some": expected "none", "hostRearrangeOnly" or "any"'):
            make_session(bad)


if __name__ == "__main__":
    unittest.main()
