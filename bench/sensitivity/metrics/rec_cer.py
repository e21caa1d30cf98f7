#!/usr/bin/env python3
"""PP-OCRv4 rec: character error rate against the ground truth texts (greedy CTC decoding,
bench/zoo's ppocr and cer). usage: rec_cer.py DIR TRUTH.json  (prints the CER; lower is better)"""
import json
import sys

from common import samples
import zoo  # noqa: E402 (common put bench/zoo on the path)

cand = samples(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as f:
    truth = json.load(f)
if len(truth) != len(cand):
    sys.exit(f"{len(cand)} outputs for {len(truth)} truth texts")
keys = zoo.ppocr.load_keys()
print(zoo.cer([zoo.ppocr.ctc_greedy(s[0][0], keys) for s in cand], truth))
