"""The admin API (issue 35) through make dev's app, on SQLite and the Firestore emulator: the admin
principal reads and changes a user's trust level, mail allowlist and limits (audited), and the
changed limit applies to the user's next start; anyone else gets 403 ADMIN_ONLY."""

from __future__ import annotations

from flask.testing import FlaskClient

from shared.models.scripted import ScriptedModel, call, calls_turn
from shared.state.docstore import DocStore, Query
from tests.e2e.conftest import ALICE, BOB, Install

ADMIN = {"Authorization": "Bearer dev-admin:ops"}
BACKEND = {"Authorization": "Bearer dev:backend-svc"}


def test_the_admin_changes_a_users_trust_allowlist_and_limits(install: Install, client: FlaskClient,
                                                              docstore: DocStore) -> None:
    install(ScriptedModel([calls_turn(call("save_memory", {"text": "x"})) for _ in range(3)]),
            store_override=docstore, admin_uids=("backend-svc",))
    fresh = client.get("/api/admin/users/alice", headers=ADMIN)
    assert fresh.status_code == 200
    assert fresh.get_json() == {"ok": True, "uid": "alice", "trustLevel": "supervised",
                                "profile": {"displayName": None, "about": None, "timezone": None,
                                            "emailAllowlist": []},
                                "limits": {"activeRuns": None, "activeSessions": None, "dailyTokens": None,
                                           "dailyBudgetUsd": None, "monthlyBudgetUsd": None}}
    for headers in (ALICE, BOB):
        refused = client.patch("/api/admin/users/alice", json={"trustLevel": "autonomous"}, headers=headers)
        assert refused.status_code == 403 and refused.get_json()["error"]["code"] == "ADMIN_ONLY"
    bad = client.patch("/api/admin/users/alice", json={"trustLevel": "root"}, headers=ADMIN)
    assert bad.status_code == 400 and docstore.get("users/alice") is None  # nothing written

    changed = client.patch("/api/admin/users/alice", headers=BACKEND, json={  # a uid of ADMIN_UIDS
        "trustLevel": "delegated", "profile": {"emailAllowlist": ["bob@example.com"]}, "limits": {"activeRuns": 1}})
    assert changed.status_code == 200, changed.get_json()
    body = changed.get_json()
    assert body["trustLevel"] == "delegated" and body["profile"]["emailAllowlist"] == ["bob@example.com"]
    assert body["limits"] == {"activeRuns": 1, "activeSessions": None, "dailyTokens": None,
                              "dailyBudgetUsd": None, "monthlyBudgetUsd": None}
    again = client.patch("/api/admin/users/alice", json={"profile": {"timezone": "Europe/Paris"}}, headers=ADMIN)
    assert again.get_json()["profile"]["emailAllowlist"] == ["bob@example.com"]  # what is not given stays
    assert again.get_json()["trustLevel"] == "delegated"
    (first, second) = sorted((d.data for d in docstore.query(Query("audit", where=(("kind", "admin_change"),)))),
                             key=lambda a: a["at"])
    assert first["uid"] == "alice" and first["actor"] == "backend-svc"
    assert first["argsBefore"]["trustLevel"] == "supervised" and first["argsAfter"]["trustLevel"] == "delegated"
    assert second["actor"] == "admin.ops"

    # Alice's own limit: one active run (the deployment's is 10); bob keeps the deployment's.
    assert client.post("/api/agent/run", json={"prompt": "one"}, headers=ALICE).status_code == 200
    over = client.post("/api/agent/run", json={"prompt": "two"}, headers=ALICE)
    assert over.status_code == 429 and over.get_json()["error"]["details"]["limit"] == 1
    assert client.post("/api/agent/run", json={"prompt": "bob's"}, headers=BOB).status_code == 200
