"""examples/python/poptorch_train.py, the README's PyTorch program: alone and as
`xrun -n 2 python3 examples/python/poptorch_train.py` (bounded by timeouts): the loss falls, the
inferenceModel's accuracy on held-out samples is high, instance 0 saves the state_dict, and both
instances end with the same weights."""
import os
import re
import subprocess
import sys
import unittest

from python_testing import BIN_DIR, SOURCE_DIR, PrivatePool, clean_env
from torch_testing import SKIP_REASON, torch

EXAMPLE = os.path.join(SOURCE_DIR, "examples", "python", "poptorch_train.py")
RESULT = re.compile(r"instance (\d+) of (\d+): loss ([0-9.]+) -> ([0-9.]+), accuracy ([0-9.]+), "
                    r"weights sha256 ([0-9a-f]{64})")


@unittest.skipIf(torch is None, SKIP_REASON)
class ExamplePoptorchTrainTest(PrivatePool, unittest.TestCase):
    def env(self):
        return clean_env(XTRAIN_NUM_IPUS="8", XTRAIN_IPU_LOCK_DIR=os.environ["XTRAIN_IPU_LOCK_DIR"],
                         OMP_NUM_THREADS="1")

    def results(self, r):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        found = sorted(tuple(m.groups()) for m in RESULT.finditer(r.stdout))
        for _, _, first, last, accuracy, _ in found:
            self.assertLess(float(last), float(first) / 10, r.stdout)
            self.assertGreater(float(accuracy), 0.9, r.stdout)
        return found

    def test_alone(self):
        r = subprocess.run([sys.executable, EXAMPLE, "--epochs", "2"], cwd=self.tmp,
                           env=self.env(), capture_output=True, text=True, timeout=120)
        found = self.results(r)
        self.assertEqual([(i, n) for i, n, *_ in found], [("0", "1")], r.stdout)
        state = torch.load(os.path.join(self.tmp, "poptorch_model.pt"))
        self.assertEqual(sorted(state), ["bn.bias", "bn.num_batches_tracked", "bn.running_mean",
                                         "bn.running_var", "bn.weight", "conv.bias",
                                         "conv.weight", "fc.bias", "fc.weight"])

    def test_under_xrun(self):
        xrun = os.path.join(BIN_DIR, "xrun")
        if not os.path.exists(xrun):
            self.skipTest("no " + xrun)
        r = subprocess.run([xrun, "-n", "2", "--timeout", "150", sys.executable, EXAMPLE,
                            "--epochs", "2", "--output", "cnn.pt"],
                           cwd=self.tmp, env=self.env(), capture_output=True, text=True,
                           timeout=200)
        found = self.results(r)
        self.assertEqual([(i, n) for i, n, *_ in found], [("0", "2"), ("1", "2")], r.stdout)
        self.assertEqual(found[0][5], found[1][5], "the instances' weights differ")
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "cnn.pt")))

    def test_bad_arguments(self):
        r = subprocess.run([sys.executable, EXAMPLE, "--micro-batch-size", "0"], cwd=self.tmp,
                           env=self.env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--micro-batch-size must be at least 1, got 0", r.stderr)


if __name__ == "__main__":
    unittest.main()
