"""xtrain.torch under `xrun -n 2 --num-replicas 4` (docs/poptorch.md, "xrun"): an MLP trained
through the DataLoader's per-instance share, then, in one launch, a CNN with BatchNorm, an LSTM, a
transformer encoder layer, ResNet-18, MobileNetV3-small and SqueezeNet 1.1, each trained across the
two instances (4 replicas in all for the small models, 2 for torchvision's). Each instance's
losses are its replicas' and its weights PyTorch's for the job's replicas; BatchNorm's running
statistics are those of the instance's first replica (global replica 2 of 4 on instance 1), since
each replica keeps the statistics of its own micro-batches."""
import tempfile
import unittest

from python_testing import HERE, results_under_xrun
from torch_testing import SKIP_REASON, torch, torchvision
import torch_testing as tt

TRAIN_SCRIPT = """
import json, sys
sys.path.insert(0, %r)
import torch
import torch_testing as tt
import xtrain.torch as poptorch
from xtrain import dist

model = tt.make(tt.Mlp)
opts = poptorch.Options()  # under xrun: this instance's replicas
data = torch.utils.data.TensorDataset(*[torch.cat(t) for t in zip(*tt.mlp_data(3, 16))])
loader = poptorch.DataLoader(opts, data, batch_size=4)
wrapped = poptorch.trainingModel(
    model, opts, optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
losses = [wrapped(x, y)[1].tolist() for x, y in loader]
print("RESULT " + json.dumps({
    "instance": dist.getInstanceIndex(), "replicas": opts.replication_factor,
    "batches": len(loader), "losses": losses,
    "state": {k: v.tolist() for k, v in model.state_dict().items()}}), flush=True)
""" % HERE

# Each model: how to make it, its data (global batches of 4 replicas), its optimizer.
MODELS_SCRIPT = """
import json, sys
sys.path.insert(0, %r)
import torch
import torch_testing as tt
import xtrain.torch as poptorch
from xtrain import dist

instance = dist.getInstanceIndex()
replicas = dist.getNumTotalReplicas()
results = {"instance": instance}
for name in %r:
    model, data, make_optimizer = tt.xrun_case(name, replicas)
    opts = poptorch.Options()
    wrapped = poptorch.trainingModel(model, opts, optimizer=make_optimizer(model))
    losses = []
    for x, y in data:  # this instance's half of each global batch: its replicas'
        half = x.shape[0] // 2
        mine = slice(instance * half, (instance + 1) * half)
        losses.append(wrapped(x[mine], y[mine])[1].tolist())
    # The state goes to a file: ResNet-18's would not fit on one line of output.
    state_file = "%%s/%%s-%%d.pt" %% (%r, name, instance)
    torch.save(model.state_dict(), state_file)
    results[name] = {"losses": losses, "state_file": state_file}
print("RESULT " + json.dumps(results), flush=True)
"""

SMALL_MODELS = ("cnn", "lstm", "transformer")
VISION_MODELS = ("resnet18", "mobilenet_v3_small", "squeezenet1_1")


@unittest.skipIf(torch is None, SKIP_REASON)
class TrainingUnderXrun(unittest.TestCase):

    def test_two_instances_of_two_replicas(self):
        results = results_under_xrun(self, TRAIN_SCRIPT, timeout=200)
        self.assertEqual([(d["instance"], d["replicas"], d["batches"]) for d in results],
                         [(0, 2, 3), (1, 2, 3)])
        # PyTorch on the 3 global batches of 4 replicas x 4 samples, in the same order.
        reference = tt.make(tt.Mlp)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        losses = [tt.pytorch_step(reference, ref_opt, x, y, replicas=4)
                  for x, y in tt.mlp_data(3, 16)]
        for d in results:
            mine = [losses[b][2 * d["instance"]:2 * d["instance"] + 2] for b in range(3)]
            torch.testing.assert_close(torch.tensor(d["losses"]), torch.tensor(mine), rtol=1e-5,
                                       atol=1e-6)
            for k, v in reference.state_dict().items():
                torch.testing.assert_close(torch.tensor(d["state"][k]), v, rtol=1e-4, atol=1e-6,
                                           msg=lambda m: "instance %d, %s: %s" % (d["instance"], k, m))

    def check_models(self, names, results, replicas):
        local = replicas // 2
        for name in names:
            model, data, make_optimizer = tt.xrun_case(name, replicas)
            for d in results:
                i = d["instance"]
                with self.subTest(model=name, instance=i):
                    # PyTorch with the job's replicas, keeping the statistics of the instance's
                    # first.
                    losses, state, noise = tt.vision_reference(
                        model, data, replicas, kept_replica=local * i,
                        make_optimizer=make_optimizer)
                    mine = [step[local * i:local * (i + 1)] for step in losses]
                    # A 0-d loss with one replica per instance, one per replica otherwise.
                    ours = torch.tensor(d[name]["losses"]).reshape(len(losses), local)
                    torch.testing.assert_close(ours,
                                               torch.tensor(mine), rtol=1e-4, atol=0.0)
                    ours = torch.load(d[name]["state_file"])
                    tt.assert_vision_state_close(self, ours, state, noise, "%s, " % name)

    def train_under_xrun(self, names, replicas, timeout):
        with tempfile.TemporaryDirectory(prefix="xtrain-test-torch-xrun-") as tmp:
            results = results_under_xrun(self, MODELS_SCRIPT % (HERE, names, tmp), timeout,
                                         replicas=replicas)
            self.check_models(names, results, replicas)

    def test_batchnorm_lstm_and_transformer(self):
        self.train_under_xrun(SMALL_MODELS, replicas=4, timeout=200)

    @unittest.skipIf(torchvision is None, "torchvision is not importable")
    def test_torchvision_models(self):
        # One replica per instance (the models' compute is what costs here); with 4 replicas
        # these images put a decision of ResNet-18's stem within rounding of its threshold
        # (test_torch_vision.py, test_resnet18_four_replicas).
        self.train_under_xrun(VISION_MODELS, replicas=2, timeout=400)


if __name__ == "__main__":
    unittest.main()
