#!/usr/bin/env python3
"""Makes the PP-OCR model inputs (deterministic) in $PRECIS_CACHE/data:

  det_page.npy   1x3x384x768  the scanned page (skimage's page.png, 384x191 grey),
                              resized 2x to sides that are multiples of 32
  rec_lines.npy  8x3x48x374   text lines rendered with Debian's DejaVu fonts
  rec_page.npy   7x3x48x897   the page's 7 text lines, cropped by fixed boxes
                              (rec width: 48 * max(320/48, widest line's w/h))
  cls_lines.npy  20x3x48x192  10 lines (8 rendered, 2 from the page) upright,
                              then the same 10 rotated by 180 degrees
  truth.json     ground truth: text per rec line, label per cls sample

Preprocessing is RapidOCR's (see ppocr.py). Needs numpy and pillow; the
fonts come from fonts-dejavu-core and page.png from scripts/fetch_models.sh.
"""
import json
import os
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ppocr  # noqa: E402

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
# (text, font file of fonts-dejavu-core, ink, paper)
RENDERED = [
    ("Hello, World!", "DejaVuSans.ttf", 0, 255),
    ("precis 0.1.0", "DejaVuSerif.ttf", 20, 240),
    ("ONNX Runtime", "DejaVuSans-Bold.ttf", 40, 250),
    ("int8 x 4 = 32", "DejaVuSansMono.ttf", 0, 230),
    ("Debian 12", "DejaVuSerif-Bold.ttf", 60, 255),
    ("Tensor Cores", "DejaVuSansMono-Bold.ttf", 10, 220),
    ("fp16 and bf16", "DejaVuSans.ttf", 30, 245),
    ("(x-0.5)/0.5", "DejaVuSerif.ttf", 0, 255),
]
# Lines of page.png: (text, crop box x0, y0, x1, y1 in the 384x191 image).
PAGE_LINES = [
    ("Region-based segmentation", (6, 8, 292, 32)),
    ("Let us first determine markers of the coins and the", (4, 46, 378, 66)),
    ("background. These markers are pixels that we can label", (4, 64, 378, 85)),
    ("unambiguously as either object or background. Here,", (5, 82, 376, 103)),
    ("the markers are found at the two extreme parts of the", (5, 98, 377, 121)),
    ("histogram of grey values:", (5, 115, 173, 139)),
    (">>> markers = np.zeros_like(coins)", (20, 167, 242, 191)),
]
CLS_PAGE_LINES = [0, 5]


def render(text, font_file, ink, paper, size=32, margin=6):
    # BASIC layout: the same glyph placement whether or not libraqm/fribidi are present
    font = ImageFont.truetype(os.path.join(FONT_DIR, font_file), size,
                              layout_engine=ImageFont.Layout.BASIC)
    x0, y0, x1, y1 = font.getbbox(text)
    img = Image.new("L", (x1 - x0 + 2 * margin, y1 - y0 + 2 * margin), paper)
    ImageDraw.Draw(img).text((margin - x0, margin - y0), text, font=font, fill=ink)
    return img


def to_bgr(img):
    """PIL image (grey) -> HxWx3 uint8 in BGR order (grey: all channels equal)."""
    return np.ascontiguousarray(np.asarray(img.convert("RGB"))[:, :, ::-1])


def main():
    os.makedirs(ppocr.DATA, exist_ok=True)
    page = Image.open(os.path.join(ppocr.DATA, "page.png")).convert("L")

    # det: RapidOCR's resize rounds each side to a multiple of 32.
    w, h = page.size
    dw, dh = int(round(2 * w / 32) * 32), int(round(2 * h / 32) * 32)
    det = ppocr.normalize(ppocr.resize(to_bgr(page), dw, dh))[None]

    rendered = [to_bgr(render(*r)) for r in RENDERED]
    page_lines = [to_bgr(page.crop(box)) for _, box in PAGE_LINES]
    rec_lines = ppocr.rec_batch(rendered)
    rec_page = ppocr.rec_batch(page_lines)

    cls_src = rendered + [page_lines[i] for i in CLS_PAGE_LINES]
    cls_src = cls_src + [np.ascontiguousarray(im[::-1, ::-1]) for im in cls_src]
    cls = np.stack([ppocr.resize_norm_line(im, 192) for im in cls_src])
    n = len(cls_src) // 2

    truth = {
        "rec_lines": [t for t, *_ in RENDERED],
        "rec_page": [t for t, _ in PAGE_LINES],
        "cls_lines": ["0"] * n + ["180"] * n,
        "cls_text": ([t for t, *_ in RENDERED] + [PAGE_LINES[i][0] for i in CLS_PAGE_LINES]) * 2,
        "det_page": len(PAGE_LINES),
    }
    arrays = {"det_page": det, "rec_lines": rec_lines, "rec_page": rec_page, "cls_lines": cls}
    for case, _ in ppocr.CASES:
        np.save(ppocr.input_path(case), np.ascontiguousarray(arrays[case], dtype=np.float32))
    with open(os.path.join(ppocr.DATA, "truth.json"), "w", encoding="utf-8") as f:
        json.dump(truth, f, indent=1, ensure_ascii=False)
    shapes = ", ".join(f"{c} {'x'.join(map(str, arrays[c].shape))}" for c, _ in ppocr.CASES)
    print(f"prep: {shapes} in {ppocr.DATA}")


if __name__ == "__main__":
    main()
