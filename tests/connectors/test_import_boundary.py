"""The import boundary of the connectors: only the adapter modules import a vendor SDK.

Walks every module of ``shared/`` and ``functions/`` (and ``main.py``) with ``ast`` and collects
each import of a vendor SDK: ``import x``, ``from x import y``, ``from google import auth`` and
``importlib.import_module("x")`` / ``__import__("x")`` with a literal name, at any depth (inside
functions too, since lazy imports are how the adapters keep cold starts short). Imports under
``if TYPE_CHECKING:`` never run and are not counted. Each SDK may be imported only by the modules
of its allowlist, and every allowlist entry must still be used (the list stays tight).

Whether importing the tools loads an SDK is checked in a fresh interpreter by
``test_calendar_tools.test_importing_the_tools_does_not_load_the_vendor_sdks``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("shared", "functions", "main.py")

GOOGLE_HTTP = "shared/connectors/google_http.py"  # the Google adapters' shared plumbing (service, errors)
GMAIL = "shared/connectors/gmail.py"
CALENDAR = "shared/connectors/calendar.py"
SLACK = "shared/connectors/slack.py"
GITHUB = "shared/connectors/github.py"
WEB = "shared/connectors/web.py"  # web_fetch: HTML to text
CREDENTIALS = "shared/connectors/credentials.py"  # google-auth credentials and their refresh
SANDBOX = "shared/connectors/sandbox.py"  # the sandbox service's ID token (google.oauth2.id_token)
AUTH = "shared/auth.py"  # Firebase ID-token verification (google.auth.jwt): user sign-in, not a connector

ALLOWED: dict[str, frozenset[str]] = {
    "googleapiclient": frozenset({GOOGLE_HTTP}),
    "google_auth_httplib2": frozenset({GOOGLE_HTTP}),
    "httplib2": frozenset({GOOGLE_HTTP}),
    # The adapters take a google.auth Credentials; google_http maps its RefreshError.
    "google.auth": frozenset({GOOGLE_HTTP, GMAIL, CALENDAR, CREDENTIALS, AUTH, SANDBOX}),
    "google.oauth2": frozenset({CREDENTIALS, SANDBOX}),
    "slack_sdk": frozenset({SLACK}),
    "github": frozenset({GITHUB}),  # PyGithub
    "html2text": frozenset({WEB}),
}


def _modules() -> Iterator[Path]:
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            yield path
        else:
            yield from sorted(path.rglob("*.py"))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Imports(ast.NodeVisitor):
    """Absolute module names a module imports at run time."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:  # only the else branch runs
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.names.update(alias.name for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.names.add(node.module)
            # ``from google import auth`` imports the google.auth package.
            self.names.update(f"{node.module}.{alias.name}" for alias in node.names)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            self.names.add(node.args[0].value)
        self.generic_visit(node)


def _sdk_of(module: str) -> str | None:
    for sdk in ALLOWED:
        if module == sdk or module.startswith(sdk + "."):
            return sdk
    return None


def _sdk_imports() -> dict[str, set[str]]:
    """SDK -> the scanned modules (paths relative to the repo) that import it."""
    found: dict[str, set[str]] = {sdk: set() for sdk in ALLOWED}
    for path in _modules():
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        for name in visitor.names:
            sdk = _sdk_of(name)
            if sdk is not None:
                found[sdk].add(path.relative_to(ROOT).as_posix())
    return found


def test_only_the_adapters_import_their_sdks() -> None:
    found = _sdk_imports()
    outside = {sdk: sorted(modules - ALLOWED[sdk]) for sdk, modules in found.items() if modules - ALLOWED[sdk]}
    assert outside == {}, f"vendor SDKs imported outside their adapter modules: {outside}"


def test_the_allowlist_has_no_stale_entries() -> None:
    found = _sdk_imports()
    stale = {sdk: sorted(ALLOWED[sdk] - modules) for sdk, modules in found.items() if ALLOWED[sdk] - modules}
    assert stale == {}, f"allowlisted modules that no longer import the SDK (drop them): {stale}"


@pytest.mark.parametrize(("source", "expected"), [
    ("import slack_sdk", {"slack_sdk"}),
    ("from github import Auth, Github", {"github"}),
    ("def f():\n    import html2text", {"html2text"}),
    ("from googleapiclient.discovery import build", {"googleapiclient"}),
    ("from google import auth", {"google.auth"}),
    ("def f():\n    import httplib2", {"httplib2"}),
    ("import importlib\nimportlib.import_module('google.oauth2.credentials')", {"google.oauth2"}),
    ("__import__('google_auth_httplib2')", {"google_auth_httplib2"}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import slack_sdk\nelse:\n    import httplib2",
     {"httplib2"}),
    ("import google.cloud.firestore\nfrom google.genai import types\nfrom . import slack", set()),
])
def test_the_scanner_sees_every_kind_of_import(source: str, expected: set[str]) -> None:
    visitor = _Imports()
    visitor.visit(ast.parse(source))
    assert {sdk for name in visitor.names if (sdk := _sdk_of(name))} == expected
