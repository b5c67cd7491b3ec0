#!/usr/bin/env python3
"""Write PyTorch's outputs for the ops of issues 36 and 37, one small model per case.

Each case is a zoc model file (YAML, written here beside the PyTorch module it transcribes) and
a PyTorch module computing the same thing; this script writes, per case, into OUT/<case>/:

  model.yaml           the zoc model
  weights.safetensors  the module's state_dict (seeded random values, BatchNorm statistics too)
  input.npy            a seeded standard-normal batch (batch 2 or 3, non-square images)
  output<k>.npy        PyTorch's k-th output in fp32 (class indices as float32)

tests/numeric/ops_vs_pytorch_test.cpp runs each model on zoc's reference interpreter and
compares. Run by the reference_data fixture (tests/make_reference_data.sh) with Debian's torch
1.13; the numbers are torch's CPU kernels' with TF32 off. Usage: make_op_cases.py --out DIR
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
import safetensors_io  # noqa: E402  (models/safetensors_io.py)

CASES = {}


def case(name, shape, yaml_layers, output="", blocks=""):
    """Registers a case: the decorated function returns the PyTorch module. `blocks`: the model
    file's `blocks:` section."""

    def register(make):
        CASES[name] = (shape, yaml_layers, output, blocks, make)
        return make

    return register


class Fn(nn.Module):
    """A module around a function of the input (parameter-free cases)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


# --- issue 37: dense prediction ----------------------------------------------------------------

@case("upsample_nearest_size", (2, 3, 5, 7), "- up: {op: upsample_nearest, size: [12, 11]}")
def _():
    return Fn(lambda x: F.interpolate(x, size=(12, 11), mode="nearest"))


# A scale factor is not the size it gives: 5 * 2.5 = 12 rows, but indices floor(i / 2.5), not
# floor(i * 5 / 12); 1.9 and 2.1 give 9 and 14 (no shortcut for twice the size).
@case("upsample_nearest_scale", (2, 3, 5, 7),
      "- up: {op: upsample_nearest, scale_h: 2.5, scale_w: 1.7}\n"
      "- up2: {op: upsample_nearest, scale_h: 1.9, scale_w: 2.1}")
def _():
    return Fn(lambda x: F.interpolate(F.interpolate(x, scale_factor=(2.5, 1.7), mode="nearest"),
                                      scale_factor=(1.9, 2.1), mode="nearest"))


# One channel: PyTorch takes its channels-last kernel (the strides of [N, 1, H, W] are also
# channels-last ones), which maps out = 2 * in (10 * 2.05 = 20) and out = in directly.
@case("upsample_nearest_scale_one_channel", (2, 1, 10, 7),
      "- up: {op: upsample_nearest, scale_h: 2.05, scale_w: 1.05}")
def _():
    return Fn(lambda x: F.interpolate(x, scale_factor=(2.05, 1.05), mode="nearest"))


@case("upsample_bilinear_scale_one_channel", (2, 1, 10, 7),
      "- up: {op: upsample_bilinear, scale_h: 2.05, scale_w: 1.05}")
def _():
    return Fn(lambda x: F.interpolate(x, scale_factor=(2.05, 1.05), mode="bilinear"))


for _ac in (False, True):
    _flag = "true" if _ac else "false"

    @case("upsample_bilinear_size_ac_" + _flag, (2, 3, 5, 7),
          "- up: {op: upsample_bilinear, size: [13, 9], align_corners: %s}" % _flag)
    def _(ac=_ac):
        return Fn(lambda x: F.interpolate(x, size=(13, 9), mode="bilinear", align_corners=ac))

    # With align_corners the scale factor only sizes the output; without, it is the scale.
    @case("upsample_bilinear_scale_ac_" + _flag, (2, 3, 5, 7),
          "- up: {op: upsample_bilinear, scale_h: 2.5, scale_w: 0.6, align_corners: %s}\n"
          "- up2: {op: upsample_bilinear, scale_h: 1.05, scale_w: 3, align_corners: %s}"
          % (_flag, _flag))
    def _(ac=_ac):
        def fn(x):
            x = F.interpolate(x, scale_factor=(2.5, 0.6), mode="bilinear", align_corners=ac)
            return F.interpolate(x, scale_factor=(1.05, 3.0), mode="bilinear", align_corners=ac)

        return Fn(fn)


class ConvTransposeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0),
                                     output_padding=(1, 2), groups=2, dilation=(2, 1))
        self.up2 = nn.ConvTranspose2d(6, 5, 4, stride=2, padding=1, bias=False)

    def forward(self, x):
        return self.up2(self.up(x))


@case("conv_transpose2d", (2, 4, 5, 6),
      "- up: {op: conv_transpose2d, out_channels: 6, kernel: [3, 2], stride: [2, 3],"
      " padding: [1, 0], output_padding: [1, 2], groups: 2, dilation: [2, 1]}\n"
      "- up2: {op: conv_transpose2d, out_channels: 5, kernel: 4, stride: 2, padding: 1,"
      " bias: false}")
def _():
    return ConvTransposeNet()


@case("softmax_channels", (3, 5, 4, 6), "- sm: {op: softmax}")
def _():
    return Fn(lambda x: F.softmax(x, dim=1))


@case("log_softmax_channels", (3, 5, 4, 6), "- lsm: {op: log_softmax}")
def _():
    return Fn(lambda x: F.log_softmax(x, dim=1))


@case("log_softmax_features", (3, 7, 2, 3), "- flat: {op: flatten}\n- lsm: {op: log_softmax}")
def _():
    return Fn(lambda x: F.log_softmax(torch.flatten(x, 1), dim=1))


@case("argmax_channels", (3, 6, 5, 7), "- cls: {op: argmax}")
def _():
    return Fn(lambda x: x.argmax(dim=1).float())


@case("argmax_keepdim", (2, 4, 3, 5), "- cls: {op: argmax, keepdim: true}")
def _():
    return Fn(lambda x: x.argmax(dim=1, keepdim=True).float())


class TwoHeads(nn.Module):
    """A segmentation network's result: logits upsampled to the input, an auxiliary head, and
    the class map, returned as a tuple (a model with three outputs)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.aux = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        features = self.conv(x)
        out = F.interpolate(features, size=(12, 9), mode="bilinear", align_corners=False)
        return out, self.aux(features), out.argmax(1).float()


@case("several_outputs", (2, 3, 6, 5),
      "- conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}\n"
      "- aux: {op: conv2d, out_channels: 2, kernel: 1, input: conv}\n"
      "- out: {op: upsample_bilinear, size: [12, 9], input: conv}\n"
      "- classes: {op: argmax, input: out}",
      output="[out, aux, classes]")
def _():
    return TwoHeads()


# --- issue 36: hand-written and timm models -------------------------------------------------

class Normalize(nn.Module):
    """Input normalization with buffers at the top level: GoogLeNet's transform_input written
    as users write it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(1, 3, 1, 1))
        self.register_buffer("std", torch.ones(1, 3, 1, 1))
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv((x - self.mean) / self.std)


@case("normalize_buffers", (2, 3, 7, 5),
      "- norm_sub: {op: sub, tensor: mean, param_rank: 4}\n"
      "- norm_div: {op: div, tensor: std, param_rank: 4}\n"
      "- conv: {op: conv2d, out_channels: 4, kernel: 3}")
def _():
    return Normalize()


class LayerScale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x.mul(self.gamma.reshape(1, -1, 1, 1))


class Block(nn.Module):
    """timm's ConvNeXt-style residual with a [C] gamma, and a 0-dim buffer scale."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.ls1 = LayerScale(4)
        self.register_buffer("scale", torch.tensor(1.0))

    def forward(self, x):
        return x + self.ls1(self.conv(x)) * self.scale


class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x):
        return self.blocks(x)


@case("layer_scale_gamma", (2, 4, 5, 6),
      "- blocks: {block: ls_block, repeat: 2}",
      blocks="ls_block:\n"
      "  layers:\n"
      "    - conv: {op: conv2d, out_channels: 4, kernel: 3, padding: 1}\n"
      "    - ls1: {op: mul, tensor: ls1.gamma, param_rank: 1}\n"
      "    - scaled: {op: mul, tensor: scale, param_rank: 0}\n"
      "    - add: {op: add, inputs: [input, scaled]}")
def _():
    return Blocks()


@case("scalar_operands", (3, 2, 5, 4),
      "- a: {op: mul, scalar: 0.37}\n"
      "- b: {op: add, scalar: -1.25}\n"
      "- c: {op: sub, scalar: 0.5, reverse: true}\n"
      "- d: {op: div, scalar: 3}\n"
      "- e: {op: div, scalar: 2, reverse: true}\n"
      "- f: {op: sub, scalar: 0.1}")
def _():
    return Fn(lambda x: (2.0 / ((0.5 - (x * 0.37 + -1.25)) / 3)) - 0.1)


class Broadcasts(nn.Module):
    """Two activations broadcast: CBAM's spatial gate (an image times a one-channel map), an
    image's channel vector first, a difference of one shape."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Conv2d(3, 1, 3, padding=1)
        self.fc = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        spatial = x * torch.sigmoid(self.gate(x))
        vector = self.fc(F.adaptive_avg_pool2d(x, 1))
        return (vector - spatial) / (vector * x + 3)


@case("broadcast_two_tensors", (2, 3, 6, 5),
      "- gate: {op: conv2d, out_channels: 1, kernel: 3, padding: 1}\n"
      "- gate_act: {op: sigmoid}\n"
      "- spatial: {op: mul, inputs: [input, gate_act]}\n"
      "- pool: {op: global_avgpool, input: input}\n"
      "- fc: {op: conv2d, out_channels: 3, kernel: 1}\n"
      "- diff: {op: sub, inputs: [fc, spatial]}\n"
      "- prod: {op: mul, inputs: [fc, input]}\n"
      "- denom: {op: add, scalar: 3}\n"
      "- out: {op: div, inputs: [diff, denom]}")
def _():
    return Broadcasts()


class FeatureOperands(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 5)
        self.register_buffer("shift", torch.zeros(5))
        self.register_buffer("scale", torch.ones(1, 5))

    def forward(self, x):
        return (self.fc(torch.flatten(x, 1)) - self.shift) * self.scale


@case("feature_operands", (3, 3, 2, 2),
      "- flat: {op: flatten}\n"
      "- fc: {op: linear, out_features: 5}\n"
      "- shifted: {op: sub, tensor: shift}\n"
      "- scaled: {op: mul, tensor: scale, param_rank: 2}")
def _():
    return FeatureOperands()


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.leaky = nn.LeakyReLU(0.2)
        self.elu = nn.ELU(alpha=0.7)

    def forward(self, x):
        return self.elu(F.leaky_relu(x * 3, 0.01) + self.leaky(self.conv(x)))


@case("leaky_relu_elu", (2, 3, 5, 7),
      "- x3: {op: mul, scalar: 3}\n"
      "- leaky_default: {op: leaky_relu}\n"
      "- conv: {op: conv2d, out_channels: 3, kernel: 3, padding: 1, input: input}\n"
      "- leaky: {op: leaky_relu, negative_slope: 0.2}\n"
      "- sum: {op: add, inputs: [leaky_default, leaky]}\n"
      "- elu: {op: elu, alpha: 0.7}")
def _():
    return Activations()


class SeLinearView(nn.Module):
    """Squeeze-and-excitation written with Linear layers: the gate [N, C] viewed as
    [N, C, 1, 1] (reshape) to scale the image."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 2)
        self.fc2 = nn.Linear(2, 4)

    def forward(self, x):
        n, c = x.shape[:2]
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(x.mean((2, 3))))))
        return x * s.view(n, c, 1, 1) - s.view(n, -1, 1, 1)


@case("se_linear_view", (2, 4, 3, 5),
      "- pool: {op: global_avgpool}\n"
      "- flat: {op: flatten}\n"
      "- fc1: {op: linear, out_features: 2}\n"
      "- act: {op: relu}\n"
      "- fc2: {op: linear, out_features: 4}\n"
      "- gate: {op: sigmoid}\n"
      "- gate4: {op: reshape}\n"
      "- scaled: {op: mul, inputs: [input, gate4]}\n"
      "- gate4c: {op: reshape, channels: 4, input: gate}\n"
      "- out: {op: sub, inputs: [scaled, gate4c]}")
def _():
    return SeLinearView()


# --- writing ---------------------------------------------------------------------------------

def randomize(module, gen):
    """Seeded values for every floating tensor of the state_dict (running_var positive)."""
    with torch.no_grad():
        for name, t in module.state_dict().items():
            if not t.is_floating_point():
                continue
            values = torch.randn(t.shape, generator=gen)
            if name.endswith("running_var") or name.endswith("std"):
                values = values.abs() + 0.5
            t.copy_(values)


def write_case(out_dir, name):
    shape, layers, output, blocks, make = CASES[name]
    gen = torch.Generator().manual_seed(1000 + sorted(CASES).index(name))
    module = make().eval()
    randomize(module, gen)
    x = torch.randn(shape, generator=gen)
    with torch.no_grad():
        ys = module(x)
    ys = list(ys) if isinstance(ys, (tuple, list)) else [ys]
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    text = "zoc: 1\nname: %s\ninput: {channels: %d, height: %d, width: %d}\nlayers:\n" % (
        name, shape[1], shape[2], shape[3])
    text += "".join("  " + line + "\n" for line in layers.split("\n"))
    if output:
        text += "output: %s\n" % output
    if blocks:
        text += "blocks:\n" + "".join("  " + line + "\n" for line in blocks.split("\n"))
    with open(os.path.join(folder, "model.yaml"), "w") as f:
        f.write(text)
    tensors = {k: v.numpy() for k, v in module.state_dict().items()}
    safetensors_io.save_file(tensors, os.path.join(folder, "weights.safetensors"))
    np.save(os.path.join(folder, "input.npy"), x.numpy())
    for k, y in enumerate(ys):
        np.save(os.path.join(folder, "output%d.npy" % k), y.float().numpy())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(1)
    for name in CASES:
        write_case(args.out, name)
    print("make_op_cases.py: wrote %d cases to %s" % (len(CASES), args.out))


if __name__ == "__main__":
    main()
