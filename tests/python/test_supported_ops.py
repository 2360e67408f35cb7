"""popart.getSupportedOperations and its companions, as PopART's supported_ops_test.py and
operators_test.py call them."""
import unittest

import xtrain as popart


def keys(ops):
    return {f"{o.domain}::{o.type}-{o.version}" for o in ops}


class SupportedOperationsTest(unittest.TestCase):
    def test_public_and_internal(self):
        public = popart.getSupportedOperations(False)
        internal = popart.getSupportedOperations(includeInternal=True)
        self.assertIn("ai.onnx::Conv-11", keys(public))
        self.assertIn("ai.onnx::Constant-13", keys(public))
        self.assertIn("ai.graphcore::Gelu-1", keys(public))
        self.assertGreater(len(internal), len(public))
        self.assertTrue(keys(public) <= keys(internal))

    def test_unsupported_disjoint_from_supported(self):
        for opset in (6, 10, 13):
            unsupported = popart.getUnsupportedOperations(opset)
            supported_types = {o.type for o in popart.getSupportedOperations(False)}
            self.assertTrue(unsupported)
            self.assertFalse({o.type for o in unsupported} & supported_types)
        with self.assertRaisesRegex(popart.popart_exception, "opset 5"):
            popart.getUnsupportedOperations(5)

    def test_definitions(self):
        defs = popart.getSupportedOperationsDefinition(False)
        conv = defs[popart.OperatorIdentifier("ai.onnx", "Conv", 11)]
        self.assertEqual([i.name for i in conv.inputs], ["X", "W", "B"])
        self.assertIn(popart.DataType.FLOAT, conv.inputs[0].supportedTensors)
        self.assertEqual(conv.attributes["strides"].supportedValuesRegex, ".*")
        self.assertEqual([o.name for o in conv.outputs], ["Y"])


if __name__ == "__main__":
    unittest.main()
