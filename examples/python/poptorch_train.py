"""A PyTorch training program run with xtrain's PopTorch front end: a PopTorch program with
`import xtrain.torch as poptorch` as its only change.

A small CNN with BatchNorm learns an MNIST-like task (8x8 "digits": ten class templates plus
noise) with Adam, through poptorch.DataLoader, 2 device iterations and gradient accumulation 2 a
call; then an inferenceModel of the same module measures the accuracy on held-out samples, with
the trained weights (no copy needed). Alone it trains one replica; under xrun each instance
trains its share of every global batch and the gradients are reduced across the instances, so
every instance ends with the same weights:

    PYTHONPATH=build/python python3 examples/python/poptorch_train.py
    build/bin/xrun -n 2 python3 examples/python/poptorch_train.py   # PYTHONPATH as above

Options: --epochs N (3), --micro-batch-size M (16), --lr R (0.01), --output FILE (the module's
state_dict, torch.save'd by instance 0; default poptorch_model.pt).
"""
import argparse
import hashlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import xtrain.torch as poptorch
from xtrain import dist

CLASSES = 10


class Digits(torch.utils.data.Dataset):
    """Ten fixed 8x8 templates; a sample is its class's template plus Gaussian noise."""

    def __init__(self, samples, seed):
        templates = torch.rand(CLASSES, 1, 8, 8, generator=torch.Generator().manual_seed(0))
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, CLASSES, (samples,), generator=g)
        self.images = templates[self.labels] + 0.3 * torch.randn(samples, 1, 8, 8, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, CLASSES)

    def forward(self, x, labels=None):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        out = self.fc(h.flatten(1))
        if self.training:
            return out, F.cross_entropy(out, labels)  # the loss last, as PopTorch wants
        return out


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--micro-batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--output", default="poptorch_model.pt")
    args = parser.parse_args()
    for name in ("epochs", "micro_batch_size"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1, got %d"
                         % (name.replace("_", "-"), getattr(args, name)))
    if not args.lr > 0:
        parser.error("--lr must be positive, got %r" % args.lr)
    return args


def main():
    args = parse_args()
    torch.manual_seed(0)  # the same initial weights in every instance
    model = Net()
    opts = poptorch.Options().deviceIterations(2)  # under xrun: the instance's replicas too
    opts.Training.gradientAccumulation(2)
    loader = poptorch.DataLoader(opts, Digits(2048, seed=1), batch_size=args.micro_batch_size,
                                 shuffle=True)
    training = poptorch.trainingModel(
        model, opts, optimizer=torch.optim.Adam(model.parameters(), lr=args.lr))
    first = last = None
    for epoch in range(args.epochs):
        losses = [float(training(x, y)[1].mean()) for x, y in loader]
        first = losses[0] if first is None else first
        last = sum(losses) / len(losses)
        print("instance %d epoch %d: mean loss %.4f"
              % (dist.getInstanceIndex(), epoch, last), flush=True)

    # Under xrun each instance has the IPUs of its replicas only: free them for the validation
    # (the trained weights are copied to the module first), as PopTorch programs do.
    training.detachFromDevice()
    # The same module in eval mode: BatchNorm's running statistics, the trained weights.
    validation = poptorch.inferenceModel(model, poptorch.Options().deviceIterations(1))
    held_out = Digits(512, seed=2)
    predictions = validation(held_out.images).argmax(1)
    accuracy = float((predictions == held_out.labels).float().mean())

    state = model.state_dict()  # the trained weights, already in the module
    digest = hashlib.sha256(b"".join(state[k].numpy().tobytes() for k in sorted(state)
                                     if k != "bn.running_mean" and k != "bn.running_var"))
    if dist.getInstanceIndex() == 0:
        torch.save(state, args.output)
    print("instance %d of %d: loss %.4f -> %.4f, accuracy %.3f, weights sha256 %s"
          % (dist.getInstanceIndex(), dist.getNumInstances(), first, last, accuracy,
             digest.hexdigest()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
