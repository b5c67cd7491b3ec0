"""ResNet-50, LeNet, MobileNetV2 and EfficientNet-B0 in Flax (linen), for the JAX/XLA rows.

The study this project follows compared raw cuDNN with TensorFlow/Keras; TensorFlow is not on
these machines, and XLA is its compiler, so JAX + Flax under jax.jit stands for that family. The
modules mirror torchvision's ResNet-50 (v1.5: the stride on the 3x3 convolution, a projection
shortcut on the first block of every stage) and export.py's LeNet exactly, in NHWC, with
parameter names that jax_weights.py maps a PyTorch state_dict onto. `dtype` is both the
parameter and the compute dtype (the PyTorch rows' `model.half()`); `precision` is passed to
every convolution and dense layer: lax.Precision.HIGHEST for fp32 (no TF32), None for JAX's
default (TF32 on Ampere and later).

MobileNetV2 and EfficientNet-B0 are torchvision's (the zoo sweep's, models/zoo.py's weights):
torchvision's Conv2dNormActivation (a convolution without bias, padding (k-1)//2, BatchNorm,
ReLU6 or SiLU) and inverted residuals (1x1 expansion unless the ratio is 1, a depthwise k x k
convolution as feature_group_count = channels, for EfficientNet squeeze-excitation: global mean,
1x1 conv with bias, SiLU, 1x1 conv with bias, sigmoid gate, then a 1x1 projection with BatchNorm
and no activation, the input added back when stride is 1 and the widths match). Stochastic depth
and the classifier's dropout are the identity at inference, and BatchNorm has PyTorch's default
eps (1e-5) in both. The block list is jax_weights.inverted_residuals, which the CPU test's NumPy
forward shares.
"""

import functools
from typing import Any

import flax.linen as nn
import jax.numpy as jnp

from jax_weights import inverted_residuals


def _conv(dtype, precision, **kw):
    return functools.partial(nn.Conv, dtype=dtype, param_dtype=dtype, precision=precision, **kw)


def _norm(dtype):
    # Inference form: running statistics, PyTorch's eps.
    return functools.partial(nn.BatchNorm, use_running_average=True, epsilon=1e-5, dtype=dtype,
                             param_dtype=dtype)


class Bottleneck(nn.Module):
    planes: int
    stride: int
    downsample: bool
    dtype: Any = jnp.float32
    precision: Any = None

    @nn.compact
    def __call__(self, x):
        conv = _conv(self.dtype, self.precision, use_bias=False)
        norm = _norm(self.dtype)
        s = (self.stride, self.stride)
        y = nn.relu(norm(name="bn1")(conv(self.planes, (1, 1), name="conv1")(x)))
        y = conv(self.planes, (3, 3), strides=s, padding=((1, 1), (1, 1)), name="conv2")(y)
        y = nn.relu(norm(name="bn2")(y))
        y = norm(name="bn3")(conv(4 * self.planes, (1, 1), name="conv3")(y))
        if self.downsample:
            x = conv(4 * self.planes, (1, 1), strides=s, name="downsample_0")(x)
            x = norm(name="downsample_1")(x)
        return nn.relu(y + x)


class ResNet50(nn.Module):
    num_classes: int = 1000
    dtype: Any = jnp.float32
    precision: Any = None

    @nn.compact
    def __call__(self, x):  # [N, H, W, C]
        conv = _conv(self.dtype, self.precision, use_bias=False)
        x = conv(64, (7, 7), strides=(2, 2), padding=((3, 3), (3, 3)), name="conv1")(x)
        x = nn.relu(_norm(self.dtype)(name="bn1")(x))
        x = nn.max_pool(x, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
        for stage, (planes, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
            for i in range(blocks):
                stride = 2 if stage > 0 and i == 0 else 1
                x = Bottleneck(planes, stride, i == 0, self.dtype, self.precision,
                               name="layer%d_%d" % (stage + 1, i))(x)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.num_classes, dtype=self.dtype, param_dtype=self.dtype,
                        precision=self.precision, name="fc")(x)


class LeNet(nn.Module):
    num_classes: int = 10
    dtype: Any = jnp.float32
    precision: Any = None

    @nn.compact
    def __call__(self, x):  # [N, H, W, C]
        conv = _conv(self.dtype, self.precision, padding=((2, 2), (2, 2)))
        dense = functools.partial(nn.Dense, dtype=self.dtype, param_dtype=self.dtype,
                                  precision=self.precision)
        x = nn.max_pool(nn.relu(conv(32, (5, 5), name="conv1")(x)), (2, 2), strides=(2, 2))
        x = nn.max_pool(nn.relu(conv(64, (5, 5), name="conv2")(x)), (2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))  # H, W, C order: jax_weights.lenet_fc1_to_hwc
        x = nn.relu(dense(1024, name="fc1")(x))  # dropout: the identity at inference
        return dense(self.num_classes, name="fc2")(x)


def _conv_norm(x, prefix, features, kernel, stride, groups, dtype, precision, act):
    """torchvision's Conv2dNormActivation PREFIX (modules PREFIX.0 and PREFIX.1, in Flax PREFIX_0
    and PREFIX_1), inside the calling module's compact method."""
    pad = (kernel - 1) // 2
    x = _conv(dtype, precision, use_bias=False)(
        features, (kernel, kernel), strides=(stride, stride), padding=((pad, pad), (pad, pad)),
        feature_group_count=groups, name=prefix + "_0")(x)
    x = _norm(dtype)(name=prefix + "_1")(x)
    return act(x) if act else x


class SqueezeExcitation(nn.Module):
    """torchvision.ops.SqueezeExcitation: x times a per-channel gate computed from its mean."""
    dtype: Any = jnp.float32
    precision: Any = None

    @nn.compact
    def __call__(self, x, squeeze):
        conv = _conv(self.dtype, self.precision, use_bias=True, kernel_size=(1, 1))
        s = nn.silu(conv(squeeze, name="fc1")(jnp.mean(x, axis=(1, 2), keepdims=True)))
        return x * nn.sigmoid(conv(x.shape[-1], name="fc2")(s))


class InvertedResidual(nn.Module):
    """MobileNetV2's InvertedResidual (modules conv.0, conv.1, ..., ReLU6) or EfficientNet's
    MBConv (block.0, block.1, ..., SiLU, squeeze-excitation), configured by the entry of its
    own name (the torchvision path, features_3 or features_2_1) in the model's block list."""
    model: str
    dtype: Any = jnp.float32
    precision: Any = None

    @nn.compact
    def __call__(self, x):
        d, p, se = self.dtype, self.precision, self.model == "efficientnet_b0"
        _, cin, cout, kernel, stride, hidden = {
            b[0]: b for b in inverted_residuals(self.model)}[self.name]
        act, part = (nn.silu, "block_%d") if se else (nn.relu6, "conv_%d")
        y, i = x, 0
        if hidden != cin:
            y, i = _conv_norm(y, part % 0, hidden, 1, 1, 1, d, p, act), 1
        y = _conv_norm(y, part % i, hidden, kernel, stride, hidden, d, p, act)
        if se:
            y = SqueezeExcitation(d, p, name=part % (i + 1))(y, max(1, cin // 4))
            y = _conv_norm(y, part % (i + 2), cout, 1, 1, 1, d, p, None)
        else:  # the projection's convolution and BatchNorm are conv.N and conv.N+1 themselves
            y = _conv(d, p, use_bias=False)(cout, (1, 1), name=part % (i + 1))(y)
            y = _norm(d)(name=part % (i + 2))(y)
        return x + y if stride == 1 and cin == cout else y


class MobileNet(nn.Module):
    """MobileNetV2 (model 'mobilenet_v2') or EfficientNet-B0 ('efficientnet_b0'): a 3x3/2 stem
    to 32 channels, the inverted residuals, a 1x1 head to 1280 channels, global mean, linear."""
    model: str
    num_classes: int = 1000
    dtype: Any = jnp.float32
    precision: Any = None

    @nn.compact
    def __call__(self, x):  # [N, H, W, C]
        d, p = self.dtype, self.precision
        se = self.model == "efficientnet_b0"
        act = nn.silu if se else nn.relu6
        x = _conv_norm(x, "features_0", 32, 3, 2, 1, d, p, act)
        for block in inverted_residuals(self.model):
            x = InvertedResidual(self.model, d, p, name=block[0])(x)
        x = _conv_norm(x, "features_8" if se else "features_18", 1280, 1, 1, 1, d, p, act)
        x = jnp.mean(x, axis=(1, 2))  # the classifier's dropout: the identity at inference
        return nn.Dense(self.num_classes, dtype=d, param_dtype=d, precision=p,
                        name="classifier_1")(x)


def build(model, num_classes, dtype, precision):
    if model == "lenet":
        return LeNet(num_classes, dtype, precision)
    if model == "resnet50":
        return ResNet50(num_classes, dtype, precision)
    if model in ("mobilenet_v2", "efficientnet_b0"):
        return MobileNet(model, num_classes, dtype, precision)
    raise ValueError("no Flax version of %r (the harness has ResNet-50, LeNet, MobileNetV2 and "
                     "EfficientNet-B0)" % model)
