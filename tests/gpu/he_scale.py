"""Rescales every convolution filter of a safetensors file to He's variance (2 / fan-in), and
gives a binary op's constant operand tensors (top-level names: mean, std, gain, ...) values in
[0.5, 1.5] instead of their seeded ones, which leave x * c and x / c unchanged.

tests/gpu/prepare_zoo_check.sh applies it to the seeded weights of tests/backend's
depthwise_layers.yaml and epilogue_layers.yaml: with PyTorch's default init (and its fan-out, which ignores groups) the signal shrinks
about 3x per convolution, so after eleven of them every sample's output is the same constant
and a per-sample error would go unseen. Usage: he_scale.py WEIGHTS.safetensors (in place).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
import safetensors_io  # noqa: E402


def main(path):
    tensors, metadata = safetensors_io.load_file(path)
    for name, w in tensors.items():
        if name.endswith(".weight") and w.ndim == 4:
            fan_in = w.shape[1] * w.shape[2] * w.shape[3]
            tensors[name] = (w / w.std() * np.sqrt(2.0 / fan_in)).astype(w.dtype)
        elif "." not in name:
            rng = np.random.default_rng(sum(name.encode()))
            tensors[name] = rng.uniform(0.5, 1.5, w.shape).astype(w.dtype)
    safetensors_io.save_file(tensors, path, metadata=metadata)


if __name__ == "__main__":
    main(sys.argv[1])
