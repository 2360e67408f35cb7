#!/usr/bin/python3
"""The real-sized models of issue 18, defined in PyTorch and exported by torch.onnx as a user would.

Run with Debian's PyTorch (python3-torch 1.13), python3-onnx and python3-h5py through /usr/bin/python3:

    /usr/bin/python3 bench/models/make_models.py OUTDIR [--models mlp,cnn,gpt,bert] [--samples N]

For each model it writes OUTDIR/<model>.onnx (opset 17, training-mode export, dynamic batch: the first
dimension of every graph input is "batch", the loss inside the graph as output "loss") and
OUTDIR/<model>.h5 (one dataset per graph input, named like it, first dimension = samples; synthetic,
deterministic). bench/models_vs_torch.py trains both in xtrain and the same PyTorch module in PyTorch;
tests/bench (ctest bench_make_models) checks that the MLP exports and trains.

The models (MODELS below; all float32, no Dropout):
  mlp   the reference MLP: 784-1024-1024-10, ReLU, softmax cross-entropy; batch 64.
  cnn   a small ResNet-style CNN on CIFAR-sized images (3x32x32, 10 classes): 3x3 conv stem 3->32 +
        BatchNorm + ReLU, three basic residual blocks (two 3x3 conv + BatchNorm each; 32->32 at 32x32,
        32->64 stride 2 at 16x16, 64->128 stride 2 at 8x8, 1x1 conv + BatchNorm shortcuts on the
        strided ones), global average pooling, Linear 128->10: 7 3x3 convolutions + 2 1x1; batch 32.
  gpt   a small GPT-style decoder: vocabulary 512, sequence 128, d_model 256, 4 heads, 4 pre-LayerNorm
        blocks (causal self-attention, MLP 256-1024-256 with tanh GELU), final LayerNorm, untied
        Linear head, next-token cross-entropy over all positions; batch 8.
  bert  a small BERT-like encoder: vocabulary 512, sequence 64, d_model 128, 4 heads, 2 post-LayerNorm
        blocks (bidirectional attention, MLP 128-512-128 with erf GELU), mean pooling, Linear 128->4;
        batch 16.
"""
import argparse
import math
import os
import sys

import h5py
import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

# The residual block is the zoo's (tests/zoo/make_zoo.py), at larger widths here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "zoo"))
from make_zoo import BasicBlock  # noqa: E402

# ------------------------------------------------------------------------------------------------
# Models: forward(*inputs) returns the loss (a scalar). flops(batch) is the multiply-adds x 2 of one
# forward pass (Linear, Conv, attention matmuls); a training step counts 3x that (backward = 2x).
# ------------------------------------------------------------------------------------------------


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 1024)
        self.fc2 = nn.Linear(1024, 1024)
        self.fc3 = nn.Linear(1024, 10)

    def forward(self, x, y):
        h = F.relu(self.fc2(F.relu(self.fc1(x))))
        return F.cross_entropy(self.fc3(h), y)

    @staticmethod
    def flops(batch):
        return 2 * batch * (784 * 1024 + 1024 * 1024 + 1024 * 10)


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(32)
        self.block1 = BasicBlock(32, 32, 1)
        self.block2 = BasicBlock(32, 64, 2)
        self.block3 = BasicBlock(64, 128, 2)
        self.fc = nn.Linear(128, 10)

    def forward(self, x, y):
        h = F.relu(self.bn(self.stem(x)))
        h = self.block3(self.block2(self.block1(h)))
        h = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return F.cross_entropy(self.fc(h), y)

    @staticmethod
    def flops(batch):
        def conv(cin, cout, k, hw):
            return 2 * cin * cout * k * k * hw * hw
        f = conv(3, 32, 3, 32) + 2 * conv(32, 32, 3, 32)
        f += conv(32, 64, 3, 16) + conv(64, 64, 3, 16) + conv(32, 64, 1, 16)
        f += conv(64, 128, 3, 8) + conv(128, 128, 3, 8) + conv(64, 128, 1, 8)
        return batch * (f + 2 * 128 * 10)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, causal):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, t, self.heads, -1).transpose(1, 2)
        v = v.view(b, t, self.heads, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        if causal:
            pos = torch.arange(t, device=x.device)
            att = att.masked_fill(pos[None, :] > pos[:, None], float("-inf"))
        h = F.softmax(att, dim=-1) @ v
        return self.proj(h.transpose(1, 2).reshape(b, t, c))


class DecoderBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x), True)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


def transformer_flops(batch, seq, dim, layers, head_out):
    per_token = layers * (2 * 12 * dim * dim) + 2 * dim * head_out
    attention = layers * 2 * (2 * seq * seq * dim)  # q k^T and att v
    return batch * (seq * per_token + attention)


GPT_VOCAB, GPT_SEQ, GPT_DIM, GPT_HEADS, GPT_LAYERS = 512, 128, 256, 4, 4


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(GPT_VOCAB, GPT_DIM)
        self.pos = nn.Embedding(GPT_SEQ, GPT_DIM)
        self.blocks = nn.ModuleList(DecoderBlock(GPT_DIM, GPT_HEADS) for _ in range(GPT_LAYERS))
        self.ln = nn.LayerNorm(GPT_DIM)
        self.head = nn.Linear(GPT_DIM, GPT_VOCAB, bias=False)

    def forward(self, x, y):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))
        for block in self.blocks:
            h = block(h)
        logits = self.head(self.ln(h))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))

    @staticmethod
    def flops(batch):
        return transformer_flops(batch, GPT_SEQ, GPT_DIM, GPT_LAYERS, GPT_VOCAB)


BERT_VOCAB, BERT_SEQ, BERT_DIM, BERT_HEADS, BERT_LAYERS, BERT_CLASSES = 512, 64, 128, 4, 2, 4


class EncoderBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = Attention(dim, heads)
        self.ln1 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.ln2 = nn.LayerNorm(dim)

    def forward(self, x):
        x = self.ln1(x + self.attn(x, False))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(BERT_VOCAB, BERT_DIM)
        self.pos = nn.Embedding(BERT_SEQ, BERT_DIM)
        self.ln0 = nn.LayerNorm(BERT_DIM)
        self.blocks = nn.ModuleList(EncoderBlock(BERT_DIM, BERT_HEADS) for _ in range(BERT_LAYERS))
        self.cls = nn.Linear(BERT_DIM, BERT_CLASSES)

    def forward(self, x, y):
        h = self.ln0(self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device)))
        for block in self.blocks:
            h = block(h)
        return F.cross_entropy(self.cls(h.mean(dim=1)), y)

    @staticmethod
    def flops(batch):
        return (transformer_flops(batch, BERT_SEQ, BERT_DIM, BERT_LAYERS, 0) +
                batch * 2 * BERT_DIM * BERT_CLASSES)


# ------------------------------------------------------------------------------------------------
# Data: [(graph input name, numpy array [samples, ...])] in forward's argument order.
# ------------------------------------------------------------------------------------------------

def data_mlp(rng, n):
    return [("x", rng.standard_normal((n, 784)).astype(np.float32)),
            ("y", rng.integers(0, 10, n).astype(np.int64))]


def data_cnn(rng, n):
    return [("x", rng.standard_normal((n, 3, 32, 32)).astype(np.float32)),
            ("y", rng.integers(0, 10, n).astype(np.int64))]


def data_gpt(rng, n):
    seq = rng.integers(0, GPT_VOCAB, (n, GPT_SEQ + 1)).astype(np.int64)
    return [("x", seq[:, :-1].copy()), ("y", seq[:, 1:].copy())]


def data_bert(rng, n):
    return [("x", rng.integers(0, BERT_VOCAB, (n, BERT_SEQ)).astype(np.int64)),
            ("y", rng.integers(0, BERT_CLASSES, n).astype(np.int64))]


# name -> (module class, data maker, batch, default samples in the .h5, description)
MODELS = {
    "mlp": (Mlp, data_mlp, 64, 2048, "reference MLP 784-1024-1024-10, ReLU"),
    "cnn": (Cnn, data_cnn, 32, 1024,
            "ResNet-style CNN, BatchNorm, 3x32x32, 7 3x3 + 2 1x1 convs, widths 32-64-128"),
    "gpt": (Gpt, data_gpt, 8, 256,
            "GPT-style decoder, 4 layers, d_model 256, 4 heads, seq 128, vocab 512, tanh GELU"),
    "bert": (Bert, data_bert, 16, 512,
             "BERT-like encoder, 2 layers, d_model 128, 4 heads, seq 64, vocab 512, erf GELU"),
}


def build(name, seed=0):
    torch.manual_seed(seed)
    return MODELS[name][0]()


def make_data(name, samples=None):
    _, maker, _, default, _ = MODELS[name]
    return maker(np.random.default_rng(1), samples or default)


def export(model, data, batch, path):
    names = [n for n, _ in data]
    args = tuple(torch.from_numpy(a[:batch]) for _, a in data)
    # Exporting in training mode runs the model once (BatchNorm's running statistics move): restore.
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    torch.onnx.export(model, args, path, input_names=names, output_names=["loss"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      dynamic_axes={n: {0: "batch"} for n in names})
    model.load_state_dict(before)
    onnx.checker.check_model(onnx.load(path))


def write_h5(path, arrays):
    with h5py.File(path, "w", libver="earliest") as f:
        for name, a in arrays:
            f.create_dataset(name, data=a, track_times=False)


def make(name, outdir, samples=None):
    """Writes outdir/<name>.onnx and outdir/<name>.h5; returns (onnx path, h5 path)."""
    if name not in MODELS:
        raise SystemExit(f"make_models.py: unknown model '{name}'; expected one of "
                         f"{','.join(MODELS)}")
    model = build(name)
    data = make_data(name, samples)
    onnx_path = os.path.join(outdir, name + ".onnx")
    h5_path = os.path.join(outdir, name + ".h5")
    export(model, data, MODELS[name][2], onnx_path)
    write_h5(h5_path, data)
    return onnx_path, h5_path


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--samples", type=int, default=None,
                   help="samples in each .h5 (default: per model, see MODELS)")
    a = p.parse_args()
    if a.samples is not None and a.samples < 1:
        p.error(f"--samples must be at least 1, got {a.samples}")
    os.makedirs(a.outdir, exist_ok=True)
    for name in a.models.split(","):
        onnx_path, h5_path = make(name, a.outdir, a.samples)
        params = sum(t.numel() for t in build(name).parameters())
        print(f"{name}: {onnx_path} ({params / 1e6:.2f} M parameters), {h5_path}; "
              f"batch {MODELS[name][2]}; {MODELS[name][4]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
