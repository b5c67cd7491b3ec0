#!/usr/bin/env python3
"""SIGKILL `zoc compile -o out` at random instants over a folder of user files (issue 31).

The rule (DESIGN.md, "A model file is data"): zoc survives SIGKILL at any instant without losing a
user file, and the next compile recovers what the killed one left. The folder holds the user's
files: unlisted ones, a build tree, a file inside zoc's own runtime folder, a file zoc wrote and
the user edited (listed by the stamp, stale once another model is compiled), and now and then a
forged stamp line listing the thesis, the build folder and notes; beside it, a leftover of zoc's
older design (`.out.tmp.<pid>`, holding user files). Compiles of LeNet fp32 and fp16 alternate;
each is killed after a random delay within about one compile's duration. After every kill: every user
file exists with its content; `out` exists and is the previous or the new complete output, or
(only while `out/.zoc-staging/journal` says the write was committed) each of zoc's files is in
its previous or new version. A final compile must leave exactly the new output and no temporary.
Then, where strace can inject signals, SIGKILL lands on entry to the k-th rename, mkdir, unlink
and rmdir of a compile, for every k (so the rename that made the old design leave no `out`, issue
31's item 11, is hit for sure). Last, pairs of compiles run at once into the same folder, some
killed, with the same checks.

Usage: run_output_folder_kills.py ZOC SCRATCH [--kills N] [--pairs N] [--seed S] [--show N]
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(REPO, "models", "lenet.yaml")
CONFIGS = {"fp32": [], "fp16": ["--precision", "fp16"], "train": ["--train"]}
FORGED = ("thesis.txt", "build", "notes.txt")  # paths forged stamp lines name


def compile_args(zoc, config):
    return [zoc, "compile", MODEL, "-o", "out"] + CONFIGS[config]


def files_under(root, skip=()):
    """{relative path: bytes} of the regular files under root; links as b'link:' + target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames if os.path.normpath(os.path.join(rel_dir, d)) not in skip]
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if os.path.islink(path):
                out[rel] = b"link:" + os.readlink(path).encode()
            else:
                with open(path, "rb") as f:
                    out[rel] = f.read()
    return out


def unforged(files):
    """The stamp without the lines the test forged into it."""
    stamp = files.get(".zoc-generated")
    if stamp is None:
        return files
    keep = [l for l in stamp.split(b"\n") if l.split(b" ")[-1].decode() not in FORGED]
    return dict(files, **{".zoc-generated": b"\n".join(keep)})


def make_user_files(work):
    out = os.path.join(work, "out")
    write = {
        "thesis.txt": b"years of work\n",
        "notes.txt": b"notes\n",
        "zoc/mine.h": b"// the user's own header in zoc's runtime folder\n",
    }
    for i in range(4):
        for j in range(10):
            write[f"build/sub{i}/obj{j}.o"] = os.urandom(64)
    for rel, data in write.items():
        os.makedirs(os.path.dirname(os.path.join(out, rel)), exist_ok=True)
        with open(os.path.join(out, rel), "wb") as f:
            f.write(data)
    with open(os.path.join(out, "lenet_train.cpp"), "ab") as f:  # zoc's file, edited
        f.write(b"// the user's edit\n")
    old_design = os.path.join(work, ".out.tmp.12345")  # what zoc's older design left
    os.makedirs(old_design)
    with open(os.path.join(old_design, "rescued.txt"), "wb") as f:
        f.write(b"a user file an older zoc moved here\n")
    user = {k: v for k, v in files_under(out).items() if k in write or k == "lenet_train.cpp"}
    return user, {".out.tmp.12345/rescued.txt": files_under(work)[".out.tmp.12345/rescued.txt"]}


def forge(out, rng):
    stamp = os.path.join(out, ".zoc-generated")
    if not os.path.isfile(stamp) or os.path.islink(stamp):
        return False
    with open(stamp, "ab") as f:
        f.write(b"%064x 14 thesis.txt\n" % rng.getrandbits(256))
        f.write(b"%064x 64 build\n" % rng.getrandbits(256))
        f.write(b"notes.txt\n")
    return True


class Checker:
    def __init__(self, work, refs, user, beside):
        self.work, self.refs, self.user, self.beside = work, refs, user, beside
        self.failures = []
        self.lost = set()  # user files seen gone or changed
        self.states = {"old": 0, "new": 0, "mixed (committed, finished by the next compile)": 0}

    def fail(self, when, what, lost=None):
        self.failures.append(f"{when}: {what}")
        if lost:
            self.lost.add(lost)

    def check(self, when, possible, new):
        """Returns the config `out` now holds completely, or None (committed, mid-move)."""
        out = os.path.join(self.work, "out")
        if not os.path.isdir(out):
            self.fail(when, "out is missing")
            return None
        now = files_under(out)
        for rel, data in self.user.items():
            if now.get(rel) != data:
                self.fail(when, f"user file {rel} is " + ("gone" if rel not in now else "changed"),
                          lost=rel)
        here = files_under(self.work, skip={"out"})
        for rel, data in self.beside.items():
            if here.get(rel) != data:
                self.fail(when, f"user file {rel} beside out is gone or changed", lost=rel)
        for entry in os.listdir(self.work):
            if entry not in ("out", ".out.tmp.12345"):
                self.fail(when, f"{entry} left beside out")
        zoc = unforged({k: v for k, v in files_under(out, skip={".zoc-staging"}).items()
                        if k not in self.user})
        journal = os.path.join(out, ".zoc-staging", "journal")
        committed = os.path.isfile(journal) and b"state committed" in open(journal, "rb").read()
        # Under a committed journal the next compile moves the rest in, so the folder's future
        # is still open even where it matches one output now.
        for config in possible:
            if zoc == self.refs[config]:
                self.states["new" if config == new else "old"] += 1
                return None if committed else config
        if not committed:
            self.fail(when, f"out is none of the complete outputs {sorted(possible)}: "
                      + describe(zoc, self.refs, possible))
            return None
        self.states["mixed (committed, finished by the next compile)"] += 1
        for rel, data in zoc.items():
            if not any(self.refs[c].get(rel) == data for c in possible):
                self.fail(when, f"{rel} is none of zoc's versions of it")
        return None


def describe(zoc, refs, possible):
    config = sorted(possible)[0]
    ref = refs[config]
    extra = sorted(set(zoc) - set(ref))[:3]
    missing = sorted(set(ref) - set(zoc))[:3]
    changed = sorted(k for k in set(ref) & set(zoc) if ref[k] != zoc[k])[:3]
    return f"against {config}: extra {extra}, missing {missing}, changed {changed}"


def run_clean(zoc, work, config, when, checker):
    r = subprocess.run(compile_args(zoc, config), cwd=work, capture_output=True)
    if r.returncode != 0:
        checker.fail(when, f"compile {config} exited {r.returncode}: {r.stderr.decode()[-500:]}")
    return r


def strace_works():
    if not shutil.which("strace"):
        return False
    r = subprocess.run(["strace", "-qq", "-o", "/dev/null", "-e", "trace=none", "true"],
                       capture_output=True)
    return r.returncode == 0


def syscall_kills(zoc, work, checker, possible):
    """Kills a compile on entry to its k-th call of each file-system syscall, for every k."""
    runs = 0
    env = dict(os.environ)  # LeakSanitizer cannot run under ptrace
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    for call in ("rename", "mkdir", "unlink", "rmdir"):
        for k in range(1, 1000):
            config = "fp16" if runs % 2 else "fp32"
            runs += 1
            r = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=" + call,
                                "-e", f"inject={call}:signal=KILL:when={k}"]
                               + compile_args(zoc, config), cwd=work, capture_output=True,
                               env=env)
            when = f"killed at {call} {k} ({config})"
            if r.returncode not in (0, -signal.SIGKILL):
                checker.fail(when, f"exited {r.returncode}: {r.stderr.decode()[-500:]}")
            possible.add(config)
            holds = checker.check(when, possible, config)
            possible = {holds} if holds else possible
            if r.returncode != -signal.SIGKILL:
                break  # the compile made fewer than k such calls
    return possible, runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("zoc")
    ap.add_argument("scratch")
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=20, help="failures to print")
    a = ap.parse_args()
    zoc, scratch = os.path.abspath(a.zoc), os.path.abspath(a.scratch)
    rng = random.Random(a.seed)
    shutil.rmtree(scratch, ignore_errors=True)
    refs = {}
    for config in CONFIGS:  # each reference compiled alone, with the same command line
        ref_work = os.path.join(scratch, "ref_" + config)
        os.makedirs(ref_work)
        subprocess.run(compile_args(zoc, config), cwd=ref_work, check=True, capture_output=True)
        refs[config] = files_under(os.path.join(ref_work, "out"))
    work = os.path.join(scratch, "work")
    os.makedirs(work)
    subprocess.run(compile_args(zoc, "train"), cwd=work, check=True, capture_output=True)
    user, beside = make_user_files(work)
    refs = {c: {k: v for k, v in ref.items() if k not in user} for c, ref in refs.items()}
    durations = []  # of a compile that replaces an output, as the killed ones do
    for config in ("fp16", "fp32", "fp16"):
        t = time.monotonic()
        subprocess.run(compile_args(zoc, config), cwd=os.path.join(scratch, "ref_fp32"),
                       check=True, capture_output=True)
        durations.append(time.monotonic() - t)
    span = sorted(durations)[1] * 1.2
    checker = Checker(work, refs, user, beside)
    holds = checker.check("after the setup", {"train"}, "train")
    possible = {holds} if holds else set(CONFIGS)
    finished = forged = 0
    for i in range(a.kills):
        config = "fp16" if i % 2 else "fp32"
        if rng.random() < 0.3:
            forged += forge(os.path.join(work, "out"), rng)
        proc = subprocess.Popen(compile_args(zoc, config), cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0, span))
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        when = f"kill {i + 1} ({config})"
        # Aim the kills at the compile's life: shorter delays while compiles end before their
        # kill, longer while every one is killed.
        span *= 0.9 if proc.returncode != -signal.SIGKILL else 1.02
        if proc.returncode != -signal.SIGKILL:
            finished += 1
            if proc.returncode != 0:
                checker.fail(when, f"exited {proc.returncode}: {err.decode()[-500:]}")
        possible.add(config)
        holds = checker.check(when, possible, config)
        possible = {holds} if holds else possible
    syscalls = 0
    if strace_works():
        possible, syscalls = syscall_kills(zoc, work, checker, possible)
    else:
        print("note: no working strace here; the kills at every syscall were skipped")
    run_clean(zoc, work, "fp32", "the final compile", checker)
    if checker.check("after the final compile", {"fp32"}, "fp32") != "fp32":
        checker.fail("after the final compile", "out is not the fp32 output")
    if os.path.exists(os.path.join(work, "out", ".zoc-staging")):
        checker.fail("after the final compile", "out/.zoc-staging remains")

    # Two compiles at once into the same folder; in half the rounds one of them is killed.
    for i in range(a.pairs):
        procs = [subprocess.Popen(compile_args(zoc, c), cwd=work, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE) for c in ("fp32", "fp16")]
        killed = rng.randrange(2) if i % 2 else None
        if killed is not None:
            time.sleep(rng.uniform(0, span))
            procs[killed].send_signal(signal.SIGKILL)
        for k, p in enumerate(procs):
            _, err = p.communicate()
            if k != killed and p.returncode != 0:
                checker.fail(f"pair {i + 1}", f"exited {p.returncode}: {err.decode()[-500:]}")
        holds = checker.check(f"pair {i + 1}", {"fp32", "fp16"}, "fp16")
        if killed is None and holds is None:
            checker.fail(f"pair {i + 1}", "two compiles at once left no complete output")
    run_clean(zoc, work, "fp32", "the last compile", checker)
    checker.check("after the last compile", {"fp32"}, "fp32")

    for f in checker.failures[:a.show]:
        print("FAIL:", f)
    states = ", ".join(f"{n} {s}" for s, n in checker.states.items())
    print(f"{a.kills} kills ({finished} compiles ended before their kill; {forged} forged stamps),"
          f" {syscalls} compiles killed at each syscall, {a.pairs} concurrent pairs; "
          f"states seen: {states}; "
          f"{len(checker.failures)} failures; user files lost or changed: {len(checker.lost)} "
          f"of {len(user) + len(beside)}")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
