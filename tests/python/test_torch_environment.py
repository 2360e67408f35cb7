"""PopTorch's hardware queries (ipuHardwareVersion, ipuHardwareIsAvailable), useOfflineIpuTarget,
the Options methods PopTorch has beyond its options (clone, defaultOutputMode, and those refused),
and the environment variables of its chapter: POPTORCH_LOG_LEVEL, POPTORCH_IPU_MODEL,
POPTORCH_WAIT_FOR_IPU, POPTORCH_CACHE_DIR and POPLAR_ENGINE_OPTIONS (docs/poptorch.md,
"Environment variables"). What is read when xtrain.torch is imported runs in a fresh
interpreter."""
import os
import subprocess
import sys
import threading
import time
import unittest

from python_testing import PrivatePool, clean_env
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain
    import xtrain.torch as poptorch


def run_python(test, code, **env):
    """code in a fresh interpreter with env added; its stdout, stderr and exit code."""
    pool = {k: os.environ[k] for k in ("XTRAIN_NUM_IPUS", "XTRAIN_IPU_LOCK_DIR") if k in os.environ}
    result = subprocess.run([sys.executable, "-c", code], env=clean_env(**pool, **env),
                            capture_output=True, text=True, timeout=120)
    return result.stdout, result.stderr, result.returncode


@unittest.skipIf(torch is None, SKIP_REASON)
class Hardware(PrivatePool, unittest.TestCase):

    def test_the_pool_is_the_hardware(self):
        # PrivatePool: 8 simulated IPUs, devices of 1, 2, 4 and 8.
        for n in (1, 2, 4, 8):
            self.assertTrue(poptorch.ipuHardwareIsAvailable(n), n)
        for n in (3, 16):
            self.assertFalse(poptorch.ipuHardwareIsAvailable(n), n)
        self.assertTrue(poptorch.ipuHardwareIsAvailable())
        held = xtrain.DeviceManager().acquireAvailableDevice(8)
        try:  # busy IPUs are still there, as PopTorch does not check
            self.assertTrue(poptorch.ipuHardwareIsAvailable(8))
        finally:
            held.detach()
        for bad in (0, -1, 1.5, True):
            with self.assertRaisesRegex(ValueError, "num_ipus must be a positive int"):
                poptorch.ipuHardwareIsAvailable(bad)
        self.assertEqual(poptorch.ipuHardwareVersion(), 2)  # the pool's ipu2: Mk2

    def test_offline_target_of_each_version(self):
        for version, name in ((1, "ipu1"), (2, "ipu2"), (21, "ipu21")):
            opts = poptorch.Options().useOfflineIpuTarget(version)
            self.assertEqual(opts.connection_type, poptorch.ConnectionType.Never)
            model = tt.make(tt.Mlp)
            wrapped = poptorch.trainingModel(model, opts)
            wrapped.compile(*tt.mlp_data(1, 4)[0])
            self.assertEqual(wrapped._device.version, name)
            self.assertFalse(wrapped.isAttachedToDevice())
            with self.assertRaisesRegex(RuntimeError, "ConnectionType.Never"):
                wrapped(*tt.mlp_data(1, 4)[0])
            wrapped.destroy()
        self.assertEqual(poptorch.Options().useOfflineIpuTarget().offline_ipu_version, "ipu2")
        for bad in (3, "2", True):
            with self.assertRaisesRegex(ValueError, "ipu_version must be one of 1, 2, 21"):
                poptorch.Options().useOfflineIpuTarget(bad)
        opts = poptorch.Options().useOfflineIpuTarget(2).useIpuModel(True)
        with self.assertRaisesRegex(ValueError, "useOfflineIpuTarget and useIpuModel"):
            poptorch.trainingModel(tt.make(tt.Mlp), opts).compile(*tt.mlp_data(1, 4)[0])


@unittest.skipIf(torch is None, SKIP_REASON)
class OptionsMethods(unittest.TestCase):

    def test_clone_and_default_output_mode(self):
        opts = poptorch.Options().deviceIterations(3)
        self.assertTrue(opts.defaultOutputMode())
        copy = opts.clone()
        opts.deviceIterations(5).outputMode(poptorch.OutputMode.All)
        self.assertFalse(opts.defaultOutputMode())
        self.assertEqual((copy.device_iterations, copy.defaultOutputMode()), (3, True))

    def test_the_names_not_built_say_so(self):
        opts = poptorch.Options()
        for name in ("toDict", "from_json", "enableProfiling", "maxRepeatLogs"):
            with self.assertRaisesRegex(NotImplementedError, "Options.%s.. is not implemented"
                                        % name):
                getattr(opts, name)()
        for name in ("setPatterns", "setEngineOptions", "checkIsFrozen"):
            with self.assertRaisesRegex(NotImplementedError, "_Popart.%s is not built" % name):
                getattr(opts._Popart, name)
        with self.assertRaisesRegex(NotImplementedError, "Distributed.disable is not built"):
            opts.Distributed.disable()
        for group in (opts, opts._Popart, opts.Distributed):
            with self.assertRaises(AttributeError):  # not PopTorch's: a typo
                group.deviceIteration(2)
        opts.clone()  # copying looks up no refused name


@unittest.skipIf(torch is None, SKIP_REASON)
class Variables(PrivatePool, unittest.TestCase):

    def test_log_level(self):
        code = ("import logging, xtrain, xtrain.torch as poptorch\n"
                "print(logging.getLevelName(poptorch.logger.level), "
                "xtrain.getLogger('session').getLevel())\n")
        out, err, rc = run_python(self, code, POPTORCH_LOG_LEVEL="DEBUG")
        self.assertEqual((rc, out.split()), (0, ["DEBUG", "DEBUG"]), err)
        # PopTorch's name wins over XTRAIN_LOG_LEVEL, read before it.
        out, err, rc = run_python(self, code, POPTORCH_LOG_LEVEL="ERR", XTRAIN_LOG_LEVEL="trace")
        self.assertEqual((rc, out.split()), (0, ["ERROR", "ERR"]), err)
        out, err, rc = run_python(self, code, POPTORCH_LOG_LEVEL="LOUD")
        self.assertNotEqual(rc, 0)
        self.assertIn("POPTORCH_LOG_LEVEL='LOUD': setLogLevel: unknown log level 'LOUD' "
                      "(expected one of OFF, ERR, WARN, INFO, DEBUG, TRACE, TRACE_ALL)", err)

    def test_ipu_model(self):
        code = ("import torch, xtrain.torch as poptorch\n"
                "m = poptorch.inferenceModel(torch.nn.Linear(3, 2))\n"
                "m(torch.ones(4, 3))\n"
                "print(poptorch.Options().use_ipu_model, m._device.type)\n")
        out, err, rc = run_python(self, code, POPTORCH_IPU_MODEL="1")
        self.assertEqual((rc, out.split()), (0, ["True", "DeviceType.IpuModel"]), err)
        for unset in ("0", ""):
            out, err, rc = run_python(self, code, POPTORCH_IPU_MODEL=unset)
            self.assertEqual((rc, out.split()), (0, ["False", "DeviceType.Ipu"]), err)

    def test_cache_dir_is_accepted_with_no_effect(self):
        cache = os.path.join(self.tmp, "cache")
        code = ("import torch, xtrain.torch as poptorch\n"
                "m = poptorch.trainingModel(torch.nn.Sequential(torch.nn.Linear(3, 1)))\n"
                "print(poptorch.Options().executable_cache_dir)\n")
        out, err, rc = run_python(self, code, POPTORCH_CACHE_DIR=cache)
        self.assertEqual((rc, out.strip()), (0, cache), err)
        self.assertFalse(os.path.exists(cache))

    def test_poplar_engine_options_write_the_reports(self):
        reports = os.path.join(self.tmp, "reports")
        code = ("import torch, xtrain.torch as poptorch\n"
                "class Net(torch.nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.fc = torch.nn.Linear(3, 2)\n"
                "    def forward(self, x):\n"
                "        return self.fc(x)\n"
                "poptorch.inferenceModel(Net())(torch.ones(4, 3))\n")
        out, err, rc = run_python(self, code, POPLAR_ENGINE_OPTIONS='{"autoReport.all": true, '
                                  '"autoReport.directory": "%s"}' % reports)
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(os.listdir(reports)),
                         ["report.json", "serialized_graph.json", "summary.txt"])
        for bad, message in (("{bad", "expected a JSON object of options"),
                             ('["autoReport.all"]', "expected a JSON object of options"),
                             ('{"autoReport.everything": "true"}', "autoReport.everything")):
            out, err, rc = run_python(self, code, POPLAR_ENGINE_OPTIONS=bad)
            self.assertNotEqual(rc, 0)
            self.assertIn(message, err)

    def test_wait_for_ipu(self):
        manager = xtrain.DeviceManager()
        data = tt.mlp_data(1, 4)[0]
        held = manager.acquireAvailableDevice(8)  # every IPU of the private pool
        try:
            with self.assertRaises(Exception):  # no wait: busy at once
                poptorch.trainingModel(tt.make(tt.Mlp))(*data)
            os.environ["POPTORCH_WAIT_FOR_IPU"] = "1"
            releaser = threading.Timer(0.5, held.detach)
            start = time.monotonic()
            releaser.start()
            poptorch.trainingModel(tt.make(tt.Mlp))(*data)  # waits for the release
            self.assertGreaterEqual(time.monotonic() - start, 0.4)
            releaser.join()
            opts = poptorch.Options().replicationFactor(16)
            with self.assertRaisesRegex(RuntimeError, "POPTORCH_WAIT_FOR_IPU: xtrain's pool has "
                                        "no device of 16 IPUs to wait for"):
                poptorch.trainingModel(tt.make(tt.Mlp), opts)(*tt.mlp_data(1, 64)[0])
            with self.assertRaisesRegex(RuntimeError, "has no device 99"):
                poptorch.trainingModel(tt.make(tt.Mlp), poptorch.Options().useIpuId(99))(*data)
        finally:
            os.environ.pop("POPTORCH_WAIT_FOR_IPU", None)
            if held.isAttached:
                held.detach()


if __name__ == "__main__":
    unittest.main()
