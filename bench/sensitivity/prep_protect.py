#!/usr/bin/env python3
"""Eval sets of the zoo for bench/sensitivity/run_protect.sh, from bench/zoo/zoo.py's registry
(the same samples its task metrics use; calibration stays ~/.cache/precis/calib/<model>).

usage: prep_protect.py OUT [MODEL...]   writes OUT/<model>/eval/ (one .npy per sample; one
    subfolder per input when there are several) and OUT/<model>/truth.json where a metric
    script needs ground truth (PP-OCR rec: the texts of the eval lines, in order).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo"))
import zoo  # noqa: E402

BUILD = {"efficientnet_lite0": lambda: [zoo._effnet()], "minilm_l6_v2": lambda: [zoo._minilm()],
         "ppocr_v4_rec": lambda: zoo._ppocr()[:1], "yolov8n": zoo._detectors}


def write(out, m):
    d = os.path.join(out, m.name, "eval")
    several = len(m.inputs) > 1
    for i, s in enumerate(m.eval):
        for name in m.inputs:
            sub = os.path.join(d, name) if several else d
            os.makedirs(sub, exist_ok=True)
            np.save(os.path.join(sub, f"{i:04d}.npy"), np.ascontiguousarray(s[name]))
    if m.name == "ppocr_v4_rec":
        with open(os.path.join(out, m.name, "truth.json"), "w") as f:
            json.dump(m.truth, f, ensure_ascii=False)
    print(f"{m.name}: {len(m.eval)} eval samples -> {d}")


def main():
    out, names = sys.argv[1], sys.argv[2:] or list(BUILD)
    for n in names:
        for m in BUILD[n]():
            if m.name == n:
                write(out, m)


if __name__ == "__main__":
    main()
