"""The classic CNN zoo's torchvision classifiers with seeded, non-trivial weights (issue 20), and
the two segmentation networks of the harness's seg sweep (issue 37) with the same recipe.

Shared by the zoo test's exporter (tests/zoo/export_zoo.py, Debian's torch 1.13 on the CPU) and
models/export.py (the GPU check and the benchmark harness, torch 2.x on the GPU machine), so that
every route judges the same networks with the same weights recipe. How the weights are made, and
why, is export_zoo.py's docstring; in short: torchvision's default init under a seed, BatchNorm
and LayerNorm affine parameters randomized, BatchNorm statistics calibrated layer by layer on a
seeded batch, the last BatchNorm of every residual branch scaled by 1/sqrt(branches), ConvNeXt's
layer scale ~ U(0.1, 1).
"""

import math
import warnings

import torch
import torch.nn as nn

# The 17 classifiers of issue 20.
NAMES = ("resnet152", "resnext50_32x4d", "wide_resnet50_2", "regnet_x_400mf", "squeezenet1_1",
         "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "regnet_y_400mf", "densenet121",
         "googlenet", "inception_v3", "shufflenet_v2_x1_0", "mnasnet0_5", "convnext_tiny",
         "alexnet", "vgg11_bn")
# The harness's dense predictors (issue 37): torchvision's constructors with their own defaults
# (21 classes, aux_loss None: no auxiliary head, so the model returns {"out": map} alone) and no
# pretrained backbone. Their forward returns a dict; main_output() takes its "out" map.
SEGMENTATION = ("deeplabv3_mobilenet_v3_large", "fcn_resnet50")


def build(name, seed):
    """The torchvision model `name` with seeded default weights, in eval mode."""
    import torchvision

    torch.manual_seed(seed)
    with warnings.catch_warnings():  # GoogLeNet/Inception warn about their init_weights default
        warnings.simplefilter("ignore")
        if name in SEGMENTATION:  # weights_backbone=None: the default would download ImageNet's
            make = getattr(torchvision.models.segmentation, name)
            return make(weights=None, weights_backbone=None).float().eval()
        return getattr(torchvision.models, name)(weights=None).float().eval()


def main_output(y):
    """The output judged and timed: a segmentation network's "out" map, else y itself."""
    return y["out"] if isinstance(y, dict) else y


def residual_branch_ends(model):
    """The last BatchNorm of every residual branch (a block whose output is input + branch)."""
    from torchvision.models import regnet, resnet

    ends = []
    for m in model.modules():
        if isinstance(m, resnet.Bottleneck):
            ends.append(m.bn3)
        elif isinstance(m, resnet.BasicBlock):
            ends.append(m.bn2)
        else:
            branch = None
            if isinstance(m, regnet.ResBottleneckBlock):
                branch = m.f
            elif getattr(m, "use_res_connect", False):  # MobileNetV2/V3, EfficientNet
                branch = getattr(m, "conv", None) or getattr(m, "block", None)
            elif getattr(m, "apply_residual", False):  # MNASNet
                branch = m.layers
            bns = [b for b in branch.modules() if isinstance(b, nn.BatchNorm2d)] if branch else []
            ends += bns[-1:]
    return ends


def randomize(model, x, seed):
    """Non-trivial affine parameters, layer scales and calibrated BN statistics (see above).
    Returns the names of the modules the eval-mode forward ran."""
    from torchvision.models.convnext import CNBlock

    g = torch.Generator().manual_seed(seed * 16 + 1)
    ends = {id(b) for b in residual_branch_ends(model)}
    branch_scale = 1.0 / math.sqrt(len(ends)) if ends else 1.0
    with torch.no_grad():
        for module in model.modules():  # registration order: deterministic
            if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)):
                scale = branch_scale if id(module) in ends else 1.0
                module.weight.copy_((torch.rand(module.weight.shape, generator=g) + 0.5) * scale)
                module.bias.copy_(torch.randn(module.bias.shape, generator=g) * 0.1)
            if isinstance(module, CNBlock):
                shape = module.layer_scale.shape
                module.layer_scale.copy_(torch.rand(shape, generator=g) * 0.9 + 0.1)
    ran, hooks = set(), []

    def calibrate(module, inputs):
        square = inputs[0].square().mean(dim=(0, 2, 3))
        module.running_var.copy_(square + 4.0 * square.mean())
        module.running_mean.copy_(torch.randn(square.shape, generator=g) * 0.1 * square.sqrt())

    for name, module in model.named_modules():
        hooks.append(module.register_forward_pre_hook(
            lambda m, i, name=name: ran.add(name)))
        if isinstance(module, nn.BatchNorm2d):
            hooks.append(module.register_forward_pre_hook(calibrate))
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return ran


def used_keys(model, ran):
    """The state_dict names of the modules that ran (`ran`: randomize()'s result)."""
    return {key for key in model.state_dict() if (key.rsplit(".", 1)[0] if "." in key else "") in ran}


def calibrated(name, seed, resolution, calibration_batch=None):
    """build() then randomize() on a seeded calibration batch (16 samples; 4 for a segmentation
    network, whose maps give every BatchNorm hundreds of pixels per sample and whose CPU forward
    at 520x520 is slow); returns (model, modules that ran)."""
    if calibration_batch is None:
        calibration_batch = 4 if name in SEGMENTATION else 16
    model = build(name, seed)
    calibration = torch.randn((calibration_batch, 3, resolution, resolution),
                              generator=torch.Generator().manual_seed(seed * 16 + 3))
    return model, randomize(model, calibration, seed)
