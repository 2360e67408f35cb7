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
try:
    import torchvision
except ImportError:
    torchvision = None

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


def pytorch_step(model, optimizer, x, y, replicas=1, accumulation=1, kept_replica=0):
    """One optimizer step of PyTorch on a combined batch laid out as xtrain's [accumulation,
    replicas, micro-batch]: the gradient is the mean of the micro-batches' (PopTorch's Mean
    reduction). Each replica's BatchNorm statistics start from the same values and see only its
    micro-batches; the module keeps kept_replica's (what the device returns: replica 0 of the
    process, so under xrun the first replica of the instance). Returns the losses in the combined
    batch's order."""
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
        if replica == kept_replica:
            kept = _buffers(model)
    _set_buffers(model, kept)
    optimizer.step()
    return losses


# torchvision models (test_torch_vision.py, test_torch_xrun.py)

def assert_close_relative(actual, expected, name, noise=0.0):
    """Issue 31's criterion, 1e-4 relative, for a whole tensor: each element within 1e-4 of
    its value (rtol) or within 1e-4 of the tensor's largest magnitude (atol). A fixed atol
    fails on elements near zero, whose difference is rounding noise of the tensor's scale:
    the two sides sum convolutions in other orders (PyTorch's OpenBLAS or its own kernels,
    xtrain's kernels), and after three steps a conv1 weight element near zero differs by
    4.7e-6 in a tensor whose largest element is about 0.1.

    Some tensors are rounding noise as a whole: a BatchNorm bias's gradient is a sum over the
    batch and the map that nearly cancels, so after three steps the bias (about 3e-3) is
    1.6e-6 away in PyTorch's own float32 run from its float64 run, as in xtrain's. `noise` is
    that distance (PyTorch float32 from float64, for this tensor): xtrain may differ from
    PyTorch float32 by up to 3 times it (each side's own rounding, and a margin). The atol
    never goes below 1e-6, the float32 noise of weights of order 0.1 to 1."""
    scale = float(expected.abs().max()) if expected.numel() else 0.0
    atol = max(1e-6, 1e-4 * scale, 3 * noise)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=atol,
                               msg=lambda m: "%s (atol %.3g): %s" % (name, atol, m))



if torch is not None:

    class Apply(nn.Module):
        """forward(x) = (f(x * w), its sum): a function of the input after one parameter (the float16
        tests wrap the function under test in it)."""

        def __init__(self, function, features=8):
            super().__init__()
            self.function = function
            self.w = nn.Parameter(torch.linspace(0.5, 1.5, features))

        def forward(self, x):
            out = self.function(x * self.w)
            return out, out.sum()

    class WithLoss(nn.Module):
        """A torchvision classifier with the loss in forward, as trainingModel needs it."""

        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x, y=None):
            out = self.net(x)
            if self.training:
                return out, F.cross_entropy(out, y)
            return out


def make_vision(name):
    """torchvision.models.<name> for 10 classes with its loss, Dropout at p=0 (its masks come from
    xtrain's generator, not torch's)."""
    torch.manual_seed(0)
    model = WithLoss(getattr(torchvision.models, name)(num_classes=10))
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


def vision_data(steps, batch, seed=1):
    """64x64 images: at 32x32 the last BatchNorms see 1x1 maps (see test_torch_vision.py)."""
    g = torch.Generator().manual_seed(seed)
    data = []
    for _ in range(steps):
        x = torch.randn(batch, 3, 64, 64, generator=g)
        data.append((x, torch.randint(0, 10, (batch,), generator=g)))
    return data


def vision_sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def vision_reference(model, data, replicas=1, accumulation=1, kept_replica=0,
                     make_optimizer=vision_sgd):
    """PyTorch's training of a copy of model on data (pytorch_step), in float32 and float64.
    Returns the float32 losses of each step, its state and, for each floating-point tensor, the
    float32 run's distance from the float64 run (the `noise` of assert_close_relative)."""
    reference = twin(model)
    reference64 = twin(model).double()
    opt, opt64 = make_optimizer(reference), make_optimizer(reference64)
    losses = []
    for x, y in data:
        losses.append(pytorch_step(reference, opt, x, y, replicas, accumulation, kept_replica))
        x64 = x.double() if x.is_floating_point() else x  # token indices stay integers
        pytorch_step(reference64, opt64, x64, y, replicas, accumulation, kept_replica)
    state, exact = reference.state_dict(), reference64.state_dict()
    noise = {k: float((v.double() - exact[k]).abs().max())
             for k, v in state.items() if v.is_floating_point()}
    return losses, state, noise


def assert_vision_state_close(test, state, reference_state, noise, what=""):
    """Each tensor of state against PyTorch's at 1e-4 relative (assert_close_relative)."""
    test.assertEqual(sorted(state), sorted(reference_state))
    for k, v in state.items():
        if v.is_floating_point():
            assert_close_relative(v, reference_state[k], what + k, noise[k])
        else:
            test.assertTrue(torch.equal(v, reference_state[k]), what + k)


def xrun_case(name, replicas):
    """test_torch_xrun.py's models: (module, global batches, optimizer maker). The small ones
    (global batches for 4 replicas) are compared like the torchvision ones (vision_reference)."""
    small = {"cnn": (SmallCnn, cnn_data(3, 16)), "lstm": (LstmClassifier, sequence_data(3, 8)),
             "transformer": (TinyTransformer, token_data(3, 8))}
    if name in small:
        model_class, data = small[name]
        return make(model_class), data, lambda m: torch.optim.SGD(m.parameters(), lr=0.1,
                                                                  momentum=0.9)
    return make_vision(name), vision_data(2, 4 * replicas), vision_sgd
