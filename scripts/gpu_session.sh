#!/usr/bin/env bash
# The GPU checks on an NVIDIA machine, batched (how the H200 figures in conformance/ and bench/
# are made), in two phases that each end well inside a 10-minute command:
#   bash scripts/gpu_session.sh tests [path-to-array-api-tests]   # suites on cuda and wgpu
#   bash scripts/gpu_session.sh bench                             # NCCL check + benchmarks
# Logs go to $OUT, at most 6 files a phase. The suite's requirements (hypothesis, ndindex,
# pytest-json-report, pytest-metadata) must be importable: on a machine without a registry,
# carry their wheels in .suite/whl; they are installed from there when present.
set -u
OUT=${OUT:-/tmp/ruda-gpu}; mkdir -p "$OUT"
phase=${1:-tests}; SUITE=${2:-.suite/array-api-tests}
export PYTHONUNBUFFERED=1 RUDA_WGPU=1 RUDA_TUNE_BUDGET=${RUDA_TUNE_BUDGET:-20}
T_TESTS=${T_TESTS:-300} py=python3
if [ -d .suite/whl ]; then
  $py -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/suite .suite/whl/*.whl
  export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}/tmp/suite"
fi

if [ "$phase" = tests ]; then
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; $py -m ruda info; } \
    > "$OUT/info.txt" 2>&1
  # cuda suite, wgpu suite and array-api-tests on cuda side by side (CPU-bound)
  ( RUDA_TEST_DEVICES=cuda timeout $T_TESTS $py -m pytest tests -q -p no:cacheprovider -n 5 -rfE \
      > "$OUT/tests_cuda.log" 2>&1 ) &
  ( RUDA_TEST_DEVICES=wgpu timeout $T_TESTS $py -m pytest tests -q -p no:cacheprovider -n 4 -rfE \
      > "$OUT/tests_wgpu.log" 2>&1 ) &
  # --disable-deadline: hypothesis's 800 ms deadline trips on CuPy's first-call NVRTC compiles
  ( timeout $T_TESTS $py conformance/run.py "$SUITE" --device cuda -n 6 -rfE --disable-deadline \
      > "$OUT/conformance_cuda.log" 2>&1 ) &
  wait
  grep -hE "passed|failed|^FAILED|^ERROR" "$OUT"/*.log | tail -n 60
  exit 0
fi

# phase bench: NCCL world-size-1 check, then benchmarks one group at a time (undisturbed)
{ if command -v mpiexec >/dev/null; then
    timeout ${T_NCCL:-90} $py -m ruda.distributed.run -n 1 bench/multi_gpu_nccl.py --max-mb 256
  else   # no mpiexec: world size 1 runs as an MPI singleton
    timeout ${T_NCCL:-90} $py bench/multi_gpu_nccl.py --max-mb 256
  fi; echo "exit status $?"; } > "$OUT/nccl.log" 2>&1
timeout ${T_WGPU:-120} $py bench/bench_wgpu.py "$OUT/bench_wgpu.json" --size-mib 1024 > "$OUT/bench.log" 2>&1
timeout ${T_MATMUL:-240} $py -m ruda.bench --devices cuda,wgpu --only matmul --sizes 4096,8192 \
  --dtypes ${MATMUL_DTYPES:-float32,tf32,bfloat16} --budget $(( ${T_MATMUL:-240} - 20 )) \
  --json "$OUT/bench_matmul.json" >> "$OUT/bench.log" 2>&1
tail -n 40 "$OUT/nccl.log"; cat "$OUT/bench.log" | tail -n 80
