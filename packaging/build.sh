#!/usr/bin/env bash
# Build the standalone one-folder app into dist/kernel-lab/ with the current Python
# environment (which must have Kernel Lab installed: pip install -e .).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet "pyinstaller>=6.10"
python -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/kernel_lab.spec
# Shared libraries carry debug symbols: strip them, except the libraries vendored into
# numpy.libs/ and scipy.libs/ (OpenBLAS, gfortran), which their wheels patched and which
# stop loading when stripped. The self-test below catches any other casualty.
if command -v strip >/dev/null && [ "$(uname)" = "Linux" ]; then
    find dist/kernel-lab/_internal -name '*.so*' -type f -not -path '*.libs/*' \
        -exec strip --strip-unneeded {} + 2>/dev/null || true
fi
du -sh --apparent-size dist/kernel-lab
echo "built dist/kernel-lab/kernel-lab — try: dist/kernel-lab/kernel-lab --self-test"
