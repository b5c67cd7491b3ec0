"""The two trained networks in PyTorch, their stated initializations, and their weights files.

Every implementation of a training run starts from one safetensors file of initial weights, so
that differences in accuracy come from the training and not from hidden defaults (the study zoc
follows lost accuracy exactly there). The networks are the ones the rest of zoc uses, not
copies: LeNet is models/export.py's, ResNet-50 torchvision's with conv1 replaced for one input
channel as export.py does, so the state_dict names are models/lenet.yaml's and
models/resnet50.yaml's; MobileNetV2 is torchvision's (zoc compiles its TorchScript,
train_pytorch.py --script-out). Files are written and read with models/safetensors_io.py.

Initializations (drawn from torch.Generator(seed * 16 + 4) in module registration order, weight
before bias, so a seed gives the same file on every machine and torch version):
  pytorch      PyTorch's documented defaults: Conv2d and Linear weights kaiming_uniform_(a=sqrt(5)),
               i.e. U(-b, b) with b = 1/sqrt(fan_in), biases U(-1/sqrt(fan_in), 1/sqrt(fan_in));
               BatchNorm weight 1, bias 0, running mean 0, running var 1.
  torchvision  what torchvision's ResNet constructor does on top: Conv2d weights
               kaiming_normal_(mode=fan_out, nonlinearity=relu), i.e. N(0, 2/fan_out); BatchNorm
               1 and 0; Linear and conv biases keep the PyTorch defaults.
  zero_init_residual (ResNet only) sets the last BatchNorm weight of each residual branch
               (Bottleneck.bn3) to 0, as torchvision's `zero_init_residual=True`.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(_ROOT, "models"))
import export as zoc_export  # noqa: E402  (models/export.py: LeNet, torchvision ResNets)
import safetensors_io  # noqa: E402

MODELS = ("lenet", "resnet50", "mobilenet_v2")
INITS = ("pytorch", "torchvision")
INIT_STREAM = 4  # export.py uses streams 1 (BatchNorm values) and 2 (input)


def build(model, num_classes=10, in_channels=1, resolution=28):
    """The network on the CPU in fp32 (constructor init; call initialize() or load())."""
    if model == "lenet":
        return zoc_export.LeNet(in_channels, num_classes, resolution).float()
    if model == "resnet50":
        import torchvision

        net = torchvision.models.resnet50(weights=None, num_classes=num_classes)
        if in_channels != 3:  # the standard stem kept, for C input channels (as export.py)
            net.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
        return net.float()
    if model == "mobilenet_v2":  # torchvision's, as the zoo scripts it (3 input channels)
        import torchvision

        if in_channels != 3:
            raise ValueError("mobilenet_v2 takes 3 input channels (--channels 3), not %d"
                             % in_channels)
        return torchvision.models.mobilenet_v2(weights=None, num_classes=num_classes).float()
    raise ValueError("unknown model %r (expected one of %s)" % (model, ", ".join(MODELS)))


def _fans(weight):
    receptive = 1
    for d in weight.shape[2:]:
        receptive *= d
    return weight.shape[1] * receptive, weight.shape[0] * receptive


def initialize(net, scheme, seed, zero_init_residual=False):
    """Overwrite every parameter and BatchNorm buffer of `net` with the stated init."""
    if scheme not in INITS:
        raise ValueError("unknown init %r (expected one of %s)" % (scheme, ", ".join(INITS)))
    g = torch.Generator().manual_seed(seed * 16 + INIT_STREAM)
    with torch.no_grad():
        for _, m in net.named_modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                fan_in, fan_out = _fans(m.weight)
                if scheme == "torchvision" and isinstance(m, nn.Conv2d):
                    m.weight.normal_(0.0, math.sqrt(2.0) / math.sqrt(fan_out), generator=g)
                else:  # kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound sqrt(3) * std
                    bound = math.sqrt(3.0) * math.sqrt(2.0 / 6.0) / math.sqrt(fan_in)
                    m.weight.uniform_(-bound, bound, generator=g)
                if m.bias is not None:
                    b = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
                    m.bias.uniform_(-b, b, generator=g)
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.fill_(1.0)
                m.bias.zero_()
                m.running_mean.zero_()
                m.running_var.fill_(1.0)
                m.num_batches_tracked.zero_()
        if zero_init_residual:
            from torchvision.models.resnet import Bottleneck

            blocks = [m for m in net.modules() if isinstance(m, Bottleneck)]
            if not blocks:
                raise ValueError("--zero-init-residual: this model has no residual blocks")
            for b in blocks:
                b.bn3.weight.zero_()
    return net


def state_arrays(net):
    """state_dict as numpy: floating tensors float32, integers kept (num_batches_tracked: I64)."""
    return zoc_export.state_dict_arrays(net)


def save(net, path, metadata):
    safetensors_io.save_file(state_arrays(net), path,
                             metadata={k: str(v) for k, v in metadata.items()})


def load(net, path):
    """Load a weights file into `net` (CPU); every name and shape must match, both ways."""
    try:
        tensors, metadata = safetensors_io.load_file(path)
    except (OSError, safetensors_io.SafetensorsError) as e:
        raise ValueError("%s: %s" % (path, e))
    expected = net.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise ValueError("%s: names differ from the model's state_dict: missing %s, unexpected %s"
                         % (path, missing[:5], extra[:5]))
    state = {}
    for name, ref in expected.items():
        array = tensors[name]
        if tuple(array.shape) != tuple(ref.shape):
            raise ValueError("%s: tensor %r has shape %s, the model wants %s"
                             % (path, name, list(array.shape), list(ref.shape)))
        if ref.is_floating_point() != np.issubdtype(array.dtype, np.floating):
            raise ValueError("%s: tensor %r has dtype %s, the model wants %s"
                             % (path, name, array.dtype, ref.dtype))
        state[name] = torch.from_numpy(array).to(ref.dtype)
    net.load_state_dict(state, strict=True)
    return metadata
