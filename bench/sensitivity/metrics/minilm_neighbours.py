#!/usr/bin/env python3
"""MiniLM: nearest-neighbour agreement with fp32 (for each eval sentence, is its nearest
other sentence by embedding cosine the same as with the fp32 engine): bench/zoo's MiniLM
metric. usage: minilm_neighbours.py DIR REF  (prints the agreement in [0, 1]; higher is better)"""
import sys

from common import samples
import zoo  # noqa: E402

m = zoo._minilm()
print(m.metric(samples(sys.argv[1]), samples(sys.argv[2]))["nn_agreement_with_fp32"])
