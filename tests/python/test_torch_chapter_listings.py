"""Listings of PopTorch's "Features" chapter (poptorch-features.txt) that need no IPU hardware, run
as written with `import xtrain.torch as poptorch` as their only change: 4.1 and 4.2, 4.6, 4.6.2's,
4.15, 4.17, 4.18, 4.19 and the precompilation listings 4.27 to 4.31 and 4.33 to 4.35
(docs/poptorch.md, "Listings", maps every listing to its test). The chapter's text lost some lines
of its listings; each filled-in line says so, taken from PopTorch's sources of the listings (the
Python files of its user guide in PopTorch's repository), as is what the listings use without
defining (the models, `input`, `filename`). After each listing, checks of ours say that it did
what its text says.
"""
import contextlib
import copy
import io
import os
import tempfile
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch

if torch is not None:
    import xtrain.torch as poptorch

    # The model of 4.6.2 as written; 4.15, 4.17, 4.18 and 4.19 use it (PopTorch's api.py).
    class ExampleModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = torch.nn.Parameter(torch.zeros(()))

        def forward(self, x):
            x = x + 1

            # It is important to make sure the result of the print is used.
            x = poptorch.ipu_print_tensor(x)

            return x + self.bias

    # Listing 4.19 as written.
    def custom_loss(output, target):
        # Mean squared error with a scale
        loss = output - target
        loss = loss * loss * 5
        return poptorch.identity_loss(loss, reduction="mean")

    class ExampleModelWithCustomLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = ExampleModel()

        def forward(self, input, target):
            out = self.model(input)
            return out, custom_loss(out, target)

    # The model of 4.27 and 4.31 to 4.35 (as 4.3's, which 4.27 writes out).
    class ExampleModelWithLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(10, 10)
            self.loss = torch.nn.MSELoss()

        def forward(self, x, target=None):
            fc = self.fc(x)
            if self.training:
                return fc, self.loss(fc, target)
            return fc

    # Listing 4.6's model, as PopTorch's error_handling.py defines it but for its fault injection
    # (PopTorch's test hook, which xtrain does not have): x + y.
    class PytorchModel(torch.nn.Module):
        def __init__(self, error=None):
            super().__init__()
            if error is not None:
                raise error

        def forward(self, x, y):
            return x + y


def _sgd_twin_steps(model, inputs, steps, lr=0.01):
    """The module trained by PyTorch itself with SGD(lr) on the same inputs: its state dict."""
    twin = copy.deepcopy(model)
    optimizer = torch.optim.SGD(twin.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        twin(*inputs)[-1].backward()
        optimizer.step()
    return twin.state_dict()


@unittest.skipIf(torch is None, SKIP_REASON)
class ConfigFile(PrivatePool, unittest.TestCase):

    def test_listings_4_1_and_4_2(self):
        # Listing 4.1's contents, lost in the text: PopTorch's user guide's poptorch.conf,
        # which its build installs as tmp/poptorch.conf, where api.py (listing 4.2) reads it.
        cwd = os.getcwd()
        os.chdir(self.tmp)
        try:
            os.makedirs("tmp")
            with open("tmp/poptorch.conf", "w") as f:
                f.write("deviceIterations(1)\nsetExecutionStrategy(poptorch.ShardedExecution())\n"
                        "replicationFactor(1)\nenableSyntheticData(True)\n")
            # Listing 4.2 as written (its line 2 lost in the text).
            opts = poptorch.Options()
            opts.loadFromFile("tmp/poptorch.conf")
        finally:
            os.chdir(cwd)
        self.assertEqual((opts.device_iterations, opts.replication_factor, opts.synthetic_data),
                         (1, 1, True))
        self.assertIsInstance(opts.execution_strategy, poptorch.ShardedExecution)
        # Calls of poptorch's classes and their methods, nested; nothing else is called.
        path = os.path.join(self.tmp, "more.conf")
        with open(path, "w") as f:
            f.write('setExecutionStrategy(poptorch.PipelinedExecution("A", '
                    'poptorch.Stage("B").ipu(1)))\n')
        strategy = poptorch.Options().loadFromFile(path).execution_strategy
        self.assertEqual(repr(strategy), "PipelinedExecution(Stage('A'), Stage('B').ipu(1))")
        with open(path, "w") as f:
            f.write("deviceIterations(torch.tensor(2))\n")
        with self.assertRaisesRegex(ValueError, r"more.conf:1: .*only poptorch's classes and "
                                    "methods can be called"):
            poptorch.Options().loadFromFile(path)


@unittest.skipIf(torch is None, SKIP_REASON)
class ErrorsAndOps(PrivatePool, unittest.TestCase):

    def run_listing_4_6(self, model_param):
        """Listing 4.6 inside PopTorch's run_example, with its handlers' actions recorded."""
        actions = []

        def reboot_server():
            actions.append("reboot")

        def shutdown_system():
            actions.append("shutdown")

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            # The listing as written.
            try:
                m = PytorchModel(model_param)
                inference_model = poptorch.inferenceModel(m)
                t1 = torch.tensor([1.])
                t2 = torch.tensor([2.])
                assert inference_model(t1, t2) == 3.0
            except poptorch.RecoverableError as e:
                print(e)
                if e.recovery_action == "FULL_RESET":
                    reboot_server()
                elif e.recovery_action == "IPU_RESET":
                    print("Need to reset the IPU")
                elif e.recovery_action == "PARITION_RESET":
                    print("Need to reset the partition")
            except poptorch.UnrecoverableError as e:
                print(f"Unrecoverable error: machine needs to be taken offline: {e}")
                shutdown_system()
            except poptorch.Error as e:
                print(f"Received {e.message} from component {e.type}, "
                      f"location: {e.location}")
                # Or you could just print all the information at once:
                print(e)
            except Exception as e:
                print(e)
        return printed.getvalue(), actions

    def test_listing_4_6_error_handling(self):
        printed, actions = self.run_listing_4_6(None)
        self.assertEqual((printed, actions), ("", []))  # 1 + 2 == 3 on the device: no handler ran
        # Each handler reached by the error PopTorch would raise (as its own test of the listing).
        printed, actions = self.run_listing_4_6(
            poptorch.RecoverableError("IPU lost", recovery_action="FULL_RESET"))
        self.assertEqual(actions, ["reboot"])
        printed, actions = self.run_listing_4_6(poptorch.UnrecoverableError("IPU broken"))
        self.assertEqual(actions, ["shutdown"])
        self.assertIn("Unrecoverable error: machine needs to be taken offline", printed)
        printed, actions = self.run_listing_4_6(poptorch.Error("bad graph"))
        self.assertIn("Received bad graph from component", printed)

    def test_listing_4_6_2_print_tensor(self):
        # PopTorch's api.py runs the model so.
        model = poptorch.inferenceModel(ExampleModel())
        out = model(torch.tensor([1.0, 2.0, 3.0]))
        torch.testing.assert_close(out, torch.tensor([2.0, 3.0, 4.0]))

    def test_listing_4_19_custom_loss(self):
        # PopTorch's api.py trains the listing's model so, to a bias of 1.
        model_with_loss = ExampleModelWithCustomLoss()
        poptorch_model = poptorch.trainingModel(model_with_loss)
        for _ in range(100):
            out, loss = poptorch_model(input=torch.tensor([1.0, 2.0, 3.0]),
                                       target=torch.tensor([3.0, 4.0, 5.0]))
        torch.testing.assert_close(model_with_loss.model.bias,
                                   torch.tensor(1.0, dtype=torch.float), rtol=1e-4, atol=1e-5)
        self.assertLess(float(loss), 1e-6)
        poptorch_model.destroy()


@unittest.skipIf(torch is None, SKIP_REASON)
class OptimizerListings(PrivatePool, unittest.TestCase):

    def setUp(self):
        super().setUp()
        # What PopTorch's api.py defines before the listings.
        self.model = ExampleModelWithCustomLoss()
        self.input = torch.tensor([1.0, 2.0, 3.0])
        self.target = torch.tensor([3.0, 4.0, 5.0])

    def test_listing_4_15_update_values(self):
        model, input, target = self.model, self.input, self.target
        options = poptorch.Options()
        expected = _sgd_twin_steps(model, (input, target), 2)
        # The listing as written.
        opt = poptorch.optim.SGD(model.parameters(),
                                 lr=0.01,
                                 loss_scaling=2.0,
                                 use_combined_accum=False)
        poptorch_model = poptorch.trainingModel(model, options, opt)
        poptorch_model(input, target)
        # Update optimizer attribute
        opt.loss_scaling = 1.0
        # Update param_group attribute
        opt.param_groups[0]["loss_scaling"] = 1.0
        # Set the new optimizer in the model
        poptorch_model.setOptimizer(opt)  # line 12, lost in the text
        poptorch_model(input, target)
        # Loss scaling changes no step: both are plain SGD's.
        for name, value in expected.items():
            torch.testing.assert_close(model.state_dict()[name], value, rtol=1e-5, atol=1e-6)

    def test_listing_4_17_torch_optimizer_constants(self):
        model = self.model
        # The listing as written.
        # momentum will be marked as constant (It's not set)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        # lr will be marked as variable.
        # momentum will still be marked as constant (Because its default value is 0.0)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.0)
        # lr and momentum will both be marked as variable.
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=1.0)
        # What the comments say: momentum 1.0 is variable, so a change reaches the device ...
        wrapped = poptorch.trainingModel(model, optimizer=opt)
        wrapped(self.input, self.target)
        opt.param_groups[0]["momentum"] = 0.5
        wrapped.setOptimizer(opt)
        wrapped(self.input, self.target)
        wrapped.destroy()
        # ... and momentum left at its default is constant, so a change is refused.
        constant = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.0)
        wrapped = poptorch.trainingModel(model, optimizer=constant)
        wrapped(self.input, self.target)
        constant.param_groups[0]["momentum"] = 0.5
        with self.assertRaisesRegex(poptorch.OptimizerError, "momentum.*constant"):
            wrapped.setOptimizer(constant)
        constant.param_groups[0]["lr"] = 0.02  # lr is always variable
        constant.param_groups[0]["momentum"] = 0.0
        wrapped.setOptimizer(constant)
        wrapped(self.input, self.target)

    def test_listing_4_18_optimizer_state(self):
        model, input, target = self.model, self.input, self.target
        with tempfile.TemporaryDirectory() as d:
            PATH = os.path.join(d, "checkpoint.pt")  # as PopTorch's api.py
            # The listing as written.
            optimizer = poptorch.optim.Adam(model.parameters())
            poptorch_model = poptorch.trainingModel(model, optimizer=optimizer)
            poptorch_model(input, target)

            # Saving the optimizer state
            torch.save({'optimizer_state_dict': optimizer.state_dict()}, PATH)

            # Destroy original model to prevent an error when wrapping the model again
            poptorch_model.destroy()  # lost in the text

            new_optimizer = poptorch.optim.Adam(model.parameters())
            # Loading the optimizer state back
            checkpoint = torch.load(PATH)
            new_optimizer.load_state_dict(checkpoint['optimizer_state_dict'])  # lost in the text

            # The new training model will use the loaded optimizer state
            new_poptorch_model = poptorch.trainingModel(model, optimizer=optimizer)
        # The state saved is the device's after one step (Adam's step 1, moments set) and loads.
        saved = checkpoint['optimizer_state_dict']['state']
        self.assertEqual(float(saved[0]["step"]), 1.0)
        self.assertGreater(float(saved[0]["exp_avg_sq"].abs().sum()), 0.0)
        for index, state in new_optimizer.state_dict()['state'].items():
            for key, value in state.items():
                torch.testing.assert_close(value, saved[index][key])
        new_poptorch_model(input, target)
        self.assertEqual(float(optimizer.state_dict()['state'][0]["step"]), 2.0)


@unittest.skipIf(torch is None, SKIP_REASON)
class PrecompilationListings(PrivatePool, unittest.TestCase):
    """4.27 to 4.31 and 4.33 to 4.35 in the order of PopTorch's precompilation.py, which writes its
    files in the working directory: here a scratch one."""

    def setUp(self):
        super().setUp()
        self.cwd = os.getcwd()
        os.chdir(self.tmp)
        torch.manual_seed(0)

    def tearDown(self):
        os.chdir(self.cwd)
        super().tearDown()

    def test_listings_4_27_to_4_31(self):
        # What precompilation.py defines before the listing.
        ipu_target_version = poptorch.ipuHardwareVersion()
        filename = "training.poptorch"
        # Listing 4.27 as written.
        model = ExampleModelWithLoss()

        opts = poptorch.Options()
        # You don't need a real IPU to compile the executable.
        opts.useOfflineIpuTarget(ipu_target_version)  # line 23, lost in the text

        # Wrap the model in our PopTorch annotation wrapper.
        poptorch_model = poptorch.trainingModel(model, opts)

        # Some dummy inputs.
        input = torch.randn(10)
        target = torch.randn(10)

        poptorch_model.compileAndExport(filename, input, target)
        # Compiled offline: no IPU taken, nothing run.
        self.assertTrue(poptorch_model.isCompiled())
        self.assertFalse(poptorch_model.isAttachedToDevice())
        with self.assertRaisesRegex(RuntimeError, "ConnectionType.Never"):
            poptorch_model(input, target)
        expected = _sgd_twin_steps(model, (input, target), 1)
        poptorch_model.destroy()

        # Listing 4.28 as written.
        poptorch_model = poptorch.load(filename)

        # That's all: your model is ready to be used.
        poptorch_model(input, target)  # Run on IPU
        for name, value in expected.items():  # one step of PopTorch's default SGD(lr=0.01)
            torch.testing.assert_close(poptorch_model.model.state_dict()[name], value,
                                       rtol=1e-5, atol=1e-6)
        poptorch_model.destroy()

        # Listing 4.29 as written.
        def setIpuDevice(opts):
            opts.useIpuId(1)  # always use IPU 1

        poptorch_model = poptorch.load(filename, edit_opts_fn=setIpuDevice)
        poptorch_model(input, target)  # Run on IPU 1
        self.assertEqual(poptorch_model._device.id, 1)

        # Listing 4.30 as written.
        poptorch_model.compileAndExport(filename, input, target, export_model=False)
        poptorch_model.destroy()
        with self.assertRaisesRegex(ValueError, "export_model=False.*loadExecutable"):
            poptorch.load(filename)

        # Listing 4.31 as written.
        model = ExampleModelWithLoss()

        opts = poptorch.Options()

        # Wrap the model in our PopTorch annotation wrapper.
        poptorch_model = poptorch.trainingModel(model, opts)
        poptorch_model.loadExecutable(filename)  # line 7, lost in the text

        # Some dummy inputs.
        input = torch.randn(10)
        target = torch.randn(10)

        expected = _sgd_twin_steps(model, (input, target), 1)
        poptorch_model(input, target)  # Run on IPU
        # The device started from this module's weights, not the file's (docs/poptorch.md).
        for name, value in expected.items():
            torch.testing.assert_close(model.state_dict()[name], value, rtol=1e-5, atol=1e-6)
        poptorch_model.destroy()

    def export_4_33(self):
        # Listing 4.33 as written.
        model = ExampleModelWithLoss()

        opts = poptorch.Options()

        # Some dummy inputs.
        input = torch.randn(10)
        target = torch.randn(10)

        # Wrap the model in our PopTorch annotation wrapper.
        training_model = poptorch.trainingModel(model, opts)
        training_model.compileAndExport("training.poptorch", input, target)
        model.eval()  # line 12, lost in the text
        validation_model = poptorch.inferenceModel(model, opts)
        validation_model.compileAndExport("validation.poptorch", input)
        training_model.destroy()
        validation_model.destroy()
        return input, target

    def test_listings_4_33_and_4_34_explicit_copies(self):
        input, target = self.export_4_33()
        epochs = range(2)  # as precompilation.py; its run_* do nothing, ours train and validate
        predictions = []

        def run_training(model):
            model(input, target)

        def run_validation(model):
            predictions.append(model(input))

        # Listing 4.34 as written.
        training_model = poptorch.load("training.poptorch")
        validation_model = poptorch.load("validation.poptorch")

        for epoch in epochs:
            print("Epoch ", epoch)
            run_training(training_model)
            # Need to explicitly copy weights between the two models
            # because they're not connected anymore.
            training_model.copyWeightsToHost()
            validation_model.copyWeightsToDevice()
            run_validation(validation_model)
        # What the copies do: each wrapper to or from its own module. The two loaded models hold
        # separate modules (each file pickles its own, in PopTorch too), so the copies do not
        # carry the training into the validation model: it validates the exported weights. The
        # listing needs validation_model.model.load_state_dict(training_model.model.state_dict())
        # between the copies for that (docs/poptorch.md, "Listings").
        self.assertIsNot(training_model.model, validation_model.model)
        exported = copy.deepcopy(validation_model.model).eval()
        trained = copy.deepcopy(training_model.model).eval()
        with torch.no_grad():
            torch.testing.assert_close(predictions[0], exported(input), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(predictions[1], exported(input), rtol=1e-5, atol=1e-6)
            self.assertFalse(torch.allclose(trained(input), exported(input)))
        # With that line added, the validation sees the training.
        validation_model.model.load_state_dict(training_model.model.state_dict())
        validation_model.copyWeightsToDevice()
        with torch.no_grad():
            torch.testing.assert_close(validation_model(input), trained(input), rtol=1e-5,
                                       atol=1e-6)

    def test_listings_4_33_and_4_35_reconnected(self):
        input, target = self.export_4_33()
        epochs = range(2)
        predictions = []

        def run_training(model):
            model(input, target)

        def run_validation(model):
            predictions.append(model(input))

        # Listing 4.35 as written.
        training_model = poptorch.load("training.poptorch")
        # Create a validation python model based on the training model
        validation_model = poptorch.inferenceModel(training_model)
        validation_model.model.eval()  # line 4, lost in the text
        # Load the executable for that model:
        validation_model.loadExecutable("validation.poptorch")  # line 6, lost in the text

        for epoch in epochs:
            print("Epoch ", epoch)
            run_training(training_model)
            # Nothing to do: training_model and validation_model are now connected
            # and PopTorch will implicitly keep the weights in sync between them.
            run_validation(validation_model)
        # Connected: one module, and each validation saw the training before it with no copy.
        self.assertIs(training_model.model, validation_model.model)
        self.assertEqual(len(predictions), 2)
        reference = ExampleModelWithLoss()
        reference.load_state_dict(training_model.model.state_dict())
        reference.eval()
        with torch.no_grad():
            torch.testing.assert_close(predictions[-1], reference(input), rtol=1e-5, atol=1e-6)
        self.assertFalse(torch.equal(predictions[0], predictions[1]))
        training_model.destroy()
        validation_model.destroy()


class ListingTable(unittest.TestCase):
    """docs/poptorch.md's "Listings" table names every listing of the chapter, and each test it
    names exists."""

    def test_the_table_names_every_listing_and_real_tests(self):
        import ast
        import re
        doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "poptorch.md")
        with open(doc) as f:
            text = f.read()
        table = text[text.index("| Listing | Test, or why it is not run |"):]
        table = table[:table.index("\n\n")]
        covered = set()
        for first, last in re.findall(r"\b4\.(\d+)(?: (?:to|and|with) 4\.(\d+))?", table):
            covered.update(range(int(first), int(last or first) + 1))
        self.assertTrue(set(range(1, 36)) <= covered, sorted(set(range(1, 36)) - covered))
        names = [n for n in re.findall(r"`(test_torch_\w+)((?:\.\w+)*)`", table)
                 if n[1] != ".py"]  # a file named as the home of a rule, not a test
        self.assertGreater(len(names), 20)
        here = os.path.dirname(os.path.abspath(__file__))
        for module_name, path in names:  # read, not imported: some need libraries built
            with open(os.path.join(here, module_name + ".py")) as f:
                tree = ast.parse(f.read())
            scope = tree.body
            for part in path.split(".")[1:]:
                found = [n for n in scope if isinstance(n, (ast.ClassDef, ast.FunctionDef))
                         and n.name == part]
                self.assertTrue(found, "%s%s" % (module_name, path))
                scope = found[0].body

if __name__ == "__main__":
    unittest.main()
