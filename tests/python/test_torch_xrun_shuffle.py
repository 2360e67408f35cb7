"""xtrain.torch's DataLoader(shuffle=True) under `xrun -n 2 --num-replicas 4` (docs/poptorch.md,
"xrun"): every instance draws the same permutation of the whole dataset each epoch and takes its
own share, so the two instances together see each sample once per epoch, in an order that changes
between epochs."""
import os
import subprocess
import sys
import textwrap
import unittest

from python_testing import HERE, results_under_xrun
from torch_testing import SKIP_REASON, torch

if torch is not None:
    import xtrain.torch as poptorch

SAMPLES, EPOCHS = 32, 3

SHUFFLE_SCRIPT = """
import json, sys
sys.path.insert(0, %r)
import torch
import xtrain.torch as poptorch
from xtrain import dist

data = torch.utils.data.TensorDataset(torch.arange(%d))
seeded = poptorch.Options().randomSeed(11)
loaders = {
    "seeded": poptorch.DataLoader(seeded, data, batch_size=2, shuffle=True),
    "job_seed": poptorch.DataLoader(poptorch.Options(), data, batch_size=2, shuffle=True),
    "rebatched": poptorch.DataLoader(seeded, data, batch_size=2, shuffle=True, num_workers=1,
                                     mode=poptorch.DataLoaderMode.AsyncRebatched,
                                     rebatched_worker_size=3),
    "in_order": poptorch.DataLoader(seeded, data, batch_size=2),
}
epochs = {name: [[b[0].tolist() for b in loader] for _ in range(%d)]
          for name, loader in loaders.items()}
loaders["rebatched"].terminate()
print("RESULT " + json.dumps({"instance": dist.getInstanceIndex(),
                              "lengths": {n: len(l) for n, l in loaders.items()},
                              "epochs": epochs}), flush=True)
""" % (HERE, SAMPLES, EPOCHS)


@unittest.skipIf(torch is None, SKIP_REASON)
class ShuffleUnderXrun(unittest.TestCase):

    def test_instances_share_one_permutation_per_epoch(self):
        results = results_under_xrun(self, SHUFFLE_SCRIPT, timeout=200)
        # 2 local replicas x batch 2 = 4 samples a call per instance; global batches of 8.
        for name in ("seeded", "job_seed", "rebatched", "in_order"):
            with self.subTest(loader=name):
                self.assertEqual([d["lengths"][name] for d in results], [4, 4])
                orders = []
                for epoch in range(EPOCHS):
                    shares = [d["epochs"][name][epoch] for d in results]
                    for share in shares:
                        self.assertEqual([len(b) for b in share], [4] * 4)
                    seen = [s for share in shares for batch in share for s in batch]
                    self.assertEqual(sorted(seen), list(range(SAMPLES)), "epoch %d" % epoch)
                    # Global batch k is instance 0's batch k, then instance 1's.
                    orders.append([s for k in range(4) for share in shares for s in share[k]])
                if name == "in_order":
                    self.assertEqual(orders, [list(range(SAMPLES))] * EPOCHS)
                else:
                    self.assertEqual(len(set(map(tuple, orders))), EPOCHS,
                                     "the order did not change between epochs")
                if name in ("seeded", "rebatched"):  # Options.randomSeed seeds the permutation
                    g = torch.Generator().manual_seed(11)
                    self.assertEqual(orders, [torch.randperm(SAMPLES, generator=g).tolist()
                                              for _ in range(EPOCHS)])
        seeded = [d["epochs"]["seeded"] for d in results]
        self.assertNotEqual([d["epochs"]["job_seed"] for d in results], seeded)

    def test_without_a_shared_seed_shuffling_is_refused(self):
        # The job id is read once per process (xtrain.dist): each case in a process of its own.
        code = textwrap.dedent("""
            import xtrain.torch as poptorch
            from xtrain.torch import _data
            try:
                print(_data._shared_seed(poptorch.Options()))
            except ValueError as e:
                print("refused:", e)
            print(_data._shared_seed(poptorch.Options().randomSeed(5)))
            """)

        def seeds(**env):
            clean = {k: v for k, v in os.environ.items() if not k.startswith("XTRAIN_")}
            r = subprocess.run([sys.executable, "-c", code], env=dict(clean, **env),
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.splitlines()

        alone = seeds()
        self.assertRegex(alone[0], "refused: .*needs a seed every instance shares.*randomSeed")
        self.assertEqual(alone[1], "5")
        xrun = {"XTRAIN_NUM_INSTANCES": "1", "XTRAIN_INSTANCE_INDEX": "0"}
        a = seeds(XTRAIN_JOB_ID="job-a", **xrun)[0]
        self.assertRegex(a, r"^\d+$")
        self.assertEqual(a, seeds(XTRAIN_JOB_ID="job-a", **xrun)[0])
        self.assertNotEqual(a, seeds(XTRAIN_JOB_ID="job-b", **xrun)[0])


if __name__ == "__main__":
    unittest.main()
