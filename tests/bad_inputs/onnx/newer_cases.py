"""The ONNX bad-input cases of issue 32, written by make_cases.py beside its own.

Files newer than libonnx 1.12's checker knows (IR 10, opsets 18 to 20, as PyTorch's dynamo
exporter writes them), which zoc checks itself: a good one (with the note that says so), and one
per check (an attribute the op's schema does not have at that opset, an op the opset does not
have yet, a required attribute missing, an initializer given twice) or form (Split's
num_outputs, the dynamo exporter's as_strided, Resize-18's keep_aspect_ratio_policy). And two
refusals that misled before: reflection padding as the TorchScript-based exporter writes it
(which named a ConstantOfShape, never the Pad), a model exported without its weights (which listed every weight as an input), and
BatchNorm1d after a flatten (which said only that BatchNorm expects an image).
"""

from onnx import TensorProto, helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


def cases(mk):
    """name -> (builder, extra zoc arguments, exit code); `mk` is make_cases itself."""

    def newer(opset=20):
        return mk.tiny(ir_version=10, opset=opset)

    def newer_good():
        return newer().SerializeToString()

    def newer_good_opset21():  # the newest opset read: Flatten-21 and the rest changed only types
        return newer(opset=21).SerializeToString()

    def newer_good_ir9():  # IR 9 at opset 17: libonnx's checker still refuses the IR version
        return mk.tiny(ir_version=9, opset=17).SerializeToString()

    def newer_unknown_attribute():
        m = newer()
        m.graph.node[2].attribute.append(helper.make_attribute("alpha", 0.1))
        return m.SerializeToString()

    def newer_reduce_mean_axes_attribute():
        m = newer(opset=18)
        pool = m.graph.node[3]  # GlobalAveragePool, as ReduceMean with opset 13's axes attribute
        pool.op_type, pool.name = "ReduceMean", "/pool/ReduceMean"
        pool.attribute.append(helper.make_attribute("axes", [2, 3]))
        return m.SerializeToString()

    def newer_gelu_before_opset20():
        m = newer(opset=19)
        m.graph.node[2].op_type, m.graph.node[2].name = "Gelu", "/act/Gelu"
        return m.SerializeToString()

    def newer_pool_without_kernel():
        m = newer(opset=19)
        m.graph.node[3].op_type, m.graph.node[3].name = "AveragePool", "/pool/AveragePool"
        return m.SerializeToString()

    def newer_initializer_twice():
        m = newer()
        m.graph.initializer.append(mk.init("fc.bias", [2], 9))
        return m.SerializeToString()

    def newer_split_num_outputs():
        split = helper.make_node("Split", ["input"], ["a", "b"], name="/chunk/Split", axis=1,
                                 num_outputs=3)
        cat = helper.make_node("Concat", ["b", "a"], ["output"], name="/cat/Concat", axis=1)
        g = helper.make_graph([split, cat], "case", [mk.image_input()],
                              [helper.make_tensor_value_info("output", FLOAT, ["batch", 3, 8, 8])])
        return mk.model(g, opset=18, ir_version=10).SerializeToString()

    def as_strided_out_of_order():
        nodes = [
            helper.make_node("Relu", ["input"], ["r"], name="node_relu"),
            helper.make_node("Reshape", ["r", "flat"], ["v"], name="node_Reshape_1"),
            helper.make_node("Gather", ["v", "order"], ["output"], name="node_as_strided", axis=0),
        ]
        order = list(reversed(range(3 * 8 * 8)))
        inits = [helper.make_tensor("flat", INT64, [1], [-1]),
                 helper.make_tensor("order", INT64, [1, 3, 8, 8], order)]
        g = helper.make_graph(nodes, "case", [mk.image_input(dims=(1, 3, 8, 8))],
                              [helper.make_tensor_value_info("output", FLOAT, [1, 3, 8, 8])], inits)
        return mk.model(g, opset=20, ir_version=10).SerializeToString()

    def pad_reflect():
        # F.pad(x, (1, 1, 1, 1), mode="reflect") as torch 1.13 exports it at opset 17: the pads
        # [1, 1, 1, 1] reordered into ONNX's [begin..., end...] by shape arithmetic.
        c = helper.make_node
        nodes = [
            c("ConstantOfShape", ["extension"], ["zeros"], name="/ConstantOfShape",
              value=helper.make_tensor("v", INT64, [1], [0])),
            c("Concat", ["pad", "zeros"], ["all"], name="/Concat", axis=0),
            c("Reshape", ["all", "pairs"], ["rows"], name="/Reshape"),
            c("Slice", ["rows", "start", "end", "axis0", "step"], ["reversed"], name="/Slice"),
            c("Transpose", ["reversed"], ["columns"], name="/Transpose", perm=[1, 0]),
            c("Reshape", ["columns", "flat"], ["pads"], name="/Reshape_1"),
            c("Cast", ["pads"], ["pads64"], name="/Cast", to=INT64),
            c("Pad", ["input", "pads64"], ["padded"], name="/Pad", mode="reflect"),
            c("Conv", ["padded", "conv.weight", "conv.bias"], ["output"], name="/conv/Conv",
              kernel_shape=[3, 3]),
        ]
        i64 = lambda name, v: helper.make_tensor(name, INT64, [len(v)], v)  # noqa: E731
        inits = [i64("extension", [4]), i64("pad", [1, 1, 1, 1]), i64("pairs", [-1, 2]),
                 i64("start", [-1]), i64("end", [-(1 << 63)]), i64("axis0", [0]),
                 i64("step", [-1]), i64("flat", [-1]), mk.init("conv.weight", [4, 3, 3, 3], 1),
                 mk.init("conv.bias", [4], 2)]
        g = helper.make_graph(nodes, "case", [mk.image_input()],
                              [helper.make_tensor_value_info("output", FLOAT, ["batch", 4, 8, 8])],
                              inits)
        return mk.model(g).SerializeToString()

    def newer_resize_policy():
        # Resize-18's keep_aspect_ratio_policy other than "stretch" (what F.interpolate writes).
        m = newer(opset=18)
        m.graph.node.insert(3, helper.make_node(
            "Resize", ["r", "", "scales"], ["u"], name="/up/Resize", mode="nearest",
            coordinate_transformation_mode="asymmetric", nearest_mode="floor",
            keep_aspect_ratio_policy="not_larger"))
        m.graph.node[4].input[0] = "u"
        m.graph.initializer.append(helper.make_tensor("scales", FLOAT, [4], [1, 1, 2, 2]))
        return m.SerializeToString()

    def weights_as_inputs():
        m = mk.tiny()
        for t in m.graph.initializer:
            m.graph.input.append(helper.make_tensor_value_info(t.name, FLOAT, list(t.dims)))
        del m.graph.initializer[:]
        return m.SerializeToString()

    def batchnorm_on_features():
        # nn.BatchNorm1d(4) after the flatten, as torch.onnx.export writes it.
        m = mk.tiny()
        bn = m.graph.node.pop(1)
        m.graph.node[0].output[0] = "b"
        bn.input[0], bn.output[0], bn.name = "f", "n", "/bn1d/BatchNormalization"
        m.graph.node.insert(4, bn)
        m.graph.node[5].input[0] = "n"
        return m.SerializeToString()

    return {
        "newer_good": (newer_good, "", 0),
        "newer_good_opset21": (newer_good_opset21, "", 0),
        "newer_good_ir9": (newer_good_ir9, "", 0),
        "newer_unknown_attribute": (newer_unknown_attribute, "", 1),
        "newer_reduce_mean_axes_attribute": (newer_reduce_mean_axes_attribute, "", 1),
        "newer_gelu_before_opset20": (newer_gelu_before_opset20, "", 1),
        "newer_pool_without_kernel": (newer_pool_without_kernel, "", 1),
        "newer_initializer_twice": (newer_initializer_twice, "", 1),
        "newer_split_num_outputs": (newer_split_num_outputs, "", 1),
        "as_strided_out_of_order": (as_strided_out_of_order, "", 1),
        "pad_reflect": (pad_reflect, "", 1),
        "newer_resize_policy": (newer_resize_policy, "", 1),
        "weights_as_inputs": (weights_as_inputs, "", 1),
        "batchnorm_on_features": (batchnorm_on_features, "", 1),
    }


def expect(f, unsupported):
    """The diagnostics each case must produce; `f` is the folder's prefix."""
    note = (": note: the model is ONNX IR version 10 with opset {0}, newer than the checker of "
            "this zoc's libonnx 1.12.0 reads (IR 8, opset 17): zoc checked it itself (the graph's "
            "wiring, its tensors and external data, and each node of an op zoc maps against that "
            "op's schema at opset {0})")
    return {
        "newer_good": [f + "newer_good.onnx" + note.format(20)],
        "newer_good_opset21": [f + "newer_good_opset21.onnx" + note.format(21)],
        "newer_good_ir9": [f + "newer_good_ir9.onnx" + note.replace("version 10", "version 9")
                           .format(17)],
        "newer_unknown_attribute": [
            f + "newer_unknown_attribute.onnx: node '/relu/Relu' (Relu, #2): error: the schema of "
            "Relu at opset 20 (libonnx 1.12.0's Relu-14) rejects it: Unrecognized attribute: alpha "
            "for operator Relu"],
        "newer_reduce_mean_axes_attribute": [
            f + "newer_reduce_mean_axes_attribute.onnx: node '/pool/ReduceMean' (ReduceMean, #3): "
            "error: the schema of ReduceMean at opset 18 (ReduceMean-18, as zoc records it) "
            "rejects it: Unrecognized attribute: axes for operator ReduceMean"],
        "newer_gelu_before_opset20": [
            f + "newer_gelu_before_opset20.onnx: node '/act/Gelu' (Gelu, #2): error: opset 19 of "
            "the ONNX domain has no op Gelu"],
        "newer_pool_without_kernel": [
            f + "newer_pool_without_kernel.onnx: node '/pool/AveragePool' (AveragePool, #3): "
            "error: the schema of AveragePool at opset 19 (AveragePool-19, as zoc records it) "
            "rejects it: Required attribute 'kernel_shape' is missing."],
        "newer_initializer_twice": [
            f + "newer_initializer_twice.onnx: error: initializer 'fc.bias' is given twice"],
        "newer_split_num_outputs": [
            f + "newer_split_num_outputs.onnx" + note.format(18),
            f + "newer_split_num_outputs.onnx" + unsupported,
            "  node '/chunk/Split' (Split, #0): num_outputs 3 for 2 outputs"],
        "as_strided_out_of_order": [
            f + "as_strided_out_of_order.onnx" + unsupported,
            "  node 'node_as_strided' (Gather, #2): a Gather of a tensor flattened with its batch "
            "(a Reshape to [-1]) other than every element in order into the tensor's own shape "
            "(as_strided onto its own strides), which zoc follows"],
        "pad_reflect": [
            f + "pad_reflect.onnx" + unsupported,
            "  node '/Pad' (Pad, #7): mode 'reflect'; zoc pads with a constant"],
        "newer_resize_policy": [
            f + "newer_resize_policy.onnx" + note.format(18),
            f + "newer_resize_policy.onnx" + unsupported,
            "  node '/up/Resize' (Resize, #3): Resize with keep_aspect_ratio_policy 'not_larger'; "
            "zoc resizes to the sizes as given ('stretch')"],
        "weights_as_inputs": [
            f + "weights_as_inputs.onnx: error: the graph has 9 inputs: 'input' and 8 that nodes "
            "read as weights ('conv.weight', 'conv.bias', 'bn.weight', 'bn.bias', "
            "'bn.running_mean', 'bn.running_var' and 2 more): the model's weights are graph "
            "inputs, not initializers, so the file carries none (torch.onnx.export(..., "
            "export_params=False)); export it with export_params=True, the default"],
        "batchnorm_on_features": [
            f + "batchnorm_on_features.onnx" + unsupported,
            "  node '/bn1d/BatchNormalization' (BatchNormalization, #4): BatchNorm over a 2-D "
            "(N, C) tensor ([N, 4], BatchNorm1d) is not supported; zoc's BatchNorm takes images "
            "[N, C, H, W]"],
    }
