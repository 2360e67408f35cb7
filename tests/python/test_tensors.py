"""DataType, TensorInfo, AnchorReturnType, DataFlow, InputShapeInfo and InputSettings: round trips
and bad arguments (each error names the culprit)."""
import pickle
import unittest

import numpy as np

import xtrain as popart


class DataTypeTest(unittest.TestCase):
    def test_members(self):
        names = ["UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "UINT32", "UINT64",
                 "BOOL", "FLOAT", "FLOAT16", "BFLOAT16", "FLOAT8_143", "FLOAT8_152", "DOUBLE",
                 "COMPLEX64", "COMPLEX128", "STRING", "UNDEFINED"]
        for n in names:
            self.assertEqual(getattr(popart.DataType, n).name, n)
        self.assertEqual(len(popart.DataType.__members__), len(names))


class TensorInfoTest(unittest.TestCase):
    def test_from_string(self):
        t = popart.TensorInfo("FLOAT", [2, 3])
        self.assertEqual(t.data_type(), "FLOAT")
        self.assertEqual(t.data_type_lcase(), "float32")
        self.assertEqual(t.dataType(), popart.DataType.FLOAT)
        self.assertEqual(t.shape(), [2, 3])
        self.assertEqual(t.rank(), 2)
        self.assertEqual(t.nelms(), 6)
        self.assertEqual(t.nbytes(), 24)
        self.assertEqual(t.dim(1), 3)
        self.assertEqual(str(t), "FLOAT   [2 3]")
        self.assertEqual(repr(t), 'TensorInfo("FLOAT", [2, 3])')

    def test_from_datatype_and_numpy(self):
        a = popart.TensorInfo(popart.DataType.INT32, (4,))
        self.assertEqual(a, popart.TensorInfo("INT32", [4]))
        self.assertEqual(popart.TensorInfo(np.float16, [4]), popart.TensorInfo("FLOAT16", [4]))
        self.assertEqual(popart.TensorInfo(np.dtype("int64"), [1]).data_type(), "INT64")
        arr = np.zeros((2, 5), dtype=np.float64)
        t = popart.TensorInfo(arr)
        self.assertEqual((t.data_type(), t.shape()), ("DOUBLE", [2, 5]))
        self.assertNotEqual(t, popart.TensorInfo("FLOAT", [2, 5]))
        self.assertEqual(popart.TensorInfo("FLOAT", []).nelms(), 1)

    def test_lcase_is_numpy(self):
        for dt in [np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32,
                   np.uint64, np.bool_, np.float16, np.float32, np.float64]:
            t = popart.TensorInfo(np.zeros([1], dtype=dt))
            self.assertEqual(np.dtype(t.data_type_lcase()), np.dtype(dt))

    def test_set_and_pickle(self):
        t = popart.TensorInfo()
        t.set("INT64", [7])
        self.assertEqual(t, popart.TensorInfo("INT64", [7]))
        self.assertEqual(pickle.loads(pickle.dumps(t)), t)

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "FLAOT.*expected one of.*FLOAT"):
            popart.TensorInfo("FLAOT", [1])
        with self.assertRaisesRegex(ValueError, r"negative dimension -2"):
            popart.TensorInfo("FLOAT", [3, -2])
        with self.assertRaisesRegex(TypeError, r"'ab' is not a sequence of integers"):
            popart.TensorInfo("FLOAT", "ab")
        with self.assertRaisesRegex(TypeError, r"dimension 1.5"):
            popart.TensorInfo("FLOAT", [1.5])
        with self.assertRaisesRegex(TypeError, r"not a data type"):
            popart.TensorInfo(object(), [1])
        with self.assertRaisesRegex(TypeError, r"datetime64|<M8"):
            popart.TensorInfo(np.zeros([1], dtype="datetime64[s]"))
        with self.assertRaises(Exception):
            popart.TensorInfo("FLOAT", [2]).dim(5)


class AnchorReturnTypeTest(unittest.TestCase):
    def test_kinds(self):
        for s, i in [("ALL", popart.AnchorReturnTypeId.All),
                     ("FINAL", popart.AnchorReturnTypeId.Final),
                     ("SUM", popart.AnchorReturnTypeId.Sum),
                     ("All", popart.AnchorReturnTypeId.All)]:
            a = popart.AnchorReturnType(s)
            self.assertEqual(a.id(), i)
            self.assertEqual(a.rp(), 0)
        e = popart.AnchorReturnType("EVERYN", 4)
        self.assertEqual((e.id(), e.rp(), e.str()), (popart.AnchorReturnTypeId.EveryN, 4, "EVERYN"))
        self.assertEqual(repr(e), 'AnchorReturnType("EVERYN", 4)')
        self.assertEqual(popart.AnchorReturnType(anchorReturnTypeString="EVERYN", returnPeriod=2).rp(), 2)

    def test_tile_set_and_exchange_strategy(self):
        # Only PopART's defaults (or None) are accepted: there are no IO tiles to use.
        class Named:
            def __init__(self, name):
                self.name = name

        a = popart.AnchorReturnType("ALL", tileSet=Named("Compute"),
                                    exchangeStrategy=Named("JustInTime"))
        self.assertEqual(a.id(), popart.AnchorReturnTypeId.All)
        with self.assertRaisesRegex(ValueError, "tileSet .* is not implemented"):
            popart.AnchorReturnType("ALL", tileSet=Named("IO"))
        with self.assertRaisesRegex(ValueError, "exchangeStrategy .* is not implemented"):
            popart.AnchorReturnType("EVERYN", 2, exchangeStrategy=Named("OverlapLoops"))
        popart.InputSettings(Named("Compute"), Named("JustInTime"))
        with self.assertRaisesRegex(ValueError, "InputSettings: tileSet .* is not implemented"):
            popart.InputSettings(Named("IO"))

    def test_bad(self):
        # PopART's exception class and messages.
        with self.assertRaisesRegex(popart.popart_exception, "^Invalid .* supplied: BOTH$"):
            popart.AnchorReturnType("BOTH")
        with self.assertRaisesRegex(popart.popart_exception, "Must specify return period"):
            popart.AnchorReturnType("EVERYN")
        with self.assertRaisesRegex(popart.popart_exception, "must be greater than zero"):
            popart.AnchorReturnType("EVERYN", 0)
        with self.assertRaisesRegex(popart.popart_exception, "should not be supplied"):
            popart.AnchorReturnType("ALL", 2)


class DataFlowTest(unittest.TestCase):
    def test_dict(self):
        df = popart.DataFlow(4, {"o": popart.AnchorReturnType("ALL"),
                                 "l": popart.AnchorReturnType("EVERYN", 2)})
        self.assertEqual(df.batchesPerStep(), 4)
        self.assertEqual(sorted(df.anchors()), ["l", "o"])
        self.assertEqual(df.nAnchors(), 2)
        self.assertTrue(df.isAnchored("o"))
        self.assertFalse(df.isAnchored("x"))
        self.assertEqual(df.art("l").rp(), 2)
        df.setBatchesPerStep(8)
        self.assertEqual(df.batchesPerStep(), 8)
        self.assertEqual(df.art("l").rp(), 2)

    def test_list(self):
        df = popart.DataFlow(1, ["a", "b"])
        self.assertEqual(df.art("a").id(), popart.AnchorReturnTypeId.All)
        df = popart.DataFlow(batchesPerStep=2, anchorIds=["a"],
                             anchorReturnType=popart.AnchorReturnType("SUM"))
        self.assertEqual(df.art("a").id(), popart.AnchorReturnTypeId.Sum)
        self.assertEqual(popart.DataFlow(1, {}).nAnchors(), 0)
        self.assertEqual(repr(popart.DataFlow(2, {"a": popart.AnchorReturnType("FINAL")})),
                         "DataFlow(2, {'a': AnchorReturnType(\"FINAL\")})")

    def test_bad(self):
        with self.assertRaisesRegex(TypeError, r"anchorTensors\['a'\] is 1"):
            popart.DataFlow(1, {"a": 1})
        with self.assertRaisesRegex(TypeError, "tensor id 3 is not a str"):
            popart.DataFlow(1, {3: popart.AnchorReturnType("ALL")})
        with self.assertRaisesRegex(TypeError, "'abc' is not a list of tensor ids"):
            popart.DataFlow(1, "abc")
        with self.assertRaisesRegex(Exception, "batches per step"):
            popart.DataFlow(0, ["a"])
        with self.assertRaisesRegex(Exception, "EVERYN"):
            popart.DataFlow(3, {"o": popart.AnchorReturnType("EVERYN", 2)})
        with self.assertRaisesRegex(KeyError, "'zz' is not an anchor"):
            popart.DataFlow(1, ["a"]).art("zz")


class InputShapeInfoTest(unittest.TestCase):
    def test_round_trip(self):
        i = popart.InputShapeInfo()
        self.assertFalse(i.has("x"))
        i.add("x", popart.TensorInfo("FLOAT", [2]))
        self.assertTrue(i.has("x"))
        self.assertEqual(i.get("x"), popart.TensorInfo("FLOAT", [2]))
        with self.assertRaisesRegex(KeyError, "'y'"):
            i.get("y")


class InputSettingsTest(unittest.TestCase):
    def test_modes(self):
        R = popart.ReplicatedStreamMode
        self.assertEqual(popart.InputSettings().replicatedStreamMode(), R.Replicate)
        self.assertEqual(popart.InputSettings(R.Broadcast).replicatedStreamMode(), R.Broadcast)
        self.assertEqual(popart.InputSettings(relicatedStreamMode=R.Broadcast)
                         .replicatedStreamMode(), R.Broadcast)
        s = popart.InputSettings()
        s.setReplicatedStreamMode(R.Broadcast)
        self.assertEqual(s.replicatedStreamMode(), R.Broadcast)


if __name__ == "__main__":
    unittest.main()
