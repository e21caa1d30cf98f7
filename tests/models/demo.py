#!/usr/bin/env python3
"""The demo's report: precis vs ONNX Runtime on PP-OCRv4 det/rec and the direction
classifier, on real inputs (see prep_data.py), in numbers and in words.

usage: demo.py --precis build/precis [--out DIR]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ppocr  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", default="build/precis")
    ap.add_argument("--out", default="out/demo")
    args = ap.parse_args()
    import numpy as np

    missing = ppocr.missing_files()
    if missing:
        print("demo: missing " + ", ".join(missing))
        return 1
    truth, keys = ppocr.load_truth(), ppocr.load_keys()
    have_precis = os.access(args.precis, os.X_OK)
    if not have_precis:
        print(f"demo: no precis CLI at {args.precis}: showing ONNX Runtime only")

    rows, results, errors = [], {}, []
    for case, model in ppocr.CASES:
        x = np.load(ppocr.input_path(case))
        ort = ppocr.Ort(model)
        ref, t_ort = ort.run(x)
        got, t_precis, t_wall = None, None, None
        if have_precis:
            try:
                got, t_precis, t_wall = ppocr.run_precis(args.precis, model, case, ort.input,
                                                 ort.outputs, os.path.join(args.out, case))
            except RuntimeError as e:
                errors.append(f"{case}: {e}")
        for name in ort.outputs:
            shape = "x".join(map(str, ref[name].shape))
            if got is not None:
                diff, cos = ppocr.compare(got[name], ref[name])
                run = "-" if t_precis is None else f"{t_precis * 1e3:.1f}"
                rows.append((case, model, name, shape, f"{diff:.2e}", ppocr.fmt_cos(cos),
                             run, f"{t_wall * 1e3:.0f}", f"{t_ort * 1e3:.1f}"))
            else:
                rows.append((case, model, name, shape, "-", "-", "-", "-", f"{t_ort * 1e3:.1f}"))
        results[case] = (ref[ort.outputs[0]], None if got is None else got[ort.outputs[0]])

    head = ("input", "model", "output", "shape", "max|diff|", "cosine",
            "precis ms", "(CLI wall)", "ORT ms")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths))  # noqa: E731
    print()
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    print("precis ms: the run as `precis run` reports it (one run); CLI wall: the whole"
          " command (load, run, write .npy);\nORT ms: best of 3 session.run calls"
          " (CPU provider, default threads)")

    for case in ("rec_lines", "rec_page"):
        ref, got = results[case]
        gts = truth[case]
        w = max(len(t) for t in gts) + 2
        print(f"\nrecognition ({case}): greedy CTC over {len(keys)} classes")
        print(f"  {'truth'.ljust(w)}precis (ORT shown only where it differs)")
        err_ort = err_pre = 0
        for i, gt in enumerate(gts):
            t_ort = ppocr.ctc_greedy(ref[i], keys)
            t_pre = ppocr.ctc_greedy(got[i], keys) if got is not None else None
            err_ort += ppocr.edit_distance(t_ort, gt)
            if t_pre is None:
                print(f"  {gt.ljust(w)}-   ORT: {t_ort}")
                continue
            err_pre += ppocr.edit_distance(t_pre, gt)
            print(f"  {gt.ljust(w)}{t_pre}" + ("" if t_pre == t_ort else f"   ORT: {t_ort}"))
        n = sum(len(t) for t in gts)
        cer_p = f"{100 * err_pre / n:.1f}%" if got is not None else "-"
        print(f"  character error rate: precis {cer_p}, ORT {100 * err_ort / n:.1f}%")

    ref, got = results["cls_lines"]
    labels = truth["cls_lines"]
    n = len(labels)
    print(f"\ndirection classifier (cls_lines): {n // 2} lines upright, then rotated 180")
    rows_cls = [("truth", labels), ("ORT", [ppocr.CLS_LABELS[int(r.argmax())] for r in ref])]
    if got is not None:
        rows_cls.insert(1, ("precis", [ppocr.CLS_LABELS[int(r.argmax())] for r in got]))
    for name, ls in rows_cls:
        print(f"  {name:<7}" + " ".join(f"{v:>3}" for v in ls))
    for name, ls in rows_cls[1:]:
        print(f"  {name}: {sum(a == b for a, b in zip(ls, labels))}/{n} correct")

    ref, got = results["det_page"]
    b_ort = ppocr.count_boxes(ref[0, 0])
    b_pre = None if got is None else ppocr.count_boxes(got[0, 0])
    print(f"\ndetection (det_page): text regions with probability > {ppocr.DET_THRESH}: "
          f"precis {'-' if b_pre is None else b_pre}, ORT {b_ort}, "
          f"truth {truth['det_page']} lines")

    if errors:
        print("\ndemo: precis failed on: " + "\n".join(errors))
        return 1
    return 0 if have_precis else 1


if __name__ == "__main__":
    sys.exit(main())
