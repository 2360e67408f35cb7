"""xtrain.torch's trainingModel and inferenceModel against PyTorch's own training of the same module
(docs/poptorch.md): an MLP, a CNN with BatchNorm, an LSTM and a transformer encoder layer, each with
1 and 2 replicas and gradient accumulation, SGD with momentum and Adam; then inference with the
trained weights."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch

RTOL = 1e-4


@unittest.skipIf(torch is None, SKIP_REASON)
class TrainingMatchesPyTorch(PrivatePool, unittest.TestCase):

    def assert_state_close(self, ours, theirs, what):
        a, b = ours.state_dict(), theirs.state_dict()
        self.assertEqual(sorted(a), sorted(b))
        for k in a:
            if a[k].is_floating_point():
                torch.testing.assert_close(a[k], b[k], rtol=RTOL, atol=1e-6,
                                           msg=lambda m: "%s, %s: %s" % (what, k, m))
            else:
                self.assertTrue(torch.equal(a[k], b[k]), "%s, %s: %s vs %s" % (what, k, a[k], b[k]))

    def train_both(self, model_class, data, make_optimizer, replicas=1, accumulation=1):
        model = tt.make(model_class)
        reference = tt.twin(model)
        ref_opt = make_optimizer(reference)
        opts = poptorch.Options().replicationFactor(replicas)
        opts.Training.gradientAccumulation(accumulation)
        opts.outputMode(poptorch.OutputMode.All)
        wrapped = poptorch.trainingModel(model, opts, optimizer=make_optimizer(model))
        for step, (x, y) in enumerate(data):
            out, loss = wrapped(x, y)
            ref_losses = tt.pytorch_step(reference, ref_opt, x, y, replicas, accumulation)
            self.assertEqual(tuple(out.shape), (x.shape[0], out.shape[1]))
            self.assertEqual(tuple(loss.shape), (len(ref_losses),) if len(ref_losses) > 1 else ())
            torch.testing.assert_close(loss.reshape(-1), torch.tensor(ref_losses), rtol=RTOL,
                                       atol=1e-6, msg=lambda m: "step %d losses: %s" % (step, m))
            # The module holds the trained values right after each call.
            self.assert_state_close(model, reference, "after step %d" % step)
        initial = tt.make(model_class).state_dict()
        for k, v in model.named_parameters():
            self.assertFalse(torch.equal(v, initial[k]), "%s was not trained" % k)
        return wrapped, model, reference

    def sgd(self, m):
        return torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)

    def adam(self, m):
        return torch.optim.Adam(m.parameters(), lr=0.01, betas=(0.9, 0.99), weight_decay=0.01)

    def test_mlp_sgd_one_replica(self):
        self.train_both(tt.Mlp, tt.mlp_data(6, 8), self.sgd)

    def test_mlp_adam_one_replica(self):
        self.train_both(tt.Mlp, tt.mlp_data(6, 8), self.adam)

    def test_mlp_two_replicas(self):
        self.train_both(tt.Mlp, tt.mlp_data(5, 8), self.sgd, replicas=2)

    def test_mlp_gradient_accumulation(self):
        self.train_both(tt.Mlp, tt.mlp_data(5, 12), self.adam, accumulation=3)

    def test_cnn_batchnorm_one_replica(self):
        self.train_both(tt.SmallCnn, tt.cnn_data(5, 4), self.sgd)

    def test_cnn_batchnorm_two_replicas(self):
        self.train_both(tt.SmallCnn, tt.cnn_data(4, 8), self.adam, replicas=2)

    def test_cnn_batchnorm_gradient_accumulation(self):
        self.train_both(tt.SmallCnn, tt.cnn_data(4, 8), self.adam, accumulation=2)

    def test_cnn_batchnorm_accumulation_and_replicas(self):
        self.train_both(tt.SmallCnn, tt.cnn_data(4, 8), self.sgd, replicas=2, accumulation=2)

    def test_lstm_adam(self):
        self.train_both(tt.LstmClassifier, tt.sequence_data(4, 4), self.adam)

    def test_lstm_two_replicas(self):
        self.train_both(tt.LstmClassifier, tt.sequence_data(3, 8), self.sgd, replicas=2)

    def test_lstm_gradient_accumulation(self):
        self.train_both(tt.LstmClassifier, tt.sequence_data(3, 8), self.adam, accumulation=2)

    def test_transformer_layer_one_replica(self):
        self.train_both(tt.TinyTransformer, tt.token_data(4, 4), self.sgd)

    def test_transformer_layer_two_replicas(self):
        self.train_both(tt.TinyTransformer, tt.token_data(3, 8), self.sgd, replicas=2)

    def test_transformer_layer_with_accumulation(self):
        # SGD: under Adam the attention's key bias, whose gradient is zero but for rounding noise,
        # takes steps of the size of the learning rate in either direction (docs/poptorch.md).
        self.train_both(tt.TinyTransformer, tt.token_data(4, 8), self.sgd, accumulation=2)

    def test_inference_after_training_matches_eval(self):
        wrapped, model, reference = self.train_both(tt.SmallCnn, tt.cnn_data(4, 4), self.sgd)
        inference = poptorch.inferenceModel(model)
        x, _ = tt.cnn_data(1, 4, seed=7)[0]
        reference.eval()
        with torch.no_grad():
            expected = reference(x)
        torch.testing.assert_close(inference(x), expected, rtol=RTOL, atol=1e-6)
        self.assertTrue(model.training, "wrapping for inference must not change the module's mode")
        # Training goes on; the inference model sees the new weights without an explicit copy.
        for x_t, y_t in tt.cnn_data(2, 4, seed=3):
            wrapped(x_t, y_t)
        model_eval = tt.twin(model).eval()
        with torch.no_grad():
            expected = model_eval(x)
        torch.testing.assert_close(inference(x), expected, rtol=RTOL, atol=1e-6)

    def test_device_iterations_run_several_steps(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        ref_opt = self.sgd(reference)
        opts = poptorch.Options().deviceIterations(3)
        wrapped = poptorch.trainingModel(model, opts, optimizer=self.sgd(model))
        for x, y in tt.mlp_data(2, 12):
            out, loss = wrapped(x, y)  # Final: the last micro-batch's outputs
            self.assertEqual(tuple(out.shape), (4, 3))
            self.assertEqual(tuple(loss.shape), ())
            for i in range(3):
                last = tt.pytorch_step(reference, ref_opt, x[4 * i:4 * (i + 1)], y[4 * i:4 * (i + 1)])
            self.assertAlmostEqual(float(loss), last[0], delta=RTOL * abs(last[0]))
        self.assert_state_close(model, reference, "after 2 calls of 3 device iterations")


if __name__ == "__main__":
    unittest.main()
