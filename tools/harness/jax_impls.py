#!/usr/bin/env python3
"""The JAX/XLA rows of the benchmark harness: Flax models under jax.jit.

XLA is the compiler behind TensorFlow, which the study compared raw cuDNN with; JAX is how it is
used today. This script runs the `jax` variants bench.py hands it (the plan file format of
torch_impls.py) on the same weights.safetensors and seeded input as every other row: the state
dict is converted once to Flax's NHWC tree (jax_weights.py) and checked leaf by leaf against the
model's own shapes, the input is converted to NHWC and the row's dtype outside the timing (as the
channels-last PyTorch rows convert theirs), and for each batch size the forward is compiled ahead
of time (`jax.jit(...).lower(...).compile()`, timed and reported as compile_s; XLA autotunes its
convolutions then), run once for the accuracy check, then timed.

Timing: JAX exposes no CUDA events on its streams, so each iteration is the host clock around
the call and `block_until_ready()`: what a JAX user measures as latency. It includes JAX's
dispatch (flattening the parameter tree) and the final synchronization, a few microseconds
that CUDA-event timing of the other rows does not include; the host CPU time of the call alone
is recorded as for the other rows. Preallocation is off (XLA_PYTHON_CLIENT_PREALLOCATE=false)
so that NVML's memory figures mean what they mean for the other rows.

Precisions: fp32 passes lax.Precision.HIGHEST to every convolution and dense layer (no TF32);
tf32 is JAX's default precision (TF32 on Ampere and later); fp16/bf16 hold parameters, inputs
and activations in that dtype. Where JAX is not installed (the CPU dry run) every point is a
'skipped' record saying so.

Usage: jax_impls.py PLAN.json   (written by bench.py)
"""

import gc
import os
import sys
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # before jax is imported

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, HERE)
import common  # noqa: E402
import jax_weights  # noqa: E402
import safetensors_io  # noqa: E402

COMPILE_MIN_LEFT_S = 30  # do not start a compilation with less time than this left
CLASSES = {"lenet": 10, "resnet50": 1000, "mobilenet_v2": 1000, "efficientnet_b0": 1000}


def load_jax(device):
    """(jax, jnp, jax_models) or the reason the rows cannot run."""
    try:
        import jax
        import jax.numpy as jnp
        import jax_models
    except ImportError as e:
        return None, "skipped: JAX/Flax not installed here (%s)" % e
    if device == "cuda" and jax.default_backend() != "gpu":
        return None, "JAX sees no GPU (backend %s)" % jax.default_backend()
    return (jax, jnp, jax_models), None


def dtype_and_precision(jax, jnp, precision):
    dtype = {"fp32": jnp.float32, "tf32": jnp.float32, "fp16": jnp.float16,
             "bf16": jnp.bfloat16}[precision]
    return dtype, jax.lax.Precision.HIGHEST if precision == "fp32" else None


class Model:
    """One Flax model with the file's weights on the device, in one precision."""

    def __init__(self, mods, g, v):
        jax, jnp, jax_models = mods
        self.jax = jax
        self.dtype, precision = dtype_and_precision(jax, jnp, v["precision"])
        self.module = jax_models.build(g["model"], CLASSES[g["model"]], self.dtype, precision)
        tensors, _ = safetensors_io.load_file(g["weights"])
        variables = jax_weights.flax_variables(g["model"], tensors)
        sample = np.load(g["input"])[:1].transpose(0, 2, 3, 1)
        shapes = jax.eval_shape(self.module.init, jax.random.PRNGKey(0),
                                jnp.zeros(sample.shape, self.dtype))
        jax_weights.check_against(variables, jax.tree_util.tree_map(lambda s: s.shape, shapes),
                                  "%s: " % g["weights"])
        self.variables = jax.tree_util.tree_map(lambda a: jnp.asarray(a, self.dtype), variables)
        self.forward = jax.jit(self.module.apply)

    def input(self, x_nchw):
        return self.jax.device_put(self.jax.numpy.asarray(x_nchw.transpose(0, 2, 3, 1),
                                                          self.dtype))


def time_calls(call, t):
    """Warm-up, then the host clock around each call and its block_until_ready()."""
    w0 = time.perf_counter()
    for i in range(t["warmup"]):
        call().block_until_ready()
        if t["max_time_ms"] and i >= 2 and (time.perf_counter() - w0) * 2000 >= t["max_time_ms"]:
            break
    ms, cpu_us, total = [], [], 0.0
    t_start = time.time()
    for i in range(t["iters"]):
        if t["max_time_ms"] and i >= min(t["iters"], 5) and total >= t["max_time_ms"]:
            break
        w, c = time.perf_counter(), time.thread_time()
        y = call()
        c1 = time.thread_time()
        y.block_until_ready()
        ms.append((time.perf_counter() - w) * 1000.0)
        cpu_us.append((c1 - c) * 1e6)
        total += ms[-1]
    return ms, cpu_us, t_start, time.time()


def measure_point(model, v, g, batch, samples, plan, rec):
    t = plan["timing"]
    x_host = common.tile_samples(samples, batch)
    x = model.input(x_host)
    t0 = time.time()
    compiled = model.forward.lower(model.variables, x).compile()
    rec["compile_s"] = time.time() - t0
    y = compiled(model.variables, x)
    rows = min(batch, samples.shape[0])
    out = np.asarray(y[:rows], dtype=np.float32)
    path = os.path.join(plan["outputs"], "%s_%s_r%d_b%d.npy" % (v["name"], g["model"],
                                                                 g["resolution"], batch))
    np.save(path, out)
    rec["output_npy"] = path
    del y
    ms, cpu_us, t_start, t_end = time_calls(lambda: compiled(model.variables, x), t)
    common.fill_timing(rec, ms, cpu_us)
    rec.update(t_start=t_start, t_end=t_end, status="ok")
    stats = model.jax.devices()[0].memory_stats() or {}
    if stats.get("peak_bytes_in_use"):
        rec["jax_peak_mb"] = stats["peak_bytes_in_use"] / 2**20
    if t.get("h2d_reps"):  # the fp32 batch to the device, from ordinary (pageable) host memory
        times = []
        for _ in range(t["h2d_reps"] + 1):
            w = time.perf_counter()
            model.jax.device_put(x_host).block_until_ready()
            times.append((time.perf_counter() - w) * 1000.0)
        common.fill_h2d(rec, {"bytes": x_host.nbytes, "pageable_ms": float(np.median(times[1:]))})


def run_variant(plan, mods, why_not, v, groups):
    for g in groups:
        samples = np.load(g["input"])
        model, setup_error = None, None
        if why_not:
            setup_error = ("skipped" if why_not.startswith("skipped") else "error", why_not)
        else:
            try:
                model = Model(mods, g, v)
            except Exception as e:  # noqa: BLE001 - recorded as an error row
                setup_error = ("error", common.describe(e))
                print(traceback.format_exc(limit=6), flush=True)
        stop = None
        for batch in g["batches"]:
            rec = common.new_record(v, g, batch, plan["step"])
            rec["t_point_start"] = time.time()
            left = plan["deadline"] - time.time()
            if setup_error or stop:
                status, why = setup_error or stop
                rec.update(status=status, error=why)
            elif left < COMPILE_MIN_LEFT_S:
                rec.update(status="skipped", error="time budget: %.0fs left, a JAX compile needs "
                           "about %ds" % (left, COMPILE_MIN_LEFT_S))
            else:
                try:
                    measure_point(model, v, g, batch, samples, plan, rec)
                except Exception as e:  # noqa: BLE001
                    oom = "RESOURCE_EXHAUSTED" in str(e) or "out of memory" in str(e).lower()
                    rec.update(status="oom" if oom else "error", error=common.describe(e))
                    print(traceback.format_exc(limit=6), flush=True)
                    stop = ("skipped", "after %s at batch %d" % (rec["status"], batch))
            common.emit_record(plan, rec)
            gc.collect()
        del model
        gc.collect()


def main(argv=None):
    plan = common.load_plan(__doc__.split("\n\n")[0], argv)
    mods, why_not = load_jax(plan["device"])
    if mods:
        jax = mods[0]
        print("jax %s on %s: %d variants" % (jax.__version__, jax.devices()[0], len(plan["runs"])),
              flush=True)
    else:
        print("jax_impls.py: %s" % why_not, flush=True)
    for run in plan["runs"]:
        run_variant(plan, mods, why_not, run["variant"], run["groups"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
