"""Entry points of the deployed bundle (functions-framework ``--target``), one per function of the
route table (``shared/routes.py``).

Every deployed function loads this whole module, so it stays small: an entry point imports the
dispatch (``shared/web.py`` ``function_entry``) on its first call, and the dispatch imports a route's handler
in ``functions/`` on that route's first request, so a function loads only what its own requests
need (``runs`` never loads the agent loop, tools, connectors or goals; ``goals`` never loads the
state store; nothing here imports a model SDK). Importing it validates the configuration
(``Settings.from_env``), so a misconfigured function (e.g. ``AUTH_MODE=local`` on Cloud Run) fails
to start instead of answering 500 to every request. It also makes every answer the framework
gives by itself (no route for the path, a method no route takes, an unexpected exception) the JSON
error envelope instead of an HTML page (``install_json_errors``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import functions_framework

from shared.config import Settings
from shared.http_errors import install_json_errors
from shared.routes import FUNCTIONS, Function, resolve

if TYPE_CHECKING:
    import flask

Settings.from_env()  # raises ConfigurationError: functions-framework exits before serving
# functions-framework points ``errorhandler`` at the app it is creating before importing this module
# (a no-op outside it); looked up now, not imported, because it is rebound for every app.
install_json_errors(functions_framework.errorhandler)


def _http_entry(name: str) -> Callable[[flask.Request], flask.Response]:
    def entry(request: flask.Request) -> flask.Response:
        from shared.web import function_entry

        return function_entry(name)(request)

    entry.__name__ = entry.__qualname__ = name
    return entry


def _event_entry(fn: Function) -> Callable[[Any], None]:
    """A CloudEvent function whatever the deployment's signature type (the decorator registers it)."""
    def entry(cloud_event: Any) -> None:
        resolve(fn.handler or f"functions.{fn.name}:{fn.name}")(cloud_event)

    entry.__name__ = entry.__qualname__ = fn.name
    return functions_framework.cloud_event(entry)


for _fn in FUNCTIONS:
    globals()[_fn.name] = _event_entry(_fn) if _fn.trigger == "pubsub" else _http_entry(_fn.name)
__all__ = [fn.name for fn in FUNCTIONS]
