"""Writes MNIST-shaped files in the IDX format (data/train-images-idx3-ubyte and the three
others) for popart_mnist.py, which reads them from ./data. The real MNIST set is not packaged by
Debian and the tests do not download; these hold random images whose label is a fixed linear
function of the pixels, so a linear model can learn them. Not from Graphcore: xtrain's own.

Usage: make_mnist_data.py DIRECTORY [TRAIN_COUNT TEST_COUNT]"""
import os
import struct
import sys

import numpy as np


def write(directory, prefix, count, rng, projection):
    images = rng.randint(0, 256, size=(count, 28, 28)).astype(np.uint8)
    scores = (images.reshape(count, -1).astype(np.float32) / 255.0) @ projection
    labels = np.argmax(scores, axis=1).astype(np.uint8)
    with open(os.path.join(directory, prefix + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, count, 28, 28))
        f.write(images.tobytes())
    with open(os.path.join(directory, prefix + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 2049, count))
        f.write(labels.tobytes())


def main(argv):
    if len(argv) not in (2, 4):
        sys.stderr.write(__doc__ + "\n")
        return 2
    directory = argv[1]
    train, test = (int(argv[2]), int(argv[3])) if len(argv) == 4 else (6400, 1280)
    os.makedirs(directory, exist_ok=True)
    rng = np.random.RandomState(17)
    projection = rng.randn(28 * 28, 10).astype(np.float32)
    write(directory, "train", train, rng, projection)
    write(directory, "t10k", test, rng, projection)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
