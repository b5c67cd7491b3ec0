#!/usr/bin/env python3
"""New weights never meet an old compiled-in constant (issue 36's never-wrong gap).

zoc compiles a one-element initializer of an ONNX file that only scales or shifts an activation
(timm's LearnableAffineBlock `scale * x + bias`, shape [1]) into the layer as a constant; a
TorchScript file's one-element parameter or buffer stays a tensor of the weights file, read at
load as any weight is. A user who then runs the same model file with a fine-tuned state_dict
(`zoc run --weights`, safetensors "format": "pt") used to get the old constant silently. Now a
weights file that holds a compiled-in tensor must hold the value compiled in: the same value runs
and matches PyTorch; another value, or another shape, is an error naming the tensor, both values
and the layer, and nothing is printed on stdout. Through TorchScript, tuned values run and match
PyTorch with the tuned weights; another shape is the weights loader's shape error.

The model is tests/forms/forms.py's `scalar_parameter_affine` (parameters `scale` and `bias` of
shape [1], a buffer `shift`), written by make_forms.py (scripted, traced, ONNX opset 17); the
state_dicts are written with models/safetensors_io.py.

Usage: compiled_constants.py PYTHON ZOC SCRATCH
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
import safetensors_io  # noqa: E402  (models/safetensors_io.py, the project's writer)
ROUTES = ("model.pt", "model_traced.pt", "model.onnx")


def write_state_dict(path, tensors):
    """`tensors`: name -> float32 array, written as a PyTorch state_dict ("format": "pt")."""
    safetensors_io.save_file({k: np.asarray(v, "<f4") for k, v in tensors.items()}, path,
                             {"format": "pt"})


def state_dict(python, folder):
    """The scripted module's state_dict as numpy arrays, through torch (PYTHON)."""
    out = os.path.join(folder, "state_dict.npz")
    code = ("import sys, numpy as np, torch\n"
            "m = torch.jit.load(sys.argv[1])\n"
            "np.savez(sys.argv[2], **{k: v.float().numpy() for k, v in m.state_dict().items()})\n")
    subprocess.run([python, "-c", code, os.path.join(folder, "model.pt"), out], check=True)
    return dict(np.load(out))


def pytorch_output(python, folder, weights, out):
    """The scripted module's output on input.npy with the state_dict `weights` (an .npz)."""
    code = ("import sys, numpy as np, torch\n"
            "m = torch.jit.load(sys.argv[1])\n"
            "m.load_state_dict({k: torch.tensor(v) for k, v in np.load(sys.argv[2]).items()})\n"
            "x = torch.tensor(np.load(sys.argv[3]))\n"
            "np.save(sys.argv[4], m(x).detach().numpy())\n")
    subprocess.run([python, "-c", code, os.path.join(folder, "model.pt"), weights,
                    os.path.join(folder, "input.npy"), out], check=True)
    return np.load(out)


def run(zoc, folder, model, weights):
    out = os.path.join(folder, "out.npy")
    r = subprocess.run([zoc, "run", os.path.join(folder, model), "--weights", weights,
                        "--input", os.path.join(folder, "input.npy"), "--output", out],
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr, out


def main():
    python, zoc, scratch = sys.argv[1:4]
    subprocess.run([python, os.path.join(HERE, "forms", "make_forms.py"), "--out", scratch,
                    "--forms", "scalar_parameter_affine"], check=True, stdout=subprocess.DEVNULL)
    folder = os.path.join(scratch, "scalar_parameter_affine")
    sd = state_dict(python, folder)
    assert sd["scale"].shape == (1,) and float(sd["scale"][0]) == 0.75, sd["scale"]
    want = np.load(os.path.join(folder, "output_0.npy"))
    same = os.path.join(folder, "same.safetensors")
    write_state_dict(same, sd)
    tuned_sd = {**sd, "scale": np.array([0.5], "f4")}
    tuned = os.path.join(folder, "tuned.safetensors")
    write_state_dict(tuned, tuned_sd)
    np.savez(os.path.join(folder, "tuned.npz"), **tuned_sd)
    want_tuned = pytorch_output(python, folder, os.path.join(folder, "tuned.npz"),
                                os.path.join(folder, "tuned_output.npy"))
    shifted_sd = {**sd, "shift": np.array([[[[2.0]]]], "f4")}
    shifted = os.path.join(folder, "shifted.safetensors")
    write_state_dict(shifted, shifted_sd)
    np.savez(os.path.join(folder, "shifted.npz"), **shifted_sd)
    want_shifted = pytorch_output(python, folder, os.path.join(folder, "shifted.npz"),
                                  os.path.join(folder, "shifted_output.npy"))
    reshaped = os.path.join(folder, "reshaped.safetensors")
    write_state_dict(reshaped, {**sd, "bias": np.array([-0.125, 1], "f4")})
    # The layer's name differs by route (mul, mul_1, ...): "{layer}" stands for it.
    compiled = "compiled into layer '{layer}' ({op}) as a constant: compile a model file that " \
               "holds these weights instead"
    onnx = {  # an initializer's value is compiled in
        tuned: "tensor 'scale' holds 0.5, but the model file's value 0.75 is " +
               compiled.replace("{op}", "mul"),
        shifted: "tensor 'shift' holds 2, but the model file's value 1.5 is " +
                 compiled.replace("' ({op})", ""),
        reshaped: "tensor 'bias' has shape [2] and dtype F32, but the model file's value -0.125 "
                  "is " + compiled.replace("{op}", "add"),
    }
    script = {  # a parameter or buffer is a weight
        tuned: want_tuned,
        shifted: want_shifted,
        reshaped: "tensor 'bias' has shape [2], but layer '{layer}' (add) expects [1]",
    }
    # (weights file, the output it must give or the text its error must hold), per route
    cases = {
        route: [(same, want)] + [(w, (onnx if route == "model.onnx" else script)[w])
                                 for w in (tuned, shifted, reshaped)]
        for route in ROUTES}
    failures = 0
    for model in ROUTES:
        for weights, expected in cases[model]:
            rc, stdout, stderr, out = run(zoc, folder, model, weights)
            name = "%s with %s" % (model, os.path.basename(weights))
            if not isinstance(expected, str):
                err = float(np.linalg.norm(np.load(out) - expected) / np.linalg.norm(expected)) \
                    if rc == 0 else float("inf")
                ok = rc == 0 and err <= 1e-5
                detail = "rel L2 %.3g" % err if rc == 0 else stderr.strip()
            else:
                prefix, suffix = expected.split("{layer}")
                ok = rc == 1 and stdout == "" and any(
                    prefix in line and suffix in line.split(prefix, 1)[1]
                    for line in stderr.splitlines())
                detail = stderr.strip()
            print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail))
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
