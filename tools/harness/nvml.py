"""GPU memory, utilization and clocks sampled from outside the measured processes, and the
machine's description.

Peak memory and utilization must be measured the same way for every implementation, including
the zoc binaries and the LibTorch programs that cannot report them themselves, so bench.py runs
this sampler in a thread of its own process while the runners work, and attributes samples to a
measured point by the wall-clock window each runner reports (t_point_start .. t_end for memory,
t_start .. t_end, the timed loop, for utilization). Device-wide "used" memory is what NVML
reports: with one process on the GPU that is the process's CUDA context plus its allocations.
NVML's utilization is the share of the last sample period (1/6 s to 1 s, by GPU) in which a
kernel ran, so it is coarse for timed loops much shorter than that.

Sources, first that works: the NVML library through ctypes (libnvidia-ml.so.1; the pynvml
package is not needed), then `nvidia-smi --query-gpu ... -lms`, then nothing (all fields null,
e.g. on a machine without a GPU).
"""

import ctypes
import json
import subprocess
import threading
import time


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Nvml:
    """The few NVML calls we need, through ctypes."""
    CLOCK_SM, CLOCK_MEM = 1, 2

    def __init__(self, index=0):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit_v2 failed")
        self.handle = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) != 0:
            raise OSError("nvmlDeviceGetHandleByIndex_v2 failed")

    def sample(self):
        mem, util = _Memory(), _Utilization()
        clock, power = ctypes.c_uint(), ctypes.c_uint()
        s = {"t": time.time()}
        if self.lib.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(mem)) == 0:
            s["used_mb"] = mem.used / 2**20
        if self.lib.nvmlDeviceGetUtilizationRates(self.handle, ctypes.byref(util)) == 0:
            s["util"] = float(util.gpu)
        if self.lib.nvmlDeviceGetClockInfo(self.handle, self.CLOCK_SM, ctypes.byref(clock)) == 0:
            s["sm_mhz"] = float(clock.value)
        if self.lib.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(power)) == 0:
            s["power_w"] = power.value / 1000.0
        return s


class Sampler(threading.Thread):
    """Samples every `period` seconds until stop(); samples() returns them in time order."""

    def __init__(self, period=0.02):
        super().__init__(daemon=True)
        self.period, self._samples, self._stop = period, [], threading.Event()
        self._lock = threading.Lock()
        self.source, self._nvml, self._smi = None, None, None
        try:
            self._nvml = _Nvml()
            self._nvml.sample()
            self.source = "nvml (ctypes)"
        except (OSError, AttributeError) as e:
            self._nvml = None
            self.source_error = "libnvidia-ml: %s" % e
            try:
                self._smi = subprocess.Popen(
                    ["nvidia-smi", "--query-gpu=memory.used,utilization.gpu,clocks.sm,power.draw",
                     "--format=csv,noheader,nounits", "-lms", str(max(int(period * 1000), 20))],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                self.source = "nvidia-smi -lms"
            except OSError:
                self.source = None

    def run(self):
        if self._nvml:
            while not self._stop.is_set():
                self._add(self._nvml.sample())
                time.sleep(self.period)
        elif self._smi:
            for line in self._smi.stdout:
                if self._stop.is_set():
                    break
                parts = [p.strip() for p in line.split(",")]
                s = {"t": time.time()}
                for key, text in zip(("used_mb", "util", "sm_mhz", "power_w"), parts):
                    try:
                        s[key] = float(text)
                    except ValueError:
                        pass
                self._add(s)

    def _add(self, s):
        with self._lock:
            self._samples.append(s)

    def stop(self):
        self._stop.set()
        if self._smi:
            self._smi.terminate()

    def samples(self):
        with self._lock:
            return list(self._samples)

    def window(self, t0, t1):
        """Samples with t0 <= t <= t1 (widened to the nearest sample after t1 if none)."""
        if t0 is None or t1 is None:
            return []
        samples = self.samples()
        inside = [s for s in samples if t0 <= s["t"] <= t1]
        if not inside:
            after = [s for s in samples if t1 < s["t"] <= t1 + 0.25]
            inside = after[:1]
        return inside


def attribute(rec, sampler):
    """NVML figures of one point record: peak memory over the whole point, utilization, SM
    clock and power over its timed loop."""
    if sampler is None or sampler.source is None:
        return rec
    mem = [s["used_mb"] for s in sampler.window(rec.get("t_point_start"), rec.get("t_end"))
           if "used_mb" in s]
    timed = sampler.window(rec.get("t_start"), rec.get("t_end"))
    if mem:
        rec["nvml_peak_mb"] = max(mem)
    for key, out in (("util", "gpu_util_pct"), ("sm_mhz", "sm_clock_mhz"),
                     ("power_w", "power_w")):
        values = [s[key] for s in timed if key in s]
        if values:
            rec[out] = sum(values) / len(values)
    if timed:
        rec["nvml_samples"] = len(timed)
    return rec


def _run(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return r.stdout.strip() if r.returncode == 0 else "unavailable (rc %d)" % r.returncode
    except (OSError, subprocess.SubprocessError) as e:
        return "unavailable (%s)" % e


def environment(python_info, extra=None):
    """GPU, driver, clocks, CUDA, cuDNN and framework versions; python_info is the output of
    `python3 -c ...` with torch (bench.py runs it in the measuring interpreter)."""
    fields = ("name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,"
              "clocks.max.mem,clocks.applications.graphics,power.limit,persistence_mode,"
              "pstate,compute_mode,pci.bus_id")
    smi = _run(["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader"])
    env = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
           "nvidia_smi": dict(zip(fields.split(","), [p.strip() for p in smi.split(",")]))
           if not smi.startswith("unavailable") else smi,
           "nvcc": _run(["nvcc", "--version"]).splitlines()[-1:],
           "cmake": _run(["cmake", "--version"]).splitlines()[:1],
           "uname": _run(["uname", "-srm"]),
           "cpu": _run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]).strip(),
           "nproc": _run(["nproc"])}
    try:
        env.update(json.loads(python_info))
    except ValueError:
        env["python_info_error"] = python_info[-500:]
    env.update(extra or {})
    return env


PYTHON_INFO = r"""
import json, sys
info = {"python": sys.version.split()[0]}
try:
    import numpy; info["numpy"] = numpy.__version__
    import torch
    info.update(torch=torch.__version__, torch_cuda=torch.version.cuda,
                torch_cudnn=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
                cuda_available=torch.cuda.is_available())
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        info.update(gpu=p.name, gpu_memory_mb=p.total_memory // 2**20, sm_count=p.multi_processor_count,
                    capability="%d.%d" % (p.major, p.minor))
    import torchvision; info["torchvision"] = torchvision.__version__
except Exception as e:
    info["import_error"] = repr(e)
try:  # the JAX/XLA rows' versions (importing jax does not start its GPU backend)
    import jax, jaxlib, flax
    info.update(jax=jax.__version__, jaxlib=jaxlib.__version__, flax=flax.__version__)
except Exception as e:
    info["jax"] = "not installed (%s)" % type(e).__name__
print(json.dumps(info))
"""
