"""Fashion-MNIST (MNIST idx format) for the Python baselines, read and normalized as zoc does.

The generated trainer reads its data with runtime/zoc/train/datasets.h; for the comparison to mean
anything the Python side must see the same images, in the same order, with bit-identical
normalized values. This module validates idx files like `zoc::data::read_idx` (magic numbers,
counts, exact sizes, label range) and accepts them gzip-compressed too (detected from the
content, not the name: Debian's dataset-fashion-mnist ships `.gz` files). Normalization is a
256-entry float32 table computed with exactly the float32 operations of
`zoc::data::normalized_batch`, (float(p) / 255 - mean) / std, so every implementation gets the
same bits (tests/train checks the table against the C++ header).

Files of a data folder: train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
t10k-labels-idx1-ubyte, each raw or with `.gz` appended.
"""

import gzip
import os
import struct

import numpy as np

# Stated normalization (tools/train/README.md): mean and population standard deviation of the
# 60000 Fashion-MNIST training images' pixels / 255, measured 0.28604060 and 0.35302424, rounded.
FASHION_MNIST_MEAN = 0.2860
FASHION_MNIST_STD = 0.3530

SPLITS = {"train": "train", "test": "t10k"}


class DataError(ValueError):
    """A missing or malformed data file; the message names the file and the cause."""


def _read_bytes(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError("%s: cannot read: %s" % (path, e.strerror or e))
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise DataError("%s: broken gzip data: %s" % (path, e))
    return raw


def find_file(folder, base):
    """`folder/base` if present, else `folder/base.gz`; a DataError naming both if neither is."""
    for name in (base, base + ".gz"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    raise DataError("%s: neither %s nor %s.gz found" % (folder, base, base))


def read_idx(images_path, labels_path, num_classes):
    """(pixels uint8 [N, 1, H, W], labels uint8 [N]) with zoc::data::read_idx's checks."""
    images, labels = _read_bytes(images_path), _read_bytes(labels_path)
    if len(images) < 16 or struct.unpack(">I", images[:4])[0] != 0x00000803:
        raise DataError("%s: not an idx image file (expected magic 0x00000803 and a 16-byte "
                        "header)" % images_path)
    if len(labels) < 8 or struct.unpack(">I", labels[:4])[0] != 0x00000801:
        raise DataError("%s: not an idx label file (expected magic 0x00000801 and an 8-byte "
                        "header)" % labels_path)
    n, h, w = struct.unpack(">III", images[4:16])
    (nl,) = struct.unpack(">I", labels[4:8])
    if n == 0 or h == 0 or w == 0 or h > 65536 or w > 65536:
        raise DataError("%s: header says %d images of %dx%d (each must be at least 1, sides at "
                        "most 65536)" % (images_path, n, h, w))
    if nl != n:
        raise DataError("%s: %d labels for the %d images of %s" % (labels_path, nl, n, images_path))
    if len(images) != 16 + n * h * w:
        raise DataError("%s: %d bytes, but its header says %d images of %dx%d (truncated, padded "
                        "or a bad header?)" % (images_path, len(images), n, h, w))
    if len(labels) != 8 + n:
        raise DataError("%s: %d bytes, but its header needs exactly %d (truncated or padded?)"
                        % (labels_path, len(labels), 8 + n))
    pixels = np.frombuffer(images, dtype=np.uint8, offset=16).reshape(n, 1, h, w)
    y = np.frombuffer(labels, dtype=np.uint8, offset=8)
    bad = np.nonzero(y >= num_classes)[0]
    if bad.size:
        raise DataError("%s: label %d of image %d is not below the %d classes"
                        % (labels_path, y[bad[0]], bad[0], num_classes))
    return pixels, y


def read_split(folder, split, num_classes=10):
    """The `train` or `test` split of a data folder."""
    prefix = SPLITS[split]
    return read_idx(find_file(folder, prefix + "-images-idx3-ubyte"),
                    find_file(folder, prefix + "-labels-idx1-ubyte"), num_classes)


def normalization_table(mean=FASHION_MNIST_MEAN, std=FASHION_MNIST_STD):
    """float32[256]: (float(p) / 255 - mean) / std in float32 arithmetic, as datasets.h does it
    with `float` mean and std (a double constant converted to float, as C++ does)."""
    p = np.arange(256, dtype=np.float32)
    return ((p / np.float32(255.0)) - np.float32(mean)) / np.float32(std)


def normalize(pixels, mean=FASHION_MNIST_MEAN, std=FASHION_MNIST_STD):
    """float32 array of pixels' shape, looked up in normalization_table()."""
    return normalization_table(mean, std)[pixels]


def _taps(size_in, size_out):
    """Per output coordinate: the two source indices and their integer weights (sum 2 out)."""
    o = np.arange(size_out, dtype=np.int64)
    num = np.maximum(0, (2 * o + 1) * size_in - size_out)  # the source coordinate times 2 out
    i0 = num // (2 * size_out)
    f = num - i0 * 2 * size_out
    return i0, np.minimum(i0 + 1, size_in - 1), 2 * size_out - f, f


def resize(pixels, size):
    """uint8 [N, C, size, size]: zoc::data::resize_bilinear, bilinear with half-pixel centres
    (PyTorch's interpolate(align_corners=False, antialias=False)) computed exactly in integers
    and rounded half up, so both give the same bytes."""
    h, w = pixels.shape[-2:]
    if (h, w) == (size, size):
        return pixels
    y0, y1, wy0, wy1 = _taps(h, size)
    x0, x1, wx0, wx1 = _taps(w, size)
    p = pixels.astype(np.int64)
    top = p[..., y0, :]
    bot = p[..., y1, :]
    top = top[..., x0] * wx0 + top[..., x1] * wx1
    bot = bot[..., x0] * wx0 + bot[..., x1] * wx1
    v = wy0[:, None] * top + wy1[:, None] * bot
    denom = 4 * size * size
    return ((v + denom // 2) // denom).astype(np.uint8)


def replicate_channels(pixels, channels):
    """A one-channel set as `channels` identical channels (zoc::data::replicate_channels)."""
    if pixels.shape[1] == channels:
        return pixels
    if pixels.shape[1] != 1:
        raise DataError("--channels %d: only a one-channel data set is replicated (it has %d)"
                        % (channels, pixels.shape[1]))
    return np.ascontiguousarray(np.repeat(pixels, channels, axis=1))


def write_idx(folder, split, pixels, labels):
    """Write a split as raw idx files (tests' synthetic data sets); returns the two paths."""
    prefix = SPLITS[split]
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    n, h, w = pixels.shape[0], pixels.shape[-2], pixels.shape[-1]
    img = os.path.join(folder, prefix + "-images-idx3-ubyte")
    lab = os.path.join(folder, prefix + "-labels-idx1-ubyte")
    with open(img, "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, n, h, w) + pixels.tobytes())
    with open(lab, "wb") as f:
        f.write(struct.pack(">II", 0x00000801, n) + np.asarray(labels, dtype=np.uint8).tobytes())
    return img, lab
