#!/usr/bin/env bash
# Cloud Build's test step: the same `make test` as CI, in an image that has the Google Cloud CLI
# and its emulators (Firestore, Pub/Sub) and Java. Installs make and venv support if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v make >/dev/null || missing+=(make)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
make test
