"""This project's runtime (the checkout at $PROJECT_DIR, default ../../main beside this repo) in the same scenario.

The project's copy of ``../shared/bench-peers/bench_ours.py`` (that folder is read-only; its README
asks to keep a working copy here when the project's internals move): ``bench/peers.py`` runs this
file in place of the folder's. Changed: ``run_to_stop`` lives in ``shared.agent.run_handlers``.

Each run takes the path of POST /api/agent/run (functions/run.py) minus HTTP parsing and auth:
shared.agent.run_handlers.run_to_stop(rt.agent, uid, RunRequest(...)), i.e. AgentService.start (the
start transaction: run record, user message, first event) then AgentService.run (the loop, one
commit per step) on a warm Runtime built from Settings.from_env() like a deployed instance.
Model: the project's in-process FunctionModel (shared.models.scripted) scripting n `lookup` calls,
one per model turn, then common.EXPECTED_FINAL. Registry: only `lookup` (read-only,
side_effect=False, calls common.lookup_impl), like the peers. Env: AGENT_MAX_LOOP_STEPS=15,
AGENT_MAX_TOOL_CALLS_PER_TURN=16 (N=10 needs 11 model calls; 15 is the clamp),
AGENT_RUN_DEADLINE_S=600, DISPATCHER=none, AUTH_MODE=local.

Configs (the store comes from the project's create_docstore, as in a deployed instance):
  sqlite-file            the default durable mode: WAL + synchronous=NORMAL (project default)
  sqlite-file-sync-full  WAL + SQLITE_SYNCHRONOUS=FULL
  sqlite-memory          SQLITE_PATH=:memory:
  firestore-emulator     opt-in (OURS_FIRESTORE=1; run it alone: --only firestore): FirestoreDocStore
                         on the official emulator (FIRESTORE_EMULATOR_HOST if set, else one started
                         with the project's tests/emulators.py; needs gcloud + java). Not in the
                         default set: an idle JVM beside the SQLite configs would perturb their timing.
SQLite files are fresh per config in db/, like the peers' files.

Python: the shared ./venv (the project's requirements.txt installed there; six transitive pins held
at the peers' versions, none of them loaded on this path: see README) or $PROJECT_DIR/.venv.
"""
import contextlib
import os
import subprocess
import sys
import uuid
from importlib.metadata import version

PROJECT = os.path.abspath(os.environ.get("PROJECT_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                     "..", "..", "main")))
sys.path.insert(0, PROJECT)

import common  # noqa: E402

from shared.agent.run_handlers import run_to_stop  # noqa: E402
from shared.api import RunRequest  # noqa: E402
from shared.config import Settings  # noqa: E402
from shared.models.base import ModelRequest, Turn  # noqa: E402
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn  # noqa: E402
from shared.runtime import Runtime  # noqa: E402
from shared.tools.context import ToolContext  # noqa: E402
from shared.tools.registry import ToolRegistry  # noqa: E402

CURRENT_N = {"n": 1}
UID = "bench"
PROMPT = "please look things up"
DB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "db")
os.makedirs(DB_DIR, exist_ok=True)

# What a deployed instance reads at start; only these differ from the project's defaults.
BASE_ENV = {"STATE_BACKEND": "sqlite", "AUTH_MODE": "local", "DISPATCHER": "none",
            "AGENT_MAX_LOOP_STEPS": "15", "AGENT_RUN_DEADLINE_S": "600",
            "AGENT_MAX_TOOL_CALLS_PER_TURN": "16"}  # N=10 calls per user turn; the default cap is 8
for _k in ("SQLITE_SYNCHRONOUS", "K_SERVICE"):  # nothing inherited may change the configs
    os.environ.pop(_k, None)


def registry():
    reg = ToolRegistry()

    @reg.tool(side_effect=False)
    def lookup(ctx: ToolContext, q: str) -> dict:
        """Look something up.

        Args:
            q: The query.
        """
        return {"result": common.lookup_impl(q)}

    return reg


def model_fn(request: ModelRequest) -> Turn:
    done = sum(1 for t in request.turns if t.role == "model")  # earlier model turns = lookups done
    if done < CURRENT_N["n"]:
        return calls_turn(call("lookup", {"q": "x"}))
    return text_turn(common.EXPECTED_FINAL)


@contextlib.contextmanager
def _env(values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _fresh_db(name):
    p = os.path.join(DB_DIR, name)
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(p + suffix):
            os.remove(p + suffix)
    return p


def _runtime(env):
    """A warm Runtime as a deployed instance has it: settings from the environment, store from
    create_docstore; only the model and the tool registry are injected."""
    with _env({**BASE_ENV, **env}):
        settings = Settings.from_env()
        rt = Runtime(settings, model=FunctionModel(model_fn, name="scripted"), registry=registry())
    assert settings.max_loop_steps >= 11 and settings.run_deadline_s >= 600, settings
    return rt


def _make_run(rt):
    agent = rt.agent  # built once, as on a warm instance

    async def run(n):
        CURRENT_N["n"] = n
        result, replayed = run_to_stop(agent, UID, RunRequest(prompt=PROMPT))
        if replayed or result.status != "completed":
            raise RuntimeError(f"run ended {result.status} (replayed={replayed}): {result.summary}")
        return result.output["text"]

    return run


def make_sqlite(db_name, synchronous):
    async def factory():
        env = {"SQLITE_PATH": _fresh_db(db_name) if db_name != ":memory:" else db_name}
        if synchronous is not None:
            env["SQLITE_SYNCHRONOUS"] = synchronous
        rt = _runtime(env)
        want = synchronous or "NORMAL"
        assert getattr(rt.store, "synchronous", None) == want, (rt.store, want)

        async def cleanup():
            rt.store.close()

        return _make_run(rt), 1.0, cleanup
    return factory


def make_firestore():
    async def factory():
        stop = None
        host = os.environ.get("FIRESTORE_EMULATOR_HOST", "").strip()
        if not host:
            from tests.emulators import start_firestore  # the project's test helper

            emulator = start_firestore()
            host, stop = emulator.host, emulator.stop
        os.environ["FIRESTORE_EMULATOR_HOST"] = host  # the client reads it at construction
        rt = _runtime({"STATE_BACKEND": "firestore",
                       "GOOGLE_CLOUD_PROJECT": f"demo-bench-ours-{uuid.uuid4().hex[:8]}"})

        async def cleanup():
            rt.store.close()
            if stop is not None:
                stop()

        return _make_run(rt), 0.2, cleanup
    return factory


CONFIGS = {
    "sqlite-file": make_sqlite("ours_normal.sqlite3", None),
    "sqlite-file-sync-full": make_sqlite("ours_full.sqlite3", "FULL"),
    "sqlite-memory": make_sqlite(":memory:", None),
}
if os.environ.get("OURS_FIRESTORE", "").strip() in ("1", "true", "yes"):
    CONFIGS["firestore-emulator"] = make_firestore()


def _versions():
    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", PROJECT, *a], capture_output=True, text=True, check=False).stdout.strip()

    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return {"project_commit": git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else ""),
            "pydantic": version("pydantic")}


if __name__ == "__main__":
    common.main(CONFIGS, "ours", _versions())
