#!/usr/bin/env python3
"""Large models through zoc in bounded time and memory (issue 31).

Memory: an ONNX model with 128 MiB of external float data is read with a peak RSS of less than
twice that plus 64 MiB (`zoc ir`: 140 MiB, 210 MiB under ASan); before issue 31 zoc held the
file's bytes, the decoded values and a copy for the weights at once (397 MiB).

Time: the frontends, passes, shape inference, emitter and memory planner must stay linear in the
number of nodes.

Each check generates one model and times one zoc command on it against --limit-s. Before issue
31 the ONNX frontend re-inferred the whole graph's shapes per node and scanned every value name
per gated multiply, the passes scanned the graph per rewrite, the training graph's shape rules
scanned the earlier nodes per node and the memory planner every placed value per value: in a
release build the Conv chain took 56 s in `zoc ir`, the SiLU chain 300 s, the YAML model 21 s
in `ir --optimize` and 28 s in `compile`, the training graph 11 s; all within a second or two
now (release). CMake passes a larger limit to sanitizer builds.

Sanitizer builds pass --scale 0.25: a quarter of the nodes (5,000 to 25,000), enough for their
memory checks on deep graphs; the release build checks the full sizes against its tighter limit.

Usage: large_models.py ZOC [--limit-s S] [--scale F] [--keep DIR]. Needs python3-onnx (Debian's).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np


def yaml_residual(path, layers):
    """A ResNet-like model of about `layers` layers: 7-layer residual blocks of 4 channels."""
    with open(path, "w") as f:
        f.write(f"""zoc: 1
name: scale
blocks:
  res:
    layers:
      - conv1: {{op: conv2d, out_channels: 4, kernel: 1, bias: false}}
      - bn1: {{op: batchnorm2d}}
      - relu1: {{op: relu}}
      - conv2: {{op: conv2d, out_channels: 4, kernel: 1, bias: false}}
      - bn2: {{op: batchnorm2d}}
      - add: {{op: add, inputs: [bn2, input]}}
      - relu2: {{op: relu}}
input: {{channels: 4, height: 4, width: 4}}
layers:
  - body: {{block: res, repeat: {layers // 7}}}
  - pool: {{op: global_avgpool}}
  - flatten: {{op: flatten}}
  - fc: {{op: linear, out_features: 10}}
""")


def onnx_chain(path, nodes):
    """The graph of `nodes` ONNX nodes built by nodes(prev, i) -> (node list, output name)."""
    graph_nodes, prev, i = [], "x", 0
    inits = [numpy_helper.from_array(np.full((2, 2, 1, 1), 0.5, np.float32), "w")]
    while len(graph_nodes) < nodes[1]:
        made, prev = nodes[0](prev, i)
        graph_nodes += made
        i += 1
    shape = [1, 2, 4, 4]
    g = helper.make_graph(graph_nodes, "scale",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, shape)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def onnx_external(path, channels):
    """One 1x1 Conv whose [channels, channels, 1, 1] float32 weight lies in an external file."""
    w = numpy_helper.from_array(np.full((channels, channels, 1, 1), 0.5, np.float32), "w")
    shape = [1, channels, 1, 1]
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="/conv/Conv")], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(m, path, save_as_external_data=True, location=os.path.basename(path) + ".data",
                    size_threshold=0)


# Runs a command and prints its exit code and peak RSS in KiB. A fresh, small interpreter starts
# it: a child's peak counts the memory of the process it was forked from (here, the models).
MEASURE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], "
           "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
           "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_rss_check(zoc, work):
    """Peak RSS of `zoc ir` on 128 MiB of external data."""
    path = os.path.join(work, "external.onnx")
    onnx_external(path, 5792)  # 5792^2 floats: 128 MiB
    data = os.path.getsize(path + ".data")
    r = subprocess.run([sys.executable, "-c", MEASURE, os.path.abspath(zoc), "ir", path],
                       capture_output=True, text=True, timeout=600)
    code, peak_kib = (int(x) for x in r.stdout.split())
    peak, limit = peak_kib * 1024, 2 * data + (64 << 20)  # ASan's allocator takes ~70 MiB more
    ok = code == 0 and peak < limit
    print(f"{'ok  ' if ok else 'FAIL'} peak {peak / 2**20:.0f} MiB for {data / 2**20:.0f} MiB of "
          f"external data (limit {limit / 2**20:.0f} MiB){'' if code == 0 else f'  (exit {code})'}",
          flush=True)
    os.remove(path + ".data")
    return ok


def conv(prev, i):
    return [helper.make_node("Conv", [prev, "w"], [f"c{i}"], name=f"/conv{i}/Conv")], f"c{i}"


def silu(prev, i):  # x * sigmoid(x), which zoc reads as one SiLU
    return [helper.make_node("Sigmoid", [prev], [f"s{i}"], name=f"/act{i}/Sigmoid"),
            helper.make_node("Mul", [prev, f"s{i}"], [f"m{i}"], name=f"/act{i}/Mul")], f"m{i}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("zoc")
    ap.add_argument("--limit-s", type=float, default=10)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every model's node count")
    ap.add_argument("--keep", help="write the models here and keep them")
    args = ap.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        return run(args, args.keep)
    with tempfile.TemporaryDirectory(prefix="zoc_scale_") as work:
        return run(args, work)


def run(args, work):
    failed = 0 if peak_rss_check(args.zoc, work) else 1
    n = lambda count: max(1, round(count * args.scale))
    models = {
        "conv20k.onnx": lambda p: onnx_chain(p, (conv, n(20000))),
        "silu100k.onnx": lambda p: onnx_chain(p, (silu, n(100000))),
        "res100k.yaml": lambda p: yaml_residual(p, n(100000)),
        "res20k.yaml": lambda p: yaml_residual(p, n(20000)),
    }
    checks = [
        ("conv20k.onnx", ["ir"]),
        ("conv20k.onnx", ["ir", "--optimize"]),
        ("conv20k.onnx", ["compile", "-o", "{out}"]),
        ("silu100k.onnx", ["ir"]),
        ("res100k.yaml", ["ir", "--optimize"]),
        ("res100k.yaml", ["compile", "-o", "{out}"]),
        ("res100k.yaml", ["compile", "--precision", "fp16", "-o", "{out}"]),
        ("res20k.yaml", ["ir", "--train"]),
    ]
    for name, make in models.items():
        make(os.path.join(work, name))
    for k, (model, cmd) in enumerate(checks):
        out = os.path.join(work, f"out{k}")
        argv = [args.zoc, cmd[0], os.path.join(work, model)] + [a.format(out=out) for a in cmd[1:]]
        start = time.monotonic()
        try:  # a quadratic run is stopped at three times the limit
            r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               timeout=3 * args.limit_s)
            why = "" if r.returncode == 0 else f"  (exit {r.returncode}: {r.stderr.strip()[:300]})"
        except subprocess.TimeoutExpired:
            why = f"  (stopped after {3 * args.limit_s:g} s)"
        took = time.monotonic() - start
        ok = not why and took <= args.limit_s
        failed += not ok
        shown = " ".join(a.replace("{out}", "OUT") for a in cmd[1:])
        print(f"{'ok  ' if ok else 'FAIL'} {took:7.2f} s  zoc {cmd[0]} {model} {shown}{why}",
              flush=True)
    scale = "" if args.scale == 1 else f", node counts x {args.scale:g}"
    print(f"limit {args.limit_s:g} s per command{scale}; {failed} of {len(checks) + 1} checks failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
