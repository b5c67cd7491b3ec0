#!/usr/bin/env python3
"""The benchmark harness's driver on the GPU machine: build, export, measure, judge.

tools/harness/run.sh sets up the environment and calls this; it then calls report.py. The GPU
is scarce and the device tool kills a command after 10 minutes, so everything one sweep needs
happens in this one process, against a deadline: (1) in parallel, build the zoc folders of
GEN_DIR and the LibTorch runners, and export the seeded weights, input and PyTorch fp32
reference of every (model, resolution) with models/export.py; (2) with the GPU to itself, run
the plan's steps one process at a time (plan.py), an NVML sampler watching from a thread here;
(3) turn every runner's output into point records (common.py), attribute NVML samples to them,
judge each output against the reference, and write them to OUT/raw/<step>.json as each step
ends. A step that cannot run (no folder, a failed build, no time left) still leaves one record
per point saying why, so that a missing row is never silent.

Usage (run.sh passes these): bench.py --mode quick --gen GEN_DIR --work WORK --out OUT
  --start EPOCH --budget-s 540 [--device cuda|cpu] [--python PY]
"""

import argparse
import concurrent.futures
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import common  # noqa: E402
import layer_profile  # noqa: E402
import nvml  # noqa: E402
import plan  # noqa: E402

REPORT_RESERVE_S = 30  # left for report.py after the last step
PYTHON_RUNNERS = {"torch": "torch_impls.py", "jax": "jax_impls.py"}
TIMING = {"warmup": 10, "iters": 50, "max_time_ms": 1000, "h2d_reps": 5}
DRY_TIMING = {"warmup": 1, "iters": 5, "max_time_ms": 200, "h2d_reps": 1}


class Bench:
    def __init__(self, a):
        self.a = a
        if a.dry:
            TIMING.update(DRY_TIMING)
        self.deadline = a.start + a.budget_s - REPORT_RESERVE_S
        self.logs = os.path.join(a.out, "logs")
        self.raw = os.path.join(a.out, "raw")
        for d in (self.logs, self.raw, os.path.join(a.work, "build"), os.path.join(a.work, "ref"),
                  os.path.join(a.work, "out")):
            os.makedirs(d, exist_ok=True)
        self.sampler = None
        self.notes = []
        self.build_status = {}  # name -> None (ok) or the reason it is unusable
        self.runtime_versions = {}

    def say(self, msg):
        print("[%4ds] %s" % (time.time() - self.a.start, msg), flush=True)

    def left(self):
        return self.deadline - time.time()

    def prep_limit(self, cap):
        """A build or export may take `cap` seconds, but must leave a minute to measure."""
        return max(10, min(cap, self.left() - 60))

    # --- subprocesses -----------------------------------------------------------------------

    def run(self, cmd, log, timeout, cwd=None, env=None):
        """Runs cmd in its own process group with output to log; kills the whole group at the
        timeout (torch.compile's workers included). Returns the exit status, 124 on timeout."""
        with open(log, "a") as f:
            f.write("$ %s\n" % " ".join(map(str, cmd)))
            f.flush()
            try:
                p = subprocess.Popen([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT,
                                     cwd=cwd, env=env, start_new_session=True)
            except OSError as e:
                f.write("cannot start: %s\n" % e)
                return 127
            try:
                return p.wait(timeout=max(timeout, 1))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                f.write("\n[killed after %.0fs: time limit]\n" % timeout)
                return 124

    # --- phase 1: builds and exports -------------------------------------------------------

    def ref_dir(self, model, res):
        return os.path.join(self.a.work, "ref", "%s_r%d" % (model, res))

    def export(self, model, res, torchscript):
        out = self.ref_dir(model, res)
        log = os.path.join(self.logs, "export_%s_r%d.log" % (model, res))
        cmd = [self.a.python, os.path.join(ROOT, "models", "export.py"), "--model", model,
               "--resolution", res, "--batch", plan.SAMPLES[model], "--seed", 0,
               "--device", self.a.device, "--torchscript", "script" if torchscript else "none",
               "--out", out]
        rc = self.run(cmd, log, self.prep_limit(300))
        ok = rc == 0 and os.path.exists(os.path.join(out, "output.npy"))
        self.build_status["export_%s_r%d" % (model, res)] = None if ok else (
            "export.py failed (rc %d): %s" % (rc, common.tail(log, 3)))

    def build_zoc(self, folder, model):
        src = os.path.join(self.a.gen, folder)
        b = os.path.join(self.a.work, "build", folder)
        log = os.path.join(self.logs, "build_%s.log" % folder)
        env = os.environ
        cmake_args = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=90",
                      "-DCMAKE_CUDA_COMPILER=" + env.get("HARNESS_NVCC", "nvcc")]
        for key, var in (("CUDNN_ROOT", "HARNESS_CUDNN_DIR"), ("CUDNN_INCLUDE_DIR", "HARNESS_CUDNN_INC"),
                         ("CUDNN_LIBRARY", "HARNESS_CUDNN_LIB")):
            if env.get(var):
                cmake_args.append("-D%s=%s" % (key, env[var]))
        rc = self.run(["cmake", "-S", src, "-B", b] + cmake_args, log, self.prep_limit(240))
        if rc == 0:
            rc = self.run(["cmake", "--build", b, "-j", "4"], log, self.prep_limit(420))
        binary = os.path.join(b, model + "_main")
        if rc == 0 and os.path.exists(binary):
            self.build_status[folder] = None
        else:
            self.build_status[folder] = "build failed (rc %d, logs/build_%s.log): %s" % (
                rc, folder, common.tail(log, 2))

    def build_libtorch(self):
        b = os.path.join(self.a.work, "build", "libtorch")
        log = os.path.join(self.logs, "build_libtorch.log")
        prefix = os.environ.get("HARNESS_TORCH_PREFIX") or subprocess.run(
            [self.a.python, "-c", "import torch; print(torch.utils.cmake_prefix_path)"],
            capture_output=True, text=True).stdout.strip()
        rc = self.run(["cmake", "-S", os.path.join(HERE, "libtorch"), "-B", b, "-G", "Ninja",
                       "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_PREFIX_PATH=" + prefix], log,
                      self.prep_limit(240))
        if rc == 0:
            rc = self.run(["cmake", "--build", b, "-j", "8"], log, self.prep_limit(420))
        for runner in ("ts_runner", "resnet50_nn"):
            ok = rc == 0 and os.path.exists(os.path.join(b, runner))
            self.build_status[runner] = None if ok else (
                "LibTorch build failed (rc %d, logs/build_libtorch.log): %s" % (rc, common.tail(log, 2)))

    def prepare(self, steps):
        jobs = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
            for model, res, ts in plan.exports(self.a.mode, self.a.dry):
                jobs.append(pool.submit(self.export, model, res, ts))
            runners = {s["runner"] for s in steps}
            if self.a.device == "cuda":
                for folder, model, _, _ in plan.zoc_folders(self.a.mode, self.a.dry):
                    if os.path.isdir(os.path.join(self.a.gen or "/nonexistent", folder)):
                        jobs.append(pool.submit(self.build_zoc, folder, model))
                    else:
                        self.build_status[folder] = "not in GEN_DIR %s (run prepare.sh %s)" % (
                            self.a.gen, self.a.mode)
            else:
                for folder, _, _, _ in plan.zoc_folders(self.a.mode, self.a.dry):
                    self.build_status[folder] = "skipped: zoc binaries need a GPU (--device cpu)"
            if runners & {"ts_runner", "resnet50_nn"}:
                jobs.append(pool.submit(self.build_libtorch))
            for j in jobs:
                j.result()
        bad = {k: v for k, v in self.build_status.items() if v}
        self.say("builds and exports done: %d ok, %d unusable%s" % (
            len(self.build_status) - len(bad), len(bad),
            "".join("\n        %s: %s" % (k, v.splitlines()[0][:160]) for k, v in bad.items())))

    # --- phase 2: steps -------------------------------------------------------------------

    def group_files(self, g):
        ref = self.ref_dir(g["model"], g["resolution"])
        return dict(g, weights=os.path.join(ref, "weights.safetensors"),
                    input=os.path.join(ref, "input.npy"), reference=os.path.join(ref, "output.npy"),
                    samples=plan.SAMPLES[g["model"]])

    def unusable(self, g, runner_key=None):
        """Why group g cannot be measured (missing export or build), or None."""
        why = self.build_status.get("export_%s_r%d" % (g["model"], g["resolution"]))
        if why:
            return why
        return self.build_status.get(runner_key) if runner_key else None

    def records_of_points(self, v, g, step, points, missing_status, missing_why, out_stem,
                          notes=None):
        """Records from a runner's JSON points (zoc or LibTorch), one per planned batch; notes:
        what each layer of a zoc profile is (layer_profile.layer_notes)."""
        by_batch = {p.get("batch"): p for p in points}
        recs = []
        for batch in g["batches"]:
            rec = common.new_record(v, g, batch, step)
            p = by_batch.get(batch)
            if p is None:
                rec.update(status=missing_status, error=missing_why)
            elif p.get("error") or p.get("status") in ("oom", "error"):
                err = p.get("error", "")
                oom = p.get("status") == "oom" or "out of memory" in err or "MemoryAllocation" in err
                rec.update(status="oom" if oom else "error", error=err[:2000])
                missing_status, missing_why = "skipped", "after %s at batch %d" % (rec["status"], batch)
            else:
                rec["status"] = "ok"
                common.fill_timing(rec, p.get("iter_ms") or [], p.get("iter_host_cpu_us"))
                wall = p.get("host_wall_us")
                if isinstance(wall, dict):
                    rec["host_wall_us"] = wall.get("median")
                common.fill_h2d(rec, p.get("h2d"))
                for key in ("t_point_start", "t_start", "t_end", "deterministic"):
                    rec[key] = p.get(key)
                if "device_used_bytes" in p:
                    rec["device_used_mb"] = p["device_used_bytes"] / 2**20
                    rec["model_mem_mb"] = sum(p.get(k) or 0 for k in (
                        "arena_bytes", "workspace_bytes", "weight_bytes")) / 2**20
                if p.get("create_ms") is not None:
                    rec["setup_s"] = p["create_ms"] / 1000.0
                rec["output_npy"] = p.get("output_npy") or "%s_b%d.npy" % (out_stem, batch)
                prof = p.get("profile")
                if isinstance(prof, dict) and prof.get("layers"):
                    layers = sorted(prof["layers"], key=lambda x: -x.get("ms", 0))
                    rec["profile"] = layer_profile.compact(prof["layers"], notes or {})
                    rec["profile_sum_ms"] = prof.get("sum_ms")
                    rec["profile_layers"] = len(prof["layers"])
                    rec["profile_top"] = "; ".join("%s %.3f" % (x["layer"], x["ms"])
                                                   for x in layers[:3])
            recs.append(rec)
        return recs

    def run_binary(self, step, v, g, cmd, json_path, out_stem, cap, notes=None):
        name = "%s_%s_%s_r%d" % (step["name"], v["name"], g["model"], g["resolution"])
        log = os.path.join(self.logs, name + ".log")
        if os.path.exists(json_path):
            os.remove(json_path)
        t = min(cap, self.left())
        rc = self.run(cmd, log, t)
        doc = common.load_json(json_path) or {}
        for key in ("cudnn_version", "cublas_version", "torch_version", "gpu"):
            if doc.get(key):  # what the binaries report they run with, for env.json
                self.runtime_versions["%s %s" % (v["runner"], key)] = doc[key]
        why = ("process ended (rc %d) before this batch: %s" % (rc, common.tail(log, 3))
               if rc != 124 else "time limit reached (%.0fs) before this batch" % t)
        if doc.get("error") and not doc.get("points"):
            why = doc["error"]
        recs = self.records_of_points(v, g, step["name"], doc.get("points") or [],
                                      "skipped" if rc == 124 else "error", why, out_stem, notes)
        for r in recs:
            if doc.get("setup_ms") is not None:
                r.setdefault("setup_s", doc["setup_ms"] / 1000.0)
        return recs

    def step_zoc(self, step, v, g):
        folder = plan.zoc_folder(g["model"], g["resolution"], v["precision"])
        binary = os.path.join(self.a.work, "build", folder, g["model"] + "_main")
        why = self.unusable(g, folder)
        if not why:
            helptext = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
            if "--batches" not in helptext:
                why = ("%s predates the harness's --batches (runtime/zoc/runner/main_harness.h): "
                       "regenerate with tools/harness/prepare.sh" % folder)
        if why:
            return self.skipped(step, v, g, why)
        base = os.path.join(self.a.work, "out", "%s_%s" % (v["name"], folder))
        cmd = [binary, "--weights", g["weights"], "--input", g["input"], "--tile",
               "--batches", ",".join(map(str, g["batches"])), "--top", 0, "--json", base + ".json",
               "--output", base, "--warmup", TIMING["warmup"], "--iters", TIMING["iters"],
               "--max-time-ms", TIMING["max_time_ms"], "--h2d-reps", TIMING["h2d_reps"]]
        cmd.append("--graph" if v["graph"] else "--no-graph")
        if v.get("tune"):  # the plan file travels back in the bundle (raw/plans)
            plans = os.path.join(self.a.out, "raw", "plans")
            os.makedirs(plans, exist_ok=True)
            cmd += ["--tune", os.path.join(plans, folder + ".plan")]
        notes = None
        if v.get("profile"):
            cmd += ["--profile", v["profile"]]
            notes = layer_profile.layer_notes(os.path.join(self.a.gen, folder), g["model"])
        return self.run_binary(step, v, g, cmd, base + ".json", base, step["cap_s"], notes)

    def step_cpp(self, step, v, g):
        runner = v["runner"]
        why = self.unusable(g, runner)
        if runner == "resnet50_nn" and g["model"] != "resnet50":
            why = "resnet50_nn is ResNet-50 only"
        if why:
            return self.skipped(step, v, g, why)
        base = os.path.join(self.a.work, "out", "%s_%s_r%d" % (v["name"], g["model"], g["resolution"]))
        cmd = [os.path.join(self.a.work, "build", "libtorch", runner), "--weights", g["weights"],
               "--input", g["input"], "--batches", ",".join(map(str, g["batches"])),
               "--precision", v["precision"], "--device", self.a.device, "--json", base + ".json",
               "--output-prefix", base, "--warmup", TIMING["warmup"], "--iters", TIMING["iters"],
               "--max-time-ms", TIMING["max_time_ms"], "--h2d-reps", TIMING["h2d_reps"]]
        if runner == "ts_runner":
            native = self.ref_dir(g["model"], plan.NATIVE_RES[g["model"]])
            cmd += ["--model", os.path.join(native, "model.pt")]
            if v.get("optimize"):
                cmd.append("--optimize")
            elif v.get("freeze"):
                cmd.append("--freeze")
        if v["layout"] == "channels_last":
            cmd.append("--channels-last")
        return self.run_binary(step, v, g, cmd, base + ".json", base, step["cap_s"])

    def step_python(self, step, script):
        """A step of Python rows: torch_impls.py or jax_impls.py, one process, a plan file in
        and JSON-lines records out."""
        runs, recs = [], []
        for v, groups in step["runs"]:
            usable = []
            for g in map(self.group_files, groups):
                why = self.unusable(g)
                if why:
                    recs += self.skipped(step, v, g, why)
                else:
                    usable.append(g)
            if usable:
                runs.append({"variant": v, "groups": usable})
        if not runs:
            return recs
        records = os.path.join(self.a.work, "out", step["name"] + ".jsonl")
        if os.path.exists(records):
            os.remove(records)
        t = min(step["cap_s"], self.left())
        job = {"device": self.a.device, "deadline": time.time() + t - 5, "records": records,
               "outputs": os.path.join(self.a.work, "out", step["name"]), "timing": TIMING,
               "step": step["name"], "runs": runs}
        plan_path = os.path.join(self.a.work, "out", step["name"] + "_plan.json")
        common.write_json(plan_path, job)
        log = os.path.join(self.logs, step["name"] + ".log")
        rc = self.run([self.a.python, os.path.join(HERE, script), plan_path], log, t)
        done = {(r["variant"], r["model"], r["resolution"], r["batch"]): r
                for r in common.read_jsonl(records)}
        why = ("time limit reached (%.0fs)" % t if rc == 124 else
               "%s ended (rc %d) first: %s" % (script, rc, common.tail(log, 3)))
        for run in runs:
            v = run["variant"]
            for g in run["groups"]:
                for batch in g["batches"]:
                    rec = done.get((v["name"], g["model"], g["resolution"], batch))
                    if rec is None:
                        rec = common.new_record(v, g, batch, step["name"])
                        rec.update(status="skipped" if rc in (0, 124) else "error", error=why)
                    recs.append(rec)
        return recs

    def skipped(self, step, v, g, why):
        status = "skipped" if why.startswith("skipped") or "not in GEN_DIR" in why else "error"
        out = []
        for batch in g["batches"]:
            rec = common.new_record(v, g, batch, step["name"])
            rec.update(status=status, error=why)
            out.append(rec)
        return out

    def run_step(self, step):
        if self.left() < step["min_s"]:
            why = "skipped: time budget (%.0fs left, the step needs about %ds)" % (
                self.left(), step["min_s"])
            self.notes.append("%s: %s" % (step["name"], why))
            self.say("%s %s" % (step["name"], why))
            return [r for v, groups in step["runs"] for g in groups
                    for r in self.skipped(step, v, self.group_files(g), why)]
        t0 = time.time()
        self.say("step %s (%s), %.0fs left" % (step["name"], step["runner"], self.left()))
        if step["runner"] in PYTHON_RUNNERS:
            recs = self.step_python(step, PYTHON_RUNNERS[step["runner"]])
        else:
            recs = []
            for v, groups in step["runs"]:
                for g in map(self.group_files, groups):
                    if step["runner"] == "zoc":
                        recs += self.step_zoc(step, v, g)
                    else:
                        recs += self.step_cpp(step, v, g)
        for rec in recs:
            g = self.group_files({"model": rec["model"], "resolution": rec["resolution"]})
            nvml.attribute(rec, self.sampler)
            common.judge(rec, g["reference"], g["samples"])
        common.write_json(os.path.join(self.raw, step["name"] + ".json"),
                          {"step": step["name"], "mode": self.a.mode, "records": recs})
        counts = {}
        for r in recs:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        self.say("step %s done in %.0fs: %s" % (step["name"], time.time() - t0, ", ".join(
            "%d %s" % (n, s) for s, n in sorted(counts.items()))))
        for r in recs:
            if r["status"] not in ("PASS", "skipped"):
                lines = [l for l in (r.get("error") or "").splitlines() if l.strip()] or [""]
                self.say("  %s %s %s r%d b%d: %s" % (r["status"], r["label"], r["model"],
                                                     r["resolution"], r["batch"], lines[-1][:200]))
        return recs

    def main(self):
        a = self.a
        steps = plan.steps_for(a.mode, a.dry)
        if a.steps:  # a part's steps that a cut run left unmeasured, say
            steps, error = plan.select_steps(steps, a.steps.split(","), a.mode)
            if error:
                print("bench.py: --steps: " + error, file=sys.stderr)
                return 2
        self.say("harness %s on %s: %d steps, deadline in %.0fs; logs in %s" % (
            a.mode, a.device, len(steps), self.left(), self.logs))
        info = subprocess.run([a.python, "-c", nvml.PYTHON_INFO], capture_output=True,
                              text=True).stdout
        env = nvml.environment(info, {"mode": a.mode + (" (dry)" if a.dry else ""), "gen_dir": a.gen,
                                      "cudnn_linked": os.environ.get("HARNESS_CUDNN_LIB"),
                                      "timing": TIMING})
        t0 = time.time()
        self.prepare(steps)
        env["prepare_s"] = time.time() - t0
        self.sampler = nvml.Sampler()
        env["sampler"] = self.sampler.source
        if self.sampler.source:
            self.sampler.start()
            time.sleep(0.3)
            idle = [s["used_mb"] for s in self.sampler.samples() if "used_mb" in s]
            env["idle_used_mb"] = min(idle) if idle else None
        else:
            self.notes.append("no NVML and no nvidia-smi: memory and utilization columns empty")
        for step in steps:
            self.run_step(step)
        if self.sampler.source:
            self.sampler.stop()
        env.update(measure_s=time.time() - t0 - env["prepare_s"], notes=self.notes,
                   wall_s=time.time() - a.start, runtime_versions=self.runtime_versions)
        common.write_json(os.path.join(a.out, "env.json"), env)
        self.say("measurements done; %.0fs of the budget left" % (a.start + a.budget_s - time.time()))
        return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", default="quick", choices=plan.MODES)
    p.add_argument("--gen", default="", help="folder of zoc-generated folders (prepare.sh)")
    p.add_argument("--work", required=True, help="scratch: builds, exports, outputs")
    p.add_argument("--out", required=True)
    p.add_argument("--start", type=float, default=time.time(), help="epoch the run began")
    p.add_argument("--budget-s", type=float, default=540)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--python", default=sys.executable, help="the python with torch")
    p.add_argument("--steps", default="",
                   help="comma-separated names of the mode's steps to run (default: all)")
    p.add_argument("--dry", action="store_true",
                   help="a miniature sweep with short timing, to check the plumbing")
    a = p.parse_args(argv)
    a.gen = os.path.abspath(a.gen) if a.gen else ""
    return Bench(a).main()


if __name__ == "__main__":
    sys.exit(main())
