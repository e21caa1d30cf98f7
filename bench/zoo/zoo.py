"""The model zoo as one registry: for every model its ONNX file, evaluation and
calibration inputs and a task metric. Shared by bench/zoo/eval.py (precis FP32 vs
ONNX Runtime FP32) and bench/zoo/ort_int8.py (ONNX Runtime's own INT8).

    import zoo
    for m in zoo.models():          # or zoo.models(["efficientnet_lite0"])
        m.path, m.inputs, m.outputs # ONNX file, input names, output names
        m.eval, m.calib             # lists of {input name: array}, batch 1 each
        m.truth                     # ground truth per evaluation sample, or None
        m.metric(cand, ref)         # cand, ref: per sample a list of output arrays
                                    #   -> {metric: value} vs FP32 (ref) and vs truth
    zoo.output_stats(cand, ref, names)  # per output SQNR (dB), cosine, max abs diff

Everything is deterministic and comes from files that scripts/fetch_models.sh and
tests/models/prep_data.py put into $PRECIS_CACHE (default ~/.cache/precis).
Calibration and evaluation never overlap:

  ppocr_v4_rec / ppocr_v2_cls  text lines rendered with DejaVu fonts from licence texts
      of /usr/share/common-licenses:
      the first 3 licences feed calibration, later ones evaluation, plus the 7 real
      lines of the photographed page (evaluation only). Width 640 (rec) / 192 (cls),
      one shape for every sample (ORT's entropy calibrator wants that).
      cls evaluates each line upright and rotated 180 degrees.
  ppocr_v4_det  the photographed page (2x, 384x768) and 3 pages rendered from later
      licence texts (evaluation); 8 pages rendered from the first 3 licences
      (calibration). Truth: the number of text lines.
  minilm_l6_v2  models/minilm's 16 evaluation / 32 calibration sentences (distinct).
  efficientnet_lite0  the 8 photos, centre crop (evaluation; expected classes from
      images.json); calibration: the detector photos camera and person, and flipped
      off-centre crops at other scales of all 10 photos.
  yolov8n / centerface  astronaut, camera, person letterboxed (evaluation);
      calibration: the 7 EfficientNet photos other than the astronaut, letterboxed,
      as is, mirrored, and a mirrored centre crop.
"""
import ast
import json
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import ppocr  # noqa: E402
import prep_data  # noqa: E402
import test_detector as det_post  # noqa: E402

CACHE = ppocr.CACHE
LICENSES = "/usr/share/common-licenses"
FONTS = ["DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf",
         "DejaVuSerif-Bold.ttf", "DejaVuSansMono-Bold.ttf"]
REC_WIDTH = 640


# ---------------------------------------------------------------- generic comparison

def output_stats(cand, ref, names):
    """Per output over all samples: SQNR (dB, 10 log10 |ref|^2 / |cand-ref|^2; inf when
    equal), cosine, max abs diff. cand, ref: per sample a list of arrays."""
    out = {}
    for k, n in enumerate(names):
        a = np.concatenate([np.asarray(s[k], np.float64).ravel() for s in cand])
        b = np.concatenate([np.asarray(s[k], np.float64).ravel() for s in ref])
        if a.shape != b.shape:
            out[n] = {"error": f"size {a.size} != {b.size}"}
            continue
        err = float(np.sum((a - b) ** 2))
        sig = float(np.sum(b ** 2))
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        out[n] = {"sqnr_db": float("inf") if err == 0 else 10 * np.log10(max(sig, 1e-300) / err),
                  "cosine": float(a @ b / (na * nb)) if na and nb else float(na == nb),
                  "max_abs_diff": float(np.max(np.abs(a - b))) if a.size else 0.0}
    return out


def graph_outputs(path):
    """Output names in graph order (what ORT returns and precis writes)."""
    import onnx
    return [o.name for o in onnx.load(path, load_external_data=False).graph.output]


class Model:
    def __init__(self, name, path, inputs, outputs, eval, calib, truth, metric, note=""):
        self.name, self.path, self.inputs = name, path, inputs
        self.outputs = outputs or graph_outputs(path)
        self.eval, self.calib, self.truth, self.note = eval, calib, truth, note
        self._metric = metric

    def metric(self, cand, ref):
        return self._metric(cand, ref, self.truth)


# ---------------------------------------------------------------- PP-OCR data

def sentences(names, count, seed, lo=8, hi=28):
    """Short lines (3..7 words) cut from licence texts, deterministic."""
    words = []
    for n in names:
        with open(os.path.join(LICENSES, n), encoding="utf-8", errors="replace") as f:
            words += re.findall(r"[A-Za-z0-9][A-Za-z0-9,.;:()'\-]*", f.read())
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        i = int(rng.integers(0, len(words) - 8))
        line = " ".join(words[i:i + int(rng.integers(3, 8))])
        if lo <= len(line) <= hi and line not in out:
            out.append(line)
    return out


def render_lines(texts, seed):
    rng = np.random.default_rng(seed)
    imgs = []
    for i, t in enumerate(texts):
        ink, paper = int(rng.integers(0, 70)), int(rng.integers(215, 256))
        imgs.append(prep_data.to_bgr(prep_data.render(t, FONTS[i % len(FONTS)], ink, paper)))
    return imgs


CJK_FONTS = [("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2),  # SC faces
             ("/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc", 2),
             ("/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc", 2)]


def cjk_data():
    """{split: (texts, images)} of the Chinese lines in cjk_lines.txt, rendered with
    fonts-noto-cjk (deterministic ink/paper per line)."""
    from PIL import Image, ImageDraw, ImageFont
    texts = {"calib": [], "eval": []}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cjk_lines.txt"),
              encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                split, text = line.rstrip("\n").split("\t")
                texts[split].append(text)
    assert not set(texts["calib"]) & set(texts["eval"])
    out = {}
    for k, (split, lines) in enumerate(texts.items()):
        rng, imgs = np.random.default_rng(10 + k), []
        for i, t in enumerate(lines):
            path, index = CJK_FONTS[i % len(CJK_FONTS)]
            font = ImageFont.truetype(path, 32, index=index, layout_engine=ImageFont.Layout.BASIC)
            ink, paper = int(rng.integers(0, 70)), int(rng.integers(215, 256))
            x0, y0, x1, y1 = font.getbbox(t)
            img = Image.new("L", (x1 - x0 + 12, y1 - y0 + 12), paper)
            ImageDraw.Draw(img).text((6 - x0, 6 - y0), t, font=font, fill=ink)
            imgs.append(prep_data.to_bgr(img))
        out[split] = (lines, imgs)
    return out


def _licences():
    return sorted(n for n in os.listdir(LICENSES) if os.path.isfile(os.path.join(LICENSES, n)))


_OCR = {}


def ocr_data():
    """(calib texts, calib images, eval texts incl. page lines, eval images); cached."""
    if not _OCR:
        from PIL import Image
        lic = _licences()
        calib_txt = sentences(lic[:3], 32, seed=1)
        eval_txt = sentences(lic[3:], 64, seed=2)
        assert not set(calib_txt) & set(eval_txt)
        page = Image.open(os.path.join(ppocr.DATA, "page.png")).convert("L")
        page_imgs = [prep_data.to_bgr(page.crop(box)) for _, box in prep_data.PAGE_LINES]
        _OCR.update(calib_txt=calib_txt, calib_imgs=render_lines(calib_txt, seed=3),
                    eval_txt=eval_txt + [t for t, _ in prep_data.PAGE_LINES],
                    eval_imgs=render_lines(eval_txt, seed=4) + page_imgs)
    return _OCR


def render_page(texts, seed, w=768, h=384):
    """A white-ish page of w x h with one text line per entry, font 22..28 px, BGR."""
    from PIL import Image, ImageDraw, ImageFont
    rng = np.random.default_rng(seed)
    ink, paper = int(rng.integers(0, 60)), int(rng.integers(220, 256))
    img = Image.new("L", (w, h), paper)
    d = ImageDraw.Draw(img)
    y, n = int(rng.integers(10, 30)), 0
    for i, t in enumerate(texts):
        font = ImageFont.truetype(os.path.join(prep_data.FONT_DIR, FONTS[(seed + i) % len(FONTS)]),
                                  int(rng.integers(22, 29)), layout_engine=ImageFont.Layout.BASIC)
        x0, y0, x1, y1 = font.getbbox(t)
        if x1 - x0 > w - 40 or y + (y1 - y0) > h - 10:
            continue
        d.text((int(rng.integers(10, 30)) - x0, y - y0), t, font=font, fill=ink)
        y += (y1 - y0) + int(rng.integers(18, 30))
        n += 1
    return prep_data.to_bgr(img), n


def det_pages(lics, count, seed):
    texts = sentences(lics, count * 8, seed=seed, lo=12, hi=40)
    pages = []
    for p in range(count):
        img, n = render_page(texts[p * 8:(p + 1) * 8], seed=seed * 100 + p)
        pages.append((ppocr.normalize(img)[None], n))
    return pages


# ---------------------------------------------------------------- PP-OCR metrics

def cer(hyps, refs):
    errs = sum(ppocr.edit_distance(h, r) for h, r in zip(hyps, refs))
    return errs / max(1, sum(len(r) for r in refs))


_KEYS = []


def _rec_metric(cand, ref, truth):
    if not _KEYS:
        _KEYS.extend(ppocr.load_keys())
    ct = [ppocr.ctc_greedy(s[0][0], _KEYS) for s in cand]
    rt = [ppocr.ctc_greedy(s[0][0], _KEYS) for s in ref]
    return {"cer_vs_truth": cer(ct, truth), "cer_vs_fp32": cer(ct, rt),
            "fp32_cer_vs_truth": cer(rt, truth),
            "lines_same_text_as_fp32": float(np.mean([a == b for a, b in zip(ct, rt)]))}


def _cls_metric(cand, ref, truth):
    c = np.array([int(np.argmax(s[0])) for s in cand])
    r = np.array([int(np.argmax(s[0])) for s in ref])
    return {"accuracy": float(np.mean(c == np.array(truth))), "fp32_accuracy": float(np.mean(r == np.array(truth))),
            "agreement_with_fp32": float(np.mean(c == r))}


def _det_metric(cand, ref, truth):
    ious, cnt_c, cnt_r = [], [], []
    for c, r in zip(cand, ref):
        a, b = c[0][0, 0] > ppocr.DET_THRESH, r[0][0, 0] > ppocr.DET_THRESH
        u = np.logical_or(a, b).sum()
        ious.append(float(np.logical_and(a, b).sum() / u) if u else 1.0)
        cnt_c.append(ppocr.count_boxes(c[0][0, 0]))
        cnt_r.append(ppocr.count_boxes(r[0][0, 0]))
    return {"mask_iou_vs_fp32_mean": float(np.mean(ious)), "mask_iou_vs_fp32_min": float(np.min(ious)),
            "regions_same_count_as_fp32": float(np.mean([a == b for a, b in zip(cnt_c, cnt_r)])),
            "regions_equal_truth": float(np.mean([a == t for a, t in zip(cnt_c, truth)])),
            "fp32_regions_equal_truth": float(np.mean([a == t for a, t in zip(cnt_r, truth)])),
            "regions": cnt_c, "fp32_regions": cnt_r, "truth_lines": list(truth)}


# ---------------------------------------------------------------- MiniLM

def _minilm_metric(cand, ref, truth):
    ec = np.concatenate([s[1] for s in cand]).astype(np.float64)
    er = np.concatenate([s[1] for s in ref]).astype(np.float64)
    cos = np.sum(ec * er, 1) / (np.linalg.norm(ec, axis=1) * np.linalg.norm(er, axis=1))
    # hidden states of real tokens only (padded rows are don't-care)
    hc = np.concatenate([s[0][0][m.astype(bool)] for s, m in zip(cand, truth["masks"])]).ravel()
    hr = np.concatenate([s[0][0][m.astype(bool)] for s, m in zip(ref, truth["masks"])]).ravel()

    def nn(e):
        e = e / np.linalg.norm(e, axis=1, keepdims=True)
        s = e @ e.T
        np.fill_diagonal(s, -np.inf)
        return s.argmax(1)
    nc, nr = nn(ec), nn(er)
    para = np.array(truth["paraphrase"])
    return {"embedding_cosine_min": float(cos.min()), "embedding_cosine_mean": float(cos.mean()),
            "hidden_real_tokens_cosine": float(hc @ hr / (np.linalg.norm(hc) * np.linalg.norm(hr))),
            "nn_agreement_with_fp32": float(np.mean(nc == nr)),
            "nn_is_paraphrase": float(np.mean(nc == para)), "fp32_nn_is_paraphrase": float(np.mean(nr == para))}


def _minilm():
    d = os.path.join(CACHE, "data", "minilm")
    names = ["input_ids", "attention_mask", "token_type_ids"]

    def split(s):
        a = {n: np.load(os.path.join(d, s, n + ".npy")) for n in names}
        return [{n: a[n][i:i + 1] for n in names} for i in range(len(a["input_ids"]))]
    with open(os.path.join(d, "eval.json")) as f:
        lab = json.load(f)
    key = [(x["topic"], x["pair"]) for x in lab]
    para = [next(j for j in range(len(key)) if j != i and key[j] == key[i]) for i in range(len(key))]
    ev = split("eval")
    truth = {"paraphrase": para, "masks": [x["attention_mask"][0] for x in ev]}
    return Model("minilm_l6_v2", os.path.join(CACHE, "models/minilm/all-MiniLM-L6-v2.onnx"), names,
                 None, ev, split("calib"), truth, _minilm_metric,
                 "16 eval / 32 calib sentences, [1,15] each; last_hidden_state stats include padded rows")


# ---------------------------------------------------------------- EfficientNet

def _topk(x, k):
    return np.argsort(-np.asarray(x, np.float64).ravel(), kind="stable")[:k]


def _effnet_metric(cand, ref, truth):
    t1 = [int(_topk(c[0], 1)[0]) == int(_topk(r[0], 1)[0]) for c, r in zip(cand, ref)]
    t5 = [len(set(_topk(c[0], 5)) & set(_topk(r[0], 5))) / 5 for c, r in zip(cand, ref)]

    def known(outs):
        ok = []
        for o, t in zip(outs, truth):
            if t["check"] == "top1":
                ok.append(int(_topk(o[0], 1)[0]) in t["expect"])
            elif t["check"] == "top5":
                ok.append(bool(set(_topk(o[0], 5).tolist()) & set(t["expect"])))
        return float(np.mean(ok))
    return {"top1_agreement_with_fp32": float(np.mean(t1)), "top5_overlap_with_fp32": float(np.mean(t5)),
            "known_labels_correct": known(cand), "fp32_known_labels_correct": known(ref)}


def _effnet_prep(img, resize=256, crop=224, at=(0.5, 0.5), flip=False):
    """fetch_convert.preprocess (shorter side to `resize`, bicubic, crop, (x-127)/128)
    with a crop position and an optional mirror: the calibration variants."""
    from PIL import Image
    im = img.convert("RGB")
    if flip:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    w, h = im.size
    s = resize / min(w, h)
    im = im.resize((max(resize, round(w * s)), max(resize, round(h * s))), Image.BICUBIC)
    w, h = im.size
    l, t = int((w - crop) * at[0]), int((h - crop) * at[1])
    x = (np.asarray(im.crop((l, t, l + crop, t + crop)), np.float32) - 127.0) / 128.0
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def _photo(name):
    from PIL import Image
    d = os.path.join(CACHE, "data")
    for p in (f"efficientnet/photos/{name}.png", f"efficientnet/photos/{name}.jpg",
              f"detector/{name}.png", f"detector/{name}.jpg"):
        if os.path.exists(os.path.join(d, p)):
            return Image.open(os.path.join(d, p))
    raise FileNotFoundError(name)


def _effnet():
    d = os.path.join(CACHE, "data", "efficientnet")
    with open(os.path.join(d, "images.json")) as f:
        images = json.load(f)
    ev = [{"input": np.load(os.path.join(d, im["npy"])).astype(np.float32)} for im in images]
    names = [im["name"] for im in images]
    calib = [{"input": _effnet_prep(_photo(n))} for n in ("camera", "person")]
    spots = [(0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0)]
    for i, n in enumerate(names + ["camera", "person"]):
        calib.append({"input": _effnet_prep(_photo(n), resize=288 + 32 * (i % 2), at=spots[i % 4], flip=True)})
    return Model("efficientnet_lite0", os.path.join(CACHE, "models/efficientnet/efficientnet_lite0.onnx"),
                 ["input"], ["logits"], ev, calib, images, _effnet_metric,
                 "8 photos centre-cropped; calib: 2 other photos + 10 mirrored off-centre crops at 288/320")


# ---------------------------------------------------------------- detectors

def letterbox(img, size, fill):
    """models/detector/fetch.py's letterbox: fit, keep aspect, bilinear, pad centred."""
    from PIL import Image
    w, h = img.size
    r = min(size / w, size / h)
    nw, nh = max(1, round(w * r)), max(1, round(h * r))
    canvas = Image.new("RGB", (size, size), (fill, fill, fill))
    canvas.paste(img.resize((nw, nh), Image.BILINEAR), ((size - nw) // 2, (size - nh) // 2))
    return np.asarray(canvas)


def _box_agreement(a, b, thr=0.5):
    """Fraction of a's detections with a same-class partner in b at IoU >= thr."""
    if not a:
        return None
    hit = 0
    for cls, _, box in a:
        cand = [d[2] for d in b if d[0] == cls]
        hit += bool(cand) and float(det_post.iou(box, np.array(cand)).max()) >= thr
    return hit / len(a)


def _det_agreement(post, names, conf, low):
    def metric(cand, ref, truth):
        out = {}
        for tag, c in (("", conf), ("_at_%g" % low, low)):
            dc = [post(s, names, c) for s in cand]
            dr = [post(s, names, c) for s in ref]
            fc, fr = [x for s in dc for x in s], [x for s in dr for x in s]
            # per image matching, pooled over images
            rec = [_box_agreement(r, cc) for r, cc in zip(dr, dc)]
            prec = [_box_agreement(cc, r) for r, cc in zip(dr, dc)]
            nr = [len(r) for r in dr]
            nc = [len(cc) for cc in dc]
            out["boxes_fp32" + tag] = len(fr)
            out["boxes" + tag] = len(fc)
            out["fp32_boxes_matched" + tag] = (sum(x * n for x, n in zip(rec, nr) if x is not None) / len(fr)
                                               if fr else None)
            out["boxes_matched_in_fp32" + tag] = (sum(x * n for x, n in zip(prec, nc) if x is not None) / len(fc)
                                                  if fc else None)
        return out
    return metric


def _detectors():
    d = os.path.join(CACHE, "data", "detector")
    md = os.path.join(CACHE, "models", "detector")
    imgs = det_post.ALL_IMAGES
    calib_src = ["chelsea", "coffee", "rocket", "dog", "eagle", "giraffe", "horses"]
    out = []
    for name, (fname, inp, prefix, post, conf) in det_post.MODELS.items():
        size = 320 if prefix == "yolo320" else 640
        ev = [{inp: np.load(os.path.join(d, f"{prefix}_{i}.npy"))} for i in imgs]
        calib = []
        for n in calib_src:
            from PIL import Image
            im = _photo(n).convert("RGB")
            w, h = im.size
            crop = im.crop((w // 6, h // 6, w - w // 6, h - h // 6)).transpose(Image.FLIP_LEFT_RIGHT)
            for v in (im, im.transpose(Image.FLIP_LEFT_RIGHT), crop):
                if prefix == "yolo320":
                    x = (letterbox(v, 320, 114).astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
                else:
                    x = letterbox(v, 640, 0)[:, :, ::-1].astype(np.float32).transpose(2, 0, 1)[None]
                calib.append({inp: np.ascontiguousarray(x)})
        path = os.path.join(md, fname)
        names = {}
        if name == "yolov8n":
            import onnx
            meta = {p.key: p.value for p in onnx.load(path).metadata_props}
            names = ast.literal_eval(meta.get("names", "{}"))
        out.append(Model(name, path, [inp], None, ev, calib, None,
                         _det_agreement(post, names, conf, det_post.LOW[name]),
                         f"{'/'.join(imgs)} letterboxed {size}; calib: 7 other photos x (as is, mirrored, "
                         f"mirrored centre crop); boxes after test_detector.py post-processing, "
                         f"match = same class, IoU >= 0.5"))
    return out


# ---------------------------------------------------------------- registry

def _ppocr():
    o = ocr_data()
    rec = Model("ppocr_v4_rec", ppocr.model_path("rec"), ["x"], None,
                [{"x": ppocr.resize_norm_line(im, REC_WIDTH)[None]} for im in o["eval_imgs"]],
                [{"x": ppocr.resize_norm_line(im, REC_WIDTH)[None]} for im in o["calib_imgs"]],
                o["eval_txt"], _rec_metric, "64 rendered licence lines + 7 page lines, width 640; calib 32 lines")

    cjk = cjk_data()
    rec_cjk = Model("ppocr_v4_rec_cjk", ppocr.model_path("rec"), ["x"], None,
                    [{"x": ppocr.resize_norm_line(im, REC_WIDTH)[None]} for im in cjk["eval"][1]],
                    [{"x": ppocr.resize_norm_line(im, REC_WIDTH)[None]} for im in cjk["calib"][1]],
                    cjk["eval"][0], _rec_metric,
                    "16 Chinese lines rendered with Noto CJK SC, width 640; calib 8 other lines")

    def cls_set(imgs):
        ups = [ppocr.resize_norm_line(im, 192)[None] for im in imgs]
        downs = [ppocr.resize_norm_line(np.ascontiguousarray(im[::-1, ::-1]), 192)[None] for im in imgs]
        return [{"x": x} for x in ups + downs], [0] * len(ups) + [1] * len(downs)
    ev, lab = cls_set(o["eval_imgs"])
    cls = Model("ppocr_v2_cls", ppocr.model_path("cls"), ["x"], None,
                ev, cls_set(o["calib_imgs"])[0], lab, _cls_metric,
                "the rec lines upright and rotated 180 (142); calib 64")
    lic = _licences()
    page = np.load(ppocr.input_path("det_page"))
    ev_pages = [(page, len(prep_data.PAGE_LINES))] + det_pages(lic[3:], 3, seed=7)
    cal_pages = det_pages(lic[:3], 8, seed=5)
    det = Model("ppocr_v4_det", ppocr.model_path("det"), ["x"], None,
                [{"x": x} for x, _ in ev_pages], [{"x": x} for x, _ in cal_pages], [n for _, n in ev_pages],
                _det_metric, "the photographed page + 3 rendered pages, 384x768; calib 8 rendered pages")
    return [rec, rec_cjk, cls, det]


BUILDERS = [("ppocr", _ppocr), ("minilm", lambda: [_minilm()]), ("effnet", lambda: [_effnet()]),
            ("detectors", _detectors)]
NAMES = ["ppocr_v4_rec", "ppocr_v4_rec_cjk", "ppocr_v2_cls", "ppocr_v4_det", "minilm_l6_v2", "efficientnet_lite0",
         "yolov8n", "centerface"]


def models(only=None):
    """Registry entries in zoo order (only: list of names)."""
    out = []
    for _, b in BUILDERS:
        out += [m for m in b() if not only or m.name in only]
    if only and set(only) - set(NAMES):
        raise ValueError("unknown model(s): " + ", ".join(sorted(set(only) - set(NAMES))))
    return out
