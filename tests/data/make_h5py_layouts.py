"""Writes HDF5 data files the way users make them with h5py, into the directory given as argv[1].

Run by tests/checkpoint/dataset_layouts_test.cpp and tests/tools/xtrain_data_test.cpp at test time
(with Debian's /usr/bin/python3 and python3-h5py; the tests skip without them), so the files come
from the h5py and HDF5 the machine has, not from xtrain's own writer.

Every file but the bool and training files holds the same numbers: `x`, float32 [100, 5] with
x[i, f] = 1000 + 5 i + f, and `y`, int64 [100] with y[i] = i % 7, in one storage layout:

  contiguous.h5   no chunks (h5py's default)
  chunked.h5      chunks=(16, 3) and (10,): edge chunks stick out of both dimensions
  gzip.h5         compression="gzip", shuffle=True, h5py's own chunk shape
  unlimited.h5    maxshape=(None, 5) / (None,), written in two appends (resize)
  latest.h5       libver="latest": x in chunks (16, 5) (fixed-array index), y unlimited
                  (extensible-array index), x2 = x with maxshape=(None, None) (v2 B-tree
                  index), x1 = x as one chunk (single-chunk index), xz = x in gzip chunks,
                  xi = x in chunks allocated early (implicit index), m = a bool [100]
  partial.h5      x of shape (100, 5), maxshape=(None, 5), chunks (16, 5), fillvalue -1.5, only rows
                  0..39 written: the chunks of rows 48..99 are never allocated
  bool.h5         m = numpy bool [12] (h5py's enum FALSE=0/TRUE=1) contiguous, mz = the same in
                  gzip chunks of 4, odd = a bool dataset whose element 5 holds the byte 2,
                  color = an enum RED=0/GREEN=1/BLUE=2 (not a bool)
  lzf.h5          x in h5py's own lzf compression, a filter plain libhdf5 cannot decode
  values.h5       big = uint64 [1, 2, 2^63 + 5, 3]; huge = float64 [1, 1e300, inf];
                  neg = int64 [5, -1]: values some types cannot hold
  train-contiguous.h5, train-gzip.h5
                  x float32 [64, 4] (normal, seed 3), y int32 [64] = (x[:, 0] > 0): the same data,
                  contiguous and in gzip+shuffle chunks of (5, 4) / (5,)
  train-huge.h5   the same with x[37, 2] = 3e38 (finite, but its square overflows float)
  train-biglabel.h5
                  the same with y stored as uint64 and y[3] = 2^63 + 5

Damaged copies, each with one field of a v1 B-tree chunk index overwritten (found through h5py's
get_chunk_info, so they are the fields HDF5 reads):

  damaged-far.h5    chunked.h5 with chunk 1 of x recorded at 2^40, beyond the end of the file
  damaged-short.h5  chunked.h5 with chunk 1 of x recorded as 100 bytes (unfiltered: 192)
  many.h5           y = int64 [3000] (y[i] = 7 i) in chunks of one: more chunks than are checked
                    one by one (src/checkpoint/dataset_storage.hpp)
  many-short.h5     many.h5 with chunk 1500 recorded as 4 bytes
  many-far.h5       many.h5 with chunk 1500 recorded at 2^40

Damaged copies with one dimension of x's chunk shape (in its layout message) overwritten, shapes
HDF5 never writes and once read past its buffers (a SIGSEGV inside H5Dread):

  chunkshape-wide.h5  train-gzip.h5 with x's chunk (5, 4) made (5, 16711684): a one-byte flip
  chunkshape-zero.h5  train-gzip.h5 with x's chunk made (0, 4)
  chunkshape-huge.h5  unlimited.h5 with x's chunk dimension 0 made 2^30: 20 GiB chunks
"""
import struct
import os
import sys

import h5py
import numpy as np


def reference():
    x = (1000 + np.arange(500, dtype=np.float32)).reshape(100, 5)
    y = np.arange(100, dtype=np.int64) % 7
    return x, y


def damage(src, dst, name, chunk, field, value):
    """Copies src to dst with chunk `chunk` of dataset `name` recorded at address `value`
    (field "address") or as `value` bytes (field "size")."""
    with h5py.File(src, "r") as f:
        d = f[name]
        info = d.id.get_chunk_info(chunk)
        rank = len(d.shape)
    data = bytearray(open(src, "rb").read())
    address = struct.pack("<Q", info.byte_offset)
    at = data.find(address)
    assert at > 0 and data.find(address, at + 1) < 0, "the chunk's address is not unique"
    # A v1 B-tree key: size (4 bytes), filter mask (4), rank + 1 offsets (8 each); then the
    # chunk's address.
    size_at = at - 8 - 8 * (rank + 1)
    assert struct.unpack_from("<I", data, size_at)[0] == info.size, "no chunk size before it"
    if field == "address":
        struct.pack_into("<Q", data, at, value)
    else:
        struct.pack_into("<I", data, size_at, value)
    open(dst, "wb").write(bytes(data))


def damage_chunk_shape(src, dst, name, dim, value):
    """Copies src to dst with dimension `dim` of dataset `name`'s chunk shape made `value`."""
    with h5py.File(src, "r") as f:
        d = f[name]
        fields = list(d.chunks) + [d.dtype.itemsize]
    data = bytearray(open(src, "rb").read())
    # A version 3 layout message stores the chunk shape, then the element size, 4 bytes each.
    shape = struct.pack("<%dI" % len(fields), *fields)
    at = data.find(shape)
    assert at > 0 and data.find(shape, at + 1) < 0, "the chunk shape is not unique"
    struct.pack_into("<I", data, at + 4 * dim, value)
    open(dst, "wb").write(bytes(data))


def main(out):
    x, y = reference()
    with h5py.File(os.path.join(out, "contiguous.h5"), "w") as f:
        f["x"], f["y"] = x, y
    with h5py.File(os.path.join(out, "chunked.h5"), "w") as f:
        f.create_dataset("x", data=x, chunks=(16, 3))
        f.create_dataset("y", data=y, chunks=(10,))
    with h5py.File(os.path.join(out, "gzip.h5"), "w") as f:
        f.create_dataset("x", data=x, compression="gzip", shuffle=True)
        f.create_dataset("y", data=y, chunks=(8,), compression="gzip", shuffle=True)
    with h5py.File(os.path.join(out, "unlimited.h5"), "w") as f:
        dx = f.create_dataset("x", data=x[:60], maxshape=(None, 5))
        dy = f.create_dataset("y", data=y[:60], maxshape=(None,))
        dx.resize(100, axis=0)
        dy.resize(100, axis=0)
        dx[60:], dy[60:] = x[60:], y[60:]
    with h5py.File(os.path.join(out, "latest.h5"), "w", libver="latest") as f:
        f.create_dataset("x", data=x, chunks=(16, 5))
        f.create_dataset("y", data=y, maxshape=(None,))
        f.create_dataset("x2", data=x, chunks=(16, 3), maxshape=(None, None))
        f.create_dataset("x1", data=x, chunks=(100, 5))
        f.create_dataset("xz", data=x, chunks=(16, 5), compression="gzip", shuffle=True)
        # Space allocated when the dataset is made, no filters, fixed dims: no index at all.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((16, 5))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        xi = h5py.h5d.create(f.id, b"xi", h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple((100, 5)),
                             dcpl=dcpl)
        xi.write(h5py.h5s.ALL, h5py.h5s.ALL, x)
        f["m"] = np.arange(100) % 3 == 0  # h5py's bool in a version-2 object header
    with h5py.File(os.path.join(out, "partial.h5"), "w") as f:
        d = f.create_dataset("x", shape=(100, 5), maxshape=(None, 5), chunks=(16, 5),
                             dtype="f4", fillvalue=-1.5)
        d[:40] = x[:40]
    with h5py.File(os.path.join(out, "bool.h5"), "w") as f:
        m = np.arange(12) % 3 == 0
        f["m"] = m
        f.create_dataset("mz", data=m, chunks=(4,), compression="gzip")
        raw = (np.arange(12) % 2).astype(np.uint8)
        raw[5] = 2  # a byte h5py never writes for a bool: the file holds it as it was given
        f["odd"] = raw.view(np.bool_)
        f.create_dataset("color", data=np.arange(12, dtype=np.int8) % 3,
                         dtype=h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1"))
    with h5py.File(os.path.join(out, "lzf.h5"), "w") as f:
        f.create_dataset("x", data=x, compression="lzf")
    with h5py.File(os.path.join(out, "values.h5"), "w") as f:
        f["big"] = np.array([1, 2, 2**63 + 5, 3], dtype=np.uint64)
        f["huge"] = np.array([1.0, 1e300, np.inf])
        f["neg"] = np.array([5, -1], dtype=np.int64)
    chunked = os.path.join(out, "chunked.h5")
    damage(chunked, os.path.join(out, "damaged-far.h5"), "x", 1, "address", 1 << 40)
    damage(chunked, os.path.join(out, "damaged-short.h5"), "x", 1, "size", 100)
    many = os.path.join(out, "many.h5")
    with h5py.File(many, "w") as f:
        f.create_dataset("y", data=np.arange(3000, dtype=np.int64) * 7, chunks=(1,))
    damage(many, os.path.join(out, "many-short.h5"), "y", 1500, "size", 4)
    damage(many, os.path.join(out, "many-far.h5"), "y", 1500, "address", 1 << 40)
    rng = np.random.default_rng(3)
    tx = rng.standard_normal((64, 4)).astype(np.float32)
    ty = (tx[:, 0] > 0).astype(np.int32)
    with h5py.File(os.path.join(out, "train-contiguous.h5"), "w") as f:
        f["x"], f["y"] = tx, ty
    with h5py.File(os.path.join(out, "train-gzip.h5"), "w") as f:
        f.create_dataset("x", data=tx, chunks=(5, 4), compression="gzip", shuffle=True)
        f.create_dataset("y", data=ty, chunks=(5,), compression="gzip", shuffle=True)
    train_gzip = os.path.join(out, "train-gzip.h5")
    damage_chunk_shape(train_gzip, os.path.join(out, "chunkshape-wide.h5"), "x", 1, 16711684)
    damage_chunk_shape(train_gzip, os.path.join(out, "chunkshape-zero.h5"), "x", 0, 0)
    damage_chunk_shape(os.path.join(out, "unlimited.h5"), os.path.join(out, "chunkshape-huge.h5"),
                       "x", 0, 1 << 30)
    with h5py.File(os.path.join(out, "train-huge.h5"), "w") as f:
        hx = tx.copy()
        hx[37, 2] = 3e38
        f["x"], f["y"] = hx, ty
    with h5py.File(os.path.join(out, "train-biglabel.h5"), "w") as f:
        by = ty.astype(np.uint64)
        by[3] = 2**63 + 5
        f["x"], f["y"] = tx, by


if __name__ == "__main__":
    main(sys.argv[1])
