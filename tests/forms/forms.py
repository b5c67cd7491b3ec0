"""The hand-written forms of issue 36 and the dense-prediction forms of issue 37, as small models.

Each FORMS entry is a module whose forward is written the way people write the form in PyTorch
(x - mean, F.interpolate(x, size=y.shape[-2:]), a dict of outputs, ...), so that the forms test
(make_forms.py, check_forms.py) judges zoc on what the TorchScript tracer, the scripter and the
ONNX exporter make of the real spelling, not of a spelling chosen to suit zoc. Every form starts
with a convolution so that its input is an image with learned, seeded weights before the form.
"""

import math
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

FORMS = {}


def form(name):
    def register(cls):
        FORMS[name] = cls
        return cls
    return register


class Stem(nn.Module):
    """conv 3 -> c, then the form in `body` (a method of the subclass)."""

    def __init__(self, c=4):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3, padding=1)


# --- issue 36: hand-written forms ------------------------------------------------------------

@form("sub_tensors")
class SubTensors(Stem):
    def forward(self, x):
        return self.conv(x) - x[:, :1]


@form("scalar_ops")
class ScalarOps(Stem):
    def forward(self, x):
        y = self.conv(x)
        return (y / 2.5) * 1.5 + 0.25 - (y * 0.5)


@form("input_normalization")
class InputNormalization(Stem):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, x):
        return self.conv((x - self.mean) / self.std)


@form("se_linear_view")
class SeLinearView(Stem):
    def __init__(self):
        super().__init__(8)
        self.fc1 = nn.Linear(8, 2)
        self.fc2 = nn.Linear(2, 8)

    def forward(self, x):
        y = self.conv(x)
        n, c, _, _ = y.shape
        s = y.mean((2, 3))
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s)))).view(n, c, 1, 1)
        return y * s


@form("eca_attention")
class EcaAttention(Stem):
    """timm's EcaModule: a 1-D convolution along the pooled channels, then x * gate expanded."""

    def __init__(self):
        super().__init__(8)
        self.eca = nn.Conv1d(1, 1, 3, padding=1, bias=False)

    def forward(self, x):
        y = self.conv(x)
        s = y.mean((2, 3)).view(y.shape[0], 1, -1)
        s = torch.sigmoid(self.eca(s)).view(y.shape[0], -1, 1, 1)
        return y * s.expand_as(y)


@form("split_attention")
class SplitAttention(Stem):
    """timm's ResNeSt SplitAttn (radix 2, cardinality 2): the conv's channels seen as
    [N, R, C, H, W], summed over R and pooled; the attention's softmax over R of
    [N, G, R, -1].transpose(1, 2); the branches weighted and summed over R."""

    def __init__(self):
        super().__init__()
        self.radix, self.cardinality = 2, 2
        self.conv2 = nn.Conv2d(4, 16, 3, padding=1, groups=4)
        self.fc1 = nn.Conv2d(8, 4, 1, groups=2)
        self.fc2 = nn.Conv2d(4, 16, 1, groups=2)

    def forward(self, x):
        x = F.relu(self.conv2(self.conv(x)))
        B, RC, H, W = x.shape
        x = x.reshape((B, self.radix, RC // self.radix, H, W))
        gap = x.sum(dim=1).mean((2, 3), keepdim=True)
        attn = self.fc2(F.relu(self.fc1(gap)))
        attn = attn.view(B, self.cardinality, self.radix, -1).transpose(1, 2)
        attn = F.softmax(attn, dim=1).reshape(B, -1).view(B, -1, 1, 1)
        out = (x * attn.reshape((B, self.radix, RC // self.radix, 1, 1))).sum(dim=1)
        return out.contiguous()


@form("selective_kernel")
class SelectiveKernel(Stem):
    """timm's SKNet SelectiveKernel with three paths: torch.stack of the paths along dim 1, the
    sum over them, the softmax over them of a [N, R, C, 1, 1] view, the weighted sum."""

    def __init__(self):
        super().__init__()
        self.paths = nn.ModuleList([nn.Conv2d(4, 4, 3, padding=d, dilation=d) for d in (1, 2, 3)])
        self.fc_reduce = nn.Conv2d(4, 2, 1)
        self.fc_select = nn.Conv2d(2, 12, 1, bias=False)

    def forward(self, x):
        x = self.conv(x)
        x = torch.stack([F.relu(p(x)) for p in self.paths], dim=1)
        a = self.fc_select(F.relu(self.fc_reduce(x.sum(1).mean((2, 3), keepdim=True))))
        B, C, H, W = a.shape
        a = torch.softmax(a.view(B, 3, C // 3, H, W), dim=1)
        return torch.sum(x * a, dim=1)


@form("leaky_relu_elu")
class LeakyReluElu(Stem):
    def __init__(self):
        super().__init__()
        self.leaky = nn.LeakyReLU(0.2)
        self.elu = nn.ELU(0.7)

    def forward(self, x):
        return self.elu(self.leaky(self.conv(x))) + F.leaky_relu(x[:, :1])


@form("prelu")
class PRelu(Stem):
    def __init__(self):
        super().__init__()
        self.act = nn.PReLU(4, 0.2)
        self.act1 = nn.PReLU()

    def forward(self, x):
        return self.act1(self.act(self.conv(x)))


@form("group_norm")
class GroupNorm(Stem):
    def __init__(self):
        super().__init__(8)
        self.norm = nn.GroupNorm(2, 8)

    def forward(self, x):
        return self.norm(self.conv(x))


@form("instance_norm")
class InstanceNorm(Stem):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm2d(4, affine=True)

    def forward(self, x):
        return self.norm(self.conv(x))


@form("layer_norm_chw")
class LayerNormChw(Stem):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm([4, 20, 28])

    def forward(self, x):
        return self.norm(self.conv(x))


@form("batchnorm1d_head")
class BatchNorm1dHead(Stem):
    def __init__(self):
        super().__init__(8)
        self.fc = nn.Linear(8, 6)
        self.bn = nn.BatchNorm1d(6)
        self.out = nn.Linear(6, 5)

    def forward(self, x):
        y = F.adaptive_avg_pool2d(self.conv(x), 1).flatten(1)
        return self.out(F.relu(self.bn(self.fc(y))))


@form("softmax_channels")
class SoftmaxChannels(Stem):
    def forward(self, x):
        y = self.conv(x)
        return torch.softmax(y, 1) + F.log_softmax(y, dim=1)


@form("clamp")
class Clamp(Stem):
    def forward(self, x):
        return torch.clamp(self.conv(x), -0.3, 0.4) + x[:, :1].clamp(min=0.1)


@form("channel_slice")
class ChannelSlice(Stem):
    def __init__(self):
        super().__init__(6)

    def forward(self, x):
        y = self.conv(x)
        return y[:, 1:3] * y[:, 4:6]


@form("uneven_split")
class UnevenSplit(Stem):
    def __init__(self):
        super().__init__(6)

    def forward(self, x):
        a, b = torch.split(self.conv(x), [2, 4], dim=1)
        return torch.cat([b, a.relu()], 1)


@form("batchnorm_no_affine")
class BatchNormNoAffine(Stem):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(4, affine=False)

    def forward(self, x):
        return self.bn(self.conv(x))


@form("shared_layer")
class SharedLayer(Stem):
    def __init__(self):
        super().__init__()
        self.twice = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        return self.twice(F.relu(self.twice(self.conv(x))))


@form("adaptive_max_pool")
class AdaptiveMaxPool(Stem):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveMaxPool2d((5, 7))

    def forward(self, x):
        return self.pool(self.conv(x))


@form("reflect_circular_pad")
class ReflectCircularPad(Stem):
    def forward(self, x):
        y = F.pad(self.conv(x), (1, 2, 2, 1), mode="reflect")
        return F.pad(y, (1, 1, 2, 0), mode="circular")


@form("cbam_mean_max")
class CbamMeanMax(Stem):
    def __init__(self):
        super().__init__()
        self.spatial = nn.Conv2d(2, 1, 7, padding=3)

    def forward(self, x):
        y = self.conv(x)
        m = torch.cat([y.mean(1, keepdim=True), y.max(1, keepdim=True)[0]], 1)
        return y * torch.sigmoid(self.spatial(m))


@form("layer_scale_gamma")
class LayerScaleGamma(Stem):
    """timm's ConvNeXt and MetaNeXt layer scale: a [C] parameter reshaped per channel."""

    def __init__(self):
        super().__init__()
        self.gamma = nn.Parameter(torch.linspace(0.5, 2.0, 4))

    def forward(self, x):
        y = self.conv(x)
        return y.mul(self.gamma.reshape(1, -1, 1, 1)) + y


@form("scalar_parameter_affine")
class ScalarParameterAffine(Stem):
    """timm's LearnableAffineBlock (hgnetv2): `scale * x + bias` with learned parameters of
    shape [1]; then the other operand orders, minus, divide and a one-element buffer."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([0.75]))
        self.bias = nn.Parameter(torch.tensor([-0.125]))
        self.register_buffer("shift", torch.tensor([[[[1.5]]]]))

    def forward(self, x):
        y = self.scale * self.conv(x) + self.bias
        z = self.bias - y * self.scale
        return (self.bias + z) / self.shift - (y - self.shift)


@form("param_along_width")
class ParamAlongWidth(Stem):
    """A [W] parameter times an image broadcasts along W, not per channel: refused."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.linspace(0.5, 2.0, 28))

    def forward(self, x):
        return self.conv(x) * self.w


@form("full_slices")
class FullSlices(Stem):
    """DPN's and GhostNet's x[:, :c, :, :]: tracing writes a slice for every ':'."""

    def __init__(self):
        super().__init__(6)

    def forward(self, x):
        y = self.conv(x)
        return y[:, :2, :, :] * y[:, 4:, :, :] + y[:, 2:4, :, :]


@form("constant_pad")
class ConstantPad(Stem):
    """F.pad with a constant, uneven (hgnetv2's stem pads [0, 1, 0, 1] before a 2x2 conv)."""

    def __init__(self):
        super().__init__()
        self.conv2 = nn.Conv2d(4, 4, 2)

    def forward(self, x):
        y = F.pad(self.conv(x), (0, 1, 2, 0), value=0.5)
        return self.conv2(F.pad(y, [0, 1, 0, 1]))


def same_padding(size: int, k: int, s: int):
    """timm's get_same_padding for sizes the tracer records as tensors, and for ints."""
    if isinstance(size, torch.Tensor):
        return torch.clamp(((size / s).ceil() - 1) * s + (k - 1) + 1 - size, min=0)
    return max((math.ceil(size / s) - 1) * s + (k - 1) + 1 - size, 0)


@form("tf_same_conv")
class TfSameConv(Stem):
    """timm's Conv2dSame (tf_efficientnet): pads computed from the size, uneven at stride 2."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(4, 4, 3, stride=2)

    def forward(self, x):
        y = self.conv(x)
        ih, iw = y.size()[-2:]
        pad_h, pad_w = same_padding(ih, 3, 2), same_padding(iw, 3, 2)
        y = F.pad(y, (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2))
        return self.down(y)


# --- issue 37: dense prediction ----------------------------------------------------------------

@form("interpolate_size_scale")
class InterpolateSizeScale(Stem):
    def forward(self, x):
        y = self.conv(x)
        a = F.interpolate(y, size=(9, 13), mode="nearest")
        b = F.interpolate(a, scale_factor=2.0, mode="nearest")
        return F.interpolate(b, size=(20, 28), mode="bilinear", align_corners=False)


@form("interpolate_bilinear_align")
class InterpolateBilinearAlign(Stem):
    def forward(self, x):
        y = F.max_pool2d(self.conv(x), 2)
        a = F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=True)
        b = F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False)
        return a - b


@form("interpolate_to_tensor_size")
class InterpolateToTensorSize(Stem):
    def forward(self, x):
        y = F.avg_pool2d(self.conv(x), 4)
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


@form("conv_transpose")
class ConvTranspose(Stem):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
                                     dilation=2)

    def forward(self, x):
        return self.up(self.conv(x))


@form("dilated_conv")
class DilatedConv(Stem):
    def __init__(self):
        super().__init__()
        self.dil = nn.Conv2d(4, 4, 3, padding=2, dilation=2)

    def forward(self, x):
        return self.dil(self.conv(x))


@form("aspp_pooling")
class AsppPooling(Stem):
    def __init__(self):
        super().__init__()
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(4, 3, 1, bias=False),
                                  nn.BatchNorm2d(3), nn.ReLU())

    def forward(self, x):
        y = self.conv(x)
        size = y.shape[-2:]
        return F.interpolate(self.pool(y), size=size, mode="bilinear", align_corners=False)


@form("argmax_channels")
class ArgmaxChannels(Stem):
    def forward(self, x):
        return self.conv(x).argmax(1)


@form("dict_outputs")
class DictOutputs(Stem):
    def __init__(self):
        super().__init__()
        self.aux = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        y = self.conv(x)
        return {"out": y, "aux": self.aux(y)}


class FeatureGetter(nn.ModuleDict):
    """torchvision's IntermediateLayerGetter: the outputs of chosen layers, collected in a dict
    that forward builds; `b`, an in-place ReLU, changes the tensor already stored as "low"."""

    def __init__(self):
        super().__init__(OrderedDict(a=nn.Conv2d(4, 4, 3, padding=1), b=nn.ReLU(inplace=True),
                                     c=nn.Conv2d(4, 6, 1)))
        self.return_layers = {"a": "low", "c": "high"}

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


@form("dict_features")
class DictFeatures(Stem):
    """torchvision's _SimpleSegmentationModel: features read from a submodule's dict, the result
    built key by key, "out" set again after "aux" (it keeps its place)."""

    def __init__(self):
        super().__init__()
        self.backbone = FeatureGetter()
        self.head = nn.Conv2d(6, 3, 1)

    def forward(self, x):
        features = self.backbone(self.conv(x))
        result = OrderedDict()
        result["out"] = self.head(features["high"])
        if "low" in features:
            result["aux"] = features["low"] * 2.0
        result["out"] = F.interpolate(result["out"], size=x.shape[-2:], mode="bilinear",
                                      align_corners=False)
        return result


@form("tuple_outputs")
class TupleOutputs(Stem):
    def __init__(self):
        super().__init__()
        self.aux = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        y = self.conv(x)
        return y.relu(), self.aux(y)


@form("unet")
class UNet(nn.Module):
    """Two levels down, up by ConvTranspose2d, nearest and bilinear, skips concatenated."""

    def __init__(self):
        super().__init__()
        block = lambda i, o: nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o),
                                           nn.ReLU())
        self.enc1, self.enc2, self.enc3 = block(3, 8), block(8, 16), block(16, 16)
        self.up3 = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.dec2 = block(32, 8)
        self.dec1 = block(16, 8)
        self.head = nn.Conv2d(8, 5, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        e3 = self.enc3(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up3(e3), e2], 1))
        d2 = F.interpolate(d2, scale_factor=2.0, mode="nearest")
        d1 = self.dec1(torch.cat([d2, e1], 1))
        d1 = F.interpolate(F.avg_pool2d(d1, 2), size=x.shape[-2:], mode="bilinear",
                           align_corners=False)
        return self.head(d1)


# The torchvision segmentation models of issue 37 (weights=None, seeded init, calibrated BN).
SEGMENTATION = ("fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large",
                "lraspp_mobilenet_v3_large")
