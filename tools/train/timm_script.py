#!/usr/bin/env python3
"""Scripts timm classifiers for zoc's trainer checks (tests/train/gpu_zoo_nets_check.sh), on a
machine with timm: each network's structure only. Every parameter and buffer is zeroed before
torch.jit.script, so the file compresses to kilobytes with xz; the check's reference
(tools/train/zoo_grad_reference.py, `timm:NAME`) builds the same network with timm's seeded
initialization and writes the weights the trainer starts from.

  timm_script.py OUT_DIR NAME...   writes OUT_DIR/NAME.pt.xz
"""
import lzma
import os
import sys

import timm
import torch


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:]:
        model = timm.create_model(name, pretrained=False).eval()
        with torch.no_grad():
            for t in model.state_dict().values():
                t.zero_()
        path = os.path.join(out, name + ".pt")
        torch.jit.script(model).save(path)
        with open(path, "rb") as f, lzma.open(path + ".xz", "wb", preset=9) as g:
            g.write(f.read())
        os.remove(path)
        print("timm_script: %s (timm %s, torch %s)" % (name, timm.__version__, torch.__version__))


if __name__ == "__main__":
    main()
