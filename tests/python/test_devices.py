"""DeviceManager and DeviceInfo with PopART's names, keyword arguments and defaults. Pool devices
use a private lock directory and pool size, so the test does not meet other jobs' IPUs."""
import os
import threading
import time
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool, linear_model


class DeviceTest(PrivatePool, unittest.TestCase):
    def setUp(self):
        super().setUp()
        self._saved_wait = os.environ.pop("XTRAIN_WAIT_FOR_IPU", None)
        self._releaser = None

    def tearDown(self):
        if self._releaser is not None:
            self._releaser.join(30)
        popart.DeviceManager().setOnDemandAttachTimeout(0)
        os.environ.pop("XTRAIN_WAIT_FOR_IPU", None)
        if self._saved_wait is not None:
            os.environ["XTRAIN_WAIT_FOR_IPU"] = self._saved_wait
        super().tearDown()

    def release_soon(self, device):
        """Detaches device from another thread after ~0.2 s; returns an Event set then."""
        done = threading.Event()

        def release():
            time.sleep(0.2)
            done.set()  # before the detach, so whoever attaches after it sees it set
            device.detach()

        self._releaser = threading.Thread(target=release)
        self._releaser.start()
        return done

    def test_enums(self):
        self.assertEqual(popart.DeviceType.Ipu.name, "Ipu")
        for n in ["IpuModel", "Cpu", "Ipu", "OfflineIpu"]:
            self.assertEqual(getattr(popart.DeviceType, n).name, n)
        for n in ["Always", "OnDemand", "Never"]:
            self.assertEqual(getattr(popart.DeviceConnectionType, n).name, n)
        for n in ["Full", "SinglePipeline", "ReplicaAndLadder"]:
            self.assertEqual(getattr(popart.SyncPattern, n).name, n)
        for n in ["First", "Random"]:
            self.assertEqual(getattr(popart.DeviceSelectionCriterion, n).name, n)

    def test_cpu_device(self):
        d = popart.DeviceManager().createCpuDevice()
        self.assertEqual(d.type, popart.DeviceType.Cpu)
        self.assertEqual(d.numIpus, 1)
        self.assertTrue(d.isAttached)
        self.assertIn("Cpu", repr(d))

    def test_ipu_model(self):
        d = popart.DeviceManager().createIpuModelDevice({"numIPUs": 2, "tilesPerIPU": 4})
        self.assertEqual(d.type, popart.DeviceType.IpuModel)
        self.assertEqual(d.numIpus, 2)
        self.assertEqual(d.tilesPerIPU, 4)
        self.assertEqual(d.version, "ipu2")
        with self.assertRaisesRegex(popart.popart_exception, "bogus"):
            popart.DeviceManager().createIpuModelDevice({"bogus": 1})
        with self.assertRaisesRegex(TypeError, "numIPUs"):
            popart.DeviceManager().createIpuModelDevice({"numIPUs": 1.5})

    def test_compile_ipu_code_is_a_checked_no_op(self):
        # PopART's IPU Model compiles IPU code when asked; xtrain's simulation has none to
        # compile, so the option is accepted either way, but must be a boolean.
        dm = popart.DeviceManager()
        for flag in (True, False):
            d = dm.createIpuModelDevice({"compileIPUCode": flag, "numIPUs": 2, "tilesPerIPU": 16})
            self.assertEqual((d.numIpus, d.tilesPerIPU), (2, 16))
        with self.assertRaisesRegex(popart.popart_exception,
                                    r"compileIPUCode: 'maybe' is not a boolean"):
            dm.createIpuModelDevice({"compileIPUCode": "maybe"})

    def test_offline_device(self):
        d = popart.DeviceManager().createOfflineIPUDevice({"numIPUs": 1})
        self.assertEqual(d.type, popart.DeviceType.OfflineIpu)
        with self.assertRaises(popart.popart_exception):
            d.attach()

    def test_acquire_available(self):
        dm = popart.DeviceManager()
        d = dm.acquireAvailableDevice(2)
        self.assertEqual(d.numIpus, 2)
        self.assertEqual(d.type, popart.DeviceType.Ipu)
        self.assertTrue(d.isAttached)
        self.assertEqual(d.id, 8)  # the first pair of an 8-IPU pool
        self.assertEqual(d.driverIds, [0, 1])
        # its IPUs are taken now: the next pair, then by id
        e = dm.acquireAvailableDevice(numIpus=2, tilesPerIpu=0, pattern=popart.SyncPattern.Full,
                                      connectionType=popart.DeviceConnectionType.Always,
                                      selectionCriterion=popart.DeviceSelectionCriterion.First)
        self.assertEqual(e.driverIds, [2, 3])
        with self.assertRaises(popart.popart_exception):
            dm.acquireDeviceById(0)
        self.assertIsNone(dm.tryAcquireDeviceById(1))
        d.detach()
        self.assertFalse(d.isAttached)
        f = dm.acquireDeviceById(0)
        self.assertEqual(f.driverIds, [0])
        f.detach()
        e.detach()

    def test_on_demand_and_context_manager(self):
        dm = popart.DeviceManager()
        with dm.acquireAvailableDevice(
                4, connectionType=popart.DeviceConnectionType.OnDemand) as d:
            self.assertFalse(d.isAttached)
            self.assertTrue(d.attach())
            self.assertTrue(d.isAttached)
            self.assertIsNone(dm.tryAcquireAvailableDevice(8))
        self.assertFalse(d.isAttached)
        g = dm.tryAcquireAvailableDevice(8)
        self.assertIsNotNone(g)
        g.detach()

    def test_try_attach_until_timeout(self):
        dm = popart.DeviceManager()
        a = dm.acquireDeviceById(0)
        dm.setOnDemandAttachTimeout(0)
        lst = dm.enumerateDevices(numIpus=1)
        self.assertEqual(len(lst), 8)
        self.assertFalse(lst[0].tryAttachUntilTimeout())  # held by a; timeout 0: one try
        a.detach()
        self.assertTrue(lst[0].tryAttachUntilTimeout())
        lst[0].detach()
        with self.assertRaises(ValueError):
            dm.setOnDemandAttachTimeout(-1)
        with self.assertRaisesRegex(popart.popart_exception, "too long"):
            dm.setOnDemandAttachTimeout(10**8)

    def test_attach_timeout_waits_for_a_release(self):
        dm = popart.DeviceManager()
        holder = dm.acquireDeviceById(0)
        dm.setOnDemandAttachTimeout(attachTimeout=60)
        device = dm.enumerateDevices(connectionType=popart.DeviceConnectionType.OnDemand)[0]
        released = self.release_soon(holder)
        start = time.monotonic()
        self.assertTrue(device.tryAttachUntilTimeout())
        self.assertTrue(released.is_set())  # it attached after the release, not before
        self.assertLess(time.monotonic() - start, 30)
        device.detach()

    def test_attach_timeout_gives_up(self):
        dm = popart.DeviceManager()
        holder = dm.acquireDeviceById(0)
        dm.setOnDemandAttachTimeout(1)
        device = dm.enumerateDevices()[0]
        start = time.monotonic()
        self.assertFalse(device.tryAttachUntilTimeout())
        waited = time.monotonic() - start
        self.assertGreaterEqual(waited, 1.0)
        self.assertLess(waited, 30)
        self.assertFalse(device.isAttached)
        holder.detach()

    def test_wait_for_ipu(self):
        dm = popart.DeviceManager()
        holder = dm.acquireDeviceById(1)
        os.environ["XTRAIN_WAIT_FOR_IPU"] = "60"
        released = self.release_soon(holder)
        d = dm.acquireDeviceById(1)
        self.assertTrue(released.is_set())
        self.assertTrue(d.isAttached)
        self.assertIsNone(dm.tryAcquireDeviceById(1))  # the try forms never wait
        os.environ["XTRAIN_WAIT_FOR_IPU"] = "1"
        start = time.monotonic()
        with self.assertRaisesRegex(popart.popart_exception,
                                    "after waiting 1 s .*IPU 1 is held by process %d" % os.getpid()):
            dm.acquireDeviceById(1)
        self.assertGreaterEqual(time.monotonic() - start, 1.0)
        os.environ["XTRAIN_WAIT_FOR_IPU"] = "-5"
        with self.assertRaisesRegex(popart.popart_exception, "XTRAIN_WAIT_FOR_IPU='-5'"):
            dm.acquireAvailableDevice()
        d.detach()

    def test_on_demand_session_attaches_after_compiling(self):
        dm = popart.DeviceManager()
        dm.setOnDemandAttachTimeout(60)
        device = dm.acquireDeviceById(2, connectionType=popart.DeviceConnectionType.OnDemand)
        holder = dm.acquireDeviceById(2)  # busy while the session compiles
        s = popart.InferenceSession(linear_model(), popart.DataFlow(1, ["y"]), device)
        self.assertFalse(device.isAttached)
        released = self.release_soon(holder)
        s.prepareDevice()
        self.assertTrue(released.is_set())
        self.assertTrue(device.isAttached)
        anchors = s.initAnchorArrays()
        s.run(popart.PyStepIO({"x": np.ones((2, 4), np.float32),
                               "t": np.zeros((2, 3), np.float32)}, anchors))
        self.assertEqual(anchors["y"].shape, (2, 3))

    def test_popxl_session_waits_for_the_attach_timeout(self):
        dm = popart.DeviceManager()
        dm.setOnDemandAttachTimeout(60)
        device = dm.acquireDeviceById(3, connectionType=popart.DeviceConnectionType.OnDemand)
        s = popart.InferenceSession(linear_model(), popart.DataFlow(1, ["y"]), device)
        s.prepareDevice()  # attaches
        device.detach()
        holder = dm.acquireDeviceById(3)
        released = self.release_soon(holder)
        with popart.Session(s) as session:  # as PopXL, tryAttachUntilTimeout
            self.assertTrue(released.is_set())
            self.assertTrue(session.is_attached)
        self.assertFalse(device.isAttached)

    def test_enumerate(self):
        dm = popart.DeviceManager()
        singles = dm.enumerateDevices()  # PopART's defaults: 1 IPU, Ipu, Always, whole IPUs
        self.assertEqual([d.id for d in singles], list(range(8)))
        for d in singles:
            self.assertEqual(d.connectionType, popart.DeviceConnectionType.Always)
            self.assertEqual(d.tilesPerIPU, 1472)
            self.assertFalse(d.isAttached)
        self.assertEqual([d.numIpus for d in dm.enumerateDevices(numIpus=2)], [2] * 4)
        self.assertEqual(len(dm.enumerateDevices(popart.SyncPattern.Full, 0)), 8 + 4 + 2 + 1)
        lazy = dm.enumerateDevices(pattern=popart.SyncPattern.Full, numIpus=4,
                                   deviceType=popart.DeviceType.Ipu,
                                   connectionType=popart.DeviceConnectionType.OnDemand,
                                   tilesPerIPU=64)
        self.assertEqual([(d.id, d.tilesPerIPU) for d in lazy], [(12, 64), (13, 64)])
        self.assertEqual({d.connectionType for d in lazy}, {popart.DeviceConnectionType.OnDemand})
        # As PopART's: the pool lists IPUs only.
        self.assertEqual(dm.enumerateDevices(deviceType=popart.DeviceType.Cpu), [])
        with self.assertRaisesRegex(popart.popart_exception, "tilesPerIPU"):
            dm.enumerateDevices(tilesPerIPU=5000)
        sim = dm.createSimDevice({})
        self.assertEqual((sim.type, sim.numIpus, sim.tilesPerIPU), (popart.DeviceType.Sim, 1, 4))
        sim = dm.createSimDevice({"numIPUs": 2, "tilesPerIPU": 8})
        self.assertEqual((sim.numIpus, sim.tilesPerIPU), (2, 8))

    def test_bad_arguments(self):
        dm = popart.DeviceManager()
        with self.assertRaises(popart.popart_exception):
            dm.acquireAvailableDevice(3)  # not a power of two
        with self.assertRaises(TypeError):
            dm.acquireAvailableDevice("two")
        with self.assertRaises(TypeError):
            dm.acquireAvailableDevice(1, pattern="Full")
        with self.assertRaises(TypeError):
            dm.acquireAvailableDevice(numIPUs=1)  # PopART spells it numIpus


if __name__ == "__main__":
    unittest.main()
