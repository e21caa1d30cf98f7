"""Helpers the CLI tests share: the precis binary (argv[1]), running it, counting checks,
random .npy sample folders.

    from clicheck import PRECIS, run, check, expect_error, finish, samples
"""
import os
import subprocess
import sys

PRECIS = os.path.abspath(sys.argv[1])
counts = {"passed": 0, "failed": 0}


def run(*args):
    p = subprocess.run([PRECIS, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check(name, cond, detail=""):
    if cond:
        counts["passed"] += 1
    else:
        counts["failed"] += 1
        print(f"FAIL {name} {detail}")


def expect_error(name, code, args, *needles):
    """precis exits with `code` and one stderr line 'precis: error: ...' holding every needle."""
    rc, out, err = run(*args)
    lines = [l for l in err.splitlines() if l.strip()]
    ok = rc == code and len(lines) == 1 and lines[0].startswith("precis: error:")
    ok = ok and all(n in lines[0] for n in needles)
    check(name, ok, f"rc={rc} (want {code}) stderr={err!r}")


def samples(d, n, seed, shape=(1, 4, 8, 8)):
    """A folder d of n float32 .npy samples (normal, seeded): calibration / eval data."""
    import numpy as np
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n):
        np.save(f"{d}/{i:03d}.npy", rng.normal(0, 1, shape).astype(np.float32))
    return d


def finish(prefix=""):
    """Print the counts; the exit status (1 on any failure)."""
    print(f"{prefix}{counts['passed']} passed, {counts['failed']} failed")
    return 1 if counts["failed"] else 0
