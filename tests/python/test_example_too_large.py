"""examples/python/too_large_for_one_ipu.py (issue 30's proof of use): a model that does not fit one
small simulated IPU is refused with OutOfMemoryException on one IPU, and trains over 2 IPUs, over 4
IPUs pipelined, and on one IPU with its state off chip, all to the same weights bit for bit."""
import os
import re
import subprocess
import sys
import unittest

from python_testing import SOURCE_DIR, PrivatePool, clean_env

EXAMPLE = os.path.join(SOURCE_DIR, "examples", "python", "too_large_for_one_ipu.py")


class TooLargeForOneIpuTest(PrivatePool, unittest.TestCase):
    def test_fits_only_when_split_pipelined_or_off_chip(self):
        r = subprocess.run([sys.executable, EXAMPLE, "--steps", "2"], cwd=self.tmp,
                           env=clean_env(OMP_NUM_THREADS="1"), capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = dict(line.split(":", 1) for line in r.stdout.splitlines() if ":" in line)
        self.assertIn("out of memory", lines["one IPU"].lower(), r.stdout)
        for name in ("2 IPUs, Auto split", "4 IPUs, Auto split, pipelined",
                     "one IPU, state off chip"):
            self.assertRegex(lines[name], r"^\s*loss [0-9.]+$", r.stdout)
        self.assertIn("the 3 configurations that train reach the same weights: True", r.stdout)


if __name__ == "__main__":
    unittest.main()
