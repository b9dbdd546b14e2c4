"""cloudbuild.yaml runs test -> bundle -> deploy -> smoke with commands that exist in this repo,
and the smoke script tells a protected, working deployment from a broken or public one, through the
one endpoint (IAP in front of the functions) as the backend calls it, and on the run function's URL."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
STACKS = ("dev", "staging", "prod")


def _build() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((REPO / "cloudbuild.yaml").read_text())
    return data


def test_steps_run_in_pipeline_order() -> None:
    assert [s["id"] for s in _build()["steps"]] == ["test", "bundle", "host-agent-image", "sandbox-image", "deploy",
                                                       "smoke"]


def test_every_step_runs_a_script_of_this_repo() -> None:
    for step in _build()["steps"]:
        assert step["entrypoint"] == "bash", step["id"]
        script = REPO / step["args"][0]
        assert script.is_file(), f"{step['id']}: {script} is missing"
        check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        # Paths a script names inside the repo must exist too (e.g. infra/ensure_venv.sh).
        for ref in re.findall(r"(?:scripts|infra)/[\w./-]+\.(?:sh|py|yaml)", script.read_text()):
            assert (REPO / ref).exists() or (REPO / "infra" / ref).exists(), f"{script.name} names {ref}"
        if "ensure_venv.sh" in script.read_text():
            assert (REPO / "infra" / "ensure_venv.sh").is_file()


def test_images_are_pinned() -> None:
    for step in _build()["steps"]:
        image = step["name"]
        assert ":" in image and not image.endswith(":latest"), image


def test_substitutions_are_declared_and_select_a_stack() -> None:
    build = _build()
    declared = set(build["substitutions"])
    used = set(re.findall(r"\$\{?(_[A-Z0-9_]+)", yaml.safe_dump(build["steps"])))
    assert used <= declared, used - declared
    assert build["substitutions"]["_ENV"] in STACKS
    deploy = next(s for s in build["steps"] if s["id"] == "deploy")
    assert deploy["args"][0] == "scripts/deploy.sh" and deploy["args"][1] == "${_ENV}"
    for stack in STACKS:
        assert (REPO / "infra" / f"Pulumi.{stack}.yaml").is_file()


def test_steps_hand_over_the_bundle_and_the_outputs() -> None:
    steps = {s["id"]: s for s in _build()["steps"]}
    bundle_dir = steps["bundle"]["args"][1]
    image_file = steps["host-agent-image"]["args"][2]
    assert steps["host-agent-image"]["args"][:2] == ["scripts/host_agent_image.sh", "${_ENV}"]
    for stack in STACKS:
        cfg = yaml.safe_load((REPO / "infra" / f"Pulumi.{stack}.yaml").read_text())["config"]
        assert (REPO / "infra" / cfg["agent-runtime:bundleDir"]).resolve() == (REPO / bundle_dir).resolve()
        image_ref = cfg["agent-runtime:hostAgent"]["imageFile"]
        assert (REPO / "infra" / image_ref).resolve() == (REPO / image_file).resolve()
    assert steps["deploy"]["args"][2] == steps["smoke"]["args"][1]


# --- smoke.sh against a local stand-in for the deployed function -------------------------------

class _FakeRunFunction(BaseHTTPRequestHandler):
    """Cloud Run IAM in front of the runtime: 403 without an identity token, else the app's answer."""

    public = False
    header, credential, refusal = "X-Serverless-Authorization", "Bearer fake-id-token", 403
    seen: list[dict[str, str]]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.seen.append(dict(self.headers))
        ident = self.headers.get(self.header, "")
        if not self.public and ident != self.credential:
            self._send(self.refusal, b"Forbidden")
        elif self.headers.get("Authorization") == "Bearer user-token":
            self._send(200, json.dumps({"ok": True, "runId": "r1"}).encode())
        else:
            self._send(401, json.dumps({"ok": False, "error": {"code": "UNAUTHENTICATED", "message": "x"}}).encode())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class _FakeEndpoint(_FakeRunFunction):
    """The load balancer with IAP in front of the functions: 401 without the backend's signed JWT in
    Proxy-Authorization, else the app's answer."""

    header, credential, refusal = "Proxy-Authorization", "Bearer fake-signed-jwt", 401


def _serve(kind: type[_FakeRunFunction]) -> Iterator[tuple[str, type[_FakeRunFunction]]]:
    handler = type("Handler", (kind,), {"public": False, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


@pytest.fixture
def fake_function() -> Iterator[tuple[str, type[_FakeRunFunction]]]:
    yield from _serve(_FakeRunFunction)


@pytest.fixture
def fake_endpoint() -> Iterator[tuple[str, type[_FakeRunFunction]]]:
    yield from _serve(_FakeEndpoint)


GCLOUD = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls"
if [ "$1 $2 $3" = "iam service-accounts sign-jwt" ]; then  # ... --iam-account=SA CLAIMS OUT
  cp "$5" "$(dirname "$0")/claims" && echo fake-signed-jwt > "$6"
else
  echo fake-id-token
fi
"""


def _smoke(tmp_path: Path, url: str, endpoint: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    gcloud = bin_dir / "gcloud"  # stands in for `gcloud auth print-identity-token` and `... sign-jwt`
    gcloud.write_text(GCLOUD)
    gcloud.chmod(gcloud.stat().st_mode | stat.S_IEXEC)
    outputs = tmp_path / "outputs.json"
    stack = {"runUrl": url, "backendServiceAccount": "backend@p.iam.gserviceaccount.com"}
    outputs.write_text(json.dumps({**stack, "endpointUrl": endpoint} if endpoint else stack))
    return subprocess.run(["bash", str(REPO / "scripts" / "smoke.sh"), str(outputs)], capture_output=True,
                          text=True, env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env})


def test_smoke_passes_for_a_protected_working_function(
        tmp_path: Path, fake_function: tuple[str, type[_FakeRunFunction]]) -> None:
    url, _ = fake_function
    proc = _smoke(tmp_path, url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = (tmp_path / "bin" / "calls").read_text()
    assert "--impersonate-service-account=backend@p.iam.gserviceaccount.com" in calls
    assert f"--audiences={url}" in calls
    proc = _smoke(tmp_path, url, SMOKE_USER_TOKEN="user-token")
    assert proc.returncode == 0 and "user run -> 200" in proc.stdout, proc.stdout + proc.stderr


def test_smoke_fails_for_a_public_function(tmp_path: Path, fake_function: tuple[str, type[_FakeRunFunction]]) -> None:
    url, handler = fake_function
    handler.public = True
    proc = _smoke(tmp_path, url)
    assert proc.returncode != 0 and "no credentials" in proc.stderr


def test_smoke_fails_when_the_user_run_fails(tmp_path: Path, fake_function: tuple[str, type[_FakeRunFunction]]) -> None:
    url, _ = fake_function
    proc = _smoke(tmp_path, url, SMOKE_USER_TOKEN="wrong-token")
    assert proc.returncode != 0 and "user run" in proc.stderr


# --- through the one endpoint --------------------------------------------------------------------------

def test_smoke_goes_through_the_endpoint_with_the_backends_signed_jwt(
        tmp_path: Path, fake_function: tuple[str, type[_FakeRunFunction]],
        fake_endpoint: tuple[str, type[_FakeRunFunction]]) -> None:
    url, function = fake_function
    endpoint, lb = fake_endpoint
    proc = _smoke(tmp_path, url, endpoint, SMOKE_VIA="endpoint", SMOKE_USER_TOKEN="user-token")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "endpoint, no credentials -> 401 from the platform" in proc.stdout
    assert "endpoint, backend identity through IAP, no user -> 401 from the function" in proc.stdout
    assert "user run -> 200" in proc.stdout and f"smoke: ok ({endpoint})" in proc.stdout
    calls = (tmp_path / "bin" / "calls").read_text()
    assert "iam service-accounts sign-jwt --iam-account=backend@p.iam.gserviceaccount.com" in calls
    claims = json.loads((tmp_path / "bin" / "claims").read_text())
    assert claims["iss"] == claims["sub"] == "backend@p.iam.gserviceaccount.com"
    assert claims["aud"] == f"{endpoint}/*" and 0 < claims["exp"] - claims["iat"] <= 3600
    # the backend identity and the user's credential went to the endpoint; the function URL was only
    # checked to refuse a call without credentials
    assert [h.get("Proxy-Authorization") for h in lb.seen] == [None, None, "Bearer fake-signed-jwt",
                                                                "Bearer fake-signed-jwt"]
    assert lb.seen[-1]["Authorization"] == "Bearer user-token"
    assert [h.get("X-Serverless-Authorization") for h in function.seen] == [None]


def test_smoke_fails_for_a_public_endpoint(tmp_path: Path, fake_function: tuple[str, type[_FakeRunFunction]],
                                          fake_endpoint: tuple[str, type[_FakeRunFunction]]) -> None:
    url, _ = fake_function
    endpoint, lb = fake_endpoint
    lb.public = True
    proc = _smoke(tmp_path, url, endpoint, SMOKE_VIA="endpoint")
    assert proc.returncode != 0 and "endpoint, no credentials" in proc.stderr, proc.stdout + proc.stderr


def test_smoke_fails_when_iap_refuses_the_backend(tmp_path: Path, fake_function: tuple[str, type[_FakeRunFunction]],
                                                 fake_endpoint: tuple[str, type[_FakeRunFunction]]) -> None:
    url, _ = fake_function
    endpoint, lb = fake_endpoint
    lb.credential = "Bearer another-jwt"
    proc = _smoke(tmp_path, url, endpoint, SMOKE_VIA="endpoint")
    assert proc.returncode != 0 and "no user: not the runtime's JSON error: Forbidden" in proc.stderr, \
        proc.stdout + proc.stderr


def test_an_https_endpoint_is_the_default_and_an_unanswering_one_fails(
        tmp_path: Path, fake_function: tuple[str, type[_FakeRunFunction]]) -> None:
    """The stack's endpoint over HTTPS (a domain) is where the smoke goes by default; one that never
    answers (its certificate still provisioning) fails once SMOKE_ENDPOINT_WAIT_S is spent."""
    url, _ = fake_function
    proc = _smoke(tmp_path, url, "https://127.0.0.1:9", SMOKE_ENDPOINT_WAIT_S="0")
    assert proc.returncode != 0 and "endpoint https://127.0.0.1:9: no answer within 0s" in proc.stderr, \
        proc.stdout + proc.stderr


def test_without_an_https_endpoint_the_function_url_is_used_and_said(
        tmp_path: Path, fake_function: tuple[str, type[_FakeRunFunction]]) -> None:
    url, _ = fake_function
    proc = _smoke(tmp_path, url, "http://203.0.113.7")  # no domain: HTTP only, which IAP does not serve
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "endpoint not checked (SMOKE_VIA=function, or no HTTPS endpoint: 'http://203.0.113.7')" in proc.stdout
