"""The timeline from Python (docs/trace.md): engineOptions trace.file / trace.steps write a
Chrome-trace JSON file when the session is destroyed; bad values are refused at creation."""
import gc
import json
import os
import unittest

import xtrain as popart
from python_testing import PrivatePool
from test_reports import make_session, train


class TraceTest(PrivatePool, unittest.TestCase):
    def trace_of(self, engine_options, steps):
        path = os.path.join(self.tmp, "run.json")
        opts = popart.SessionOptions()
        opts.engineOptions = dict(engine_options, **{"trace.file": path})
        session = make_session(opts)
        train(session, steps)
        del session
        gc.collect()
        with open(path) as f:
            return json.load(f)["traceEvents"]

    def test_trace_file_holds_ops_and_steps(self):
        events = self.trace_of({}, 3)
        ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "op"]
        steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "step"]
        self.assertTrue(any("MatMul" in e["name"] for e in ops), ops[:3])
        self.assertEqual(len(steps), 3)
        for e in ops:
            self.assertGreaterEqual(e["dur"], 0)

    def test_trace_steps_keeps_the_window(self):
        events = self.trace_of({"trace.steps": "2:3"}, 5)
        steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "step"]
        self.assertEqual(len(steps), 2)

    def test_bad_values_are_refused(self):
        for options, culprit in [({"trace.steps": "3:2"}, "trace.steps"),
                                 ({"trace.file": os.path.join(self.tmp, "no", "dir", "x.json")},
                                  "trace.file"),
                                 ({"trace.steps": "1:2"}, "trace.file")]:
            opts = popart.SessionOptions()
            opts.engineOptions = options
            with self.assertRaisesRegex(popart.popart_exception, culprit):
                make_session(opts)

    def test_a_nul_byte_in_the_path_is_refused(self):
        # It would cut the path where the C library reads it: "t\0.json" wrote "t".
        cut = os.path.join(self.tmp, "t")
        opts = popart.SessionOptions()
        opts.engineOptions = {"trace.file": cut + "\0.json"}
        with self.assertRaisesRegex(popart.popart_exception, r'trace\.file.*NUL byte'):
            make_session(opts)
        self.assertFalse(os.path.exists(cut))


if __name__ == "__main__":
    unittest.main()
