#!/usr/bin/env bash
# lead session 15, call D: a cuda plan carries its timed GPU choices (precis.cuda_tcache):
# test_cuda_cli with the new binary, then ResNet-50 int8 b256: load time and the counts line
# with the base binary (.gpu/fin: re-times at load) and the new one
cd "$(dirname "$0")/../.."
ROOT=$PWD
python3 -c "import tarfile; tarfile.open('.gpu/fin2/bg2.tar.xz').extractall('.gpu/fin2')"
python3 -c "import tarfile; tarfile.open('.gpu/fin/bg.tar.xz').extractall('.gpu/fin')"
N=$ROOT/.gpu/fin2/build-gpu; O=$ROOT/.gpu/fin/build-gpu
libdirs=$ROOT/.gpu/lib
for d in $(python3 -c "
import glob, os, site
for sp in site.getsitepackages():
    for d in glob.glob(os.path.join(sp, 'nvidia/*/lib')): print(d)"); do libdirs="$libdirs:$d"; done
export LD_LIBRARY_PATH="$libdirs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
(cd tests/cli && python3 test_cuda_cli.py $N/precis $N/tests/cli/cuda_plan_stub) > $OUT/cli.log 2>&1; echo "cli rc $?"; tail -n 12 $OUT/cli.log
PRECIS_LIBS=$ROOT/.gpu/lib PRECIS_BUILD=$O OUT=$OUT/b bash bench/gpu/run.sh bench -- --models resnet50 --int8 --no-correctness --batches resnet50=256 --only int8 > $OUT/b.log 2>&1
echo "bench rc $?"; grep -E "int8 graphs" $OUT/b.log
W=/tmp/precis-gpu-work
C="--calib-data $W/calib-resnet50 --calib-cache $W/resnet50.calib"
for v in O N; do
  B=${!v}
  s=$(date +%s.%N); $B/precis build $W/resnet50.onnx -o /tmp/r50_$v.plan --device cuda --precision int8 --shapes input:256x3x224x224 $C > /dev/null 2>$OUT/build_$v.log; echo "$v build rc $? $(python3 -c "print(round($(date +%s.%N)-$s,2))") s"
  for r in 1 2; do
    s=$(date +%s.%N); PRECIS_VERBOSE=1 $B/precis bench /tmp/r50_$v.plan --warmup 3 --iterations 20 > $OUT/bench_$v$r.txt 2>$OUT/bench_$v$r.err
    echo "$v load+bench rc $? $(python3 -c "print(round($(date +%s.%N)-$s,2))") s: $(grep -h 'timed GPU choices' $OUT/bench_$v$r.err) | $(grep -h p50 $OUT/bench_$v$r.txt)"
    grep -c "timed ms" $OUT/bench_$v$r.err
  done
done
rm -f $OUT/bench_*.err
