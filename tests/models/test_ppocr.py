#!/usr/bin/env python3
"""Oracle test: precis (CLI) against ONNX Runtime on the PP-OCR models, real inputs.

For every case in ppocr.CASES, runs `precis run` and ORT on the same input and
requires cosine >= 0.99999 for every graph output. Fails (does not skip) when
the models or inputs are missing: `make test` fetches and prepares them first
(scripts/fetch_models.sh, tests/models/prep_data.py).

usage: test_ppocr.py --precis build/precis [--out DIR] [--min-cosine 0.99999]
                     [--cases det_page,rec_lines,...]   (default: all)
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ppocr  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True, help="path to the precis CLI")
    ap.add_argument("--out", help="directory for precis outputs (default: a temp dir)")
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    ap.add_argument("--cases", help="comma-separated subset of " +
                    ",".join(c for c, _ in ppocr.CASES))
    args = ap.parse_args()
    cases = ppocr.CASES
    if args.cases:
        want = args.cases.split(",")
        unknown = set(want) - {c for c, _ in cases}
        if unknown:
            ap.error("unknown case(s): " + ", ".join(sorted(unknown)))
        cases = [(c, m) for c, m in cases if c in want]

    missing = ppocr.missing_files()
    if missing:
        print("FAIL: missing " + ", ".join(missing))
        print("      run scripts/fetch_models.sh and tests/models/prep_data.py (make test does)")
        return 1
    if not os.access(args.precis, os.X_OK):
        print(f"FAIL: no precis CLI at {args.precis}")
        return 1

    import numpy as np
    out_root = args.out or tempfile.mkdtemp(prefix="precis-ppocr-")
    failures, checked = [], 0
    print(f"{'case':<10} {'output':<32} {'shape':<18} {'max abs diff':>12} {'cosine':>12}")
    for case, model in cases:
        x = np.load(ppocr.input_path(case))
        ort = ppocr.Ort(model)
        ref, _ = ort.run(x, repeat=1)
        try:
            got, _, _ = ppocr.run_precis(args.precis, model, case, ort.input, ort.outputs,
                                      os.path.join(out_root, case))
        except RuntimeError as e:
            print(f"{case:<10} precis failed: {e}")
            failures.append(f"{case}: precis failed")
            continue
        for name in ort.outputs:
            checked += 1
            g, r = got[name], ref[name]
            if g.shape != r.shape:
                print(f"{case:<10} {name:<32} precis {g.shape} != ORT {r.shape}")
                failures.append(f"{case}/{name}: shape")
                continue
            diff, cos = ppocr.compare(g, r)
            ok = cos >= args.min_cosine
            shape = "x".join(map(str, r.shape))
            print(f"{case:<10} {name:<32} {shape:<18} {diff:12.3e} {ppocr.fmt_cos(cos):>12}"
                  f"{'' if ok else '  FAIL'}")
            if not ok:
                failures.append(f"{case}/{name}: cosine {cos:.7f} < {args.min_cosine}")

    if failures:
        print("FAIL: " + "; ".join(failures))
        return 1
    print(f"PASS: {checked} outputs of {len(cases)} cases agree with ONNX Runtime "
          f"(cosine >= {args.min_cosine})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
