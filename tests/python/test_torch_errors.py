"""PopTorch's error classes in xtrain.torch, and isRunningOnIpu (docs/poptorch.md, "Errors")."""
import os
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import xtrain as popart
    import xtrain.torch as poptorch
    from xtrain.torch import _errors


@unittest.skipIf(torch is None, SKIP_REASON)
class Errors(PrivatePool, unittest.TestCase):

    def test_a_backend_error_is_a_poptorch_error(self):
        os.environ["XTRAIN_NUM_IPUS"] = "2"
        wrapped = poptorch.trainingModel(tt.make(tt.Mlp), poptorch.Options().replicationFactor(4))
        with self.assertRaises(poptorch.Error) as caught:
            wrapped(*tt.mlp_data(1, 8)[0])
        e = caught.exception
        self.assertNotIsInstance(e, (poptorch.RecoverableError, poptorch.UnrecoverableError))
        self.assertIn("asked for 4 IPUs but the pool has 2", e.message)
        self.assertEqual(e.type, "popart_exception")
        self.assertEqual(e.location, "compile")
        self.assertIsInstance(e.__cause__, popart.popart_exception)
        self.assertIn("(popart_exception, in compile)", str(e))

    def test_recoverable_and_unrecoverable(self):
        fault = popart.poplar_recoverable_runtime_error("a link went down")
        fault.recoveryAction = popart.RecoveryAction.POWER_CYCLE
        e = _errors.translate(fault, "run")
        self.assertIsInstance(e, poptorch.RecoverableError)
        self.assertIsInstance(e, poptorch.Error)
        self.assertEqual((e.message, e.recovery_action, e.location),
                         ("a link went down", "FULL_RESET", "run"))
        fault.recoveryAction = popart.RecoveryAction.PARTITION_RESET
        self.assertEqual(_errors.translate(fault, "run").recovery_action, "PARTITION_RESET")
        e = _errors.translate(popart.poplar_unrecoverable_runtime_error("broken"), "run")
        self.assertIsInstance(e, poptorch.UnrecoverableError)
        self.assertEqual(e.type, "poplar_unrecoverable_runtime_error")

    def test_python_errors_stay_python_errors(self):
        wrapped = poptorch.trainingModel(tt.make(tt.Mlp), poptorch.Options().deviceIterations(3))
        with self.assertRaises(ValueError) as caught:
            wrapped(*tt.mlp_data(1, 4)[0])
        self.assertNotIsInstance(caught.exception, poptorch.Error)


@unittest.skipIf(torch is None, SKIP_REASON)
class RunningOnIpu(PrivatePool, unittest.TestCase):

    def test_the_ipu_path_is_captured(self):
        class TwoPaths(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def forward(self, x):
                scale = 2.0 if poptorch.isRunningOnIpu() else 3.0
                return self.fc(x) * scale

        model = TwoPaths().eval()
        x = torch.randn(4, 2)
        self.assertFalse(poptorch.isRunningOnIpu())
        with torch.no_grad():
            torch.testing.assert_close(poptorch.inferenceModel(model)(x), model.fc(x) * 2.0)
            torch.testing.assert_close(model(x), model.fc(x) * 3.0)
        self.assertFalse(poptorch.isRunningOnIpu())


@unittest.skipIf(torch is None, SKIP_REASON)
class NotBuilt(unittest.TestCase):

    def test_poptorch_names_not_built_say_so(self):
        for name in ("CPU",):
            with self.assertRaisesRegex(NotImplementedError, "poptorch.%s.*not built" % name):
                getattr(poptorch, name)
        with self.assertRaisesRegex(NotImplementedError, "unreduced losses are not implemented"):
            poptorch.identity_loss(torch.ones(3), "none")
        self.assertEqual(float(poptorch.identity_loss(torch.full([1], 2.0), "none")), 2.0)
        with self.assertRaises(AttributeError):  # a misspelt name stays an AttributeError
            poptorch.trainingModle


@unittest.skipIf(torch is None, SKIP_REASON)
class LogLevel(unittest.TestCase):
    """poptorch.setLogLevel sets xtrain's modules and poptorch.logger (docs/poptorch.md)."""

    def setUp(self):
        import xtrain
        self.xtrain = xtrain
        self.saved = {m: xtrain.getLogger(m).getLevel() for m in ("all", "session", "comm")}
        self.saved_python = poptorch.logger.level

    def tearDown(self):
        for module, level in self.saved.items():
            self.xtrain.setLogLevel(module, level)
        poptorch.logger.setLevel(self.saved_python)

    def test_poptorch_levels_map_onto_xtrain_levels(self):
        import logging
        for name, xtrain_level, python_level in (  # getLevel() gives the level's name
                ("DEBUG", "DEBUG", logging.DEBUG), ("ERR", "ERR", logging.ERROR),
                ("TRACE_ALL", "TRACE", logging.DEBUG - 5), ("INFO", "INFO", logging.INFO),
                ("OFF", "OFF", logging.CRITICAL + 1), ("WARN", "WARN", logging.WARNING),
                ("TRACE", "TRACE", logging.DEBUG - 5)):
            poptorch.setLogLevel(name)
            for module in ("all", "session", "comm"):
                self.assertEqual(self.xtrain.getLogger(module).getLevel(), xtrain_level,
                                 "%s: %s" % (name, module))
            self.assertEqual(poptorch.logger.level, python_level, name)

    def test_unknown_levels_are_refused(self):
        poptorch.setLogLevel("WARN")
        for bad in ("debug", "VERBOSE", 2, None):
            with self.assertRaisesRegex(ValueError, "unknown log level %r.*TRACE_ALL" % (bad,)):
                poptorch.setLogLevel(bad)
        self.assertEqual(self.xtrain.getLogger("all").getLevel(), "WARN")


if __name__ == "__main__":
    unittest.main()
