"""The ONNX bad-input cases of the CNN zoo's forms, written by make_cases.py beside its own.

Each form that ops_zoo.cpp, ops_decomposed.cpp and ops_shape.cpp follow (hard sigmoid, Clip,
channel reductions, slices and splits, ConvNeXt's channels-last view, LayerNormalization, layer
scale, GELU's erf form, opset-13 LayerNorm, Pad, batch arithmetic, ShuffleNet's grouped view,
ECA, split attention), broken once: an image x [batch, 4, 8, 8] through a few nodes.
"""

from onnx import TensorProto, helper

FLOAT = TensorProto.FLOAT


def cases(mk):
    """name -> (builder, extra zoc arguments, exit code); `mk` is make_cases itself."""

    # An image x [batch, 4, 8, 8] through `nodes` to `out` (its declared dims), with `inits`.
    def zoo_case(nodes, out_dims, inits=(), opset=17, out="y"):
        g = helper.make_graph(nodes, "zoo", [mk.image_input("x", ("batch", 4, 8, 8))],
                              [helper.make_tensor_value_info(out, FLOAT, list(out_dims))], list(inits))
        return mk.model(g, opset=opset).SerializeToString()

    def ints(name, v):
        return helper.make_tensor(name, TensorProto.INT64, [len(v)], v)

    def scalar(name, v):
        return helper.make_tensor(name, FLOAT, [], [v])

    IMAGE = ("batch", 4, 8, 8)

    def hardsigmoid_alpha():
        # ONNX's default alpha 0.2 (Keras's hard sigmoid), not PyTorch's 1/6.
        return zoo_case([helper.make_node("HardSigmoid", ["x"], ["y"], name="/gate/HardSigmoid")], IMAGE)

    def clip_one_sided():
        return zoo_case([helper.make_node("Clip", ["x", "lo"], ["y"], name="/act/Clip")], IMAGE,
                        [scalar("lo", -1.0)])

    def reduce_mean_channels():
        return zoo_case([helper.make_node("ReduceMean", ["x"], ["y"], name="/mean/ReduceMean",
                                          axes=[1], keepdims=1)], ("batch", 1, 8, 8))

    def slice_height():
        return zoo_case([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"], name="/cut/Slice")],
                        ("batch", 4, 4, 8), [ints("s", [0]), ints("e", [4]), ints("a", [2])])

    def split_height():
        return zoo_case([helper.make_node("Split", ["x"], ["y", "z"], name="/cut/Split", axis=2)],
                        ("batch", 4, 4, 8))

    def transpose_hw():
        return zoo_case([helper.make_node("Transpose", ["x"], ["y"], name="/t/Transpose",
                                          perm=[0, 1, 3, 2])], IMAGE)

    def view_into_conv():
        # ConvNeXt's channels-last view, but a Conv where LayerNormalization or MatMul belongs.
        nodes = [helper.make_node("Transpose", ["x"], ["t"], name="/t/Transpose", perm=[0, 2, 3, 1]),
                 helper.make_node("Conv", ["t", "w"], ["y"], name="/conv/Conv", kernel_shape=[1, 1])]
        return zoo_case(nodes, ("batch", 4, 8, 4), [mk.init("w", [4, 8, 1, 1], 1)])

    def layernorm_over_width():
        # LayerNormalization of the NCHW image normalizes its rows, not its channels.
        return zoo_case([helper.make_node("LayerNormalization", ["x", "w", "b"], ["y"],
                                          name="/norm/LayerNormalization", axis=-1)], IMAGE,
                        [mk.init("w", [8], 1), mk.init("b", [8], 2)])

    def mul_constant():
        return zoo_case([helper.make_node("Mul", ["x", "k"], ["y"], name="/scale/Mul")], IMAGE,
                        [mk.init("k", [4, 8, 8], 3)])

    def gelu_broken():
        # GELU's erf form with 0.25 where 0.5 belongs.
        nodes = [helper.make_node("Div", ["x", "sqrt2"], ["d"], name="/gelu/Div"),
                 helper.make_node("Erf", ["d"], ["e"], name="/gelu/Erf"),
                 helper.make_node("Add", ["e", "one"], ["a"], name="/gelu/Add"),
                 helper.make_node("Mul", ["x", "a"], ["m"], name="/gelu/Mul"),
                 helper.make_node("Mul", ["m", "quarter"], ["y"], name="/gelu/Mul_1")]
        return zoo_case(nodes, IMAGE, [scalar("sqrt2", 2 ** 0.5), scalar("one", 1.0),
                                       scalar("quarter", 0.25)])

    def erf_alone():
        return zoo_case([helper.make_node("Erf", ["x"], ["y"], name="/erf/Erf")], IMAGE)

    def layernorm_opset13_cubed():
        # LayerNormalization as torch.onnx.export writes it below opset 17, with a cube where the
        # square belongs.
        nodes = [helper.make_node("Transpose", ["x"], ["t"], name="/norm/Transpose", perm=[0, 2, 3, 1]),
                 helper.make_node("ReduceMean", ["t"], ["m"], name="/norm/ReduceMean", axes=[-1]),
                 helper.make_node("Sub", ["t", "m"], ["d"], name="/norm/Sub"),
                 helper.make_node("Pow", ["d", "three"], ["p"], name="/norm/Pow"),
                 helper.make_node("ReduceMean", ["p"], ["v"], name="/norm/ReduceMean_1", axes=[-1]),
                 helper.make_node("Add", ["v", "eps"], ["ve"], name="/norm/Add"),
                 helper.make_node("Sqrt", ["ve"], ["s"], name="/norm/Sqrt"),
                 helper.make_node("Div", ["d", "s"], ["n"], name="/norm/Div"),
                 helper.make_node("Mul", ["n", "norm.weight"], ["nw"], name="/norm/Mul"),
                 helper.make_node("Add", ["nw", "norm.bias"], ["nb"], name="/norm/Add_1"),
                 helper.make_node("Transpose", ["nb"], ["y"], name="/norm/Transpose_1", perm=[0, 3, 1, 2])]
        return zoo_case(nodes, IMAGE, [scalar("three", 3.0), scalar("eps", 1e-6),
                                       mk.init("norm.weight", [4], 1), mk.init("norm.bias", [4], 2)],
                        opset=13)

    def pad_before_conv():
        nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="/pad/Pad"),
                 helper.make_node("Conv", ["p", "w"], ["y"], name="/conv/Conv", kernel_shape=[3, 3])]
        return zoo_case(nodes, IMAGE, [ints("pads", [0, 0, 1, 1, 0, 0, 1, 1]), mk.init("w", [4, 4, 3, 3], 1)])

    def pad_negative():
        # A negative pad crops; zoc pads only.
        nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="/pad/Pad"),
                 helper.make_node("Conv", ["p", "w"], ["y"], name="/conv/Conv", kernel_shape=[3, 3])]
        return zoo_case(nodes, ("batch", 4, 5, 6),
                        [ints("pads", [0, 0, -1, 0, 0, 0, 0, 0]), mk.init("w", [4, 4, 3, 3], 1)])

    def batch_arithmetic():
        # Reshape to [2 * batch, ...]: the batch size computed with, which zoc keeps dynamic.
        nodes = [helper.make_node("Shape", ["x"], ["s"], name="/view/Shape"),
                 helper.make_node("Gather", ["s", "zero"], ["n"], name="/view/Gather", axis=0),
                 helper.make_node("Mul", ["n", "two"], ["n2"], name="/view/Mul"),
                 helper.make_node("Unsqueeze", ["n2", "axes"], ["n2u"], name="/view/Unsqueeze"),
                 helper.make_node("Concat", ["n2u", "rest"], ["shape"], name="/view/Concat", axis=0),
                 helper.make_node("Reshape", ["x", "shape"], ["y"], name="/view/Reshape")]
        return zoo_case(nodes, ("batch", 2, 8, 8),
                        [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
                         helper.make_tensor("two", TensorProto.INT64, [], [2]), ints("axes", [0]),
                         ints("rest", [2, 8, 8])])

    def reshape_groups_uneven():
        # ShuffleNet's grouped view with 3 groups of 4 channels.
        return zoo_case([helper.make_node("Reshape", ["x", "shape"], ["y"], name="/shuffle/Reshape")],
                        ("batch", 3, -1, 8, 8), [ints("shape", [0, 3, -1, 8, 8])])

    def expand_not_into_mul():
        # Expand maps only into the Mul that broadcasts it (ECA attention); here it is the output.
        nodes = [helper.make_node("ReduceMean", ["x"], ["m"], name="/eca/ReduceMean", axes=[2, 3],
                                  keepdims=1),
                 helper.make_node("Shape", ["x"], ["s"], name="/eca/Shape"),
                 helper.make_node("Expand", ["m", "s"], ["y"], name="/eca/Expand")]
        return zoo_case(nodes, IMAGE)

    def eca_conv_two_channels():
        # ECA's [N, 1, C] view of pooled features, but a Conv with two output channels on it.
        nodes = [helper.make_node("ReduceMean", ["x"], ["m"], name="/eca/ReduceMean", axes=[2, 3],
                                  keepdims=0),
                 helper.make_node("Reshape", ["m", "shape"], ["v"], name="/eca/Reshape"),
                 helper.make_node("Conv", ["v", "w"], ["y"], name="/eca/conv/Conv", kernel_shape=[3],
                                  pads=[1, 1])]
        return zoo_case(nodes, ("batch", 2, 4), [ints("shape", [0, 1, -1]), mk.init("w", [2, 1, 3], 1)])

    def reduce_sum_spatial():
        # ReduceSum maps only as split attention's sum over the radix (axis 1 of [N, R, C, H, W]).
        return zoo_case([helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="/ReduceSum",
                                          keepdims=0)],
                        ("batch", 4), [ints("axes", [2, 3])])

    def stack_along_axis2():
        # Two images unsqueezed at axis 1 (a stack's operands), but concatenated along axis 2.
        nodes = [helper.make_node("Unsqueeze", ["x", "one"], ["a"], name="/Unsqueeze"),
                 helper.make_node("Unsqueeze", ["x", "one"], ["b"], name="/Unsqueeze_1"),
                 helper.make_node("Concat", ["a", "b"], ["y"], name="/Concat", axis=2)]
        return zoo_case(nodes, ("batch", 1, 8, 8, 8), [ints("one", [1])])

    def radix_mul_by_image():
        # The [N, R, C, H, W] view multiplied by the image it views: not split attention's Mul.
        nodes = [helper.make_node("Reshape", ["x", "shape"], ["v"], name="/Reshape"),
                 helper.make_node("Mul", ["v", "x"], ["y"], name="/Mul")]
        return zoo_case(nodes, ("batch", 2, 2, 8, 8), [ints("shape", [0, 2, 2, 8, 8])])

    return {
        "hardsigmoid_alpha": (hardsigmoid_alpha, "", 1),
        "clip_one_sided": (clip_one_sided, "", 1),
        "reduce_mean_channels": (reduce_mean_channels, "", 1),
        "slice_height": (slice_height, "", 1),
        "split_height": (split_height, "", 1),
        "transpose_hw": (transpose_hw, "", 1),
        "view_into_conv": (view_into_conv, "", 1),
        "layernorm_over_width": (layernorm_over_width, "", 1),
        "mul_constant": (mul_constant, "", 1),
        "expand_not_into_mul": (expand_not_into_mul, "", 1),
        "eca_conv_two_channels": (eca_conv_two_channels, "", 1),
        "reduce_sum_spatial": (reduce_sum_spatial, "", 1),
        "stack_along_axis2": (stack_along_axis2, "", 1),
        "radix_mul_by_image": (radix_mul_by_image, "", 1),
        "gelu_broken": (gelu_broken, "", 1),
        "erf_alone": (erf_alone, "", 1),
        "layernorm_opset13_cubed": (layernorm_opset13_cubed, "", 1),
        "pad_before_conv": (pad_before_conv, "", 0),
        "pad_negative": (pad_negative, "", 1),
        "batch_arithmetic": (batch_arithmetic, "", 1),
        "reshape_groups_uneven": (reshape_groups_uneven, "", 1),
    }


def expect(F, UNSUPPORTED):
    """The diagnostics each case must produce; `F` is the folder's prefix."""
    return {
        "hardsigmoid_alpha": [F + "hardsigmoid_alpha.onnx" + UNSUPPORTED,
                              "  node '/gate/HardSigmoid' (HardSigmoid, #0): alpha 0.2 and beta 0.5: zoc's "
                              "hardsigmoid is PyTorch's, relu6(x + 3) / 6 (alpha 1/6, beta 0.5)"],
        "clip_one_sided": [F + "clip_one_sided.onnx" + UNSUPPORTED,
                           "  node '/act/Clip' (Clip, #0): clipping to [-1, inf]: zoc maps Clip as ReLU "
                           "(min 0, no max) or as hardtanh, which clips on both sides (min <= max, both "
                           "finite)"],
        "reduce_mean_channels": [F + "reduce_mean_channels.onnx" + UNSUPPORTED,
                                 "  node '/mean/ReduceMean' (ReduceMean, #0): a mean over axes [1] of an "
                                 "activation [N, 4, 8, 8]; zoc averages images over H and W (axes [2, 3]), and "
                                 "the channels of a channels-last view as part of a LayerNormalization"],
        "slice_height": [F + "slice_height.onnx" + UNSUPPORTED,
                         "  node '/cut/Slice' (Slice, #0): a slice along axes [2] of [N, 4, 8, 8]; zoc "
                         "slices images along the channels (axis 1) with step 1"],
        "split_height": [F + "split_height.onnx" + UNSUPPORTED,
                         "  node '/cut/Split' (Split, #0): a split along axis 2 of [N, 4, 8, 8]; zoc "
                         "splits images along the channels"],
        "transpose_hw": [F + "transpose_hw.onnx" + UNSUPPORTED,
                         "  node '/t/Transpose' (Transpose, #0): a transpose [0, 1, 3, 2] of an "
                         "activation [N, 4, 8, 8]; zoc follows an image's perm [0, 2, 3, 1] to "
                         "channels-last and [0, 3, 1, 2] back, and the perm [0, 2, 1, 3, 4] of "
                         "ShuffleNet's channel shuffle"],
        "view_into_conv": [F + "view_into_conv.onnx" + UNSUPPORTED,
                           "  node '/conv/Conv' (Conv, #1): input 1 ('t') is a channels-last [N, H, W, C] "
                           "view (Transpose perm [0, 2, 3, 1]) [N, 8, 8, 4]; zoc follows such a view only "
                           "into the ops of the models that use it (ConvNeXt's LayerNormalization, MatMul "
                           "and elementwise ops; ShuffleNet's Transpose and Reshape)"],
        "layernorm_over_width": [F + "layernorm_over_width.onnx" + UNSUPPORTED,
                                 "  node '/norm/LayerNormalization' (LayerNormalization, #0): a layer "
                                 "normalization from axis -1 of an activation [N, 4, 8, 8]; zoc normalizes the "
                                 "channels of a channels-last image (Transpose perm [0, 2, 3, 1]) or the features "
                                 "of [N, F]"],
        "mul_constant": [F + "mul_constant.onnx" + UNSUPPORTED,
                         "  node '/scale/Mul' (Mul, #0): multiplying [N, 4, 8, 8] by constant 'k' of "
                         "shape [4, 8, 8]; zoc multiplies an image by a per-channel [C, 1, 1] constant (a "
                         "layer scale), by 1, or by another activation"],
        "expand_not_into_mul": [F + "expand_not_into_mul.onnx" + UNSUPPORTED,
                                "  node '/eca/Expand' (Expand, #2): an Expand of [N, 4, 1, 1] to "
                                "[N, 4, 8, 8] read by something other than such a Mul; zoc maps Expand "
                                "only into a Mul by a tensor of that shape (the Mul broadcasts)"],
        "eca_conv_two_channels": [F + "eca_conv_two_channels.onnx" + UNSUPPORTED,
                                  "  node '/eca/conv/Conv' (Conv, #2): a Conv with weight [2, 1, 3] and "
                                  "group 1 on a [N, 1, F] view of features (Reshape); zoc maps a 1-D "
                                  "Conv with one input and output channel there (ECA attention)"],
        "reduce_sum_spatial": [F + "reduce_sum_spatial.onnx" + UNSUPPORTED,
                               "  node '/ReduceSum' (ReduceSum, #0): a ReduceSum over axes [2, 3] of "
                               "an activation [N, 4, 8, 8]; zoc sums over axis 1 of a [N, R, C, H, W] "
                               "view of an image (split attention's radix), keepdims 0"],
        "stack_along_axis2": [F + "stack_along_axis2.onnx" + UNSUPPORTED,
                              "  node '/Concat' (Concat, #2): a Concat along axis 2 of [N, R, C, H, W] "
                              "views; zoc concatenates them along axis 1 (torch.stack of images)"],
        "radix_mul_by_image": [F + "radix_mul_by_image.onnx" + UNSUPPORTED,
                               "  node '/Mul' (Mul, #1): a Mul of a grouped [N, g, C/g, H, W] view "
                               "(Reshape) by an activation; zoc multiplies two [N, R, C, H, W] views "
                               "of one R (split attention)"],
        "gelu_broken": [F + "gelu_broken.onnx" + UNSUPPORTED,
                        "  node '/gelu/Mul_1' (Mul, #4): input 1 ('m') is x * (1 + erf(x / sqrt(2))) of "
                        "GELU's erf form; zoc follows it only into a Mul by 0.5"],
        "erf_alone": [F + "erf_alone.onnx" + UNSUPPORTED,
                      "  node '/erf/Erf' (Erf, #0): Erf of an activation outside GELU's erf form and a "
                      "decomposed LayerNormalization, which zoc follows"],
        "layernorm_opset13_cubed": [F + "layernorm_opset13_cubed.onnx" + UNSUPPORTED,
                                    "  node '/norm/Pow' (Pow, #3): input 1 ('d') is x - mean of a decomposed "
                                    "LayerNormalization; zoc follows it only into a Pow by 2 and a Div"],
        "pad_negative": [F + "pad_negative.onnx" + UNSUPPORTED,
                         "  node '/pad/Pad' (Pad, #0): pads [0, 0, -1, 0, 0, 0, 0, 0]: zoc pads an "
                         "image's H and W (by 0 to 4096 on each side)"],
        "batch_arithmetic": [F + "batch_arithmetic.onnx" + UNSUPPORTED,
                             "  node '/view/Mul' (Mul, #2): Mul on the batch size, which zoc keeps dynamic"],
        "reshape_groups_uneven": [F + "reshape_groups_uneven.onnx" + UNSUPPORTED,
                                  "  node '/shuffle/Reshape' (Reshape, #0): a reshape of an activation [N, 4, 8, "
                                  "8] to [0, 3, -1, 8, 8]; zoc follows ShuffleNet's channel shuffle (an image to "
                                  "[N, g, C/g, H, W], Transpose perm [0, 2, 1, 3, 4], back to [N, C, H, W]) and "
                                  "flattens to [N, features]"],
    }
