"""``make dev`` without a Gemini key: the labelled offline model plans, refines and executes a
session end to end (the real loop, store and inline dispatcher)."""

from __future__ import annotations

import time

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.models.offline import LABEL, OfflineModel
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings

ALICE = {"Authorization": "Bearer dev:alice"}


def test_an_offline_session_runs_to_completion_with_the_inline_dispatcher(sqlite_docstore: DocStore) -> None:
    rt = Runtime(make_settings(dispatcher="inline"), store=sqlite_docstore, model=OfflineModel(),
                 authenticator=LocalAuthenticator())
    set_runtime(rt)
    try:
        client = create_app().test_client()
        body = client.post("/api/agent/sessions", json={"prompt": "tidy my notes"}, headers=ALICE).get_json()
        assert body["ok"] and [t["title"] for t in body["plan"]["tasks"]] == ["Tidy my notes"]
        sid = body["sessionId"]
        refined = client.post(f"/api/agent/sessions/{sid}/refine", json={"message": "also look up my notes on trains"},
                              headers=ALICE).get_json()
        assert [t["title"] for t in refined["plan"]["tasks"]] == ["Tidy my notes", "Look up my notes on trains"]
        assert refined["plan"]["version"] == 2
        assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 2},
                           headers=ALICE).status_code == 202
        deadline = time.monotonic() + 30
        view = {}
        while time.monotonic() < deadline:  # the inline dispatcher works on its own threads
            view = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
            if view["status"] not in ("executing",):
                break
            time.sleep(0.05)
        assert view["status"] == "completed", view
        assert [t["status"] for t in view["plan"]["tasks"]] == ["completed"] * 2
        events = client.get(f"/api/agent/sessions/{sid}/events", headers=ALICE).get_data(as_text=True)
        assert events.count(LABEL) == 1  # said once per run, not on every act
    finally:
        set_runtime(None)
