"""Writes MNIST-shaped files in the IDX format (data/train-images-idx3-ubyte and the three
others) for popart_mnist.py, which reads them from ./data. The real MNIST set is not packaged by
Debian and the tests do not download; these hold noisy copies of ten random sparse "digit" images, with
balanced labels, so a model that learns gets most of them right and one that does not about 10%.
Not from Graphcore: xtrain's own.

Usage: make_mnist_data.py DIRECTORY [TRAIN_COUNT TEST_COUNT]"""
import os
import struct
import sys

import numpy as np


def write(directory, prefix, count, rng, digits):
    labels = (np.arange(count) % 10).astype(np.uint8)
    rng.shuffle(labels)
    # Like MNIST, mostly black: a digit's strokes, some of them dropped, and a few stray pixels.
    kept = digits[labels] & (rng.random_sample((count, 28, 28)) >= 0.3)
    stray = rng.random_sample((count, 28, 28)) < 0.03
    images = np.where(kept | stray, 255, 0).astype(np.uint8)
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
    digits = rng.random_sample((10, 28, 28)) < 0.2
    write(directory, "train", train, rng, digits)
    write(directory, "t10k", test, rng, digits)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
