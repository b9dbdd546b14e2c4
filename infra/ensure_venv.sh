#!/usr/bin/env bash
# Create infra/.venv if missing and (re)install infra/requirements.txt when it changed.
# The infra program has its own environment: pulumi needs protobuf<7, the runtime uses 7.
set -euo pipefail
cd "$(dirname "$0")"
python="${PYTHON:-python3}"
stamp=.venv/.requirements.sha256
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi
