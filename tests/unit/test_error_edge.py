"""Domain errors are domain types; the edge maps them to HTTP (issue 22).

``shared/errors.py`` says what went wrong (a kind, a code, a message, details); ``shared/web.py``
(``HTTP_STATUS``, ``http_status``) is the one place that turns a kind into a status and headers.
No other module under ``shared/`` or ``functions/`` gives an error a status or headers, or reads
the mapping.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from shared import errors
from shared.auth import _CertsUnavailable
from shared.errors import (
    Conflict,
    DomainError,
    Forbidden,
    Gone,
    Internal,
    InvalidInput,
    LimitExceeded,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    Unauthenticated,
    Unavailable,
    Unprocessable,
    UnsupportedMediaType,
    UpstreamFailed,
)
from shared.state.records import SchemaVersionError
from shared.web import HTTP_STATUS, http_status

ROOT = Path(__file__).resolve().parents[2]
EDGE = {"shared/web.py"}
"""The modules allowed to map domain errors to HTTP."""


@pytest.mark.parametrize(("err", "status", "headers"), [
    (InvalidInput("bad", code="INVALID_QUERY"), 400, {}),
    (Unauthenticated("who?"), 401, {}),
    (NotFound("no run"), 404, {}),
    (MethodNotAllowed("PUT", ("GET", "POST", "DELETE")), 405, {"Allow": "GET, POST, DELETE"}),
    (Conflict("decided"), 409, {}),
    (Gone("expired"), 410, {}),
    (Forbidden("admins only"), 403, {}),
    (Unprocessable("reused"), 422, {}),
    (PayloadTooLarge("big"), 413, {}),
    (UnsupportedMediaType("xml"), 415, {}),
    (LimitExceeded("slow down", code="RATE_LIMITED", retry_after_s=2.1), 429, {"Retry-After": "3"}),
    (SchemaVersionError("newer record"), 500, {}),
    (UpstreamFailed("model refused", code="MODEL_ERROR"), 502, {}),
    (Unavailable("contention", code="CONTENTION"), 503, {"Retry-After": "1"}),
    (_CertsUnavailable("certificates unreachable"), 503, {"Retry-After": "1"}),
])
def test_each_kind_of_domain_error_has_one_status(err: DomainError, status: int, headers: dict[str, str]) -> None:
    assert http_status(err) == (status, headers)
    assert not hasattr(err, "status") and not hasattr(err, "headers")


def test_a_limit_tells_its_delay_in_the_body_too() -> None:
    err = LimitExceeded("slow down", code="DAILY_TOKEN_LIMIT", retry_after_s=0.2, details={"limit": 5})
    assert err.to_json() == {"ok": False, "error": {"code": "DAILY_TOKEN_LIMIT", "message": "slow down",
                                                    "details": {"limit": 5, "retryAfterS": 1}}}


def test_every_domain_error_kind_is_mapped() -> None:
    kinds = {c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, DomainError)}
    assert kinds == set(HTTP_STATUS) | {DomainError}
    assert {Internal, Unavailable} <= kinds


def _error_names() -> set[str]:
    return {name for name, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, DomainError)}


def http_leaks(name: str, source: str, error_names: set[str]) -> list[str]:
    """Where ``source`` gives a domain error an HTTP status or headers, or reads the edge's mapping."""
    found: list[str] = []
    names = set(error_names)
    tree = ast.parse(source)
    for node in ast.walk(tree):  # subclasses defined here are domain errors too
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in names for b in node.bases):
            names.add(node.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in names:
            for stmt in node.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else (
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
                for attr in (t.id for t in targets if isinstance(t, ast.Name) and t.id in ("status", "headers")):
                    found.append(f"{name}:{stmt.lineno} gives {node.name} an HTTP {attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            for kw in node.keywords:
                if kw.arg in ("status", "headers"):
                    found.append(f"{name}:{node.lineno} raises {node.func.id} with {kw.arg}=")
        if isinstance(node, ast.Name) and node.id in ("HTTP_STATUS", "http_status"):
            found.append(f"{name}:{node.lineno} reads the HTTP mapping")
        if isinstance(node, ast.alias) and node.name in ("HTTP_STATUS", "http_status"):
            found.append(f"{name}:{node.lineno} imports the HTTP mapping")
    return sorted(set(found))


def test_no_module_below_the_edge_speaks_http_for_an_error() -> None:
    names = _error_names()
    found: list[str] = []
    for path in sorted([*(ROOT / "shared").rglob("*.py"), *(ROOT / "functions").glob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in EDGE:
            found += http_leaks(rel, path.read_text(), names)
    assert found == []


def test_the_leak_check_can_fail() -> None:
    source = ("from shared.web import http_status\n"
              "class Teapot(Conflict):\n    status = 418\n"
              "raise NotFound('x', status=410)\n"
              "raise Teapot('y', headers={'Allow': 'GET'})\n")
    assert http_leaks("m.py", source, _error_names()) == [
        "m.py:1 imports the HTTP mapping", "m.py:3 gives Teapot an HTTP status",
        "m.py:4 raises NotFound with status=", "m.py:5 raises Teapot with headers="]
