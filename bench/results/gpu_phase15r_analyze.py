"""cuda15r (from cuda13r's): a precis --profile --json of ResNet-50 -> ms and TOPS
per conv group (stem, 3x3, 1x1, downsample), MACs from torchvision's resnet50 by
node name; 1x1 convs also their least traffic (x, w, y, the residual of conv3) in GB/s."""
import json, re, sys
import torch, torchvision

prof = json.load(open(sys.argv[1]))
batch = int(sys.argv[2])
m = torchvision.models.resnet50()
info = {}
def hook(name):
    def f(mod, inp, out):
        info[name] = (out.numel() * mod.in_channels * mod.kernel_size[0] * mod.kernel_size[1],
                      mod.kernel_size[0], tuple(out.shape[1:]), mod.stride[0], mod.in_channels)
    return f
for n, mod in m.named_modules():
    if isinstance(mod, torch.nn.Conv2d):
        mod.register_forward_hook(hook(n))
with torch.no_grad():
    m(torch.zeros(1, 3, 224, 224))
groups, rows = {}, []
for st in prof["profile"]:
    if "Conv" not in st["op"]:
        continue
    nm = st["name"]
    g = re.search(r"layer(\d)[./_](\d+)[./_](conv\d|downsample)", nm)
    key = f"layer{g.group(1)}.{g.group(2)}.{g.group(3)}" if g else ("conv1" if "conv1" in nm else None)
    if key and key.endswith("downsample"):
        key += ".0"
    if key not in info:
        print("unmatched", nm, st["ms"]); continue
    macs, k, shp, s, cin = info[key]
    pix = shp[1] * shp[2] * batch
    mb = (pix * cin + shp[0] * cin + pix * shp[0] * (2 if key.endswith("conv3") else 1)) / 1e6 if k == 1 else 0
    grp = "stem" if key == "conv1" else "downsample" if "downsample" in key else f"{k}x{k}"
    ops = 2 * macs * batch
    a = groups.setdefault(grp, [0.0, 0.0, 0])
    a[0] += st["ms"]; a[1] += ops; a[2] += 1
    rows.append((key, shp, s, st["ms"], ops / st["ms"] / 1e9, st["kernel"][:70], mb))
for r in rows:
    gbs = f"{r[6]:6.0f} MB {r[6] / r[3]:5.0f} GB/s" if r[6] else " " * 24
    print(f"{r[0]:22s} {str(r[1]):16s} s{r[2]} {r[3]:7.3f} ms {r[4]:6.0f} TOPS {gbs}  {r[5]}")
tot = sum(p["ms"] for p in prof["profile"])
print(f"all steps {tot:.3f} ms")
for g, (ms, ops, n) in sorted(groups.items()):
    print(f"{g:10s} {n:2d} convs {ms:7.3f} ms {ops / ms / 1e9:6.0f} TOPS")
