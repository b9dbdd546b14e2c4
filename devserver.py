"""``make dev``: every function on one local port, with the SQLite store and local auth.

Not part of the deployed bundle. Refuses to run on Cloud Run (``K_SERVICE`` set).
``/`` is the dev console (``console/``: static ES modules over the public API, served only with
``AUTH_MODE=local``, see docs/console.md).
Routes: every route of the table (``shared/routes.py``): the deployed functions' and make dev's own
(GET /openapi.json, GET /healthz). Any other path or method, and anything the web framework would
answer by itself, is the JSON error envelope (404 ``ROUTE_NOT_FOUND``, 405 with ``Allow``), as in the
deployed functions.

``DEV_FAKES=1`` also starts local fakes of GitHub, Slack, Gmail and Calendar (``devfakes/``) and
points the connectors at them (and adds the ``time`` MCP server when ``mcp-server-time`` is
installed), so every connector can be tried without an account.

On first start it provisions a local ``CREDENTIALS_ENCRYPTION_KEY`` in ``var/`` (see
:func:`provision_local_encryption_key`) so that ``/api/integrations`` and the connector tools work.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import contextlib
import logging
import os
import secrets
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import flask
from werkzeug.routing import Rule
from werkzeug.security import safe_join

from shared.errors import NotFound
from shared.http_errors import install_json_errors
from shared.web import dispatch as dispatch_route
from shared.web import error_response, http_endpoint, json_response

if TYPE_CHECKING:
    from shared.runtime import Runtime

SWEEP_INTERVAL_S = 60.0
"""How often ``make dev`` runs the recovery sweep (production: the Cloud Scheduler job)."""

LOCAL_KEY_FILE = Path("var") / "credentials-encryption.key"
"""Where ``make dev`` keeps its generated ``CREDENTIALS_ENCRYPTION_KEY`` (next to the SQLite store)."""

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


def provision_local_encryption_key(path: Path = LOCAL_KEY_FILE) -> Path | None:
    """Give ``make dev`` a ``CREDENTIALS_ENCRYPTION_KEY`` so integrations work locally.

    An explicitly set ``CREDENTIALS_ENCRYPTION_KEY`` wins (nothing is read or written: returns
    ``None``). Otherwise the key in ``path`` is used, created on first start as base64 of 32 random
    bytes in a file of mode 0600 (published atomically: a concurrent start reads a whole key or
    creates none), and reused on later starts so stored tokens stay readable. Never on Cloud Run,
    where the key comes from Secret Manager."""
    if os.environ.get("K_SERVICE"):
        raise SystemExit("devserver refuses to provision a local encryption key on Cloud Run (K_SERVICE is set)")
    if os.environ.get("CREDENTIALS_ENCRYPTION_KEY", "").strip():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")  # mode 0600
        try:
            with os.fdopen(fd, "w") as out:
                out.write(base64.b64encode(secrets.token_bytes(32)).decode() + "\n")
            with contextlib.suppress(FileExistsError):  # another start created it first: use theirs
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        log.warning("%s was readable by other users; restricting it to mode 0600", path)
        path.chmod(0o600)
    key = path.read_text().strip()
    try:
        valid = len(base64.b64decode(key, validate=True)) == 32
    except (binascii.Error, ValueError):
        valid = False
    if not valid:
        raise SystemExit(f"{path} does not hold base64 of 32 bytes; set CREDENTIALS_ENCRYPTION_KEY or delete the "
                         "file to create a new key (tokens stored with the old key can no longer be read)")
    os.environ["CREDENTIALS_ENCRYPTION_KEY"] = key
    return path


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


def healthz(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    return json_response({"ok": True})


def openapi_document(request: flask.Request, path: Mapping[str, str]) -> flask.Response:
    from shared.openapi import build_openapi

    return json_response(build_openapi())


def create_app() -> flask.Flask:
    """Every route of the table (``shared/routes.py``), deployed function or not, on one app."""
    if os.environ.get("K_SERVICE"):
        raise SystemExit("devserver refuses to run on Cloud Run (K_SERVICE is set)")
    from shared import routes

    app = flask.Flask("agent-runtime-dev")
    install_json_errors(app.errorhandler)

    @http_endpoint
    def api(request: flask.Request) -> flask.Response:
        return dispatch_route(request, routes.ROUTES)  # read per request: the table is the only place

    def dispatch(path: str) -> flask.Response:
        req = flask.request
        if req.method == "GET" and (req.path == "/" or req.path.startswith("/console/")):
            return console_file("index.html" if req.path == "/" else req.path.removeprefix("/console/"))
        return api(req)

    # Rules without methods, as functions-framework mounts a deployed function: every method reaches
    # the handler, which answers a wrong one with its own JSON 405 (and Allow), never Flask's HTML
    # one, and no automatic OPTIONS answer. Paths no rule matches (a newline in a segment) fall to
    # the JSON 404 of install_json_errors.
    app.url_map.add(Rule("/", defaults={"path": ""}, endpoint="dispatch"))
    app.url_map.add(Rule("/<path:path>", endpoint="dispatch"))
    app.view_functions["dispatch"] = dispatch
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


def start_schedule_ticker(rt: Runtime, *, clock: Callable[[], float] = time.time) -> threading.Event:
    """Publish a ``schedule_tick`` for every minute through the dispatcher, as Cloud Scheduler does
    in production (the same message, the same router): the schedules' runs start in ``make dev``.
    Set the returned event to stop it."""
    stop = threading.Event()

    def loop() -> None:
        from shared.agent.schedules import tick_message

        while True:
            at = clock()
            try:
                rt.dispatcher.publish(tick_message(at))
            except Exception:
                log.exception("schedule tick failed")
            if stop.wait(60.0 - at % 60.0 + 0.5):
                return

    threading.Thread(target=loop, name="schedule-ticker", daemon=True).start()
    return stop


SANDBOX_SNAPSHOTS = Path("var") / "sandbox-snapshots"
"""Where ``make dev``'s sandbox service keeps its workspace snapshots (they outlive restarts)."""


def start_local_sandbox(snapshot_dir: Path = SANDBOX_SNAPSHOTS, timeout_s: float = 30.0) -> subprocess.Popen[bytes]:
    """``make dev``'s sandbox service (docs/workspaces.md) as a child process on a free loopback port,
    with a fresh key; sets ``SANDBOX_URL`` and ``SANDBOX_KEY`` for this process (the workspace tools
    then join the registry). Its workspaces live under /tmp/agent-sandbox-<uid> (0711: the workspace
    uids must reach it), its snapshots in ``snapshot_dir``. The caller stops it."""
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # One directory per OS user, reused by every start (each service mounts its workspaces in its own
    # mount namespace, so concurrent ones never see each other's files); not under TMPDIR, which
    # may be 0700: the workspace uids must pass through it.
    root = f"/tmp/agent-sandbox-{os.getuid()}"
    os.makedirs(root, mode=0o711, exist_ok=True)
    os.chmod(root, 0o711)
    key = secrets.token_urlsafe(24)
    env = {"PATH": os.defpath, "PORT": str(port), "SANDBOX_KEY": key,
           "SANDBOX_ROOT": root, "SANDBOX_SNAPSHOT_DIR": str(snapshot_dir.resolve()),
           "PYTHONPATH": str(Path(__file__).resolve().parent), "SANDBOX_PARENT_PID": str(os.getpid())}
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.server"], env=env, stdin=subprocess.DEVNULL,
                            cwd=Path(__file__).resolve().parent)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the sandbox service exited ({proc.returncode}); set SANDBOX_URL=off to run without it")
        with contextlib.suppress(OSError), urllib.request.urlopen(url + "/healthz", timeout=1) as resp:
            if resp.status == 200:
                os.environ["SANDBOX_URL"], os.environ["SANDBOX_KEY"] = url, key
                return proc
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the sandbox service did not answer within {timeout_s} s")


def main() -> None:
    if os.environ.get("K_SERVICE"):
        raise SystemExit("devserver refuses to run on Cloud Run (K_SERVICE is set)")
    from shared.logs import configure_logging
    from shared.runtime import get_runtime

    sandbox = None
    if os.environ.get("SANDBOX_URL", "").strip().lower() == "off":
        os.environ.pop("SANDBOX_URL")
    elif not os.environ.get("SANDBOX_URL", "").strip():
        sandbox = start_local_sandbox()
        atexit.register(sandbox.kill)
    key_file = provision_local_encryption_key()
    fakes = None
    if os.environ.get("DEV_FAKES", "").strip().lower() in ("1", "true", "yes"):
        from devfakes.launch import start as start_fakes  # before the runtime reads its settings

        fakes = start_fakes(os.environ)
    rt = get_runtime()
    configure_logging(rt.settings.google_cloud_project, os.environ.get("LOG_LEVEL", "INFO").upper())  # as deployed
    port = int(os.environ.get("PORT", "8080"))
    model = "Gemini" if rt.settings.gemini_api_key or rt.settings.gemini_use_vertex else "offline model"
    print(f"Agent Runtime dev server on http://127.0.0.1:{port} (store: {rt.settings.state_backend}, "
          f"model: {model}, auth: {rt.settings.auth_mode}, "
          f"integrations: {f'local key {key_file}' if key_file else 'CREDENTIALS_ENCRYPTION_KEY'}, "
          f"sandbox: {rt.settings.sandbox_url or 'off'}{' (local)' if sandbox else ''})", file=sys.stderr)
    if fakes is not None:
        print(fakes.banner(port), file=sys.stderr)
    if rt.settings.auth_mode == "local":
        print(f"Dev console: http://127.0.0.1:{port}/ (signs in as Bearer dev:<uid>)", file=sys.stderr)
    else:
        print("Dev console: off (it needs AUTH_MODE=local)", file=sys.stderr)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    start_periodic_sweep(rt)
    start_schedule_ticker(rt)
    create_app().run(host="127.0.0.1", port=port, threaded=True)


if __name__ == "__main__":
    main()
