#!/usr/bin/env bash
# One batched GPU session on an NVIDIA machine (how the H200 figures in conformance/ and bench/
# were made): the device-parametrized suite on cuda and wgpu, array-api-tests on cuda, the
# benchmarks with their same-run anchors, and the NCCL world-size-1 check. Logs go to $OUT.
#   bash scripts/gpu_session.sh [path-to-array-api-tests]
# The suite's own requirements (hypothesis, ndindex, pytest-json-report) must be importable there:
# on a machine without a registry, carry their wheels and pip-install them first.
set -u
OUT=${OUT:-/tmp/ruda-gpu}; mkdir -p "$OUT"
SUITE=${1:-.suite/array-api-tests}
export PYTHONUNBUFFERED=1 RUDA_WGPU=1 RUDA_TUNE_BUDGET=${RUDA_TUNE_BUDGET:-20}
T_TESTS=${T_TESTS:-240} T_BENCH=${T_BENCH:-240} WGPU_TESTS=${WGPU_TESTS:-1}
py=python3
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt" 2>&1
$py -m ruda info > "$OUT/info.txt" 2>&1

# 1. tests on cuda and wgpu, and the conformance suite on cuda, side by side (CPU-bound)
( RUDA_TEST_DEVICES=cuda timeout $T_TESTS $py -m pytest tests -q -p no:cacheprovider -n 4 -rfs \
    > "$OUT/tests_cuda.log" 2>&1 ) &
[ "$WGPU_TESTS" = 1 ] && ( RUDA_TEST_DEVICES=wgpu timeout $T_TESTS $py -m pytest tests -q -p no:cacheprovider \
    -n 3 -rfs > "$OUT/tests_wgpu.log" 2>&1 ) &
if [ -d "$SUITE/array_api_tests" ]; then
  ( timeout $T_TESTS $py conformance/run.py "$SUITE" --device cuda -n 10 > "$OUT/conformance_cuda.log" 2>&1 ) &
fi
wait

# 2. NCCL with a real communicator of world size 1
if $py -m ruda.distributed.run --help >/dev/null 2>&1 && command -v mpiexec >/dev/null; then
  timeout ${T_NCCL:-60} $py -m ruda.distributed.run -n 1 bench/multi_gpu_nccl.py --max-mb 256 > "$OUT/nccl.log" 2>&1
else   # no mpiexec on the machine: world size 1 runs as an MPI singleton
  timeout ${T_NCCL:-60} $py bench/multi_gpu_nccl.py --max-mb 256 > "$OUT/nccl.log" 2>&1
fi
# 3. benchmarks, one group at a time so that timings are not disturbed: 1 GiB f32 add and sum,
#    1 GiB readback, small-op latency, matmul 4096^3 and 8192^3 (f32, TF32)
bench() { local name=$1 t=$2; shift 2
  timeout "$t" $py -m ruda.bench --devices cuda,wgpu --budget $((t - 15)) --json "$OUT/bench_$name.json" "$@" \
    > "$OUT/bench_$name.log" 2>&1; }
bench stream $((T_BENCH / 4)) --only elementwise,reductions --sizes 268435456
bench transfer $((T_BENCH / 6)) --only transfer --sizes 1073741824
bench latency $((T_BENCH / 6)) --only latency
bench matmul $((T_BENCH * 5 / 12)) --only matmul --sizes 4096,8192 --dtypes float32,tf32
tail -n 3 "$OUT"/*.log
