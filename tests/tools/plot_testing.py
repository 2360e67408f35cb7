"""What the tests of scripts/plot-trace and scripts/plot-metrics share: a scratch directory, the
script run with a time-out, and the one way bad input must be refused (exit code 2 and one line on
stderr that names the script, no traceback, no picture written)."""
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def script_path(name):
    return os.path.normpath(os.path.join(HERE, "..", "..", "scripts", name))


def have_plotting():
    return subprocess.run([PYTHON, "-c", "import matplotlib, numpy"],
                          capture_output=True).returncode == 0


class PlotScriptTest(unittest.TestCase):
    """Subclasses set SCRIPT (the script's name under scripts/) and define
    arguments(path, out, extra), the command line that draws `path` into `out`."""
    SCRIPT = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix=self.SCRIPT + "-test-")
        self.out = os.path.join(self.tmp, "out.png")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, name, content):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
        return path

    def run_script(self, *args, timeout=60):
        return subprocess.run([script_path(self.SCRIPT)] + list(args), capture_output=True,
                              text=True, errors="replace", timeout=timeout)

    def assertPicture(self, path):
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE)

    def refused(self, path, *needles, out=None, extra=()):
        """Draws `path`, expecting the refusal; returns its one line."""
        out = out or self.out
        r = self.run_script(*self.arguments(path, out, extra))
        lines = r.stderr.splitlines()
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith(self.SCRIPT + ": "), r.stderr)
        for needle in needles:
            self.assertIn(needle, lines[0])
        if out == self.out:
            self.assertFalse(os.path.exists(out), "wrote a picture of bad input")
        return lines[0]
