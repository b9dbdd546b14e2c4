#!/usr/bin/env bash
# Cloud Build's sandbox image step: sandbox/Dockerfile built, pushed and pinned like the host
# agent's image (same registry, same digest file format); its reference is read by the Pulumi
# program from agent-runtime:sandbox.imageFile.
#   scripts/sandbox_image.sh dev|staging|prod [OUT_FILE]     (default OUT_FILE: dist/sandbox-image.txt)
set -euo pipefail
IMAGE_NAME=sandbox DOCKERFILE=sandbox/Dockerfile exec "$(dirname "$0")/host_agent_image.sh" "${1:?usage: sandbox_image.sh dev|staging|prod [OUT_FILE]}" "${2:-dist/sandbox-image.txt}"
