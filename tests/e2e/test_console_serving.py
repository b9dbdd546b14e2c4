"""How ``make dev`` serves the dev console: ``/`` and ``/console/...`` with local auth only, every
module the page imports resolvable, nothing outside ``console/`` reachable."""

from __future__ import annotations

import re

import pytest
from flask.testing import FlaskClient

from devserver import CONSOLE_DIR
from shared.models.scripted import ScriptedModel
from tests.e2e.conftest import Install

IMPORT = re.compile(r"""^import\s[^;]*?from\s+'(?P<path>\.{1,2}/[^']+)';""", re.MULTILINE)


def test_the_console_page_and_every_module_it_imports_are_served(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([]))
    page = client.get("/")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert '<script type="module" src="/console/js/app.js"></script>' in html
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert client.get("/console/console.css").mimetype == "text/css"

    todo, seen = ["js/app.js"], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        resp = client.get(f"/console/{path}")
        assert resp.status_code == 200 and resp.mimetype == "text/javascript", path
        base = path.rsplit("/", 1)[0]
        for m in IMPORT.finditer(resp.get_data(as_text=True)):
            parts = [*base.split("/"), *m.group("path").split("/")]
            resolved: list[str] = []
            for part in parts:
                if part == "..":
                    resolved.pop()
                elif part != ".":
                    resolved.append(part)
            todo.append("/".join(resolved))
    on_disk = {str(p.relative_to(CONSOLE_DIR)) for p in CONSOLE_DIR.rglob("*.js")}
    assert seen == on_disk  # every module is reached from app.js, and every import exists


@pytest.mark.parametrize("path", ["/console/../devserver.py", "/console/%2e%2e/main.py", "/console/js/",
                                  "/console/js/../../README.md", "/console/nope.js", "/console/index"])
def test_nothing_but_console_files_is_served(install: Install, client: FlaskClient, path: str) -> None:
    install(ScriptedModel([]))
    resp = client.get(path)
    assert resp.status_code == 404 and resp.get_json()["error"]["code"] == "ROUTE_NOT_FOUND", path


def test_only_get_serves_the_console(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([]))
    assert client.post("/", json={}).get_json()["error"]["code"] == "ROUTE_NOT_FOUND"


def test_the_console_needs_local_auth(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([]), auth_mode="firebase")
    for path in ("/", "/console/js/app.js"):
        resp = client.get(path)
        assert resp.status_code == 404, path
        assert resp.get_json()["error"] == {"code": "CONSOLE_DISABLED",
                                            "message": "the dev console needs AUTH_MODE=local (it signs in as "
                                                       "Bearer dev:<uid>)"}


def test_the_console_is_never_served_on_cloud_run(install: Install, client: FlaskClient,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    install(ScriptedModel([]))
    monkeypatch.setenv("K_SERVICE", "agent-run")  # the dev server refuses to start there; the route refuses too
    resp = client.get("/")
    assert resp.status_code == 404 and resp.get_json()["error"]["code"] == "CONSOLE_DISABLED"
