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

Cold start (issue 33): while an instance starts and serves its first request, Python's cyclic
garbage collector runs rarely (``COLD_GC_THRESHOLD``): importing the SDKs and our modules and
completing their pydantic models allocate hundreds of thousands of long-lived objects, and the
default thresholds (700, 10, 10) traverse them over and over, ~15 % of the CPU a cold ``run``
spends (measured: 1.11 s -> 0.93 s of CPU, the same peak RSS). The interpreter's own thresholds are
back when the instance's second request starts (a streamed first answer is produced after its
entry returns, so its end is not the place).

Pydantic looks for plugins (the ``pydantic`` entry-point group) when it builds its first validator, by
reading the metadata of every installed distribution: ~4.5 ms of CPU in every cold start (issue 33),
and the bundle installs no such plugin (tests/unit/test_cold_run_modules.py checks). So the search is
off unless the deployment sets ``PYDANTIC_DISABLE_PLUGINS`` itself (e.g. to an empty value, to load a
plugin it installed).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import functions_framework

from shared.config import Settings
from shared.http_errors import install_json_errors
from shared.routes import FUNCTIONS, Function, resolve

COLD_GC_THRESHOLD = (100_000, 50, 100)
_WARM_GC_THRESHOLD = gc.get_threshold()
if _WARM_GC_THRESHOLD == COLD_GC_THRESHOLD:  # this module run again in one process (tests load it per app)
    _WARM_GC_THRESHOLD = (700, 10, 10)  # the interpreter's defaults
gc.set_threshold(*COLD_GC_THRESHOLD)  # the SDKs and most of our modules are imported by the first request

if TYPE_CHECKING:
    import flask

os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # read when the first validator is built

Settings.from_env()  # raises ConfigurationError: functions-framework exits before serving
# functions-framework points ``errorhandler`` at the app it is creating before importing this module
# (a no-op outside it); looked up now, not imported, because it is rebound for every app.
install_json_errors(functions_framework.errorhandler)
_requests = 0


def _started() -> None:
    """A request starts: from the instance's second on, the interpreter's own GC thresholds."""
    global _requests
    _requests += 1
    if _requests == 2:
        gc.set_threshold(*_WARM_GC_THRESHOLD)


def _http_entry(name: str) -> Callable[[flask.Request], flask.Response]:
    def entry(request: flask.Request) -> flask.Response:
        _started()
        from shared.web import function_entry

        return function_entry(name)(request)

    entry.__name__ = entry.__qualname__ = name
    return entry


def _event_entry(fn: Function) -> Callable[[Any], None]:
    """A CloudEvent function whatever the deployment's signature type (the decorator registers it)."""
    def entry(cloud_event: Any) -> None:
        _started()
        resolve(fn.handler or f"functions.{fn.name}:{fn.name}")(cloud_event)

    entry.__name__ = entry.__qualname__ = fn.name
    return functions_framework.cloud_event(entry)


for _fn in FUNCTIONS:
    globals()[_fn.name] = _event_entry(_fn) if _fn.trigger == "pubsub" else _http_entry(_fn.name)
__all__ = [fn.name for fn in FUNCTIONS]
