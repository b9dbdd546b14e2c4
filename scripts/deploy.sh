#!/usr/bin/env bash
# Cloud Build's deploy step: `pulumi up` of one environment's stack, then its outputs as JSON.
#   PULUMI_BACKEND_URL=gs://BUCKET scripts/deploy.sh dev|staging|prod [OUTPUTS_JSON]
# Needs the bundle in dist/bundle (scripts/bundle.sh) and the stack initialised (docs/deploying.md).
set -euo pipefail
env="${1:?usage: deploy.sh dev|staging|prod [outputs.json]}"
root="$(cd "$(dirname "$0")/.." && pwd)"
outputs="${2:-dist/stack-outputs.json}"
case "$outputs" in /*) ;; *) outputs="$root/$outputs" ;; esac
case "$env" in dev|staging|prod) ;; *) echo "deploy.sh: unknown environment $env" >&2; exit 2 ;; esac
: "${PULUMI_BACKEND_URL:?set PULUMI_BACKEND_URL (e.g. gs://BUCKET) to the Pulumi state backend}"
if [ ! -f "$root/dist/bundle/main.py" ]; then
  echo "deploy.sh: no bundle in dist/bundle; run scripts/bundle.sh first" >&2
  exit 1
fi

cd "$root/infra"
./ensure_venv.sh
pulumi login "$PULUMI_BACKEND_URL"
pulumi up --stack "$env" --yes --non-interactive --diff
mkdir -p "$(dirname "$outputs")"
pulumi stack output --stack "$env" --json > "$outputs"
echo "deploy: $env is up; outputs in $outputs"
