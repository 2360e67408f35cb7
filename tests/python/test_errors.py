"""Error classes (PopART's hierarchy, xtrain's names) and logging: a C++ exception crossing into
Python becomes the matching class with its message."""
import unittest

import xtrain as popart
from xtrain import _xtrain


class ErrorClassesTest(unittest.TestCase):
    def test_hierarchy(self):
        self.assertTrue(issubclass(popart.popart_exception, RuntimeError))
        for name in ["popart_internal_exception", "popart_runtime_error", "poplibs_exception",
                     "poplar_exception", "size_overflow_error", "OutOfMemoryException"]:
            self.assertTrue(issubclass(getattr(popart, name), popart.popart_exception), name)
        self.assertTrue(issubclass(popart.poplar_runtime_error, popart.poplar_exception))
        self.assertTrue(issubclass(popart.poplar_application_runtime_error,
                                   popart.poplar_runtime_error))
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

    def test_round_trip_each_class(self):
        cases = {
            "error": popart.popart_exception,
            "internal_error": popart.popart_internal_exception,
            "runtime_error": popart.popart_runtime_error,
            "recoverable_runtime_error": popart.poplar_recoverable_runtime_error,
            "unrecoverable_runtime_error": popart.poplar_unrecoverable_runtime_error,
            "unknown_runtime_error": popart.poplar_unknown_runtime_error,
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

    def test_bad_names(self):
        with self.assertRaisesRegex(popart.popart_exception, "nosuchmodule"):
            popart.getLogger("nosuchmodule")
        with self.assertRaisesRegex(popart.popart_exception, "LOUD"):
            popart.getLogger().setLevel("LOUD")
        with self.assertRaises(TypeError):
            popart.getLogger().setLevel(3.5)


if __name__ == "__main__":
    unittest.main()
