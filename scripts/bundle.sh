#!/usr/bin/env bash
# Build the deployable source of the Cloud Functions: main.py, functions/, shared/ and
# requirements.txt, without tests or caches. Every function deploys this same bundle.
#
#   scripts/bundle.sh [OUT_DIR] [--zip]     (default OUT_DIR: dist/bundle; --zip also writes OUT_DIR.zip)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/dist/bundle"
make_zip=0
for arg in "$@"; do
  case "$arg" in
    --zip) make_zip=1 ;;
    -*) echo "bundle.sh: unknown option $arg" >&2; exit 2 ;;
    *) out="$arg" ;;
  esac
done

for need in main.py requirements.txt functions shared; do
  if [ ! -e "$root/$need" ]; then
    echo "bundle.sh: $root/$need is missing" >&2
    exit 1
  fi
done

rm -rf "$out"
mkdir -p "$out"
cp "$root/main.py" "$root/requirements.txt" "$out/"
tar -C "$root" \
  --exclude='__pycache__' --exclude='*.pyc' --exclude='*.pyo' \
  --exclude='.mypy_cache' --exclude='.ruff_cache' --exclude='.pytest_cache' \
  --exclude='tests' --exclude='test_*.py' --exclude='*_test.py' --exclude='conftest.py' \
  -cf - functions shared | tar -C "$out" -xf -

if [ "$make_zip" = 1 ]; then
  # Fixed timestamps and order: the same sources give the same zip.
  python3 - "$out" <<'PY'
import sys, zipfile
from pathlib import Path
root = Path(sys.argv[1])
with zipfile.ZipFile(f"{root}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        info = zipfile.ZipInfo(path.relative_to(root).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        zf.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
PY
  echo "bundle: $out.zip"
fi
echo "bundle: $out ($(find "$out" -type f | wc -l) files)"
