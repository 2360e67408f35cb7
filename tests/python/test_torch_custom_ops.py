"""xtrain.torch's custom_op (docs/poptorch.md, "Custom ops"): PopTorch's listings 4.23 to 4.26 with
the op libraries of tests/python/custom_ops (built with the package, found in the build tree), a
module using custom ops trained through trainingModel against the same module trained by PyTorch
(the op written in torch, on the CPU path isRunningOnIpu() selects), inference, and bad input."""
import contextlib
import ctypes
import os
import pathlib
import subprocess
import sys
import textwrap
import unittest

from python_testing import PrivatePool, clean_env
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import xtrain.torch as poptorch


def build_dir():
    """The build tree: XTRAIN_BIN_DIR's parent under ctest, else the one the package is in."""
    if os.environ.get("XTRAIN_BIN_DIR"):
        return pathlib.Path(os.environ["XTRAIN_BIN_DIR"]).parent
    import xtrain
    return pathlib.Path(xtrain.__file__).resolve().parents[2]


def library(name):
    found = list((build_dir() / "tests").rglob("lib%s.*" % name))
    assert found, "lib%s is not built under %s/tests (target %s)" % (name, build_dir(), name)
    return str(found[0])


@contextlib.contextmanager
def cwd(path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


if torch is not None:
    for _name in ("custom_cube_op", "custom_leaky_relu_op", "custom_many_attribute_op"):
        ctypes.cdll.LoadLibrary(library(_name))

    def cube(x, bias):
        """Cube's outputs in torch (the library's op: x^3 + bias, x^3)."""
        return x * x * x + bias, x * x * x

    class CubeNet(nn.Module):
        """Linear layers around the two custom ops; on the CPU (PyTorch's own training) the same
        functions written in torch, as PopTorch's chapter 4.2.4 suggests."""

        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc_bias = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x, y=None):
            h, b = torch.tanh(self.fc1(x)), self.fc_bias(x)
            if poptorch.isRunningOnIpu():
                plus, cubed = poptorch.custom_op([h, b], "Cube", "com.acme", 1,
                                                 example_outputs=[h, h])
            else:
                plus, cubed = cube(h, b)
            z = self.fc2(plus + 0.5 * cubed)
            if poptorch.isRunningOnIpu():
                out = poptorch.custom_op([z], "LeakyRelu", "com.acme", 1, example_outputs=[z],
                                         attributes={"alpha": 0.1})[0]
            else:
                out = F.leaky_relu(z, 0.1)
            if self.training:
                return out, F.cross_entropy(out, y)
            return out


    class CubeOnly(nn.Module):
        """Cube alone (a module-level class: an exported model is pickled)."""

        def forward(self, x, bias):
            return poptorch.custom_op([x, bias], "Cube", "com.acme", 1, example_outputs=[x, x])


@unittest.skipIf(torch is None, SKIP_REASON)
class Listings(PrivatePool, unittest.TestCase):
    """PopTorch's listings as written but for the import (and 4.23 run from the build tree, where
    tests/ holds the libraries as PopTorch's tests/ does)."""

    def test_listing_4_23_loading_the_library(self):
        import pathlib  # noqa: F811 - the listing's own imports
        import ctypes  # noqa: F811
        with cwd(build_dir()):
            myso = list(pathlib.Path("tests").rglob("libcustom_cube_op.*"))
            assert myso, "Failed to find libcustom_cube_op"
            myop = ctypes.cdll.LoadLibrary(myso[0])
        self.assertIsNotNone(myop)
        import xtrain
        self.assertIn(("com.acme", "Cube", 1), [(o.domain, o.type, o.version) for o in
                                                xtrain.getSupportedOperations(False)])

    def test_listing_4_24_inference(self):
        class BasicNetwork(nn.Module):
            def forward(self, x, bias):
                x, y = poptorch.custom_op([x, bias],
                                          "Cube",
                                          "com.acme",
                                          1,
                                          example_outputs=[x, x])
                return x, y

        model = BasicNetwork()
        x = torch.full((1, 8), 2.0)
        bias = torch.full((1, 8), 4.0)
        inference_model = poptorch.inferenceModel(model)
        out = inference_model(x, bias)
        torch.testing.assert_close(out[0], torch.full((1, 8), 12.0))
        torch.testing.assert_close(out[1], torch.full((1, 8), 8.0))

    def test_listing_4_25_an_attribute(self):
        class Model(torch.nn.Module):
            def forward(self, x):
                x = poptorch.custom_op([x],
                                       "LeakyRelu",
                                       "com.acme",
                                       1,
                                       example_outputs=[x],
                                       attributes={"alpha": 0.02})
                return x[0]

        model = Model()
        x = torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0])
        out = poptorch.inferenceModel(model)(x)
        torch.testing.assert_close(out, torch.tensor([-0.02, -0.01, 0.0, 0.5, 1.0]))

    def many_attributes_model(self, change=None):
        class Model(torch.nn.Module):
            def forward(self, x):
                attributes = {
                    "float_one": 1.0,
                    "float_minus_two": -2.0,
                    "int_zero": 0,
                    "int_minus_five": -5,
                    "floats_one_two_three": [1.0, 2.0, 3.0],
                    "floats_minus_one_two_three": [-1.0, -2.0, -3.0],
                    "ints_one_two_three": [1, 2, 3],
                    "ints_minus_one_two_three": [-1, -2, -3],
                    "a_string": "string with quotes and slash \" ' \\ end",
                    "strs": ["abc", "def", "ghi"]
                }
                if change:
                    attributes.update(change)

                x = poptorch.custom_op([x],
                                       "ManyAttributeOp",
                                       "test.poptorch",
                                       1,
                                       example_outputs=[x],
                                       attributes=attributes)
                return x
        return Model()

    def test_listing_4_26_many_attribute_types(self):
        # ManyAttributeOp adds 1 when every attribute arrived with the listing's type and value.
        x = torch.tensor([5.0, -1.0])
        out = poptorch.inferenceModel(self.many_attributes_model())(x)
        torch.testing.assert_close(out[0], x + 1)

    def test_a_changed_attribute_type_or_value_reaches_the_op(self):
        x = torch.tensor([5.0, -1.0])
        for change in ({"float_one": 1}, {"ints_one_two_three": (1, 2, 3.0)},
                       {"strs": ("abc", "def")}, {"int_zero": 1}):
            with self.subTest(change=change):
                if change == {"ints_one_two_three": (1, 2, 3.0)}:
                    with self.assertRaisesRegex(ValueError, "ints_one_two_three.*mixes types"):
                        poptorch.inferenceModel(self.many_attributes_model(change))(x)
                    continue
                out = poptorch.inferenceModel(self.many_attributes_model(change))(x)
                torch.testing.assert_close(out[0], x)  # not the listing's: nothing added
        # A tuple is a list (table 4.1).
        out = poptorch.inferenceModel(self.many_attributes_model(
            {"strs": ("abc", "def", "ghi"), "ints_one_two_three": (1, 2, 3)}))(x)
        torch.testing.assert_close(out[0], x + 1)


@unittest.skipIf(torch is None, SKIP_REASON)
class Training(PrivatePool, unittest.TestCase):
    """A module with custom ops trained on the device matches PyTorch training the same module
    with the ops written in torch (the ops' gradients are their libraries' grad ops)."""

    def check(self, options, replicas=1, accumulation=1, steps=4):
        model = tt.make(CubeNet, seed=3)
        reference = tt.twin(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
        wrapped = poptorch.trainingModel(model, options, optimizer=optimizer)
        for step, (x, y) in enumerate(tt.mlp_data(steps, 4 * replicas * accumulation, seed=5)):
            _, loss = wrapped(x, y)
            losses = tt.pytorch_step(reference, reference_optimizer, x, y,
                                     replicas=replicas, accumulation=accumulation)
            # outputMode Final: the last micro-batch's loss of each replica.
            expected = torch.tensor(losses[-loss.numel():]).reshape(loss.shape)
            tt.assert_close_relative(loss, expected, "loss at step %d" % step)
            for name, value in reference.state_dict().items():
                tt.assert_close_relative(model.state_dict()[name], value,
                                         "%s after step %d" % (name, step))
        wrapped.destroy()
        return model, reference

    def test_one_replica(self):
        model, reference = self.check(poptorch.Options())
        # Inference after training: the device's custom ops against the torch path.
        x = torch.randn(5, 6, generator=torch.Generator().manual_seed(9))
        out = poptorch.inferenceModel(model)(x)
        reference.eval()
        with torch.no_grad():
            tt.assert_close_relative(out, reference(x), "inference output")

    def test_replicas_and_accumulation(self):
        opts = poptorch.Options().replicationFactor(2)
        opts.Training.gradientAccumulation(2)
        self.check(opts, replicas=2, accumulation=2, steps=3)

    def test_gradient_reaches_both_inputs(self):
        # The first layers train only through Cube's gradient (CubeGrad for x, g0 for bias).
        model, _ = self.check(poptorch.Options(), steps=2)
        fresh = tt.make(CubeNet, seed=3)
        self.assertFalse(torch.equal(model.fc1.weight, fresh.fc1.weight))
        self.assertFalse(torch.equal(model.fc_bias.weight, fresh.fc_bias.weight))


@unittest.skipIf(torch is None, SKIP_REASON)
class Precompilation(PrivatePool, unittest.TestCase):

    def test_exported_and_loaded(self):
        # The file holds the captured graph with the op's node; loading needs the library only.
        path = os.path.join(self.tmp, "cube.pt")
        poptorch.inferenceModel(CubeOnly()).compileAndExport(path, torch.ones(2), torch.ones(2))
        out = poptorch.load(path)(torch.tensor([2.0, -1.0]), torch.tensor([1.0, 1.0]))
        torch.testing.assert_close(out[0], torch.tensor([9.0, 0.0]))
        torch.testing.assert_close(out[1], torch.tensor([8.0, -1.0]))


@unittest.skipIf(torch is None, SKIP_REASON)
class BadInput(PrivatePool, unittest.TestCase):

    def run_op(self, op, *args):
        class Model(nn.Module):
            def forward(self, x):
                return op(x)
        return poptorch.inferenceModel(Model())(*args)

    def test_unknown_op_names_domain_type_and_version(self):
        x = torch.ones(2, 3)
        with self.assertRaisesRegex(poptorch.Error, r"com\.acme::Nope \(version 3\).*no op "
                                    r"com\.acme::Nope is registered.*LoadLibrary"):
            self.run_op(lambda x: poptorch.custom_op([x], "Nope", "com.acme", 3,
                                                     example_outputs=[x])[0], x)

    def test_bad_attributes_name_the_attribute(self):
        x = torch.ones(2, 3)
        cases = [({"alpha": None}, ValueError, "'alpha' is a NoneType"),
                 ({"alpha": {"a": 1}}, ValueError, "'alpha' is a dict"),
                 ({"alpha": torch.tensor(1.0)}, ValueError, "'alpha' is a Tensor"),
                 ({"alpha": [1.0, "a"]}, ValueError, "'alpha' mixes types"),
                 ({"alpha": []}, ValueError, "'alpha' is an empty list"),
                 ({"alpha": 1e300}, ValueError, "'alpha' = 1e\\+300 is too high"),
                 ({"alpha": [-1e300]}, ValueError, r"'alpha'\[0\] = -1e\+300 is too low"),
                 ({"alpha": 2 ** 70}, ValueError, "'alpha' = .* does not fit an int"),
                 ({3: 1.0}, ValueError, "attribute names must be non-empty strs"),
                 ([("alpha", 1.0)], TypeError, "attributes must be a dict")]
        for attributes, error, message in cases:
            with self.subTest(attributes=attributes), self.assertRaisesRegex(error, message):
                self.run_op(lambda x: poptorch.custom_op(
                    [x], "LeakyRelu", "com.acme", 1, example_outputs=[x],
                    attributes=attributes)[0], x)

    def test_an_attribute_of_a_type_the_op_does_not_take(self):
        x = torch.ones(2, 3)
        with self.assertRaisesRegex(poptorch.Error, "attribute 'alpha' of the custom op has "
                                    "another type"):
            self.run_op(lambda x: poptorch.custom_op([x], "LeakyRelu", "com.acme", 1,
                                                     example_outputs=[x],
                                                     attributes={"alpha": 2})[0], x)

    def test_example_outputs_missing_or_wrong(self):
        x = torch.ones(2, 3)
        cases = [(None, ValueError, "example_outputs is missing"),
                 ([], ValueError, "example_outputs is empty"),
                 (x, TypeError, "example_outputs must be a list or tuple of tensors; got Tensor"),
                 ([x, 3], TypeError, r"example_outputs\[1\] is a int"),
                 ([x], ValueError, "example_outputs has 1 tensors, but the op has 2 outputs"),
                 ([x, x, x], ValueError, "has 3 tensors, but the op has 2 outputs"),
                 ([x, x[0]], ValueError, r"example_outputs\[1\] is float32 \[3\], but the op's "
                  r"output 1 is float32 \[2, 3\]"),
                 ([x.long(), x], ValueError, r"example_outputs\[0\] is int64 \[2, 3\], but the "
                  r"op's output 0 is float32")]
        for examples, error, message in cases:
            with self.subTest(examples=examples), self.assertRaisesRegex(error, message):
                self.run_op(lambda x: poptorch.custom_op([x, x], "Cube", "com.acme", 1,
                                                         example_outputs=examples)[0], x)

    def test_inputs_the_op_refuses(self):
        x = torch.ones(2, 3)
        with self.assertRaisesRegex(poptorch.Error, r"Cube \(version 1\): the op refuses inputs "
                                    r"\[float32 \[2, 3\], float32 \[3\]\].*expected"):
            self.run_op(lambda x: poptorch.custom_op([x, x[0]], "Cube", "com.acme", 1,
                                                     example_outputs=[x, x])[0], x)
        with self.assertRaisesRegex(TypeError, r"inputs\[1\] is a float"):
            self.run_op(lambda x: poptorch.custom_op([x, 1.0], "Cube", "com.acme", 1,
                                                     example_outputs=[x, x])[0], x)

    def test_bad_name_domain_or_version(self):
        x = torch.ones(2)
        for args, message in ((("", "com.acme", 1), "name must be"),
                              (("Cube", None, 1), "domain must be"),
                              (("Cube", "com.acme", 0), "domain_version must be an int >= 1"),
                              (("Cube", "com.acme", "1"), "domain_version must be an int")):
            with self.subTest(args=args), self.assertRaisesRegex(TypeError, message):
                poptorch.custom_op([x, x], *args, example_outputs=[x, x])

    def test_one_domain_at_two_versions(self):
        x = -torch.ones(2, 3)
        with self.assertRaisesRegex(ValueError, "domain com.acme is used at version 1 "
                                    r"\(LeakyRelu\) and 2 \(Cube\)"):
            self.run_op(lambda x: poptorch.custom_op(
                [x], "LeakyRelu", "com.acme", 1, example_outputs=[x])[0] + poptorch.custom_op(
                [x, x], "Cube", "com.acme", 2, example_outputs=[x, x])[0], x)

    def test_non_ascii_strings_are_accepted(self):
        # PopTorch refuses them; xtrain passes UTF-8 strings through (docs/poptorch.md).
        x = -torch.ones(2, 3)
        out = self.run_op(lambda x: poptorch.custom_op(
            [x], "LeakyRelu", "com.acme", 1, example_outputs=[x],
            attributes={"alpha": 0.5, "note": "caf\u00e9 \u1f00", "notes": ["\u00e9"]})[0], x)
        torch.testing.assert_close(out, torch.full((2, 3), -0.5))

    def test_a_newer_domain_version_imports_the_op(self):
        x = -torch.ones(2, 3)
        out = self.run_op(lambda x: poptorch.custom_op([x], "LeakyRelu", "com.acme", 2,
                                                       example_outputs=[x],
                                                       attributes={"alpha": 0.5})[0], x)
        torch.testing.assert_close(out, torch.full((2, 3), -0.5))


@unittest.skipIf(torch is None, SKIP_REASON)
class OnTheCpu(unittest.TestCase):

    def test_outputs_are_zeros_shaped_as_the_examples(self):
        # As PopTorch: the op has no CPU implementation; the example outputs' zeros come back.
        x = torch.ones(2, 3)
        with self.assertLogs("poptorch", "WARNING") as logs:
            out = poptorch.custom_op([x, x], "Cube", "com.acme", 1,
                                     example_outputs=[x, torch.ones(4, dtype=torch.int32)])
        self.assertEqual(len(out), 2)
        torch.testing.assert_close(out[0], torch.zeros(2, 3))
        torch.testing.assert_close(out[1], torch.zeros(4, dtype=torch.int32))
        self.assertIn("runs on the CPU", logs.output[0])


@unittest.skipIf(torch is None, SKIP_REASON)
class LoadingOrder(PrivatePool, unittest.TestCase):
    """In a fresh process: the op is unknown before its library is loaded; a library loaded after
    a session was made registers into the registry the package uses, and the next session sees
    it."""

    def test_a_library_loaded_after_a_session(self):
        script = textwrap.dedent("""
            import ctypes, sys, torch
            import xtrain.torch as poptorch

            class Net(torch.nn.Module):
                def forward(self, x):
                    return poptorch.custom_op([x], "LeakyRelu", "com.acme", 1,
                                              example_outputs=[x], attributes={"alpha": 0.25})[0]

            x = torch.tensor([-4.0, 2.0])
            try:
                poptorch.inferenceModel(Net())(x)
                raise SystemExit("the op ran before its library was loaded")
            except poptorch.Error as e:
                assert "no op com.acme::LeakyRelu is registered" in str(e), e
            plain = poptorch.inferenceModel(torch.nn.Linear(2, 2))
            plain(x)  # a session exists
            ctypes.cdll.LoadLibrary(sys.argv[1])
            out = poptorch.inferenceModel(Net())(x)
            assert out.tolist() == [-1.0, 2.0], out
            print("ok")
        """)
        env = clean_env()  # the private pool (PrivatePool) of this test
        result = subprocess.run([sys.executable, "-c", script, library("custom_leaky_relu_op")],
                                env=env, capture_output=True, text=True, timeout=240)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("ok", result.stdout)


if __name__ == "__main__":
    unittest.main()
