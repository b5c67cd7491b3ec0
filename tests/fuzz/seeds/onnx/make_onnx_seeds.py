#!/usr/bin/env python3
"""Writes the ONNX fuzz target's seed models (tests/fuzz/fuzz_onnx.cpp): small, valid networks
that use every op the frontend maps, so that the fuzzer starts from accepted models and mutates
towards the corners of each mapping. Deterministic (fixed values); run with python3-onnx:

  /usr/bin/python3 tests/fuzz/seeds/onnx/make_onnx_seeds.py
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def init(name, shape, seed):
    a = np.random.RandomState(seed).uniform(-0.5, 0.5, size=shape).astype(np.float32)
    return numpy_helper.from_array(a, name)


def save(name, nodes, inits, out_dims, opset=13, in_dims=("N", 3, 8, 8)):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_dims))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="zoc fuzz seeds")
    model.ir_version = 7
    onnx.checker.check_model(model)
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def main():
    # conv + BN + ReLU, max pool, a residual block, global pool, flatten, Gemm, softmax.
    save("cnn", [
        helper.make_node("Conv", ["x", "c1.weight"], ["a"], name="/c1/Conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["a", "bn.weight", "bn.bias", "bn.running_mean",
                                                "bn.running_var"], ["b"], name="/bn/BN"),
        helper.make_node("Relu", ["b"], ["c"], name="/relu/Relu"),
        helper.make_node("MaxPool", ["c"], ["d"], name="/pool/MaxPool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["d", "c2.weight", "c2.bias"], ["e"], name="/c2/Conv",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["e", "d"], ["f"], name="/add/Add"),
        helper.make_node("Relu", ["f"], ["g"], name="/relu2/Relu"),
        helper.make_node("GlobalAveragePool", ["g"], ["h"], name="/gap/Pool"),
        helper.make_node("Flatten", ["h"], ["i"], name="/flatten/Flatten", axis=1),
        helper.make_node("Gemm", ["i", "fc.weight", "fc.bias"], ["j"], name="/fc/Gemm", transB=1),
        helper.make_node("Softmax", ["j"], ["y"], name="/softmax/Softmax", axis=1),
    ], [init("c1.weight", (4, 3, 3, 3), 1), init("bn.weight", (4,), 2), init("bn.bias", (4,), 3),
        init("bn.running_mean", (4,), 4),
        numpy_helper.from_array(np.full((4,), 1.5, np.float32), "bn.running_var"),
        init("c2.weight", (4, 4, 3, 3), 5), init("c2.bias", (4,), 6), init("fc.weight", (5, 4), 7),
        init("fc.bias", (5,), 8)], ("N", 5))
    # average pooling, concat, sigmoid/tanh, dropout, reshape, MatMul + Add, identity.
    save("branches", [
        helper.make_node("AveragePool", ["x"], ["a"], name="/avg/AveragePool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Sigmoid", ["a"], ["b"], name="/sig/Sigmoid"),
        helper.make_node("Tanh", ["a"], ["c"], name="/tanh/Tanh"),
        helper.make_node("Concat", ["b", "c"], ["d"], name="/cat/Concat", axis=1),
        helper.make_node("Dropout", ["d"], ["e"], name="/drop/Dropout"),
        helper.make_node("Identity", ["e"], ["f"], name="/id/Identity"),
        helper.make_node("Reshape", ["f", "shape"], ["g"], name="/Reshape"),
        helper.make_node("MatMul", ["g", "fc.weight"], ["h"], name="/fc/MatMul"),
        helper.make_node("Add", ["h", "fc.bias"], ["y"], name="/fc/Add"),
    ], [numpy_helper.from_array(np.array([0, -1], np.int64), "shape"),
        init("fc.weight", (96, 3), 9), init("fc.bias", (3,), 10)], ("N", 3))
    # opset 7 forms: Clip as ReLU through attributes, grouped and dilated convolution.
    save("opset7", [
        helper.make_node("Conv", ["x", "g.weight"], ["a"], name="/g/Conv", group=3,
                         dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Clip", ["a"], ["b"], name="/clip/Clip", min=0.0),
        helper.make_node("GlobalAveragePool", ["b"], ["c"], name="/gap/Pool"),
        helper.make_node("Flatten", ["c"], ["y"], name="/flatten/Flatten"),
    ], [init("g.weight", (3, 1, 3, 3), 11)], ("N", 3), opset=7)


if __name__ == "__main__":
    main()
