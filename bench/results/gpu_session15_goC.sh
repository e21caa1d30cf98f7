#!/usr/bin/env bash
# lead session 15, call C: Nsight Compute sections of ResNet-50 int8 b256's main kernels on the
# final binary (planning data for the 2x: the wgmma 3x3 tiles, the K-streamed 1x1, the stem)
cd "$(dirname "$0")/../.."
ROOT=$PWD
[ -d .gpu/fin/build-gpu ] || python3 -c "import tarfile; tarfile.open('.gpu/fin/bg.tar.xz').extractall('.gpu/fin')"
export PRECIS_LIBS=$ROOT/.gpu/lib PRECIS_BUILD=$ROOT/.gpu/fin/build-gpu
B=$PRECIS_BUILD
OUT=$OUT/b bash bench/gpu/run.sh bench -- --models resnet50 --int8 --no-correctness --batches resnet50=256 --only int8 > $OUT/b.log 2>&1
echo "bench rc $?"; grep -E "int8 graphs" $OUT/b.log
libdirs=$PRECIS_LIBS
for d in $(python3 -c "
import glob, os, site
for sp in site.getsitepackages():
    for d in glob.glob(os.path.join(sp, 'nvidia/*/lib')): print(d)"); do libdirs="$libdirs:$d"; done
export LD_LIBRARY_PATH="$libdirs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W=/tmp/precis-gpu-work
C="--calib-data $W/calib-resnet50 --calib-cache $W/resnet50.calib"
PRECIS_VERBOSE=1 $B/precis build $W/resnet50.onnx --device cuda --precision int8 --shapes input:256x3x224x224 $C -o /tmp/r50.plan > $OUT/build.log 2>&1
echo "build rc $?"; ls -la /tmp/r50.plan
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
PRECIS_CUDA_GRAPHS=0 timeout 120 $NCU --metrics gpu__time_duration.sum --csv $B/precis bench /tmp/r50.plan \
  --warmup 0 --iterations 1 > $OUT/ncu_all.csv 2>&1; echo "ncu all rc $?"
python3 - $OUT/ncu_all.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"'))]
t = collections.defaultdict(float); n = collections.Counter()
for r in rows:
    k = r['Kernel Name'].split('(')[0].split('<')[0]
    t[k] += float(r['Metric Value']) / 1e3; n[k] += 1
for k, v in sorted(t.items(), key=lambda x: -x[1]): print(f"{v:9.1f} us {n[k]:4d}  {k}")
print(f"total {sum(t.values()):.1f} us over {len(rows)} kernels")
PY
for KC in k_igemm_wg:4 k_q1x1_wg:2 k_q1x1:2 k_stem:1; do
  K=${KC%:*}; N=${KC#*:}
  PRECIS_CUDA_GRAPHS=0 timeout 90 $NCU -k regex:"^$K\$" -c $N --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    $B/precis bench /tmp/r50.plan --warmup 0 --iterations 1 > $OUT/ncu_$K.txt 2>&1
  echo "== $K rc $?"; grep -E "k_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\) Thr|Memory Throughput|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Stall|No Eligible|Block Limit" $OUT/ncu_$K.txt | head -n 40
done
