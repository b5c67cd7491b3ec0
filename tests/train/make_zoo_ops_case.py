#!/usr/bin/env python3
"""The reference of the zoo-layer trainer check (tests/train/gpu_zoo_train_check.sh), made on the
CPU: a seeded batch of a model's input (tests/train/zoo_ops.yaml's, arith_ops.yaml's or
decoder_ops.yaml's: 8 images, N(0, 1), uniform labels), seeded
weights for every parameter the model has (their names and shapes read from a first `zoc grad`
run), and `zoc grad`'s training step from them: the reference interpreter, whose gradients of
these ops are checked against finite differences (tests/unit/training_interpreter_test.cpp).
The generated trainer must reproduce that step on the GPU.

  make_zoo_ops_case.py ZOC OUT_DIR [MODEL]   writes batch, init and ref .safetensors into OUT_DIR
                                            (MODEL: zoo_ops, the default, arith_ops or
                                            decoder_ops)
"""
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
import safetensors_io  # noqa: E402

# Each model's buffers (operands kept fixed), drawn as test_train.py's draw_buffers draws them.
BUFFERS = {"arith_ops": {"mean": (3, 1, 1), "std": (3, 1, 1)}}

# Each model's input, [C, H, W], as its YAML file declares it.
INPUTS = {"zoo_ops": (3, 12, 12), "arith_ops": (3, 8, 8), "decoder_ops": (3, 8, 8)}


def grad(zoc, model, batch, out, weights=None):
    cmd = [zoc, "grad", os.path.join(ROOT, "tests", "train", model + ".yaml"), "--batch-file",
           batch, "-o", out]
    subprocess.run(cmd + (["--weights", weights] if weights else []), check=True,
                   stdout=subprocess.DEVNULL)
    return safetensors_io.load_file(out)[0]


def main():
    zoc, out = sys.argv[1], sys.argv[2]
    model = sys.argv[3] if len(sys.argv) > 3 else "zoo_ops"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(34)
    batch = os.path.join(out, "batch.safetensors")
    images = rng.standard_normal((8,) + INPUTS[model]).astype(np.float32)
    safetensors_io.save_file({"input": images,
                              "labels": rng.integers(0, 10, 8).astype(np.int32)}, batch)
    probe = grad(zoc, model, batch, os.path.join(out, "probe.safetensors"))
    init = {}
    for name in sorted(k[len("grad."):] for k in probe if k.startswith("grad.")):
        shape = probe["grad." + name].shape
        # Norm weights near 1, matrices N(0, 1 / fan_in), the rest N(0, 0.5): a well-conditioned,
        # non-trivial step.
        base = 1.0 if name.startswith("ln") and name.endswith(".weight") else 0.0
        std = 1.0 / np.sqrt(np.prod(shape[1:])) if len(shape) > 1 and shape[0] > 1 else 0.5
        init[name] = (base + std * rng.standard_normal(shape)).astype(np.float32)
    for name, shape in BUFFERS.get(model, {}).items():
        init[name] = (rng.uniform(0.5, 1.5, shape) if name.endswith("std")
                      else 0.5 * rng.standard_normal(shape)).astype(np.float32)
    os.remove(os.path.join(out, "probe.safetensors"))
    weights = os.path.join(out, "init.safetensors")
    safetensors_io.save_file(init, weights)
    ref = grad(zoc, model, batch, os.path.join(out, "ref.safetensors"), weights)
    print("%s: %d parameters, loss %.6f" % (model, len(init), float(ref["loss"].ravel()[0])))


if __name__ == "__main__":
    main()
