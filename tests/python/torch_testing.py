"""Shared set-up of the xtrain.torch tests (not itself a test): the models, and PyTorch's own
training of the same module, which the wrapper must match.

`torch` is None when PyTorch is not importable; each test module then skips with SKIP_REASON.
"""
import copy

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # the tests skip, saying why
    torch = None

SKIP_REASON = "PyTorch (Debian's python3-torch) is not importable: xtrain.torch needs it"

if torch is not None:

    class Mlp(nn.Module):
        """Two linear layers; forward returns (logits, loss) in training, logits in eval."""

        def __init__(self, inputs=6, hidden=8, classes=3):
            super().__init__()
            self.fc1 = nn.Linear(inputs, hidden)
            self.fc2 = nn.Linear(hidden, classes)

        def forward(self, x, y=None):
            out = self.fc2(torch.tanh(self.fc1(x)))
            if self.training:
                return out, F.cross_entropy(out, y)
            return out

    class SmallCnn(nn.Module):
        """Conv, BatchNorm, ReLU, pooling, linear: BatchNorm's running statistics are buffers."""

        def __init__(self, classes=4):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4 * 3 * 3, classes)

        def forward(self, x, y=None):
            h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
            out = self.fc(h.flatten(1))
            if self.training:
                return out, F.cross_entropy(out, y)
            return out

    class LstmClassifier(nn.Module):
        """An LSTM over a sequence, classified from its last step."""

        def __init__(self, features=5, hidden=8, classes=3):
            super().__init__()
            self.lstm = nn.LSTM(features, hidden, batch_first=True)
            self.fc = nn.Linear(hidden, classes)

        def forward(self, x, y=None):
            h, _ = self.lstm(x)
            out = self.fc(h[:, -1])
            if self.training:
                return out, F.cross_entropy(out, y)
            return out

    class TinyTransformer(nn.Module):
        """An embedding, one transformer encoder layer (no dropout) and a mean-pooled classifier."""

        def __init__(self, vocabulary=20, width=16, classes=3):
            super().__init__()
            self.emb = nn.Embedding(vocabulary, width)
            self.enc = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0,
                                                  batch_first=True)
            self.fc = nn.Linear(width, classes)

        def forward(self, x, y=None):
            out = self.fc(self.enc(self.emb(x)).mean(1))
            if self.training:
                return out, F.cross_entropy(out, y)
            return out


def sequence_data(steps, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 6, 5, generator=g), torch.randint(0, 3, (batch,), generator=g))
            for _ in range(steps)]


def token_data(steps, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, 20, (batch, 7), generator=g),
             torch.randint(0, 3, (batch,), generator=g)) for _ in range(steps)]


def mlp_data(steps, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 6, generator=g), torch.randint(0, 3, (batch,), generator=g))
            for _ in range(steps)]


def cnn_data(steps, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 1, 6, 6, generator=g), torch.randint(0, 4, (batch,), generator=g))
            for _ in range(steps)]


def make(model_class, seed=0):
    torch.manual_seed(seed)
    return model_class()


def twin(model):
    """An independent copy of a module (the PyTorch side of a comparison)."""
    return copy.deepcopy(model)


def _buffers(model):
    return {k: v.detach().clone() for k, v in model.named_buffers()}


def _set_buffers(model, buffers):
    with torch.no_grad():
        for k, v in model.named_buffers():
            v.copy_(buffers[k])


def pytorch_step(model, optimizer, x, y, replicas=1, accumulation=1):
    """One optimizer step of PyTorch on a combined batch laid out as xtrain's [accumulation,
    replicas, micro-batch]: the gradient is the mean of the micro-batches' (PopTorch's Mean
    reduction). Each replica's BatchNorm statistics start from the same values and see only its
    micro-batches; the module keeps replica 0's (what the device returns). Returns the losses in
    the combined batch's order."""
    chunks = accumulation * replicas
    micro = x.shape[0] // chunks
    optimizer.zero_grad()
    start = _buffers(model)
    kept, losses = None, [None] * chunks
    for replica in range(replicas):
        _set_buffers(model, start)
        for a in range(accumulation):
            i = a * replicas + replica
            sl = slice(i * micro, (i + 1) * micro)
            _, loss = model(x[sl], y[sl])
            (loss / chunks).backward()
            losses[i] = loss.item()
        if replica == 0:
            kept = _buffers(model)
    _set_buffers(model, kept)
    optimizer.step()
    return losses
