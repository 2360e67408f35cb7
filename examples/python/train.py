"""A complete PopART training program, run with xtrain: `import xtrain as popart` is the only change.

A two-layer MLP, made with the Builder, learns an MNIST-like task (8x8 "digits" generated with
NumPy: ten class templates plus noise) with SGD. Alone it trains one replica; under xrun every
instance trains its share of each global batch and the gradients are reduced across all replicas,
so every instance ends with the same weights:

    PYTHONPATH=build/python python3 examples/python/train.py
    build/bin/xrun -n 2 python3 examples/python/train.py       # PYTHONPATH as above

Options: --steps N (runs of the session, 30), --batches-per-step B (4), --micro-batch-size M (16),
--lr R (0.05), --output FILE (trained_model.onnx, written by instance 0).
"""
import argparse
import hashlib
import sys

import numpy as np

import xtrain as popart
from xtrain import dist

IMAGE, HIDDEN, CLASSES = 8 * 8, 32, 10


def make_dataset(samples, seed=0):
    """Ten fixed 8x8 templates; a sample is its class's template plus Gaussian noise."""
    rng = np.random.RandomState(seed)
    templates = rng.rand(CLASSES, IMAGE).astype(np.float32)
    labels = rng.randint(0, CLASSES, size=samples).astype(np.int32)
    images = templates[labels] + 0.3 * rng.randn(samples, IMAGE).astype(np.float32)
    return images.astype(np.float32), labels


def build_model(micro_batch, seed=1):
    """x [M, 64] -> Gemm-like 64x32 -> Relu -> 32x10 -> Softmax -> NLL loss."""
    rng = np.random.RandomState(seed)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [micro_batch, IMAGE]), "x")
    label = builder.addInputTensor(popart.TensorInfo("INT32", [micro_batch]), "label")
    w1 = builder.addInitializedInputTensor(
        (rng.randn(IMAGE, HIDDEN) * np.sqrt(2.0 / IMAGE)).astype(np.float32), "w1")
    b1 = builder.addInitializedInputTensor(np.zeros(HIDDEN, np.float32), "b1")
    w2 = builder.addInitializedInputTensor(
        (rng.randn(HIDDEN, CLASSES) * np.sqrt(1.0 / HIDDEN)).astype(np.float32), "w2")
    b2 = builder.addInitializedInputTensor(np.zeros(CLASSES, np.float32), "b2")
    with builder.nameScope("layer1"):
        h = builder.aiOnnx.relu([builder.aiOnnx.add([builder.aiOnnx.matmul([x, w1]), b1])])
    with builder.nameScope("layer2"):
        logits = builder.aiOnnx.add([builder.aiOnnx.matmul([h, w2]), b2])
    probs = builder.aiOnnx.softmax([logits])
    loss = builder.aiGraphcore.nllloss([probs, label])
    builder.addOutputTensor(loss)
    return builder.getModelProto(), x, label, loss, [w1, b1, w2, b2]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batches-per-step", type=int, default=4)
    parser.add_argument("--micro-batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--output", default="trained_model.onnx")
    args = parser.parse_args(argv)
    for name in ("steps", "batches_per_step", "micro_batch_size"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1, got %d"
                         % (name.replace("_", "-"), getattr(args, name)))
    if not args.lr > 0:
        parser.error("--lr must be greater than 0, got %g" % args.lr)

    # The place of this instance in the job (alone: 1 instance, 1 replica).
    opts = popart.SessionOptions()
    dist.configureSessionOptions(opts)
    device = dist.getDevice()
    local = dist.getNumLocalReplicas()
    total = dist.getNumTotalReplicas()
    offset = dist.getReplicaIndexOffset()
    instance = dist.getInstanceIndex()

    bps, mb = args.batches_per_step, args.micro_batch_size
    proto, x, label, loss, weights = build_model(mb)
    session = popart.TrainingSession(
        fnModel=proto,
        dataFlow=popart.DataFlow(bps, {loss: popart.AnchorReturnType("ALL")}),
        loss=loss,
        optimizer=popart.SGD({"defaultLearningRate": (args.lr, False),
                              "defaultMomentum": (0.9, True)}),
        deviceInfo=device,
        userOptions=opts)
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()

    # Every instance makes the same data set and feeds its replicas' rows of each global batch.
    global_batch = bps * total * mb
    images, labels = make_dataset(args.steps * global_batch)
    first = last = None
    for step in range(args.steps):
        rows = slice(step * global_batch, (step + 1) * global_batch)
        # [batches per step, all replicas, micro-batch, ...], then this instance's replicas
        xs = images[rows].reshape(bps, total, mb, IMAGE)[:, offset:offset + local]
        ls = labels[rows].reshape(bps, total, mb)[:, offset:offset + local]
        if local == 1:
            xs, ls = xs[:, 0], ls[:, 0]
        session.run(popart.PyStepIO({x: np.ascontiguousarray(xs),
                                     label: np.ascontiguousarray(ls)}, anchors))
        mean_loss = float(np.mean(anchors[loss]))
        first = mean_loss if first is None else first
        last = mean_loss
        if step % 10 == 0 or step == args.steps - 1:
            print("instance %d step %d loss %.4f" % (instance, step, mean_loss), flush=True)

    session.weightsToHost()
    values = {w: np.zeros(session.getInfo(w).shape(), np.float32) for w in weights}
    session.readWeights(popart.PyWeightsIO(values))
    digest = hashlib.sha256(b"".join(values[w].tobytes() for w in weights)).hexdigest()
    if instance == 0:
        session.modelToHost(args.output)
    print("instance %d of %d: loss %.4f -> %.4f, weights sha256 %s"
          % (instance, dist.getNumInstances(), first, last, digest), flush=True)
    return 0 if last < first else 1


if __name__ == "__main__":
    sys.exit(main())
