#!/usr/bin/env python3
"""Exports small seeded CNNs to ONNX and quantizes them with onnxruntime's own tool
(quantize_static, QDQ format), so that zoc's import of QuantizeLinear/DequantizeLinear pairs is
tested on what a user's quantization tool writes, not on files zoc's authors drew by hand
(issue 35). Runs where torch and onnxruntime are installed (the GPU machine's image).

For each model it writes, into OUT_DIR:
  NAME.onnx        the float model (torch.onnx.export, the TorchScript-based exporter, opset 17)
  NAME_qdq.onnx    onnxruntime's QDQ model: per-channel symmetric int8 weights, symmetric int8
                   activations (zero point 0: the form zoc reads), MinMax calibration
  NAME_x.npy       8 evaluation images; NAME_fp32.npy, NAME_ort_qdq.npy: onnxruntime's outputs
                   of the two models on them (CPU execution provider)
Usage: make_qdq_models.py OUT_DIR
"""
import sys

import numpy as np
import onnxruntime as ort
import torch
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)
from torch import nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class SmallResNet(nn.Module):
    """A stem, three residual blocks (one projecting), pooling and a classifier: the forms of
    ResNet's int8 plan (int8 chains, residuals, float stem and head), small enough for CI."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.blocks = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 32, 1))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = self.blocks(self.pool(self.stem(x)))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def seeded(model, seed):
    torch.manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):  # statistics far from the identity
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model.eval()


class Reader(CalibrationDataReader):
    def __init__(self, batches):
        self.it = iter([{"input": b} for b in batches])

    def get_next(self):
        return next(self.it, None)


def main(out):
    rng = np.random.default_rng(35)
    model = seeded(SmallResNet(), 35)
    name = "small_resnet"
    x_cal = rng.standard_normal((64, 3, 32, 32), dtype=np.float32)
    x_eval = rng.standard_normal((8, 3, 32, 32), dtype=np.float32)
    fp32 = f"{out}/{name}.onnx"
    torch.onnx.export(model, torch.from_numpy(x_eval[:1]), fp32, input_names=["input"],
                      output_names=["logits"], opset_version=17, dynamo=False,
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    qdq = f"{out}/{name}_qdq.onnx"
    quantize_static(fp32, qdq, Reader([x_cal[i:i + 8] for i in range(0, 64, 8)]),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    np.save(f"{out}/{name}_x.npy", x_eval)
    for tag, path in (("fp32", fp32), ("ort_qdq", qdq)):
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        y = sess.run(None, {"input": x_eval})[0]
        np.save(f"{out}/{name}_{tag}.npy", y)
    with torch.no_grad():
        torch_y = model(torch.from_numpy(x_eval)).numpy()
    fp = np.load(f"{out}/{name}_fp32.npy")
    q = np.load(f"{out}/{name}_ort_qdq.npy")
    rel = lambda a, b: float(np.linalg.norm(a - b) / np.linalg.norm(b))
    print(f"{name}: onnxruntime fp32 vs torch {rel(fp, torch_y):.2e}; "
          f"onnxruntime qdq vs fp32 {rel(q, fp):.4f}; "
          f"top-1 agreement {np.mean(q.argmax(1) == fp.argmax(1)):.3f}")
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}")


if __name__ == "__main__":
    main(sys.argv[1])
