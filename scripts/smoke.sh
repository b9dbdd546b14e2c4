#!/usr/bin/env bash
# Cloud Build's smoke step, against the deployed run function:
#   1. without credentials the platform refuses the call (401/403): the function is not public;
#   2. with the backend's identity token (X-Serverless-Authorization, so Authorization stays free
#      for the user's Firebase credential) the call reaches the code, which answers its own
#      401 JSON error because no user credential was sent: bundle imports, config and auth work;
#   3. optional, with SMOKE_USER_TOKEN (a Firebase ID token of a smoke-test user): a 2xx run.
#
#   scripts/smoke.sh [OUTPUTS_JSON]     (pulumi stack output --json; or RUN_URL and BACKEND_SA set)
# The caller needs roles/iam.serviceAccountTokenCreator on the backend service account.
set -euo pipefail
outputs="${1:-dist/stack-outputs.json}"

output() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$outputs" "$1"
}
url="${RUN_URL:-$(output runUrl)}"
backend_sa="${BACKEND_SA:-$(output backendServiceAccount)}"
endpoint="$url/api/agent/run"
body='{"prompt": "smoke test: reply with the word ok"}'

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }

call() {  # call HEADER... -> "<status>\n<body>" of a POST to the run endpoint
  curl -sS --max-time 120 -X POST "$endpoint" -H 'Content-Type: application/json' "$@" \
    --data "$body" -w '\n%{http_code}'
}

is_runtime_error() {  # stdin: a body; true if it is the runtime's own JSON error
  python3 -c 'import json, sys; b = json.load(sys.stdin); assert b["ok"] is False and b["error"]["code"]' \
    2>/dev/null
}

resp="$(call)"
status="${resp##*$'\n'}"
[ "$status" = 401 ] || [ "$status" = 403 ] || fail "no credentials: expected 401/403, got $status"
# The refusal must come from the platform (IAM), not from the code: the function is not public.
if printf '%s' "${resp%$'\n'*}" | is_runtime_error; then
  fail "no credentials: the request reached the function; it must not be publicly invocable"
fi
echo "smoke: no credentials -> $status from the platform"

token="$(gcloud auth print-identity-token --impersonate-service-account="$backend_sa" \
  --audiences="$url" --include-email)"
resp="$(call -H "X-Serverless-Authorization: Bearer $token")"
status="${resp##*$'\n'}"
answer="${resp%$'\n'*}"
[ "$status" = 401 ] || fail "backend identity without a user: expected the function's 401, got $status: $answer"
printf '%s' "$answer" | is_runtime_error \
  || fail "backend identity without a user: not the runtime's JSON error: $answer"
echo "smoke: backend identity, no user -> 401 from the function"

if [ -n "${SMOKE_USER_TOKEN:-}" ]; then
  resp="$(call -H "X-Serverless-Authorization: Bearer $token" -H "Authorization: Bearer $SMOKE_USER_TOKEN")"
  status="${resp##*$'\n'}"
  case "$status" in 2??) ;; *) fail "user run: expected 2xx, got $status: ${resp%$'\n'*}" ;; esac
  echo "smoke: user run -> $status"
fi
echo "smoke: ok ($url)"
