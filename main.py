"""Entry points of the deployed bundle (functions-framework ``--target``).

Every deployed function loads this whole module, so it stays small: each entry point imports its
implementation in ``functions/`` on its first call, and a function loads only what its own
requests need (``runs`` never loads the agent loop, tools, connectors or goals; ``goals`` never
loads the state store; nothing here imports a model SDK). Importing it validates the configuration
(``Settings.from_env``), so a misconfigured function (e.g. ``AUTH_MODE=local`` on Cloud Run) fails
to start instead of answering 500 to every request. It also makes every answer the framework
gives by itself (no route for the path, a method no route takes, an unexpected exception) the JSON
error envelope instead of an HTML page (``install_json_errors``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functions_framework

from shared.config import Settings
from shared.http_errors import install_json_errors

if TYPE_CHECKING:
    import flask

__all__ = ["approve", "goals", "integrations", "resume", "run", "runs", "sessions", "stream", "usage"]

Settings.from_env()  # raises ConfigurationError: functions-framework exits before serving
# functions-framework points ``errorhandler`` at the app it is creating before importing this module
# (a no-op outside it); looked up now, not imported, because it is rebound for every app.
install_json_errors(functions_framework.errorhandler)


def run(request: flask.Request) -> flask.Response:
    from functions.run import run as impl

    return impl(request)


def stream(request: flask.Request) -> flask.Response:
    from functions.stream import stream as impl

    return impl(request)


def runs(request: flask.Request) -> flask.Response:
    from functions.runs import runs as impl

    return impl(request)


def approve(request: flask.Request) -> flask.Response:
    from functions.approve import approve as impl

    return impl(request)


@functions_framework.cloud_event
def resume(cloud_event: Any) -> None:
    """A CloudEvent function whatever the deployment's signature type (the decorator registers it)."""
    from functions.resume import resume as impl

    impl(cloud_event)


def goals(request: flask.Request) -> flask.Response:
    from functions.goals import goals as impl

    return impl(request)


def integrations(request: flask.Request) -> flask.Response:
    from functions.integrations import integrations as impl

    return impl(request)


def usage(request: flask.Request) -> flask.Response:
    from functions.usage import usage as impl

    return impl(request)


def sessions(request: flask.Request) -> flask.Response:
    from functions.sessions import sessions as impl

    return impl(request)
