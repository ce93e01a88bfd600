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
exec python3 -m pytest -q -p no:cacheprovider "$@"
