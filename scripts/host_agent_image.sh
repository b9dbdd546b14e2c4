#!/usr/bin/env bash
# Cloud Build's image step: build the host agent's image (hostagent/Dockerfile), push it to the
# environment's Artifact Registry repository and write its digest-pinned reference to OUT_FILE,
# which the Pulumi program reads (agent-runtime:hostAgent.imageFile) like the functions' bundle.
#   scripts/host_agent_image.sh dev|staging|prod [OUT_FILE]     (default OUT_FILE: dist/host-agent-image.txt)
# The repository (agent-runtime) is declared by infra/agent_infra/hostagent.py; on a first deploy
# create it first (docs/deploying.md, "First deploy").
set -euo pipefail
env="${1:?usage: host_agent_image.sh dev|staging|prod [OUT_FILE]}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${2:-dist/host-agent-image.txt}"
case "$out" in /*) ;; *) out="$root/$out" ;; esac
stack="$root/infra/Pulumi.$env.yaml"
[ -f "$stack" ] || { echo "host_agent_image.sh: unknown environment $env" >&2; exit 2; }
project="$(sed -n 's/^  gcp:project: *//p' "$stack")"
region="$(sed -n 's/^  gcp:region: *//p' "$stack")"
tag="${IMAGE_TAG:-$(cd "$root" && git rev-parse --short=12 HEAD 2>/dev/null || date +%Y%m%d%H%M%S)}"
# scripts/sandbox_image.sh builds the sandbox service's image the same way (IMAGE_NAME, DOCKERFILE).
image="$region-docker.pkg.dev/$project/agent-runtime/${IMAGE_NAME:-host-agent}"

docker build --file "$root/${DOCKERFILE:-hostagent/Dockerfile}" --tag "$image:$tag" "$root"
docker push "$image:$tag"
digest="$(docker inspect --format='{{index .RepoDigests 0}}' "$image:$tag")"
case "$digest" in *@sha256:*) ;; *) echo "host_agent_image.sh: no digest for $image:$tag" >&2; exit 1 ;; esac
mkdir -p "$(dirname "$out")"
echo "$digest" > "$out"
echo "${IMAGE_NAME:-host-agent} image: $digest -> $out"
