#!/usr/bin/env python3
"""YOLOv8n (320): box agreement with fp32 as bench/zoo computes it (test_detector.py's
post-processing, a box matches a same-class box at IoU >= 0.5): the smaller of the share of
fp32 boxes matched and the share of the candidate's boxes matched in fp32, at the zoo's
confidence threshold. usage: det_boxes.py DIR REF  (prints it; higher is better)"""
import ast
import sys

from common import samples
import zoo  # noqa: E402

import onnx  # noqa: E402

fname, _, _, post, conf = zoo.det_post.MODELS["yolov8n"]
path = f"{zoo.CACHE}/models/detector/{fname}"
meta = {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}
metric = zoo._det_agreement(post, ast.literal_eval(meta.get("names", "{}")), conf,
                            zoo.det_post.LOW["yolov8n"])
r = metric(samples(sys.argv[1]), samples(sys.argv[2]), None)
vals = [v for v in (r["fp32_boxes_matched"], r["boxes_matched_in_fp32"]) if v is not None]
print(min(vals) if vals else 1.0)
