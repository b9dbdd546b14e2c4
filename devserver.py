"""``make dev``: every function on one local port, with the SQLite store and local auth.

Not part of the deployed bundle. Refuses to run on Cloud Run (``K_SERVICE`` set).
``/`` is the dev console (``console/``: static ES modules over the public API, served only with
``AUTH_MODE=local``, see docs/console.md).
Routes: POST /api/agent/run, POST /api/agent/run/stream, GET /api/agent/runs, GET /api/agent/runs/{runId}[/events],
POST /api/agent/approve, GET /api/agent/usage, /api/agent/sessions[/{id}[/refine|confirm|cancel|events]],
POST /agent/run (goals), GET|POST|DELETE /api/integrations[/{provider}],
GET /openapi.json, GET /healthz.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import flask
from werkzeug.security import safe_join

from shared.errors import NotFound
from shared.web import error_response, json_response

if TYPE_CHECKING:
    from shared.runtime import Runtime

Handler = Callable[[flask.Request], flask.Response]
SWEEP_INTERVAL_S = 60.0
"""How often ``make dev`` runs the recovery sweep (production: the Cloud Scheduler job)."""

log = logging.getLogger("agent_runtime.devserver")

CONSOLE_DIR = Path(__file__).resolve().parent / "console"
CONSOLE_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
                 ".png": "image/png"}
CONSOLE_HEADERS = {
    # Everything the console loads or calls is on this origin; its scripts build the DOM from text.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def console_file(path: str) -> flask.Response:
    """A file of the dev console. It signs in as ``Bearer dev:<uid>``, so it is served only with
    local auth, and never on Cloud Run (``create_app`` already refuses to start there)."""
    from shared.runtime import get_runtime

    if os.environ.get("K_SERVICE"):
        return error_response(NotFound("the dev console is not served on Cloud Run", code="CONSOLE_DISABLED"))
    if get_runtime().settings.auth_mode != "local":
        return error_response(NotFound("the dev console needs AUTH_MODE=local (it signs in as Bearer dev:<uid>)",
                                       code="CONSOLE_DISABLED"))
    mimetype = CONSOLE_TYPES.get(Path(path).suffix)
    if mimetype is None:
        return error_response(NotFound(f"no console file {path}", code="ROUTE_NOT_FOUND"))
    target = safe_join(str(CONSOLE_DIR), path)  # None for anything that would leave console/
    if target is None or not os.path.isfile(target):
        return error_response(NotFound(f"no console file {path}", code="ROUTE_NOT_FOUND"))
    # Read whole (the files are small): no open file handed to the server to close later.
    resp = flask.Response(Path(target).read_bytes(), mimetype=mimetype)
    resp.headers.update(CONSOLE_HEADERS)
    return resp


def create_app() -> flask.Flask:
    if os.environ.get("K_SERVICE"):
        raise SystemExit("devserver refuses to run on Cloud Run (K_SERVICE is set)")
    from functions.approve import approve
    from functions.goals import goals
    from functions.integrations import integrations
    from functions.run import run
    from functions.runs import runs
    from functions.sessions import sessions
    from functions.stream import stream
    from functions.usage import usage
    from shared.openapi import build_openapi

    routes: dict[str, Handler] = {
        "/api/agent/run": run,
        "/api/agent/run/stream": stream,
        "/api/agent/approve": approve,
        "/agent/run": goals,
        "/api/agent/usage": usage,
    }
    app = flask.Flask("agent-runtime-dev")

    @app.route("/", defaults={"path": ""}, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
    @app.route("/<path:path>", methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
    def dispatch(path: str) -> flask.Response:
        req = flask.request
        if req.path == "/openapi.json":
            return json_response(build_openapi())
        if req.path == "/healthz":
            return json_response({"ok": True})
        if req.method == "GET" and (req.path == "/" or req.path.startswith("/console/")):
            return console_file("index.html" if req.path == "/" else req.path.removeprefix("/console/"))
        handler = routes.get(req.path.rstrip("/") or "/")
        if handler is None and (req.path.rstrip("/") == "/api/agent/runs" or req.path.startswith("/api/agent/runs/")):
            handler = runs
        if handler is None and (req.path.rstrip("/") == "/api/agent/sessions"
                                or req.path.startswith("/api/agent/sessions/")):
            handler = sessions
        if handler is None and (req.path.rstrip("/") == "/api/integrations"
                                or req.path.startswith("/api/integrations/")):
            handler = integrations
        if handler is None:
            return error_response(NotFound(f"no route for {req.path}", code="ROUTE_NOT_FOUND"))
        return handler(req)

    return app


def start_periodic_sweep(rt: Runtime, interval_s: float = SWEEP_INTERVAL_S) -> threading.Event:
    """Run the recovery sweep now and then every ``interval_s`` on a daemon thread, as the Cloud
    Scheduler job does in production: decisions whose resume message was lost, and runs left by a
    crashed (or stopped) server, continue. Set the returned event to stop it."""
    stop = threading.Event()

    def loop() -> None:
        while True:
            try:
                found = rt.router.sweep()
                if any(found.values()):
                    log.info("sweep: %s", found)
            except Exception:
                log.exception("sweep failed")
            if stop.wait(interval_s):
                return

    threading.Thread(target=loop, name="sweep", daemon=True).start()
    return stop


def main() -> None:
    if os.environ.get("K_SERVICE"):
        raise SystemExit("devserver refuses to run on Cloud Run (K_SERVICE is set)")
    from shared.logs import configure_logging
    from shared.runtime import get_runtime

    rt = get_runtime()
    configure_logging(rt.settings.google_cloud_project)
    port = int(os.environ.get("PORT", "8080"))
    model = "Gemini" if rt.settings.gemini_api_key or rt.settings.gemini_use_vertex else "offline model"
    print(f"Agent Runtime dev server on http://127.0.0.1:{port} (store: {rt.settings.state_backend}, "
          f"model: {model}, auth: {rt.settings.auth_mode})", file=sys.stderr)
    if rt.settings.auth_mode == "local":
        print(f"Dev console: http://127.0.0.1:{port}/ (signs in as Bearer dev:<uid>)", file=sys.stderr)
    else:
        print("Dev console: off (it needs AUTH_MODE=local)", file=sys.stderr)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    start_periodic_sweep(rt)
    create_app().run(host="127.0.0.1", port=port, threaded=True)


if __name__ == "__main__":
    main()
