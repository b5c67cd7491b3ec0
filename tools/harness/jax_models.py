"""ResNet-50 and LeNet in Flax (linen), the networks of models/export.py, for the JAX/XLA rows.

The study this project follows compared raw cuDNN with TensorFlow/Keras; TensorFlow is not on
these machines, and XLA is its compiler, so JAX + Flax under jax.jit stands for that family. The
modules mirror torchvision's ResNet-50 (v1.5: the stride on the 3x3 convolution, a projection
shortcut on the first block of every stage) and export.py's LeNet exactly, in NHWC, with
parameter names that jax_weights.py maps a PyTorch state_dict onto. `dtype` is both the
parameter and the compute dtype (the PyTorch rows' `model.half()`); `precision` is passed to
every convolution and dense layer: lax.Precision.HIGHEST for fp32 (no TF32), None for JAX's
default (TF32 on Ampere and later).
"""

import functools
from typing import Any

import flax.linen as nn
import jax.numpy as jnp


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


def build(model, num_classes, dtype, precision):
    if model == "lenet":
        return LeNet(num_classes, dtype, precision)
    if model == "resnet50":
        return ResNet50(num_classes, dtype, precision)
    raise ValueError("no Flax version of %r (the harness has ResNet-50 and LeNet)" % model)
