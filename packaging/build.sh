#!/usr/bin/env bash
# Build the standalone one-folder app into dist/kernel-lab/ with the current Python
# environment (which must have Kernel Lab installed: pip install -e .). pyarrow (it reads
# Parquet files and folders in the app) is installed here if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet "pyinstaller>=6.10" "pyarrow>=14"
python -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/kernel_lab.spec
if [ "$(uname)" = "Linux" ]; then
    # Shared libraries carry debug symbols: strip them, except the libraries vendored into
    # numpy.libs/ and scipy.libs/ (OpenBLAS, gfortran), which their wheels patched and which
    # stop loading when stripped. The self-test below catches any other casualty.
    if command -v strip >/dev/null; then
        find dist/kernel-lab/_internal -name '*.so*' -type f -not -path '*.libs/*' \
            -exec strip --strip-unneeded {} + 2>/dev/null || true
    fi
    # The numpy and scipy wheels each vendor the same libgfortran and libquadmath, and
    # PyInstaller copies both: keep one file, the other a relative link to it.
    python - <<'PY'
import hashlib
import os
from pathlib import Path

seen: dict[tuple[int, str], Path] = {}
for path in sorted(Path("dist/kernel-lab/_internal").rglob("*.so*")):
    if path.is_symlink() or not path.is_file():
        continue
    key = (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest())
    first = seen.setdefault(key, path)
    if first != path:
        path.unlink()
        path.symlink_to(os.path.relpath(first, path.parent))
        print(f"{path} -> {first}")
PY
fi
echo "size: $(du -sh dist/kernel-lab | cut -f1) on disk (du -sh), $(du -sh --apparent-size \
    dist/kernel-lab | cut -f1) apparent"
echo "built dist/kernel-lab/kernel-lab — try: dist/kernel-lab/kernel-lab --self-test"
