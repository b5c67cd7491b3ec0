#!/usr/bin/env python3
"""Generates the ONNX bad-input cases in this folder.

Each case is NAME.onnx (sometimes with a data file beside it) and NAME.expect (see
tests/bad_inputs/README.md): `model: tests/bad_inputs/onnx/NAME.onnx`, the `zoc ir` arguments,
and the diagnostics zoc must print. Most start from tiny(), the ONNX twin of
tests/bad_inputs/weights/tiny.yaml (conv, bn, relu, global pool, flatten, fc; initializers named
like a state_dict), and break one thing. The files are committed; this script documents how
each was made and regenerates them byte for byte (python3-onnx, no randomness).

Run from anywhere:  /usr/bin/python3 tests/bad_inputs/onnx/make_cases.py
"""

import glob
import os
import struct
import sys

import onnx
from onnx import TensorProto, helper

import newer_cases
import zoo_cases

HERE = os.path.dirname(os.path.abspath(__file__))
REL = "tests/bad_inputs/onnx"
FLOAT = TensorProto.FLOAT


def values(count, salt):
    """Deterministic, finite values."""
    return [((i * 37 + salt) % 17 - 8) / 16.0 for i in range(count)]


def init(name, dims, salt=0, positive=False):
    n = 1
    for d in dims:
        n *= d
    vals = [abs(v) + 0.5 for v in values(n, salt)] if positive else values(n, salt)
    return helper.make_tensor(name, FLOAT, dims, vals)


def image_input(name="input", dims=("batch", 3, 8, 8)):
    return helper.make_tensor_value_info(name, FLOAT, list(dims))


def tiny_graph():
    nodes = [
        helper.make_node("Conv", ["input", "conv.weight", "conv.bias"], ["c"], name="/conv/Conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"], ["b"],
                         name="/bn/BatchNormalization"),
        helper.make_node("Relu", ["b"], ["r"], name="/relu/Relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="/pool/GlobalAveragePool"),
        helper.make_node("Flatten", ["p"], ["f"], name="/flatten/Flatten"),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["output"], name="/fc/Gemm",
                         transB=1),
    ]
    inits = [init("conv.weight", [4, 3, 3, 3], 1), init("conv.bias", [4], 2),
             init("bn.weight", [4], 3), init("bn.bias", [4], 4), init("bn.running_mean", [4], 5),
             init("bn.running_var", [4], 6, positive=True), init("fc.weight", [2, 4], 7),
             init("fc.bias", [2], 8)]
    out = helper.make_tensor_value_info("output", FLOAT, ["batch", 2])
    return helper.make_graph(nodes, "tiny", [image_input()], [out], inits)


def model(graph, opset=17, ir_version=8):
    m = helper.make_model(graph, producer_name="zoc make_cases.py",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    return m


def tiny(**kw):
    return model(tiny_graph(), **kw)


def find_init(m, name):
    return next(t for t in m.graph.initializer if t.name == name)


def single_node(node, inputs, output_dims, inits=(), opset=17):
    g = helper.make_graph([node], "case", inputs,
                          [helper.make_tensor_value_info(node.output[0], FLOAT, output_dims)],
                          list(inits))
    return model(g, opset=opset)


# --- the cases: each returns the bytes of NAME.onnx (and may write files beside it) -------------

def good():
    return tiny().SerializeToString()


def not_protobuf():
    return b"This is a text file, not an ONNX model.\n"


def zip_archive():
    return b"PK\x03\x04" + bytes(60)


def empty():
    return b""


def truncated():
    data = tiny().SerializeToString()
    return data[: len(data) * 2 // 3]


def ir_version_too_new():
    return tiny(ir_version=99).SerializeToString()


def opset_too_new():
    return tiny(opset=22, ir_version=10).SerializeToString()


def raw_data_length():
    m = tiny()
    t = find_init(m, "conv.weight")
    t.ClearField("float_data")
    t.raw_data = bytes(4 * 100)  # 100 floats where [4, 3, 3, 3] needs 108
    return m.SerializeToString()


def dims_overflow():
    m = tiny()
    t = find_init(m, "conv.weight")
    del t.dims[:]
    t.dims.extend([1 << 40, 1 << 40, 3, 3])
    t.ClearField("float_data")
    return m.SerializeToString()


def external(location, write_file=None):
    m = tiny()
    t = find_init(m, "conv.weight")
    raw = struct.pack("<%df" % len(t.float_data), *t.float_data)
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", str(len(raw)))):
        entry = t.external_data.add()
        entry.key, entry.value = k, v
    if write_file:
        with open(os.path.join(HERE, write_file), "wb") as f:
            f.write(raw)
    return m.SerializeToString()


def external_data_beside():
    return external("external_data_beside.bin", write_file="external_data_beside.bin")


def external_data_dotdot():
    return external("../onnx/external_data_beside.bin")


def external_data_absolute():
    return external("/etc/passwd")


def external_data_missing():
    return external("no_such_file.bin")


def external_data_short():
    m = onnx.load_from_string(external("external_data_short.bin"))
    with open(os.path.join(HERE, "external_data_short.bin"), "wb") as f:
        f.write(bytes(40))  # 40 bytes where 432 are needed
    return m.SerializeToString()


def undefined_input():
    m = tiny()
    m.graph.node[2].input[0] = "nothing"
    return m.SerializeToString()


def cycle():
    m = tiny()
    # relu reads the pool's output, which (through the pool) reads relu's.
    m.graph.node[2].input[0] = "p"
    return m.SerializeToString()


def initializer_shadows_input():
    m = tiny()
    m.graph.input.append(helper.make_tensor_value_info("conv.weight", FLOAT, [4, 3, 3, 3]))
    return m.SerializeToString()


def unsupported_ops():
    m = tiny()
    nodes = list(m.graph.node)
    nodes[2] = helper.make_node("LeakyRelu", ["b"], ["r0"], name="/act/LeakyRelu", alpha=0.1)
    extra = [helper.make_node("Selu", ["r0"], ["r"], name="/act2/Selu"),
             helper.make_node("Softsign", ["f"], ["h"], name="/gate/Softsign")]
    nodes = nodes[:3] + extra[:1] + nodes[3:5] + extra[1:] + nodes[5:]
    nodes[-1].input[0] = "h"
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m.SerializeToString()


def asymmetric_pads():
    m = tiny()
    pads = next(a for a in m.graph.node[0].attribute if a.name == "pads")
    del pads.ints[:]
    pads.ints.extend([0, 0, 1, 1])
    return m.SerializeToString()


def asymmetric_pool_pads():
    # A MaxPool pads with -inf: uneven pads cannot become a pad node before it, as a Conv's do.
    m = tiny()
    m.graph.node[3].CopyFrom(helper.make_node("MaxPool", ["r"], ["p"], name="/pool/MaxPool",
                                              kernel_shape=[2, 2], pads=[0, 0, 1, 1]))
    return m.SerializeToString()


def relu6_clip():
    # Passes: torch.onnx.export's ReLU6, Clip(x, 0, 6), is hardtanh.
    m = tiny()
    m.graph.node[2].CopyFrom(helper.make_node("Clip", ["b", "zero", "six"], ["r"], name="/relu/Clip"))
    m.graph.initializer.extend([helper.make_tensor("zero", FLOAT, [], [0.0]),
                                helper.make_tensor("six", FLOAT, [], [6.0])])
    return m.SerializeToString()


def two_inputs():
    m = tiny()
    m.graph.input.append(image_input("mask"))
    return m.SerializeToString()


def rank3_input():
    node = helper.make_node("Relu", ["x"], ["y"])
    return single_node(node, [helper.make_tensor_value_info("x", FLOAT, [2, 3, 4])],
                       [2, 3, 4]).SerializeToString()


def dynamic_size():
    m = tiny()
    m.graph.input[0].CopyFrom(image_input(dims=("batch", 3, "height", "width")))
    return m.SerializeToString()


def fixed_batch(batch):
    """An input whose batch is fixed to a number shape arithmetic cannot take (issue 31)."""
    def build():
        m = tiny()
        m.graph.input[0].CopyFrom(image_input(dims=(batch, 3, 8, 8)))
        return m.SerializeToString()
    return build


def conv_groups_range():
    """A Conv's group beyond what zoc supports: the range was printed as floats (1.04858e+06)."""
    m = tiny()
    m.graph.node[0].attribute.append(helper.make_attribute("group", 2000000))
    return m.SerializeToString()


def nesting_too_deep():
    """If nodes whose then-branches nest 40 deep: 120 levels of messages, more than protobuf's
    100. Reported as "corrupt" before issue 31."""
    def graph(level):
        out = [helper.make_tensor_value_info("y", FLOAT, [1])]
        if level == 0:
            return helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "leaf", [], out)
        node = helper.make_node("If", ["c"], ["y"], then_branch=graph(level - 1),
                                else_branch=graph(0))
        return helper.make_graph([node], "level%d" % level, [], out)
    return model(graph(40)).SerializeToString()


def opset_twice():
    """Two imports of the default domain, which ONNX's checker accepted (issue 31)."""
    m = tiny()
    m.opset_import.append(helper.make_opsetid("ai.onnx", 13))
    return m.SerializeToString()


def weight_shape():
    m = tiny()
    t = find_init(m, "fc.weight")
    t.CopyFrom(init("fc.weight", [2, 5], 7))
    return m.SerializeToString()


def checker_rejects():
    m = tiny()
    m.graph.node[2].attribute.append(helper.make_attribute("alpha", 0.5))  # Relu has none
    return m.SerializeToString()


def checker_quotes_escape():
    """ONNX's checker quotes the attribute's name, which holds a terminal escape (issue 31)."""
    m = tiny()
    m.graph.node[2].attribute.append(helper.make_attribute("alpha\x1b[2J", 0.5))
    return m.SerializeToString()


def output_mismatch():
    m = tiny()
    dims = m.graph.output[0].type.tensor_type.shape.dim
    dims[1].dim_value = 3
    return m.SerializeToString()


def multiple_outputs():  # compiles: each graph output is a model output, in order
    m = tiny()
    m.graph.output.append(helper.make_tensor_value_info("p", FLOAT, ["batch", 4, 1, 1]))
    return m.SerializeToString()


def output_twice():
    m = tiny()
    m.graph.output.append(helper.make_tensor_value_info("output", FLOAT, ["batch", 2]))
    return m.SerializeToString()


def output_is_input():
    m = tiny()
    m.graph.output.append(image_input())
    return m.SerializeToString()


def training_batchnorm():
    m = tiny()
    m.graph.node[1].attribute.append(helper.make_attribute("training_mode", 1))
    m.graph.node[1].output.extend(["running_mean_out", "running_var_out"])
    return m.SerializeToString()


# name -> (builder, extra zoc arguments, exit code)
CASES = {
    "good": (good, "", 0),
    "not_protobuf": (not_protobuf, "", 1),
    "zip_archive": (zip_archive, "", 1),
    "empty": (empty, "", 1),
    "truncated": (truncated, "", 1),
    "ir_version_too_new": (ir_version_too_new, "", 1),
    "opset_too_new": (opset_too_new, "", 1),
    "raw_data_length": (raw_data_length, "", 1),
    "dims_overflow": (dims_overflow, "", 1),
    "external_data_beside": (external_data_beside, "", 0),
    "external_data_dotdot": (external_data_dotdot, "", 1),
    "external_data_absolute": (external_data_absolute, "", 1),
    "external_data_missing": (external_data_missing, "", 1),
    "external_data_short": (external_data_short, "", 1),
    "undefined_input": (undefined_input, "", 1),
    "cycle": (cycle, "", 1),
    "initializer_shadows_input": (initializer_shadows_input, "", 1),
    "unsupported_ops": (unsupported_ops, "", 1),
    "asymmetric_pads": (asymmetric_pads, "", 0),
    "asymmetric_pool_pads": (asymmetric_pool_pads, "", 1),
    "relu6_clip": (relu6_clip, "", 0),
    "two_inputs": (two_inputs, "", 1),
    "rank3_input": (rank3_input, "", 1),
    "dynamic_size": (dynamic_size, "", 1),
    "batch_negative": (fixed_batch(-1), "", 1),
    "batch_huge": (fixed_batch(1 << 62), "", 1),
    "opset_twice": (opset_twice, "", 1),
    "nesting_too_deep": (nesting_too_deep, "", 1),
    "conv_groups_range": (conv_groups_range, "", 1),
    "dynamic_size_given": (dynamic_size, "--input 3x8x8", 0),
    "dynamic_size_contradicted": (good, "--input 3x16x16", 1),
    "weight_shape": (weight_shape, "", 1),
    "checker_rejects": (checker_rejects, "", 1),
    "checker_quotes_escape": (checker_quotes_escape, "", 1),
    "output_mismatch": (output_mismatch, "", 1),
    "multiple_outputs": (multiple_outputs, "", 0),
    "output_twice": (output_twice, "", 1),
    "output_is_input": (output_is_input, "", 1),
    "training_batchnorm": (training_batchnorm, "", 1),
}

# The diagnostics each case must produce (the whole line where it fits), from `zoc ir`.
F = REL + "/"
UNSUPPORTED = ": error: 1 unsupported node (zoc maps Conv, BatchNormalization, MaxPool,"
EXPECT = {
    "not_protobuf": [F + "not_protobuf.onnx: error: not an ONNX model: protobuf cannot parse it as "
                     "a ModelProto (the file is 40 bytes and starts with 54 68 69 73 20 69 73 20)"],
    "zip_archive": [F + "zip_archive.onnx: error: not an ONNX model but a zip archive (a "
                    "TorchScript .pt file?)"],
    "empty": [F + "empty.onnx: error: empty file: not an ONNX model"],
    "truncated": [F + "truncated.onnx: error: truncated: the model's field 'graph' starts at byte "
                  "21 and needs 1176 bytes after its header, but the file ends at byte 804"],
    "ir_version_too_new": [F + "ir_version_too_new.onnx: error: the model's ir_version is 99, newer "
                           "than 10, the newest zoc reads: export it with an older ONNX"],
    "opset_too_new": [F + "opset_too_new.onnx: error: the model uses opset 22 of the ONNX domain, "
                      "newer than opset 21, the newest zoc reads: export it with opset_version=21 "
                      "or older"],
    "raw_data_length": [F + "raw_data_length.onnx: error: initializer tensor 'conv.weight': its "
                        "raw_data holds 400 bytes, but 108 elements of FLOAT (4 bytes each) need "
                        "432"],
    "dims_overflow": [F + "dims_overflow.onnx: error: initializer tensor 'conv.weight': its dims "
                      "[1099511627776, 1099511627776, 3, 3] overflow"],
    "external_data_dotdot": [F + "external_data_dotdot.onnx: error: initializer tensor "
                             "'conv.weight': its external data location "
                             "'../onnx/external_data_beside.bin' leads out of the model's folder "
                             "('..'); zoc reads external data only from beside the model"],
    "external_data_absolute": [F + "external_data_absolute.onnx: error: initializer tensor "
                               "'conv.weight': its external data location '/etc/passwd' is an "
                               "absolute path; zoc reads external data only from files beside "
                               "the model"],
    "external_data_missing": [F + "external_data_missing.onnx: error: initializer tensor "
                              "'conv.weight': its external data file 'no_such_file.bin' does not "
                              "exist beside the model or is not a regular file"],
    "external_data_short": [F + "external_data_short.onnx: error: initializer tensor "
                            "'conv.weight': its external data (432 bytes at offset 0) lies past "
                            "the end of 'external_data_short.bin' (40 bytes)"],
    "undefined_input": [F + "undefined_input.onnx: node '/relu/Relu' (Relu, #2): error: its input "
                        "'nothing' is produced by no node, initializer or graph input"],
    "cycle": [F + "cycle.onnx: error: nodes form a cycle: node '/relu/Relu' (Relu, #2) -> node "
              "'/pool/GlobalAveragePool' (GlobalAveragePool, #3) -> node '/relu/Relu' (Relu, #2)"],
    "initializer_shadows_input": [F + "initializer_shadows_input.onnx: error: graph input "
                                  "'conv.weight' is shadowed by an initializer of the same name, "
                                  "which makes it a default a caller may override at run time"],
    "unsupported_ops": [F + "unsupported_ops.onnx: error: 2 unsupported nodes (zoc maps Conv,",
                        "  node '/act2/Selu' (Selu, #3)",
                        "  node '/gate/Softsign' (Softsign, #6)"],
    "asymmetric_pool_pads": [F + "asymmetric_pool_pads.onnx" + UNSUPPORTED,
                             "  node '/pool/MaxPool' (MaxPool, #3): asymmetric pads [0, 0, 1, 1] "
                             "(top, left, bottom, right): zoc pads both sides of an axis alike"],
    "two_inputs": [F + "two_inputs.onnx: error: the graph has 2 inputs ('input', 'mask'); zoc "
                   "compiles models with one input, an image [N, C, H, W]"],
    "rank3_input": [F + "rank3_input.onnx: graph input 'x': error: it has rank 3 ([2, 3, 4]); zoc "
                    "compiles models whose input is an image [N, C, H, W]"],
    "batch_negative": [F + "batch_negative.onnx: graph input 'input': error: its batch size is -1 "
                       "([-1, 3, 8, 8]): a fixed batch size is between 1 and 65536; a dynamic one "
                       "is named (dim_param)"],
    "batch_huge": [F + "batch_huge.onnx: graph input 'input': error: its batch size is "
                   "4611686018427387904 ([4611686018427387904, 3, 8, 8]): a fixed batch size is "
                   "between 1 and 65536; a dynamic one is named (dim_param)"],
    "conv_groups_range": [F + "conv_groups_range.onnx" + UNSUPPORTED,
                          "  node '/conv/Conv' (Conv, #0): groups 2000000 is outside what zoc "
                          "supports (between 1 and 1048576)"],
    "nesting_too_deep": [F + "nesting_too_deep.onnx: error: the model's messages nest more than "
                         "100 levels deep (graphs inside the attributes of nodes of graphs...), "
                         "deeper than protobuf reads"],
    "opset_twice": [F + "opset_twice.onnx: error: the model imports the default ONNX domain twice, "
                    "as opsets 17 and 13: a model imports each domain once"],
    "dynamic_size": [F + "dynamic_size.onnx: graph input 'input': error: its height is not fixed "
                     "([batch, 3, height, width]): give the input size with --input CxHxW"],
    "dynamic_size_contradicted": [F + "good.onnx: graph input 'input': error: --input gives height "
                                  "16, but the model's input is [batch, 3, 8, 8]"],
    "weight_shape": [F + "weight_shape.onnx: node '/fc/Gemm' (Gemm, #5): error: initializer "
                     "'fc.weight' has shape [2, 5], but layer 'fc' (linear) needs [2, 4] for its "
                     "weight"],
    "checker_rejects": [F + "checker_rejects.onnx: error: ONNX's checker (libonnx 1.12.0) rejects "
                        "the model: Unrecognized attribute: alpha for operator Relu"],
    "checker_quotes_escape": [F + "checker_quotes_escape.onnx: error: ONNX's checker (libonnx "
                              "1.12.0) rejects the model: Unrecognized attribute: alpha\\x1b[2J "
                              "for operator Relu"],
    "output_mismatch": [F + "output_mismatch.onnx: node '/fc/Gemm' (Gemm, #5): error: the model "
                        "declares its output 'output' as [batch, 3], but zoc computes N x 2: zoc "
                        "would not compute what the model does"],
    "output_twice": [F + "output_twice.onnx: error: graph output 'output' is another output of "
                     "the graph again; zoc gives each output a buffer of its own"],
    "output_is_input": [F + "output_is_input.onnx: error: graph output 'input' is the graph's "
                        "input: the model computes nothing from its input"],
    "training_batchnorm": [F + "training_batchnorm.onnx" + UNSUPPORTED,
                           "  node '/bn/BatchNormalization' (BatchNormalization, #1): training "
                           "mode (batch statistics): export the model in eval mode"],
}

# The CNN zoo's forms, each broken once (zoo_cases.py).
CASES.update(zoo_cases.cases(sys.modules[__name__]))
EXPECT.update(zoo_cases.expect(F, UNSUPPORTED))

# Issue 32's cases: files newer than libonnx's checker knows, and refusals that misled.
CASES.update(newer_cases.cases(sys.modules[__name__]))
EXPECT.update(newer_cases.expect(F, UNSUPPORTED))


def main():
    for f in glob.glob(os.path.join(HERE, "*.onnx")) + glob.glob(os.path.join(HERE, "*.expect")) + \
            glob.glob(os.path.join(HERE, "*.bin")):
        os.remove(f)
    written = {}
    for name, (build, args, code) in CASES.items():
        data = build()
        # Cases that differ only in their arguments share a model file.
        model_name = next((n for n, d in written.items() if d == data), name)
        if model_name == name:
            with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
                f.write(data)
            written[name] = data
        lines = ["model: %s/%s.onnx" % (REL, model_name)]
        if args:
            lines.append("args: " + args)
        if code != 1:
            lines.append("exit: %d" % code)
        lines += ["expect: " + e for e in EXPECT.get(name, [])]
        with open(os.path.join(HERE, name + ".expect"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("wrote %d cases to %s" % (len(CASES), HERE))


if __name__ == "__main__":
    main()
