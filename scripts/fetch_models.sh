#!/usr/bin/env bash
# Fetches the real models and the real image that the model tests and the demo use,
# into $PRECIS_CACHE (default ~/.cache/precis), and checks every file against
# models/manifest.sha256 (paths there are relative to the cache). Idempotent.
#   models/*.onnx, models/ppocr_keys.txt  from the rapidocr-onnxruntime wheel (PyPI);
#                                         the keys are the rec model's 'character' metadata
#   data/page.png                         from Debian's python3-skimage .deb, extracted
#                                         (the package itself is not installed)
#   the zoo (models/minilm, models/efficientnet, models/detector) through their own
#                                         fetchers, each with its own manifest
# See models/README.md (and models/<name>/README.md) for what each file is.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${PRECIS_CACHE:-$HOME/.cache/precis}
PY=${PYTHON:-python3}
RAPIDOCR_VERSION=1.4.4
SKIMAGE_VERSION=0.19.3-8
MANIFEST=$ROOT/models/manifest.sha256

check() { # check PATTERN: verify the manifest lines whose path matches PATTERN
  (cd "$CACHE" && grep -E "$1" "$MANIFEST" | sha256sum --quiet --strict -c -) >/dev/null 2>&1
}

# The rest of the zoo: each model folder has its own idempotent fetcher that checks
# its own manifest (models/<name>/manifest.sha256).
fetch_zoo() {
  "$PY" "$ROOT/models/minilm/fetch_convert.py"
  "$PY" "$ROOT/models/efficientnet/fetch_convert.py"
  "$PY" "$ROOT/models/detector/fetch.py"
}

mkdir -p "$CACHE/models" "$CACHE/data"
if check .; then
  echo "fetch: $(grep -c . "$MANIFEST") files present and verified in $CACHE"
  fetch_zoo
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chown _apt "$tmp" 2>/dev/null || true  # apt-get download runs as _apt

if ! check ' models/'; then
  echo "fetch: models: rapidocr-onnxruntime==$RAPIDOCR_VERSION wheel (PyPI)"
  "$PY" -m pip download -q --no-deps --disable-pip-version-check --no-input \
        "rapidocr-onnxruntime==$RAPIDOCR_VERSION" -d "$tmp"
  "$PY" - "$tmp"/rapidocr_onnxruntime-*.whl "$CACHE/models" <<'EOF'
import os, sys, zipfile
import onnx
whl, out = sys.argv[1:3]
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.endswith(".onnx"):
            with open(os.path.join(out, os.path.basename(name)), "wb") as f:
                f.write(z.read(name))
rec = onnx.load(os.path.join(out, "ch_PP-OCRv4_rec_infer.onnx"), load_external_data=False)
chars = {p.key: p.value for p in rec.metadata_props}["character"].splitlines()
with open(os.path.join(out, "ppocr_keys.txt"), "w", encoding="utf-8", newline="\n") as f:
    f.write("\n".join(chars) + "\n")
EOF
fi

if ! check ' data/page\.png$'; then
  src=/usr/lib/python3/dist-packages/skimage/data/page.png
  if [ "$(dpkg-query -W -f='${Version}' python3-skimage 2>/dev/null)" = "$SKIMAGE_VERSION" ] \
     && [ -f "$src" ]; then
    echo "fetch: data: page.png from the installed python3-skimage $SKIMAGE_VERSION"
    cp "$src" "$CACHE/data/page.png"
  else
    echo "fetch: data: page.png from python3-skimage $SKIMAGE_VERSION (apt-get download, not installed)"
    (cd "$tmp" && { apt-get download -qq "python3-skimage=$SKIMAGE_VERSION" 2>/dev/null \
                    || { apt-get update -qq && apt-get download -qq "python3-skimage=$SKIMAGE_VERSION"; }; })
    dpkg-deb --fsys-tarfile "$tmp"/python3-skimage_*.deb \
      | tar -xO ./usr/lib/python3/dist-packages/skimage/data/page.png >"$CACHE/data/page.png"
  fi
fi

if check .; then
  echo "fetch: $(grep -c . "$MANIFEST") files verified in $CACHE"
  fetch_zoo
else
  (cd "$CACHE" && sha256sum -c "$MANIFEST") || true
  echo "fetch: FAILED: checksum mismatch against models/manifest.sha256"
  exit 1
fi
