"""A model too large for one IPU, trained anyway: over 2 or 4 IPUs per replica, pipelined, or with its
weights, optimizer state and accumulators in streaming (off-chip) memory (docs/pipelining.md).

The device is a small simulated IPU: IpuModel devices of TILES tiles per IPU (48 tiles x 624 KiB
= 29.25 MiB per IPU). The model is an MLP of LAYERS square layers of WIDTH (8 x 512 x 512: 8 MiB of
weights; with Adam's two moments, the gradient accumulators and the gradients, 40 MiB), which cannot fit
one such IPU. Each configuration is tried in turn:

    one IPU                        -> OutOfMemoryException (the report names the IPU and its bytes)
    2 IPUs, Auto split             -> trains
    4 IPUs, Auto split, pipelined  -> trains (4 stages, accumulation factor 8)
    one IPU, state off chip        -> trains

and every configuration that trains reaches the same weights, bit for bit: placement, pipelining
and off-chip storage change where the model runs, never what it computes.

    PYTHONPATH=build/python python3 examples/python/too_large_for_one_ipu.py [--steps N]
"""
import argparse
import sys

import numpy as np

import xtrain as popart

LAYERS, WIDTH, TILES, MICRO_BATCH, ACCUMULATION = 8, 512, 48, 8, 8


def build_model(seed=3):
    """x [M, WIDTH] -> LAYERS x (MatMul, Relu) -> L1 loss of the last activation."""
    rng = np.random.RandomState(seed)
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [MICRO_BATCH, WIDTH]), "x")
    h = x
    for i in range(LAYERS):
        w = b.addInitializedInputTensor(
            (rng.randn(WIDTH, WIDTH) * np.sqrt(1.0 / WIDTH)).astype(np.float32), "w%d" % i)
        h = b.aiOnnx.relu([b.aiOnnx.matmul([h, w])])
    loss = b.aiGraphcore.l1loss([h], 0.01, reduction=popart.ReductionType.Mean)
    b.addOutputTensor(loss)
    return b.getModelProto(), x, loss, ["w%d" % i for i in range(LAYERS)]


def options(ipus, pipelined=False, offchip=False):
    opts = popart.SessionOptions()
    opts.enableGradientAccumulation = True
    opts.accumulationFactor = ACCUMULATION
    if ipus > 1:
        opts.virtualGraphMode = popart.VirtualGraphMode.Auto
        opts.enablePipelining = pipelined
    if offchip:
        offChip = popart.TensorLocationSettings(popart.TensorStorage.OffChip, 0)
        opts.weightTensorLocationSettings = offChip
        opts.optimizerStateTensorLocationSettings = offChip
        opts.accumulatorTensorLocationSettings = offChip
    return opts


def train(ipus, steps, pipelined=False, offchip=False):
    """The trained weights, or the OutOfMemoryException's message."""
    proto, x, loss, weights = build_model()
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": ipus, "tilesPerIPU": TILES})
    try:
        session = popart.TrainingSession(
            fnModel=proto, dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("Final")}),
            loss=loss, optimizer=popart.Adam({"defaultLearningRate": (1e-3, False)}),
            userOptions=options(ipus, pipelined, offchip), deviceInfo=device)
        session.prepareDevice()
    except popart.OutOfMemoryException as e:
        return None, str(e)
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    rng = np.random.RandomState(5)
    for _ in range(steps):
        data = rng.randn(ACCUMULATION, MICRO_BATCH, WIDTH).astype(np.float32)
        session.run(popart.PyStepIO({x: data}, anchors))
    out = {w: np.zeros((WIDTH, WIDTH), np.float32) for w in weights}
    session.weightsToHost()
    session.readWeights(popart.PyWeightsIO(out))
    return out, "loss %.6f" % float(anchors[loss])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)
    configurations = [
        ("one IPU", dict(ipus=1)),
        ("2 IPUs, Auto split", dict(ipus=2)),
        ("4 IPUs, Auto split, pipelined", dict(ipus=4, pipelined=True)),
        ("one IPU, state off chip", dict(ipus=1, offchip=True)),
    ]
    trained = {}
    for name, config in configurations:
        weights, what = train(steps=args.steps, **config)
        print("%-32s %s" % (name + ":", what.splitlines()[0] if weights is None else what))
        if weights is not None:
            trained[name] = weights
    if "one IPU" in trained:
        print("error: the model fits one IPU; it is meant not to", file=sys.stderr)
        return 1
    first = next(iter(trained.values()))
    same = all(all(w[k].tobytes() == first[k].tobytes() for k in first) for w in trained.values())
    print("the %d configurations that train reach the same weights: %s" % (len(trained), same))
    return 0 if same and len(trained) == len(configurations) - 1 else 1


if __name__ == "__main__":
    sys.exit(main())
