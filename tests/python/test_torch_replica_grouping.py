"""PopTorch's replica grouping in xtrain.torch (docs/poptorch.md, "Replica grouping"):
``wrapped.W.replicaGrouping(...)`` and ``Options.inputReplicaGrouping(...)``. Listing 4.14 of the
chapter (a weight split 4 ways over orthogonal groups of 8 replicas, the input 2 ways over
consecutive ones) trains, as PopTorch's own test of it requires, to the weights of the whole
problem trained on the CPU; so do its variants (orthogonal inputs, momentum, Adam, with the
optimizer's state), an exported and loaded model, and grouped inputs alone. Bad values are
refused naming what is wrong."""
import os
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import numpy
    import xtrain.torch as poptorch

    # Listing 4.14's module, as written.
    class ModelWithLoss(torch.nn.Module):
        def __init__(self, W_init):
            super().__init__()
            self.W = torch.nn.Parameter(W_init)

        def forward(self, X):
            Z = X @ self.W
            return Z, poptorch.identity_loss(Z**2, reduction="mean")


def listing_4_14(make_optimizer=None, input_group=None, weight_group=None, export_to=None,
                 retrieval=None):
    """Listing 4.14 as written but for the import, with the lines the chapter's text lost (34-35,
    inputReplicaGrouping) filled in as PopTorch's source of the listing has them. The arguments
    select the variants PopTorch's test of it runs, another optimizer, and an export and load
    before training. Returns the losses, the final W as the whole problem's [40, 56], the
    optimizer and the wrapper (alive, so that the optimizer's state_dict reads the device)."""
    # Split the weight tensor into 4, and the input data tensor into 2.
    tensor_shards = 4
    data_shards = 2

    # Set up the problem
    random = numpy.random.RandomState(seed=100)
    prob_X = random.normal(size=(24, 40)).astype(numpy.float32)
    prob_W_init = random.normal(size=(40, 56)).astype(
        numpy.float32) * (5 * 8)**-0.5
    prob_steps = 4

    X = torch.tensor(prob_X)

    # Run on 8 IPUs
    W_init = torch.tensor(
        prob_W_init.reshape(prob_W_init.shape[0], tensor_shards,
                            prob_W_init.shape[1] // tensor_shards).transpose(
                                1, 0, 2)).contiguous()
    m = ModelWithLoss(W_init)
    optim = torch.optim.SGD(m.parameters(), lr=0.01)
    if make_optimizer is not None:
        optim = make_optimizer(m.parameters())

    pt_opts = poptorch.Options()
    pt_opts.replicationFactor(data_shards * tensor_shards)
    pt_opts.inputReplicaGrouping(tensor_shards,
                                 input_group or poptorch.enums.CommGroupType.Consecutive)

    pt_m = poptorch.trainingModel(m, optimizer=optim, options=pt_opts)
    pt_m.W.replicaGrouping(weight_group or poptorch.enums.CommGroupType.Orthogonal, data_shards,
                           retrieval or poptorch.enums.VariableRetrievalMode.OnePerGroup)
    pt_losses = []
    if data_shards > 1:
        X = X.reshape(data_shards, X.shape[0] // data_shards, *X.shape[1:])
    if export_to is not None:
        pt_m.compileAndExport(export_to, X)
        pt_m.destroy()  # its 8 IPUs, for the loaded model
        pt_m = poptorch.load(export_to)
        m, optim = pt_m.model, pt_m._optimizer
    for _ in range(prob_steps):
        _, loss = pt_m(X)
        # We divide by the number of replicas because the mean is being
        # taken only over a part of the tensor on each replica, so we need to
        # divide by the number of replicas to get the correct mean.
        pt_losses.append(torch.sum(loss.detach()) / (data_shards * tensor_shards))
    pt_losses = numpy.array(pt_losses)
    pt_W_final = m.W.detach().numpy().transpose(1, 0, 2) \
                  .reshape(prob_W_init.shape)
    return pt_losses, pt_W_final, optim, pt_m


def whole_problem(make_optimizer=None, steps=4):
    """The listing's problem trained on the CPU, unsplit (PopTorch's test's reference)."""
    random = numpy.random.RandomState(seed=100)
    X = torch.tensor(random.normal(size=(24, 40)).astype(numpy.float32))
    W = torch.nn.Parameter(torch.tensor(
        random.normal(size=(40, 56)).astype(numpy.float32) * (5 * 8)**-0.5))
    optim = (make_optimizer or (lambda p: torch.optim.SGD(p, lr=0.01)))([W])
    losses = []
    for _ in range(steps):
        optim.zero_grad()
        loss = torch.mean((X @ W)**2)
        loss.backward()
        optim.step()
        losses.append(float(loss))
    return numpy.array(losses), W.detach().numpy(), optim, W


def momentum(p):
    return torch.optim.SGD(p, lr=0.01, momentum=0.9)


def adam(p):
    return torch.optim.Adam(p, lr=0.01)


@unittest.skipIf(torch is None, SKIP_REASON)
class GroupedWeights(PrivatePool, unittest.TestCase):

    def assert_whole_problem(self, make_optimizer=None, **variant):
        losses, w, optim, wrapped = listing_4_14(make_optimizer, **variant)
        cpu_losses, cpu_w, cpu_optim, cpu_param = whole_problem(make_optimizer)
        # PopTorch's test of the listing: atol 1e-6 on both (Adam's steps amplify rounding).
        atol = 1e-6 if make_optimizer is not adam else 1e-5
        numpy.testing.assert_allclose(losses, cpu_losses, atol=atol)
        numpy.testing.assert_allclose(w, cpu_w, atol=atol)
        self.assertFalse(numpy.allclose(w, whole_problem(make_optimizer, steps=0)[1]))
        return optim, wrapped, cpu_optim, cpu_param

    def test_listing_4_14_trains_as_the_whole_problem(self):
        self.assert_whole_problem()

    def test_all_replicas_retrieval(self):
        # The module's W holds one value per group, as with OnePerGroup (the replicas of a group
        # hold the same value).
        _, wrapped, _, _ = self.assert_whole_problem(
            retrieval=poptorch.enums.VariableRetrievalMode.AllReplicas)
        self.assertEqual(tuple(wrapped.model.W.shape), (4, 40, 14))

    def test_orthogonal_inputs_and_consecutive_weights(self):
        self.assert_whole_problem(input_group=poptorch.enums.CommGroupType.Orthogonal,
                                  weight_group=poptorch.enums.CommGroupType.Consecutive)

    def test_optimizer_state_is_grouped_like_the_weight(self):
        for make in (momentum, adam):
            with self.subTest(make.__name__):
                optim, wrapped, cpu_optim, _ = self.assert_whole_problem(make)
                state = optim.state_dict()["state"][0]
                reference = cpu_optim.state_dict()["state"][0]
                for key, value in reference.items():
                    if key == "step":
                        self.assertEqual(float(state[key]), float(value))
                        continue
                    ours = state[key].numpy().transpose(1, 0, 2).reshape(value.shape)
                    numpy.testing.assert_allclose(ours, value.numpy(), atol=1e-6, rtol=1e-4,
                                                  err_msg=key)
                wrapped.destroy()

    def test_exported_and_loaded(self):
        path = os.path.join(self.tmp, "grouped.xtrain")
        losses, w, _, _ = listing_4_14(export_to=path)
        cpu_losses, cpu_w, _, _ = whole_problem()
        numpy.testing.assert_allclose(losses, cpu_losses, atol=1e-6)
        numpy.testing.assert_allclose(w, cpu_w, atol=1e-6)

    def test_no_grouping_is_one_value_per_replica(self):
        # PopTorch's test_per_replica_variables_no_grouping: NoGrouping (shards ignored, 0) over 4
        # replicas with AdamW; each replica trains its own row on its own micro-batch.
        torch.manual_seed(0)
        model = ModelWithLoss(torch.randn(4, 6))
        reference = [torch.nn.Parameter(model.W.detach()[r].clone()) for r in range(4)]
        options = poptorch.Options()
        options.replication_factor = 4
        training_model = poptorch.trainingModel(
            model, options, optimizer=torch.optim.AdamW(model.parameters(), 0.1))
        training_model.W.replicaGrouping(poptorch.CommGroupType.NoGrouping, 0,
                                         poptorch.VariableRetrievalMode.OnePerGroup)
        x = torch.randn(4, 6)
        training_model(x)
        for r in range(4):  # replica r: its row, its micro-batch, its gradient / 4 (Mean)
            optim = torch.optim.AdamW([reference[r]], 0.1)
            z = x[r:r + 1] @ reference[r]
            (torch.mean(z**2) / 4).backward()
            optim.step()
            torch.testing.assert_close(model.W[r], reference[r].detach(), rtol=1e-5, atol=1e-6)
        training_model.destroy()

    def test_bad_groupings(self):
        types, modes = poptorch.enums.CommGroupType, poptorch.enums.VariableRetrievalMode
        opts = poptorch.Options().replicationFactor(4)
        wrapped = poptorch.trainingModel(ModelWithLoss(torch.zeros(2, 3, 5)), opts)
        cases = [
            ((types.Consecutive, 3, modes.OnePerGroup), ValueError,
             r"W\.replicaGrouping\(CommGroupType\.Consecutive, 3\): groups of 3 replicas do not "
             r"divide the 4 replicas"),
            ((types.Orthogonal, 1, modes.OnePerGroup), ValueError,
             r"shape \(2, 3, 5\); with 4 groups of replicas its first dimension must be 4"),
            ((types.Consecutive, 2, modes.AllReduceReplicas), NotImplementedError,
             r"PopART does not support it, nor does xtrain"),
            ((types.Consecutive, 0, modes.OnePerGroup), ValueError,
             r"shards .* >= 1 for CommGroupType\.Consecutive"),
            (("Consecutive", 2, modes.OnePerGroup), TypeError, r"expected a .*CommGroupType"),
        ]
        for args, error, pattern in cases:
            with self.subTest(args), self.assertRaisesRegex(error, pattern):
                wrapped.W.replicaGrouping(*args)
        wrapped.W.replicaGrouping(types.Consecutive, 2, modes.OnePerGroup)
        self.assertEqual(tuple(wrapped.W.shape), (2, 3, 5))  # the parameter's own attributes
        wrapped(torch.randn(4 * 6, 3))
        with self.assertRaisesRegex(RuntimeError, r"already compiled"):
            wrapped.W.replicaGrouping(types.Consecutive, 2, modes.OnePerGroup)


@unittest.skipIf(torch is None, SKIP_REASON)
class GroupedInputs(PrivatePool, unittest.TestCase):

    def test_replicas_of_a_group_get_the_same_micro_batches(self):
        # 4 replicas in 2 consecutive input groups, no grouped weight: replicas 0, 1 see the first
        # half of each call, 2, 3 the second; PyTorch's step on the same four micro-batches.
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        opts = poptorch.Options().replicationFactor(4)
        opts.inputReplicaGrouping(2, poptorch.enums.CommGroupType.Consecutive)
        opts.outputMode(poptorch.OutputMode.All)
        wrapped = poptorch.trainingModel(
            model, opts, optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        for x, y in tt.mlp_data(3, 2 * 5):
            out, loss = wrapped(x, y)
            expanded = (torch.cat([x[:5], x[:5], x[5:], x[5:]]),
                        torch.cat([y[:5], y[:5], y[5:], y[5:]]))
            ref_losses = tt.pytorch_step(reference, ref_opt, *expanded, replicas=4)
            self.assertEqual(tuple(out.shape), (4 * 5, 3))  # outputs: one per replica
            torch.testing.assert_close(loss, torch.tensor(ref_losses), rtol=1e-4, atol=1e-6)
            for k, v in reference.state_dict().items():
                tt.assert_close_relative(model.state_dict()[k], v, k)

    def test_orthogonal_groups_and_batch_size(self):
        opts = poptorch.Options().replicationFactor(4).deviceIterations(2)
        opts.inputReplicaGrouping(2, poptorch.enums.CommGroupType.Orthogonal)
        self.assertEqual(opts.batches_per_call(False), 2 * 2)
        wrapped = poptorch.inferenceModel(tt.make(tt.Mlp), opts)
        x = torch.randn(2 * 2 * 3, 6)
        out = wrapped(x)
        # Orthogonal groups {0, 2} and {1, 3}: replica r reads group r % 2 of each iteration.
        parts = x.reshape(2, 2, 3, 6)[:, [0, 1, 0, 1]].reshape(-1, 6)
        with torch.no_grad():
            torch.testing.assert_close(out, wrapped.model.eval()(parts), rtol=1e-5, atol=1e-6)
        with self.assertRaisesRegex(ValueError, r"expected 12 \(4 micro-batches of 3\)"):
            wrapped(torch.randn(2 * 4 * 3, 6))

    def test_bad_input_groupings(self):
        types = poptorch.enums.CommGroupType
        with self.assertRaisesRegex(ValueError, r"input_group_type cannot be All"):
            poptorch.Options().inputReplicaGrouping(2, types.All)
        with self.assertRaisesRegex(TypeError, r"expected a poptorch\.enums\.CommGroupType"):
            poptorch.Options().inputReplicaGrouping(2, "Consecutive")
        opts = poptorch.Options().replicationFactor(4).inputReplicaGrouping(3, types.Consecutive)
        with self.assertRaisesRegex(ValueError, r"input groups of 3 replicas do not divide "
                                                r"replicationFactor \(4\)"):
            poptorch.trainingModel(tt.make(tt.Mlp), opts)(*tt.mlp_data(1, 12)[0])
        opts = poptorch.Options().inputReplicaGrouping(4, types.NoGrouping)
        self.assertEqual(opts.input_group_size, 1)


if __name__ == "__main__":
    unittest.main()
