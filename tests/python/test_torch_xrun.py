"""xtrain.torch under `xrun -n 2 --num-replicas 4`: one model trained across two instances with
the DataLoader's per-instance share ends with PyTorch's weights for 4 replicas (docs/poptorch.md,
"xrun")."""
import unittest

from python_testing import HERE, results_under_xrun
from torch_testing import SKIP_REASON, torch
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


if __name__ == "__main__":
    unittest.main()
