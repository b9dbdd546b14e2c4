"""Subprocess entry points for the memory and import checks (``python -m bench.probe MODE ...``).

Each runs in a fresh interpreter configured by environment variables (STATE_BACKEND, SQLITE_PATH,
GEMINI_* pointing at a fake Gemini server, AUTH_MODE=local), as a deployed instance would be, and
prints one JSON line on stdout.

- ``warm``: import main, serve one run through functions-framework's app for ``run``, report RSS.
- ``check TARGET SIGNATURE METHOD PATH BODY``: serve one request through ``TARGET`` and report
  whether ``google.genai`` was imported.
- ``serve``: every function on one real threaded HTTP server (devserver.create_app()); prints
  ``{"port": N}`` and serves until killed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from bench.procinfo import rss_mib

ALICE = {"Authorization": "Bearer dev:alice"}


def _client(target: str, signature: str) -> Any:
    import functions_framework

    return functions_framework.create_app(target, "main.py", signature).test_client()  # type: ignore[no-untyped-call]


def warm() -> dict[str, Any]:
    import main  # noqa: F401  (the deployed entry module, as functions-framework loads it)

    before = rss_mib()
    client = _client("run", "http")
    resp = client.post("/api/agent/run", json={"prompt": "hello"}, headers=ALICE)
    body = resp.get_json()
    return {"status": resp.status_code, "runStatus": body.get("status"), "after_import_main_mib": before,
            **rss_mib(), "genai_loaded": "google.genai" in sys.modules,
            "firestore_loaded": "google.cloud.firestore" in sys.modules}


def check(target: str, signature: str, method: str, path: str, body: str) -> dict[str, Any]:
    import main  # noqa: F401

    client = _client(target, signature)
    headers = dict(ALICE)
    if signature == "cloudevent":
        headers = json.loads(body)["headers"]
        payload = json.loads(body)["data"]
        resp = client.open(path, method=method, headers=headers, json=payload)
    else:
        resp = client.open(path, method=method, headers=headers,
                           json=json.loads(body) if body else None)
    resp.get_data()
    return {"target": target, "status": resp.status_code, "genai_loaded": "google.genai" in sys.modules,
            "pubsub_loaded": "google.cloud.pubsub_v1" in sys.modules}


def serve() -> None:
    import logging

    from werkzeug.serving import make_server

    from devserver import create_app

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server("127.0.0.1", 0, create_app(), threaded=True)
    print(json.dumps({"port": server.server_port}), flush=True)
    server.serve_forever()


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "warm":
        print(json.dumps(warm()), flush=True)
    elif mode == "check":
        print(json.dumps(check(*argv[1:6])), flush=True)
    elif mode == "serve":
        serve()
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
