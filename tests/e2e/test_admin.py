"""The admin API (issue 35) through make dev's app, on SQLite and the Firestore emulator: the admin
principal reads and changes a user's trust level, mail allowlist and limits (audited), and the
changed limit applies to the user's next start; anyone else gets 403 ADMIN_ONLY."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from shared.auth import create_authenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import ConfigurationError
from shared.models.scripted import ScriptedModel, call, calls_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore, Query
from tests.agent.conftest import make_settings
from tests.e2e.conftest import ALICE, BOB, Install
from tests.fakes.firebase_keys import FirebaseKeys

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
        "trustLevel": "delegated", "profile": {"emailAllowlist": ["bob@example.com"]},
        "limits": {"activeRuns": 1.0}})  # JSON Schema's integer: 1.0 is one (schemathesis sends such)
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


SA = "admin-backend@demo-agent-runtime.iam.gserviceaccount.com"
AUDIENCE = "https://api.example.com"


def test_the_admin_is_a_service_account_of_the_stack_config(docstore: DocStore, client: FlaskClient) -> None:
    """Production's admin: a service account named in ADMIN_SERVICE_ACCOUNTS (the infra program sets
    it from the stack config) calling with its Google-signed ID token for ADMIN_AUDIENCE; Firebase
    users, other service accounts and tokens for another audience are not admins."""
    with FirebaseKeys() as keys:
        settings = make_settings(**keys.settings_overrides(), admin_service_accounts=(SA,), admin_audience=AUDIENCE)
        set_runtime(Runtime(settings, store=docstore, model=ScriptedModel([]), dispatcher=RecordingDispatcher()))
        try:
            def as_(token: str) -> dict[str, str]:
                return {"Authorization": f"Bearer {token}"}

            admin = as_(keys.service_account_token(SA, AUDIENCE))
            changed = client.patch("/api/admin/users/alice", json={"trustLevel": "delegated"}, headers=admin)
            assert changed.status_code == 200, changed.get_json()
            (entry,) = [d.data for d in docstore.query(Query("audit", where=(("kind", "admin_change"),)))]
            assert entry["actor"] == f"sa.{SA}"
            assert client.get("/api/admin/users/alice", headers=admin).get_json()["trustLevel"] == "delegated"

            refused = {
                "another audience": as_(keys.service_account_token(SA, "https://elsewhere.example.com")),
                "another account": as_(keys.service_account_token("other@demo.iam.gserviceaccount.com", AUDIENCE)),
                "an unverified email": as_(keys.service_account_token(SA, AUDIENCE, email_verified=False)),
                "an unpublished key": as_(keys.service_account_token(SA, AUDIENCE, key=keys.new_key(publish=False))),
            }
            for what, headers in refused.items():
                got = client.get("/api/admin/users/alice", headers=headers)
                assert got.status_code == 401, (what, got.get_json())
            # A Firebase user whose email is the service account's is a user, not the admin.
            user = as_(keys.id_token("mallory", email=SA, email_verified=True))
            got = client.get("/api/admin/users/alice", headers=user)
            assert got.status_code == 403 and got.get_json()["error"]["code"] == "ADMIN_ONLY"
            assert client.get("/api/agent/runs", headers=user).status_code == 200
        finally:
            set_runtime(None)

    # Without ADMIN_SERVICE_ACCOUNTS a Google-issued token is no credential at all.
    with FirebaseKeys() as keys:
        set_runtime(Runtime(make_settings(**keys.settings_overrides()), store=docstore, model=ScriptedModel([]),
                            dispatcher=RecordingDispatcher()))
        try:
            got = client.get("/api/admin/users/alice",
                             headers={"Authorization": f"Bearer {keys.service_account_token(SA, AUDIENCE)}"})
            assert got.status_code == 401, got.get_json()
            assert got.get_json()["error"]["message"].startswith("Invalid Firebase ID token"), got.get_json()
        finally:
            set_runtime(None)


def test_admin_service_accounts_need_an_audience() -> None:
    with pytest.raises(ConfigurationError, match="ADMIN_AUDIENCE"):
        create_authenticator(make_settings(auth_mode="firebase", firebase_project_id="p",
                                           admin_service_accounts=(SA,)))
