"""zoc's per-layer profile in the harness: what each layer is, and where the time goes.

A zoc row in a CUDA graph also runs `--profile` (CUDA events between the layers inside the
graph), which reports milliseconds per layer under the layer's title ("features.3.conv.2 +
features.3.conv.3 + features.3.add"). A title alone does not say why a layer is slow, so bench.py
reads what each layer is from the generated source's own comments ("conv 1x1/1, 144->24,
56x56 -> 56x56, + residual", "conv 3x3/1, 32->32, 112x112 -> 112x112, groups 32, hardtanh";
from its call's shape the size of an activation) and keeps the whole profile in the point's record; report.py shows it per
kind of layer (depthwise or 1x1 convolutions, unfused activations, squeeze-excitation, ...) and
the slowest layers, for the zoo's networks at batch 1 and 256, where the claim against the
frameworks is made. Reading the generated code's comments is best-effort: a layer it cannot
place is listed with its title only.

The seg sweep's networks add memory-bound layers whose least traffic is reported too (issue 37):
upsampling, whose description names it ("upsample", "resize" or "interpolate", with its mode)
and gives its channels and sizes ("21 channels, 65x65 -> 520x520" or "21->21, 65x65 ->
520x520"), and transposed convolution, described as a convolution is with "transposed" (or
"conv transpose", "deconv") before "conv": "transposed conv 4x4/2, 64->32, 32x32 -> 64x64".
A layer whose description has neither form gets no GB/s (a dash), never a guessed one.
"""

import os
import re

from common import md_table

# A comment that starts a layer's description: "TITLE: WHAT", TITLE names joined by " + ".
ENTRY = re.compile(r"^\s*// (\S+(?: \+ \S+)*): (.*)$")
COMMENT = re.compile(r"^\s*// (.*)$")
SOURCE = re.compile(r"\s*\([^()\s]*/[^()\s]*\)")  # " (/path/model.py:64:20)": where, not what
CALL = re.compile(r"ZOC_TRY\(v\.\w+\(.*?\b(k(?:Conv|Dw|Act|Up)_\w+)")  # the layer's call and its shape
ACT_SHAPE = re.compile(r"zoc::ActivationCall (kAct_\w+) = \{[\w:]+, \{[^}]*\}, (\d+),")
# An upsampling's channel count, from its constant (code generated before its comment named it).
UP_CHANNELS = re.compile(r"zoc::UpsampleCall (kUp_\w+) = \{\.g = \{\.c = (\d+),")
# The older comment, "bilinear upsampling HxW -> PxQ": rewritten as the current one.
OLD_UPSAMPLE = re.compile(r"^(bilinear|nearest) upsampling (\d+x\d+ -> \d+x\d+)(.*), (\d+) ch$")


def layer_notes(folder, model):
    """{layer title: what it computes} from GEN/<folder>/<model>.cpp; {} if unreadable."""
    try:
        with open(os.path.join(folder, model + ".cpp"), errors="replace") as f:
            text = f.read()
    except OSError:
        return {}
    shapes = {sym: ", %s elements per sample" % n for sym, n in ACT_SHAPE.findall(text)}
    shapes.update({sym: ", %s ch" % c for sym, c in UP_CHANNELS.findall(text)})
    notes, title = {}, None
    for line in text[text.find("::layers("):].splitlines():
        entry, comment, call = ENTRY.match(line), COMMENT.match(line), CALL.search(line)
        if entry:
            title = entry.group(1)
            notes[title] = entry.group(2)
        elif comment and title:
            notes[title] += " " + comment.group(1)
        elif call and title:
            notes[title] += shapes.get(call.group(1), "")
            title = None
        else:
            title = None if line.strip() else title
    notes = {t: " ".join(SOURCE.sub("", w).split()).rstrip(",") for t, w in notes.items()}
    for t, w in notes.items():
        old = OLD_UPSAMPLE.match(w)
        if old:
            mode, sizes, rest, c = old.groups()
            notes[t] = "upsample %s, %s channels, %s%s" % (mode, c, sizes, rest)
        elif w.endswith(" ch") and UPSAMPLE.match(w):
            notes[t] = w.rsplit(", ", 1)[0]  # the comment names the channels already
    return notes


def compact(layers, notes):
    """The runner's [{'layer', 'ms'}] as [[layer, ms, what], ...] in execution order."""
    out = []
    for x in layers:
        title = x.get("layer", "?")
        what = notes.get(title) or notes.get(title.split(" (")[0]) or ""
        out.append([title, float(x.get("ms") or 0.0), what])
    return out


SHAPE = r"(\d+)x(\d+)/\d+, (\d+)->(\d+), (\d+)x(\d+) -> (\d+)x(\d+)"
CONV = re.compile(r"conv " + SHAPE)
TRANSPOSED = re.compile(r"(?:transposed conv|conv ?transpose\w*|deconv\w*) " + SHAPE)
UPSAMPLE = re.compile(r"\b(?:upsampl|resiz|interpolat)\w*")
RESAMPLED = re.compile(r"(\d+)(?: channels|->\d+),.*?(\d+)x(\d+) -> (\d+)x(\d+)")
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}


def conv_shape(what, pattern=CONV):
    """A convolution's (r, s, cin, cout, h, w, p, q, groups) from its description (pattern
    TRANSPOSED: a transposed convolution's); None for other layers."""
    conv = pattern.match(what)
    if not conv:
        return None
    groups = re.search(r"groups (\d+)", what)
    return tuple(map(int, conv.groups())) + (int(groups.group(1)) if groups else 1,)


def upsample_shape(what):
    """An upsampling layer's (channels, h, w, p, q) from its description; None for others."""
    up = RESAMPLED.search(what) if UPSAMPLE.match(what) else None
    return tuple(map(int, up.groups())) if up else None


def traffic_mb(what, batch, precision):
    """The least a layer must move through DRAM, MB: a convolution (transposed too) its input,
    output (and residual) read or written once, weights once; an upsampling its input map read
    and its output map written once (fp32 where it writes a model output for the caller); an activation its input and output; None for other layers
    (their shapes are not in `what`)."""
    conv = conv_shape(what) or conv_shape(what, TRANSPOSED)
    act, up = re.search(r"(\d+) elements per sample", what), upsample_shape(what)
    if precision not in ELEMENT_BYTES or not (conv or act or up):
        return None
    if up:  # a model output's upsampling writes the caller's fp32 rows
        c, h, w, p, q = up
        out_bytes = 4 if "caller's fp32" in what else ELEMENT_BYTES[precision]
        return c * (h * w * ELEMENT_BYTES[precision] + p * q * out_bytes) * batch / 1e6
    if act:
        return 2 * int(act.group(1)) * batch * ELEMENT_BYTES[precision] / 1e6
    r, s, cin, cout, h, w, p, q, groups = conv
    outputs = cout * p * q * (2 if "+ residual" in what else 1)
    weights = cout * cin // groups * r * s
    return ((cin * h * w + outputs) * batch + weights) * ELEMENT_BYTES[precision] / 1e6


def gflop(what, batch):
    """A convolution's multiply-adds times two, GFLOP (its input channels over its groups, each
    output element once; a transposed convolution: each input element into its group's output
    channels through the whole kernel); None for other layers."""
    conv, transposed = conv_shape(what), conv_shape(what, TRANSPOSED)
    if transposed:
        r, s, cin, cout, h, w, _, _, groups = transposed
        return 2.0 * batch * cin * h * w * (cout // groups * r * s) / 1e9
    if not conv:
        return None
    r, s, cin, cout, _, _, p, q, groups = conv
    return 2.0 * batch * cout * p * q * (cin // groups * r * s) / 1e9


def memory_bound(what):
    """Whether the layer is one of the seg sweep's memory-bound kinds whose GB/s the report
    lists layer by layer: an upsampling or a transposed convolution."""
    return bool(UPSAMPLE.match(what) or TRANSPOSED.match(what))


def kind_of(title, what):
    """The kind of a layer, for the per-kind sums: 'conv 1x1', 'depthwise conv 3x3', 'silu', ..."""
    transposed = TRANSPOSED.match(what)
    if transposed:
        return "transposed conv %sx%s/%s" % (transposed.group(1), transposed.group(2),
                                             what[transposed.end(2) + 1:].split(",")[0])
    up = UPSAMPLE.match(what)
    if up:  # "upsample bilinear", "upsample nearest": the words before the first number
        return " ".join(w.rstrip(",") for w in what.split()[:2] if not w[0].isdigit())
    conv = re.match(r"conv (\d+x\d+)/\d+, (\d+)->(\d+), \d+x\d+ -> (\d+x\d+)", what)
    if conv:
        kernel, cin, cout, out = conv.groups()
        groups = re.search(r"groups (\d+)", what)
        if groups and int(groups.group(1)) == int(cin) == int(cout):
            return "depthwise conv " + kernel
        if groups:
            return "grouped conv " + kernel
        if out == "1x1" and kernel == "1x1":
            return "conv 1x1 on a 1x1 map (squeeze-excitation)"
        return "conv " + kernel + (" (+ residual)" if "+ residual" in what else "")
    words = []
    for w in what.split():
        if any(c.isdigit() for c in w) or w in ("->", "pad"):
            break
        words.append(w.rstrip(","))
    return " ".join(words) or title.split(" (")[0]


def breakdown(rec, other, top=12):
    """Markdown for one profiled zoc point: time per kind of layer, then the slowest layers.
    `other`: the fastest passing non-zoc row at the same point (or None), for the gap."""
    layers = rec["profile"]
    total = sum(ms for _, ms, _ in layers) or 1.0
    head = "%s, batch %d: %.3f ms end to end; the %d layers sum to %.3f ms" % (
        rec["label"], rec["batch"], rec.get("median_ms") or 0.0, len(layers), total)
    if other:
        head += "; fastest other row: %s, %.3f ms (zoc %s)" % (
            other["label"], other["median_ms"],
            "%.2f× faster" % (other["median_ms"] / rec["median_ms"])
            if other["median_ms"] >= rec["median_ms"] else
            "slower by %.3f ms" % (rec["median_ms"] - other["median_ms"]))
    kinds = {}
    for title, ms, what in layers:
        k = kinds.setdefault(kind_of(title, what), [0, 0.0, 0.0, 0.0])
        mb = traffic_mb(what, rec["batch"], rec["precision"])
        gf = gflop(what, rec["batch"])
        k[0] += 1
        k[1] += ms
        k[2] = None if mb is None or k[2] is None else k[2] + mb
        k[3] = None if gf is None or k[3] is None else k[3] + gf
    by_kind = sorted(kinds.items(), key=lambda kv: -kv[1][1])
    slowest = sorted(layers, key=lambda x: -x[1])[:top]

    def rate(mb, ms):  # MB/ms = GB/s
        return "%.0f" % (mb / ms) if mb is not None and ms > 0 else "–"

    def tflops(gf, ms):  # GFLOP/ms = TFLOP/s
        return "%.1f" % (gf / ms) if gf is not None and ms > 0 else "–"
    return ["#### " + head, "",
            md_table(["kind of layer", "layers", "ms", "share", "GB/s (least traffic)",
                      "TFLOP/s"],
                     [[k, n, "%.3f" % ms, "%.1f%%" % (100.0 * ms / total), rate(mb, ms),
                       tflops(gf, ms)] for k, (n, ms, mb, gf) in by_kind]), "",
            md_table(["slowest layers", "what", "ms", "share", "least traffic MB", "GB/s",
                      "TFLOP/s"],
                     [[t, w or "–", "%.3f" % ms, "%.1f%%" % (100.0 * ms / total),
                       "%.1f" % mb if mb is not None else "–", rate(mb, ms),
                       tflops(gflop(w, rec["batch"]), ms)]
                      for t, ms, w in slowest
                      for mb in [traffic_mb(w, rec["batch"], rec["precision"])]]), ""] + \
        memory_bound_table(layers, rec, rate)


def memory_bound_table(layers, rec, rate):
    """Markdown lines: every upsampling and transposed convolution of a profile, in execution
    order, with the GB/s its least traffic implies; [] if the network has none."""
    rows = [[t, w, "%.3f" % ms, "%.1f" % mb if mb is not None else "–", rate(mb, ms)]
            for t, ms, w in layers if memory_bound(w)
            for mb in [traffic_mb(w, rec["batch"], rec["precision"])]]
    if not rows:
        return []
    return ["Upsampling and transposed convolutions (memory-bound: least traffic = input read "
            "and output written once, weights once):", "",
            md_table(["layer", "what", "ms", "least traffic MB", "GB/s"], rows), ""]
