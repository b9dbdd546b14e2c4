"""The limits are configured by LIMIT_* variables and documented in the OpenAPI document."""

from __future__ import annotations

import pytest

from shared.config import Settings
from shared.errors import ConfigurationError
from shared.openapi import build_openapi

VARIABLES = {"LIMIT_REQUESTS_PER_MINUTE": "limit_requests_per_minute", "LIMIT_ACTIVE_RUNS": "limit_active_runs",
             "LIMIT_ACTIVE_SESSIONS": "limit_active_sessions", "LIMIT_DAILY_TOKENS": "limit_daily_tokens"}


def test_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    defaults = Settings.from_env()
    assert [getattr(defaults, f) for f in VARIABLES.values()] == [600, 10, 5, 2_000_000]
    assert [getattr(Settings(), f) for f in VARIABLES.values()] == [600, 10, 5, 2_000_000]  # one truth
    for i, name in enumerate(VARIABLES):
        monkeypatch.setenv(name, str(i))
    assert [getattr(Settings.from_env(), f) for f in VARIABLES.values()] == [0, 1, 2, 3]


@pytest.mark.parametrize("name", list(VARIABLES))
@pytest.mark.parametrize("raw", ["-1", "many"])
def test_a_bad_limit_refuses_to_start(monkeypatch: pytest.MonkeyPatch, name: str, raw: str) -> None:
    monkeypatch.setenv(name, raw)
    with pytest.raises(ConfigurationError, match=name):
        Settings.from_env()


def test_every_authenticated_route_documents_its_429() -> None:
    doc = build_openapi()
    seen = 0
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if op.get("security") == []:  # public: no user to limit (the agent card, ...)
                if (method, path) != ("post", "/agent/run"):
                    assert "429" not in op["responses"], (method, path)
                    continue
                # the goals agent: IAM-protected, no request limit, but its user's money caps
                description = op["responses"]["429"]["description"]
                assert "BUDGET_EXCEEDED" in description and "RATE_LIMITED" not in description
                continue
            seen += 1
            answer = op["responses"]["429"]
            assert answer["headers"]["Retry-After"]["required"] is True, (method, path)
            assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorResponse"}
            assert "RATE_LIMITED" in answer["description"]
    assert seen >= 15
    creating = {("/api/agent/run", "post"): "TOO_MANY_ACTIVE_RUNS", ("/api/agent/run/stream", "post"):
                "TOO_MANY_ACTIVE_RUNS", ("/api/agent/sessions", "post"): "TOO_MANY_ACTIVE_SESSIONS"}
    for (path, method), code in creating.items():
        description = doc["paths"][path][method]["responses"]["429"]["description"]
        assert code in description and "DAILY_TOKEN_LIMIT" in description
