"""Planning with a repository (seed 004 FR-202): when the user connected GitHub, the planner sees
the repository and its AGENT.md (through the real PyGithub against the local fake GitHub API);
without a connection it plans from the prompt alone and says so."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator

import pytest

from bench.plan_model import Script, model
from devfakes.github import FakeGitHub
from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.connectors import IntegrationTokens
from shared.durable.dispatcher import RecordingDispatcher
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings

ALICE = {"Authorization": "Bearer dev:alice"}
REPO = "octo-org/hello-world"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo(REPO, files={"AGENT.md": b"Always run `make test` before opening a pull request.\n"})
        yield fake


def planning_prompt(script: Script) -> dict[str, object]:
    request = next(r for r in script.requests if "planning module" in r.system_instruction)
    return json.loads(request.turns[0].parts[0].text or "{}")  # type: ignore[no-any-return]


@pytest.mark.parametrize("connected", [True, False])
def test_the_planner_sees_the_repository_and_its_agent_md(sqlite_docstore: DocStore, github: FakeGitHub,
                                                          connected: bool) -> None:
    script = Script()
    settings = make_settings(credentials_encryption_key=base64.b64encode(os.urandom(32)).decode(),
                             github_api_base_url=github.base_url)
    rt = Runtime(settings, store=sqlite_docstore, model=model(script), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    if connected:
        rt.connectors().vault.put("alice", "github", IntegrationTokens(access_token=github.token, scopes=["repo"]))
    set_runtime(rt)
    try:
        resp = create_app().test_client().post("/api/agent/sessions", headers=ALICE, json={
            "prompt": "Fix the flaky test", "repoUrl": f"https://github.com/{REPO}"})
        assert resp.status_code == 201, resp.get_json()
    finally:
        set_runtime(None)
    context = str(planning_prompt(script)["repositoryContext"])
    if connected:
        assert f"Repository {REPO}" in context and "Always run `make test`" in context
    else:
        assert "could not be read" in context and "plan from the prompt alone" in context
