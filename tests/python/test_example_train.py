"""examples/python/train.py, the README's Python training program: alone and as
`xrun -n 2 python3 examples/python/train.py` (bounded by timeouts): the loss falls, instance 0
writes the trained model, and both instances end with the same weights."""
import os
import re
import subprocess
import sys
import unittest

import onnx

from python_testing import BIN_DIR, SOURCE_DIR, PrivatePool, clean_env

TRAIN = os.path.join(SOURCE_DIR, "examples", "python", "train.py")
RESULT = re.compile(r"instance (\d+) of (\d+): loss ([0-9.]+) -> ([0-9.]+), weights sha256 "
                    r"([0-9a-f]{64})")


class ExampleTrainTest(PrivatePool, unittest.TestCase):
    def env(self):
        return clean_env(XTRAIN_NUM_IPUS="8", XTRAIN_IPU_LOCK_DIR=os.environ["XTRAIN_IPU_LOCK_DIR"],
                         OMP_NUM_THREADS="1")

    def results(self, r):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        found = sorted((tuple(m.groups()) for m in RESULT.finditer(r.stdout)))
        for _, _, first, last, _ in found:
            self.assertLess(float(last), float(first) / 4, r.stdout)
        return found

    def test_alone(self):
        r = subprocess.run([sys.executable, TRAIN, "--steps", "20"], cwd=self.tmp, env=self.env(),
                           capture_output=True, text=True, timeout=120)
        found = self.results(r)
        self.assertEqual([(i, n) for i, n, *_ in found], [("0", "1")], r.stdout)
        model = onnx.load(os.path.join(self.tmp, "trained_model.onnx"))
        # The weights and, as PopART's modelToHost writes them, SGD's velocities.
        self.assertEqual(sorted(i.name for i in model.graph.initializer),
                         ["Accl___b1", "Accl___b2", "Accl___w1", "Accl___w2",
                          "b1", "b2", "w1", "w2"])

    def test_under_xrun(self):
        xrun = os.path.join(BIN_DIR, "xrun")
        if not os.path.exists(xrun):
            self.skipTest("no " + xrun)
        r = subprocess.run([xrun, "-n", "2", "--timeout", "150", sys.executable, TRAIN,
                            "--steps", "20", "--output", "mlp.onnx"],
                           cwd=self.tmp, env=self.env(), capture_output=True, text=True,
                           timeout=200)
        found = self.results(r)
        self.assertEqual([(i, n) for i, n, *_ in found], [("0", "2"), ("1", "2")], r.stdout)
        self.assertEqual(found[0][4], found[1][4], "the instances' weights differ")
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "mlp.onnx")))

    def test_bad_arguments(self):
        r = subprocess.run([sys.executable, TRAIN, "--micro-batch-size", "0"], cwd=self.tmp,
                           env=self.env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--micro-batch-size must be at least 1, got 0", r.stderr)


if __name__ == "__main__":
    unittest.main()
