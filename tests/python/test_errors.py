"""Error classes (PopART's hierarchy, xtrain's names) and logging: a C++ exception crossing into
Python becomes the matching class with its message."""
import os
import subprocess
import sys
import unittest

import xtrain as popart
from xtrain import _xtrain

from python_testing import PrivatePool, linear_model, sgd

SYSTEM_ERRORS = (popart.poplar_recoverable_runtime_error, popart.poplar_unrecoverable_runtime_error,
                 popart.poplar_unknown_runtime_error)


class ErrorClassesTest(unittest.TestCase):
    def test_hierarchy(self):
        self.assertTrue(issubclass(popart.popart_exception, RuntimeError))
        for name in ["popart_internal_exception", "popart_runtime_error", "poplibs_exception",
                     "poplar_exception", "size_overflow_error", "OutOfMemoryException"]:
            self.assertTrue(issubclass(getattr(popart, name), popart.popart_exception), name)
        self.assertTrue(issubclass(popart.poplar_runtime_error, popart.poplar_exception))
        self.assertTrue(issubclass(popart.poplar_application_runtime_error,
                                   popart.poplar_runtime_error))
        # as in C++: application_runtime_error (the model's Abort) is an xtrain::runtime_error
        self.assertTrue(issubclass(popart.poplar_application_runtime_error,
                                   popart.popart_runtime_error))
        for name in ["poplar_recoverable_runtime_error", "poplar_unrecoverable_runtime_error",
                     "poplar_unknown_runtime_error"]:
            cls = getattr(popart, name)
            self.assertTrue(issubclass(cls, popart.poplar_system_runtime_error), name)
            self.assertTrue(issubclass(cls, popart.poplar_runtime_error), name)
            # as in C++: recoverable_runtime_error is an xtrain::runtime_error
            self.assertTrue(issubclass(cls, popart.popart_runtime_error), name)

    def test_xtrain_aliases(self):
        self.assertIs(popart.error, popart.popart_exception)
        self.assertIs(popart.internal_error, popart.popart_internal_exception)
        self.assertIs(popart.runtime_error, popart.popart_runtime_error)
        self.assertIs(popart.recoverable_runtime_error, popart.poplar_recoverable_runtime_error)
        self.assertIs(popart.unrecoverable_runtime_error,
                      popart.poplar_unrecoverable_runtime_error)
        self.assertIs(popart.unknown_runtime_error, popart.poplar_unknown_runtime_error)
        self.assertIs(popart.application_runtime_error, popart.poplar_application_runtime_error)
        self.assertIs(popart.engine_option_error, popart.poplar_exception)
        self.assertIs(popart.device_program_error, popart.poplar_exception)

    def test_round_trip_each_class(self):
        cases = {
            "error": popart.popart_exception,
            "internal_error": popart.popart_internal_exception,
            "runtime_error": popart.popart_runtime_error,
            "recoverable_runtime_error": popart.poplar_recoverable_runtime_error,
            "unrecoverable_runtime_error": popart.poplar_unrecoverable_runtime_error,
            "unknown_runtime_error": popart.poplar_unknown_runtime_error,
            "application_runtime_error": popart.poplar_application_runtime_error,
            "size_overflow_error": popart.size_overflow_error,
            "OutOfMemoryException": popart.OutOfMemoryException,
        }
        for kind, cls in cases.items():
            with self.assertRaises(cls) as ctx:
                _xtrain._throw_error(kind, "message of " + kind)
            self.assertIs(type(ctx.exception), cls, kind)
            self.assertIn("message of " + kind, str(ctx.exception))

    def test_recovery_action(self):
        for action in [popart.RecoveryAction.IPU_RESET, popart.RecoveryAction.LINK_RESET,
                       popart.RecoveryAction.PARTITION_RESET, popart.RecoveryAction.POWER_CYCLE]:
            with self.assertRaises(popart.poplar_recoverable_runtime_error) as ctx:
                _xtrain._throw_error("recoverable_runtime_error", "link down", action)
            self.assertEqual(ctx.exception.getRecoveryAction(), action)
            self.assertEqual(ctx.exception.recoveryAction, action)
            self.assertIn(action.name, str(ctx.exception))

    def test_out_of_memory_report(self):
        with self.assertRaises(popart.OutOfMemoryException) as ctx:
            _xtrain._throw_error("OutOfMemoryException", "IPU 0 is full")
        self.assertEqual(ctx.exception.getSummaryReport(), "report: IPU 0 is full")
        self.assertEqual(ctx.exception.getProfilePath(), "")

    def test_unknown_kind(self):
        with self.assertRaisesRegex(ValueError, "unknown kind 'nope'"):
            _xtrain._throw_error("nope", "x")

    def test_error_from_the_api(self):
        with self.assertRaises(popart.popart_exception) as ctx:
            popart.DeviceManager().acquireDeviceById(-3)
        self.assertIn("-3", str(ctx.exception))


class RealTriggersTest(PrivatePool, unittest.TestCase):
    """docs/errors.md's examples raised from Python by what really raises them, not by _throw_error."""

    def test_busy_device_is_a_runtime_error(self):
        dm = popart.DeviceManager()
        held = dm.acquireDeviceById(0)
        with self.assertRaises(popart.popart_runtime_error) as ctx:
            dm.acquireDeviceById(0)
        self.assertIs(type(ctx.exception), popart.popart_runtime_error)
        self.assertNotIsInstance(ctx.exception, SYSTEM_ERRORS)
        self.assertIn("is busy", str(ctx.exception))
        held.detach()

    def test_bad_argument_is_an_error(self):
        with self.assertRaises(popart.popart_exception) as ctx:
            popart.DeviceManager().acquireDeviceById(-3)
        self.assertIs(type(ctx.exception), popart.popart_exception)

    def test_overflowing_shape_is_a_size_overflow(self):
        with self.assertRaises(popart.size_overflow_error) as ctx:
            popart.TensorInfo("FLOAT", [2 ** 40, 2 ** 40])
        self.assertIs(type(ctx.exception), popart.size_overflow_error)

    def test_overflowing_ipu_is_out_of_memory(self):
        dev = popart.DeviceManager().createIpuModelDevice({"tilesPerIPU": 1, "memoryPerTile": "64"})
        s = popart.TrainingSession(
            linear_model(), popart.DataFlow(1, {"loss": popart.AnchorReturnType("ALL")}), "loss",
            sgd(), dev)
        with self.assertRaises(popart.OutOfMemoryException) as ctx:
            s.prepareDevice()
        self.assertIs(type(ctx.exception), popart.OutOfMemoryException)


class LoggingTest(unittest.TestCase):
    def tearDown(self):
        popart.getLogger().setLevel("OFF")

    def test_levels(self):
        popart.getLogger().setLevel("DEBUG")
        self.assertEqual(popart.getLogger("session").getLevel(), "DEBUG")
        self.assertEqual(popart.getLogger("popart").getLevel(), "DEBUG")
        popart.getLogger("session").setLevel("OFF")
        self.assertEqual(popart.getLogger("session").getLevel(), "OFF")
        self.assertEqual(popart.getLogger("ir").getLevel(), "DEBUG")
        self.assertTrue(popart.getLogger("ir").isEnabledFor("INFO"))
        self.assertFalse(popart.getLogger("session").isEnabledFor("CRITICAL"))
        popart.getLogger("devicex").setLevel(popart.LogLevel.WARN)
        self.assertEqual(popart.getLogger("devicex").getLevel(), "WARN")
        popart.setLogLevel("comm", "trace")
        self.assertEqual(popart.getLogger("comm").getLevel(), "TRACE")
        popart.getLogger("session").info("a message at OFF is dropped")

    def test_default_module_sets_every_module(self):
        # executing-graphs.txt 5.7.1: the default module's level is every module's.
        modules = ["session", "ir", "devicex", "comm", "checkpoint"]
        popart.getLogger("popart").setLevel("DEBUG")
        for m in modules:
            self.assertEqual(popart.getLogger(m).getLevel(), "DEBUG", m)
        popart.setLogLevel("popart", "WARN")
        for m in modules:
            self.assertEqual(popart.getLogger(m).getLevel(), "WARN", m)
        popart.getLogger("session").setLevel("OFF")
        self.assertEqual(popart.getLogger("session").getLevel(), "OFF")
        self.assertEqual(popart.getLogger("ir").getLevel(), "WARN")
        # PopART's "python" module is the default module alone.
        popart.getLogger("python").setLevel("TRACE")
        self.assertEqual(popart.getLogger("popart").getLevel(), "TRACE")
        self.assertEqual(popart.getLogger("ir").getLevel(), "WARN")

    def test_python_starts_at_poparts_default_level(self):
        # PopART's default level is WARN; the Builder's DEBUG line for each op added ("Adding
        # ai.onnx.Abs ...", which PopART's programs look for) shows when asked and not after OFF.
        script = ("import xtrain as popart\n"
                  "print(popart.getLogger('session').getLevel(), flush=True)\n"
                  "popart.getLogger().setLevel('DEBUG')\n"
                  "b = popart.Builder()\n"
                  "x = b.addInputTensor(popart.TensorInfo('FLOAT', [1, 2]))\n"
                  "b.aiOnnx.abs([x])\n"
                  "popart.flushLogs()\n"
                  "print('--', file=sys.stderr, flush=True)\n"
                  "popart.getLogger().setLevel('OFF')\n"
                  "b.aiOnnx.neg([x])\n")
        env = dict(os.environ)
        env.pop("XTRAIN_LOG_LEVEL", None)
        env.pop("XTRAIN_LOG_CONFIG", None)
        r = subprocess.run([sys.executable, "-c", "import sys\n" + script], capture_output=True,
                           text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "WARN")
        before, after = r.stderr.split("--\n")
        self.assertIn("Adding ai.onnx.Abs to builder opset:", before)
        self.assertNotIn("Adding", after)

    def test_bad_names(self):
        with self.assertRaisesRegex(popart.popart_exception, "nosuchmodule.*all, popart, xtrain"):
            popart.getLogger("nosuchmodule")
        with self.assertRaisesRegex(popart.popart_exception, "sessoin.*all, popart, xtrain"):
            popart.setLogLevel("sessoin", "DEBUG")
        before = popart.getLogger("ir").getLevel()
        with self.assertRaisesRegex(popart.popart_exception, "LOUD"):
            popart.setLogLevel("popart", "LOUD")
        self.assertEqual(popart.getLogger("ir").getLevel(), before)
        with self.assertRaisesRegex(popart.popart_exception, "LOUD"):
            popart.getLogger().setLevel("LOUD")
        with self.assertRaises(TypeError):
            popart.getLogger().setLevel(3.5)


if __name__ == "__main__":
    unittest.main()
