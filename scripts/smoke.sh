#!/usr/bin/env bash
# Cloud Build's smoke step, through the one endpoint (the load balancer with Identity-Aware Proxy,
# docs/deploying.md "One endpoint"), the way the backend calls the API:
#   1. without credentials the platform refuses the call (401/403, or IAP's 302 to Google sign-in),
#      on the endpoint and on the run function's own URL: neither is public;
#   2. with the backend's identity and no user, IAP lets the call through and the runtime answers its
#      own 401 JSON error (no user credential was sent): routing, bundle imports, config and auth
#      work. The identity is a JWT signed by the backend's service account (aud "<endpoint>/*"),
#      in Proxy-Authorization, so Authorization stays free for the user's Firebase credential;
#   3. optional, with SMOKE_USER_TOKEN (a Firebase ID token of a smoke-test user): a 2xx run.
# SMOKE_VIA=endpoint|function chooses where 2 and 3 go; by default the endpoint when the stack
# serves it over HTTPS (endpointUrl https://..., i.e. agent-runtime:endpointDomain is set: IAP needs
# HTTPS), else the run function's URL with an identity token in X-Serverless-Authorization (said so).
# Right after a first deploy the endpoint's Google-managed certificate may still be provisioning:
# the endpoint is waited for up to SMOKE_ENDPOINT_WAIT_S seconds (600) before step 1 fails.
#
#   scripts/smoke.sh [OUTPUTS_JSON]   (pulumi stack output --json; or RUN_URL, ENDPOINT_URL, BACKEND_SA set)
# The caller needs roles/iam.serviceAccountTokenCreator on the backend service account.
set -euo pipefail
outputs="${1:-dist/stack-outputs.json}"

output() {  # a stack output, or "" when the stack has none of that name
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$outputs" "$1"
}
url="${RUN_URL:-$(output runUrl)}"
endpoint_url="${ENDPOINT_URL:-$(output endpointUrl)}"
endpoint_url="${endpoint_url%/}"
backend_sa="${BACKEND_SA:-$(output backendServiceAccount)}"
body='{"prompt": "smoke test: reply with the word ok"}'
via="${SMOKE_VIA:-}"
if [ -z "$via" ]; then
  case "$endpoint_url" in https://*) via=endpoint ;; *) via=function ;; esac
fi

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }

call() {  # call BASE_URL HEADER... -> "<body>\n<status>" of a POST to BASE_URL's run route
  local base="$1"
  shift
  curl -sS --max-time 120 -X POST "$base/api/agent/run" -H 'Content-Type: application/json' "$@" \
    --data "$body" -w '\n%{http_code}' || printf '\n000'
}

is_runtime_error() {  # stdin: a body; true if it is the runtime's own JSON error
  python3 -c 'import json, sys; b = json.load(sys.stdin); assert b["ok"] is False and b["error"]["code"]' \
    2>/dev/null
}

refused_by_platform() {  # refused_by_platform NAME BASE_URL: no credentials -> refused before the code
  local resp status
  resp="$(call "$2")"
  status="${resp##*$'\n'}"
  case "$status" in 401|403|302) ;; *) fail "$1, no credentials: expected 401/403 (or 302), got $status" ;; esac
  if printf '%s' "${resp%$'\n'*}" | is_runtime_error; then
    fail "$1, no credentials: the request reached the function; it must not be publicly invocable"
  fi
  echo "smoke: $1, no credentials -> $status from the platform"
}

refused_by_platform "run function" "$url"

if [ "$via" = endpoint ]; then
  [ -n "$endpoint_url" ] || fail "SMOKE_VIA=endpoint but the stack exports no endpointUrl"
  wait_s="${SMOKE_ENDPOINT_WAIT_S:-600}"
  deadline=$((SECONDS + wait_s))
  # 000: no answer yet (the address or its certificate is still being set up after a first deploy).
  until status="$(call "$endpoint_url")" && status="${status##*$'\n'}" && [ "$status" != 000 ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "endpoint $endpoint_url: no answer within ${wait_s}s (certificate still provisioning? DNS?)"
    echo "smoke: endpoint $endpoint_url not answering yet; waiting"
    sleep 15
  done
  refused_by_platform "endpoint" "$endpoint_url"
  claims="$(mktemp)"
  signed="$(mktemp)"
  trap 'rm -f "$claims" "$signed"' EXIT
  now="$(date +%s)"
  printf '{"iss": "%s", "sub": "%s", "aud": "%s/*", "iat": %s, "exp": %s}\n' \
    "$backend_sa" "$backend_sa" "$endpoint_url" "$now" "$((now + 3600))" > "$claims"
  gcloud iam service-accounts sign-jwt --iam-account="$backend_sa" "$claims" "$signed" >/dev/null
  base="$endpoint_url"
  identity=(-H "Proxy-Authorization: Bearer $(cat "$signed")")
  where="endpoint, backend identity through IAP"
else
  echo "smoke: endpoint not checked (SMOKE_VIA=function, or no HTTPS endpoint: '${endpoint_url:-none}'); the run function's URL instead"
  token="$(gcloud auth print-identity-token --impersonate-service-account="$backend_sa" \
    --audiences="$url" --include-email)"
  base="$url"
  identity=(-H "X-Serverless-Authorization: Bearer $token")
  where="run function, backend identity"
fi

resp="$(call "$base" "${identity[@]}")"
status="${resp##*$'\n'}"
answer="${resp%$'\n'*}"
[ "$status" = 401 ] || fail "$where, no user: expected the function's 401, got $status: $answer"
printf '%s' "$answer" | is_runtime_error || fail "$where, no user: not the runtime's JSON error: $answer"
echo "smoke: $where, no user -> 401 from the function"

if [ -n "${SMOKE_USER_TOKEN:-}" ]; then
  resp="$(call "$base" "${identity[@]}" -H "Authorization: Bearer $SMOKE_USER_TOKEN")"
  status="${resp##*$'\n'}"
  case "$status" in 2??) ;; *) fail "user run: expected 2xx, got $status: ${resp%$'\n'*}" ;; esac
  echo "smoke: user run -> $status"
fi
echo "smoke: ok ($base)"
