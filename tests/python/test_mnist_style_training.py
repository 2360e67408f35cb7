"""Image classification the way PopART's MNIST walkthroughs run it: a model made with the Builder
(a linear classifier, and a small convolutional network), a TrainingSession and an
InferenceSession sharing one device, several batches per step, ConstSGD on a summed NLL loss, the
trained weights moved to the inference session with modelToHost / resetHostWeights /
weightsFromHost after each epoch, and the accuracy taken from the anchored logits. The data are
ours, made with NumPy here: 28x28 images of ten blob-shaped "digits", each sample a shifted,
partly erased copy with stray pixels, so a model that learns reaches high accuracy and one that
does not stays near 10%. They are not MNIST (Debian does not package it and tests do not
download); the thresholds are for these data."""
import os
import unittest

import numpy as np

import xtrain as popart
from python_testing import PrivatePool

SIDE = 28
CLASSES = 10


def blob_digits(count, seed):
    """count images [count, 1, 28, 28] (0 or 1) and their labels (int32, balanced)."""
    shapes_rng = np.random.RandomState(1234)  # the same ten shapes for every set
    field = shapes_rng.rand(CLASSES, SIDE, SIDE)
    smooth = np.zeros_like(field)
    for dy in range(-3, 4):
        for dx in range(-3, 4):
            smooth += np.roll(field, (dy, dx), axis=(1, 2))
    shapes = smooth > np.percentile(smooth, 80, axis=(1, 2), keepdims=True)

    rng = np.random.RandomState(seed)
    labels = rng.permutation(np.arange(count) % CLASSES).astype(np.int32)
    kept = shapes[labels] & (rng.rand(count, SIDE, SIDE) < 0.6)
    noisy = kept | (rng.rand(count, SIDE, SIDE) < 0.2)
    shifts = rng.randint(-3, 4, size=(count, 2))
    images = np.stack([np.roll(img, tuple(s), axis=(0, 1)) for img, s in zip(noisy, shifts)])
    return images.astype(np.float32).reshape(count, 1, SIDE, SIDE), labels


def uniform(rng, shape, fan_in):
    bound = np.sqrt(3.0 / fan_in)
    return rng.uniform(-bound, bound, shape).astype(np.float32)


def classifier_head(b, x, batch):
    """softmax + summed NLL over a batch of logits x; returns (label input, loss)."""
    label = b.addInputTensor(popart.TensorInfo("INT32", [batch]), "label")
    probs = b.aiOnnx.softmax([x])
    return label, b.aiGraphcore.nllloss([probs, label], popart.ReductionType.Sum)


def linear_model(batch):
    rng = np.random.RandomState(3)
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [batch, SIDE * SIDE]), "image")
    w = b.addInitializedInputTensor(uniform(rng, [SIDE * SIDE, CLASSES], SIDE * SIDE), "w")
    c = b.addInitializedInputTensor(np.zeros(CLASSES, np.float32), "c")
    logits = b.aiOnnx.add([b.aiOnnx.matmul([x, w]), c], "logits")
    label, loss = classifier_head(b, logits, batch)
    return b.getModelProto(), x, label, logits, loss


def conv_model(batch):
    """conv 5x5 (8) - relu - maxpool 2 - conv 5x5 (16) - relu - maxpool 2 - dense 64 - dense 10."""
    rng = np.random.RandomState(4)
    b = popart.Builder()
    x = b.addInputTensor(popart.TensorInfo("FLOAT", [batch, 1, SIDE, SIDE]), "image")
    h = x
    for channels_in, channels_out in ((1, 8), (8, 16)):
        kernel = b.addInitializedInputTensor(
            uniform(rng, [channels_out, channels_in, 5, 5], channels_in * 25))
        bias = b.addInitializedInputTensor(np.zeros(channels_out, np.float32))
        h = b.aiOnnx.conv([h, kernel, bias], dilations=[1, 1], kernel_shape=[5, 5],
                          strides=[1, 1], pads=[0, 0, 0, 0])
        h = b.aiOnnx.relu([h])
        (h,) = b.aiOnnx.maxpool([h], num_outputs=1, kernel_shape=[2, 2], pads=[0, 0, 0, 0],
                                strides=[2, 2])
    flat = 16 * 4 * 4  # 28 -> 24 -> 12 -> 8 -> 4
    h = b.aiOnnx.reshape([h, b.aiOnnx.constant(np.array([batch, flat], np.int64))])
    for n_in, n_out, last in ((flat, 64, False), (64, CLASSES, True)):
        w = b.addInitializedInputTensor(uniform(rng, [n_in, n_out], n_in))
        c = b.addInitializedInputTensor(np.zeros(n_out, np.float32))
        h = b.aiOnnx.add([b.aiOnnx.matmul([h, w]), c])
        if not last:
            h = b.aiOnnx.relu([h])
    label, loss = classifier_head(b, h, batch)
    return b.getModelProto(), x, label, h, loss


class MnistStyleTrainingTest(PrivatePool, unittest.TestCase):
    BATCH = 16
    BPS = 25

    def train_and_evaluate(self, make_model, flat, epochs, lr, replicas=1):
        """Returns (accuracy before training, accuracy after each epoch, mean loss per epoch)."""
        train_x, train_y = blob_digits(3200, seed=1)
        test_x, test_y = blob_digits(400, seed=2)
        if flat:
            train_x = train_x.reshape(len(train_x), -1)
            test_x = test_x.reshape(len(test_x), -1)
        # The model is per replica; the host buffers fold the replicas into the batch,
        # [bps, replicas * batch, ...] (test_host_buffers.py, RegroupedBuffersTest).
        proto, x, label, logits, loss = make_model(self.BATCH // replicas)
        flow = popart.DataFlow(self.BPS, {logits: popart.AnchorReturnType("ALL"),
                                          loss: popart.AnchorReturnType("ALL")})
        opts = popart.SessionOptions()
        opts.constantWeights = False  # the inference session's weights change every epoch
        if replicas > 1:
            opts.enableReplicatedGraphs = True
            opts.replicatedGraphCount = replicas
        per_step = self.BATCH * self.BPS
        saved = os.path.join(self.tmp, "trained.onnx")

        def steps(images, labels):
            for i in range(len(images) // per_step):
                part = slice(i * per_step, (i + 1) * per_step)
                yield (images[part].reshape((self.BPS, self.BATCH) + images.shape[1:]),
                       labels[part].reshape(self.BPS, self.BATCH))

        with popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas}) as device:
            trainer = popart.TrainingSession(fnModel=proto, dataFlow=flow, loss=loss,
                                             optimizer=popart.ConstSGD(lr), deviceInfo=device,
                                             userOptions=opts)
            trainer.prepareDevice()
            tester = popart.InferenceSession(fnModel=proto, dataFlow=flow, deviceInfo=device,
                                             userOptions=opts)
            tester.prepareDevice()
            train_out = trainer.initAnchorArrays()
            test_out = tester.initAnchorArrays()

            def accuracy():
                right = 0
                for images, labels in steps(test_x, test_y):
                    tester.run(popart.PyStepIO({x: images, label: labels}, test_out))
                    guesses = test_out[logits].reshape(-1, CLASSES).argmax(axis=1)
                    right += int(np.sum(guesses == labels.reshape(-1)))
                return right / len(test_y)

            tester.weightsFromHost()
            before = accuracy()
            after, losses = [], []
            trainer.weightsFromHost()
            for _ in range(epochs):
                epoch_loss = []
                for images, labels in steps(train_x, train_y):
                    trainer.run(popart.PyStepIO({x: images, label: labels}, train_out))
                    epoch_loss.append(float(train_out[loss].mean()))
                losses.append(np.mean(epoch_loss))
                trainer.modelToHost(saved)
                tester.resetHostWeights(saved)
                tester.weightsFromHost()
                after.append(accuracy())
        return before, after, losses

    def check(self, before, after, losses, at_least):
        self.assertLess(before, 0.3, "an untrained model guesses (about 10%)")
        self.assertGreaterEqual(after[-1], at_least, after)
        self.assertLess(losses[-1], losses[0], losses)

    def test_linear(self):
        # About 0.95 after 2 epochs on these data.
        self.check(*self.train_and_evaluate(linear_model, flat=True, epochs=2, lr=0.01),
                   at_least=0.9)

    def test_linear_two_replicas(self):
        self.check(*self.train_and_evaluate(linear_model, flat=True, epochs=2, lr=0.01,
                                            replicas=2), at_least=0.9)

    def test_conv(self):
        # About 0.95 after 4 epochs on these data (0.69 after 1).
        self.check(*self.train_and_evaluate(conv_model, flat=False, epochs=4, lr=0.01),
                   at_least=0.85)


if __name__ == "__main__":
    unittest.main()
