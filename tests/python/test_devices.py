"""DeviceManager and DeviceInfo with PopART's names, keyword arguments and defaults. Pool devices
use a private lock directory and pool size, so the test does not meet other jobs' IPUs."""
import unittest

import xtrain as popart
from python_testing import PrivatePool


class DeviceTest(PrivatePool, unittest.TestCase):
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
        self.assertFalse(lst[0].tryAttachUntilTimeout())  # held by a
        a.detach()
        self.assertTrue(lst[0].tryAttachUntilTimeout())
        lst[0].detach()
        with self.assertRaises(ValueError):
            dm.setOnDemandAttachTimeout(-1)

    def test_enumerate(self):
        dm = popart.DeviceManager()
        self.assertEqual([d.numIpus for d in dm.enumerateDevices(numIpus=2)], [2] * 4)
        self.assertEqual(len(dm.enumerateDevices(popart.SyncPattern.Full, 0)), 8 + 4 + 2 + 1)
        with self.assertRaisesRegex(popart.popart_exception, "not implemented"):
            dm.enumerateDevices(deviceType=popart.DeviceType.Cpu)
        with self.assertRaisesRegex(popart.popart_exception, "not implemented"):
            dm.createSimDevice({})

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
