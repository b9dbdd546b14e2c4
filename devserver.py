"""``make dev``: every function on one local port, with the SQLite store and local auth.

Not part of the deployed bundle. Refuses to run on Cloud Run (``K_SERVICE`` set).
Routes: POST /api/agent/run, POST /api/agent/run/stream, GET /api/agent/runs/{runId}[/events],
POST /api/agent/approve, POST /agent/run (goals), GET|POST|DELETE /api/integrations[/{provider}],
GET /openapi.json, GET /healthz.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

import flask

from shared.errors import NotFound
from shared.web import error_response, json_response

Handler = Callable[[flask.Request], flask.Response]


def create_app() -> flask.Flask:
    if os.environ.get("K_SERVICE"):
        raise SystemExit("devserver refuses to run on Cloud Run (K_SERVICE is set)")
    from functions.approve import approve
    from functions.goals import goals
    from functions.integrations import integrations
    from functions.run import run
    from functions.runs import runs
    from functions.stream import stream
    from shared.openapi import build_openapi

    routes: dict[str, Handler] = {
        "/api/agent/run": run,
        "/api/agent/run/stream": stream,
        "/api/agent/approve": approve,
        "/agent/run": goals,
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
        handler = routes.get(req.path.rstrip("/") or "/")
        if handler is None and req.path.startswith("/api/agent/runs/"):
            handler = runs
        if handler is None and (req.path.rstrip("/") == "/api/integrations"
                                or req.path.startswith("/api/integrations/")):
            handler = integrations
        if handler is None:
            return error_response(NotFound(f"no route for {req.path}", code="ROUTE_NOT_FOUND"))
        return handler(req)

    return app


def main() -> None:
    from shared.logs import configure_logging
    from shared.runtime import get_runtime

    rt = get_runtime()
    configure_logging(rt.settings.google_cloud_project)
    port = int(os.environ.get("PORT", "8080"))
    model = "Gemini" if rt.settings.gemini_api_key or rt.settings.gemini_use_vertex else "offline model"
    print(f"Agent Runtime dev server on http://127.0.0.1:{port} (store: {rt.settings.state_backend}, "
          f"model: {model}, auth: Bearer dev:<uid>)", file=sys.stderr)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    create_app().run(host="127.0.0.1", port=port, threaded=True)


if __name__ == "__main__":
    main()
