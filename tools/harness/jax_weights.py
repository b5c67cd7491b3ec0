"""PyTorch state_dict -> Flax variables, for the harness's JAX/XLA rows (numpy only).

Every implementation in the harness runs the same weights.safetensors. The JAX rows are Flax
(linen) modules (jax_models.py), whose parameters live in a nested tree in NHWC conventions; this
module converts a state_dict to that tree once, at load time, so that nothing is transposed in
the timed forward: convolution kernels OIHW -> HWIO, linear weights [out, in] -> [in, out]
(LeNet's first linear layer also has its inputs reordered from PyTorch's C,H,W flatten order to
the H,W,C order of a flattened NHWC tensor), BatchNorm weight/bias -> scale/bias under 'params'
and running_mean/running_var -> mean/var under 'batch_stats'. Module paths follow Flax's naming
in jax_models.py: a numbered child joins its parent with '_' (`layer1.0.downsample.1` ->
`layer1_0/downsample_1`). It needs no JAX, so tests/harness checks it in CI with a NumPy NHWC
forward against PyTorch's output.
"""

from collections.abc import Mapping

import numpy as np


def module_path(parts):
    """['layer1', '0', 'downsample', '0'] -> ['layer1_0', 'downsample_0']."""
    out = []
    for p in parts:
        if p.isdigit() and out:
            out[-1] = "%s_%s" % (out[-1], p)
        else:
            out.append(p)
    return out


def _put(tree, path, leaf, value, name):
    node = tree
    for p in path:
        node = node.setdefault(p, {})
    if leaf in node:
        raise ValueError("two tensors map to %s/%s (the second is %r)" % ("/".join(path), leaf, name))
    node[leaf] = np.ascontiguousarray(value)


def lenet_fc1_to_hwc(w, channels):
    """fc1's columns from PyTorch's flatten order (C, H, W) to an NHWC flatten's (H, W, C)."""
    out_f, in_f = w.shape
    side = int(round((in_f // channels) ** 0.5))
    if channels * side * side != in_f:
        raise ValueError("fc1 has %d inputs, not %d channels x a square map" % (in_f, channels))
    return w.reshape(out_f, channels, side, side).transpose(0, 2, 3, 1).reshape(out_f, in_f)


def flax_variables(model, tensors):
    """{'params': ..., 'batch_stats': ...} as nested dicts of float32 arrays, from `tensors`
    (state_dict name -> numpy array) of `model` ('lenet' or a ResNet)."""
    params, stats = {}, {}
    for name in sorted(tensors):
        a = np.asarray(tensors[name])
        parts = name.split(".")
        leaf, path = parts[-1], module_path(parts[:-1])
        if leaf == "num_batches_tracked":
            continue
        a = a.astype(np.float32)
        if leaf == "weight" and a.ndim == 4:
            _put(params, path, "kernel", a.transpose(2, 3, 1, 0), name)  # OIHW -> HWIO
        elif leaf == "weight" and a.ndim == 2:
            if model == "lenet" and path == ["fc1"]:
                a = lenet_fc1_to_hwc(a, tensors["conv2.weight"].shape[0])
            _put(params, path, "kernel", a.T, name)
        elif leaf == "weight" and a.ndim == 1:
            _put(params, path, "scale", a, name)
        elif leaf == "bias":
            _put(params, path, "bias", a, name)
        elif leaf == "running_mean":
            _put(stats, path, "mean", a, name)
        elif leaf == "running_var":
            _put(stats, path, "var", a, name)
        else:
            raise ValueError("no Flax counterpart for tensor %r of shape %s" % (name, a.shape))
    out = {"params": params}
    if stats:
        out["batch_stats"] = stats
    return out


# torchvision's block lists. MobileNetV2: (expand ratio, output channels, blocks, first stride);
# EfficientNet-B0: (expand ratio, kernel, first stride, input channels, output channels, blocks).
MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))
EFFICIENTNET_B0 = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
                   (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
                   (6, 3, 1, 192, 320, 1))


def inverted_residuals(model):
    """The inverted-residual blocks of torchvision's MobileNetV2 or EfficientNet-B0 in order, as
    (Flax name, input channels, output channels, depthwise kernel, stride, expanded channels),
    shared by jax_models.py and the CPU test's NumPy forward. The stem has 32 channels; the
    expanded width is input x ratio (torchvision rounds it to a multiple of 8, which every
    block here already is); a block adds its input back when stride is 1 and the widths match."""
    out = []
    if model == "mobilenet_v2":
        cin = 32
        for t, c, n, s in MOBILENET_V2:
            for i in range(n):
                out.append(("features_%d" % (len(out) + 1), cin, c, 3, s if i == 0 else 1, cin * t))
                cin = c
    elif model == "efficientnet_b0":
        for stage, (t, k, s, cin, cout, n) in enumerate(EFFICIENTNET_B0):
            for i in range(n):
                c = cin if i == 0 else cout
                out.append(("features_%d_%d" % (stage + 1, i), c, cout, k, s if i == 0 else 1, c * t))
    else:
        raise ValueError("no inverted residuals in %r" % model)
    return out


def check_against(variables, shapes, where=""):
    """Raises unless `variables` has exactly the leaves and shapes of `shapes` (a tree of shape
    tuples, e.g. from jax.eval_shape(model.init, ...)): a wrong name or layout fails loudly
    before anything is timed."""
    missing, extra, wrong = [], [], []

    def walk(v, s, path):
        for k in sorted(set(v) | set(s)):
            p = path + "/" + k
            if k not in v:
                missing.append(p)
            elif k not in s:
                extra.append(p)
            elif isinstance(s[k], Mapping) != isinstance(v[k], Mapping):
                wrong.append("%s: %s vs %s" % (p, type(v[k]).__name__, type(s[k]).__name__))
            elif isinstance(s[k], Mapping):
                walk(v[k], s[k], p)
            elif tuple(np.shape(v[k])) != tuple(s[k]):
                wrong.append("%s: %s, the model wants %s" % (p, np.shape(v[k]), tuple(s[k])))
    walk(variables, shapes, "")
    if missing or extra or wrong:
        raise ValueError("%sweights do not fit the Flax model: missing %s; unused %s; wrong %s" % (
            where, missing[:5], extra[:5], wrong[:5]))
