"""What the metric scripts share: reading the outputs precis writes for --metric-cmd
({dir}/out<K>/<BATCH>.npy) as bench/zoo's metrics want them (per sample a list of outputs)."""
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "zoo"))

import numpy as np  # noqa: E402


def samples(d):
    """Per batch file (one sample each), the list of the model's outputs."""
    outs = sorted(glob.glob(os.path.join(d, "out*")), key=lambda p: int(os.path.basename(p)[3:]))
    files = [sorted(glob.glob(os.path.join(o, "*.npy"))) for o in outs]
    if not files or not files[0] or any(len(f) != len(files[0]) for f in files):
        sys.exit(f"{d}: no outputs or unequal counts per output")
    return [[np.load(f[b]) for f in files] for b in range(len(files[0]))]
