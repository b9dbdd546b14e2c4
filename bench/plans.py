"""Plan-session figures (issue 10): a 20-task plan, 3 acts per task, scripted zero-latency model.

- ``per_act``: wall time and store commits per act of the execution on SQLite and on the Firestore
  emulator (everything in-process; each continue message handled at once: one "invocation" each).
- ``pubsub_slices``: the same plan with a 2 s slice budget (``AGENT_RUN_DEADLINE_S=2``, no yield
  margin) and every continue message delivered through the Pub/Sub emulator (publish → pull →
  handle): invocations used and the continuation latency (from the yield's publish to the next
  invocation's start), p50 and p99.

    python -m bench.plans [--quick]   (also part of ``make bench``)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from bench.emulator import firestore_emulator, firestore_store, sqlite_store
from bench.instrument import InstrumentedStore
from bench.plan_model import Script, model
from bench.scenario import bench_registry
from shared.auth import LocalAuthenticator
from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.plans import sessions as engine
from shared.plans import unit
from shared.runtime import Runtime
from shared.state.docstore import DocStore

TASKS = 20
ACTS = 3


def plan_script() -> Script:
    titles = [f"Task number {i}" for i in range(1, TASKS + 1)]
    return Script(tasks=titles, acts={t: [("lookup", {"key": f"{t}-{a}"}) for a in range(ACTS)] for t in titles})


def settings(**overrides: Any) -> Settings:
    base = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=600.0,
                    plan_steps_per_invocation=1000, plan_yield_margin_s=0.0, google_cloud_project="demo-agent-bench")
    import dataclasses

    return dataclasses.replace(base, **overrides)


def _plan(rt: Runtime) -> str:
    outcome = engine.start_planning(rt.services, rt.sessions, "bench", "run the benchmark plan",
                                    deadline=time.time() + 3600)
    session = outcome.session
    engine.confirm(rt.services, rt.sessions, "bench", session.session_id, session.plan_version)
    return session.session_id


def per_act(inner: DocStore) -> dict[str, Any]:
    store = InstrumentedStore(inner)
    dispatcher = RecordingDispatcher()
    rt = Runtime(settings(), store=store, model=model(plan_script()), registry=bench_registry(),
                 dispatcher=dispatcher, authenticator=LocalAuthenticator())
    sid = _plan(rt)
    before = store.snapshot()
    w0, c0 = time.perf_counter(), time.thread_time()
    invocations = 0
    while msgs := dispatcher.take():
        for m in msgs:
            rt.router.handle(m)
            invocations += 1
    wall, cpu = time.perf_counter() - w0, time.thread_time() - c0
    delta = InstrumentedStore.delta(store.snapshot(), before)
    session, _ = rt.sessions.get_for("bench", sid)
    if session.status != "completed":
        raise RuntimeError(f"bench session ended {session.status}")
    acts = sum(t.acts for t in unit.read(rt.sessions, rt.runs, session).tasks)
    return {"tasks": TASKS, "acts": acts, "invocations": invocations,
            "ms_per_act": round(wall / acts * 1000, 3), "cpu_ms_per_act": round(cpu / acts * 1000, 3),
            "commits_per_act": round(delta["commits"] / acts, 3),
            "documents_written_per_act": round(sum(delta["docs_written"].values()) / acts, 3),
            "documents_written_by_collection": dict(sorted(delta["docs_written"].items())),
            "note": "an act = one model call + one tool (or the task's end) + the reflection call; "
                    "commits include claims, yields and the next invocations' claims"}


class TimedPubSub:
    """Publishes to the emulator topic; remembers when each message was published."""

    def __init__(self, project: str, topic: str) -> None:
        from shared.durable.dispatcher import PubSubDispatcher

        self.inner = PubSubDispatcher(project, topic)
        self.published: dict[str, float] = {}
        self.lock = threading.Lock()

    def publish(self, message: WorkMessage) -> None:
        with self.lock:
            self.published[message.entryId or ""] = time.perf_counter()
        self.inner.publish(message)


def pubsub_slices(fs_host: str, quick: bool) -> dict[str, Any]:
    from google.cloud import pubsub_v1

    from bench.emulator import pubsub_emulator

    with pubsub_emulator() as ps_host:
        os.environ["PUBSUB_EMULATOR_HOST"] = ps_host
        project, name = "demo-agent-bench", f"bench-continue-{os.getpid()}"
        publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
        topic = publisher.topic_path(project, name)
        publisher.create_topic(name=topic)
        sub = subscriber.subscription_path(project, f"{name}-pull")
        subscriber.create_subscription(name=sub, topic=topic)
        dispatcher = TimedPubSub(project, name)
        script = plan_script()
        with firestore_store(fs_host) as store:
            rt = Runtime(settings(run_deadline_s=2.0, dispatcher="pubsub", resume_topic=name), store=store,
                         model=model(script), registry=bench_registry(), dispatcher=dispatcher,
                         authenticator=LocalAuthenticator())
            sid = _plan(rt)
            latencies: list[float] = []
            invocations = 0
            deadline = time.monotonic() + (120 if quick else 300)
            while time.monotonic() < deadline:
                session, _ = rt.sessions.get_for("bench", sid)
                if session.terminal:
                    break
                got = subscriber.pull(subscription=sub, max_messages=10, timeout=30)
                if got.received_messages:
                    subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in got.received_messages])
                for received in got.received_messages:
                    message = WorkMessage.model_validate(json.loads(received.message.data))
                    sent = dispatcher.published.get(message.entryId or "")
                    if sent is not None:
                        latencies.append(time.perf_counter() - sent)
                    rt.router.handle(message)
                    invocations += 1
        subscriber.delete_subscription(subscription=sub)
        publisher.delete_topic(topic=topic)
        os.environ.pop("PUBSUB_EMULATOR_HOST", None)
    latencies.sort()

    def pct(p: float) -> float | None:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 1) if latencies else None

    return {"slice_budget_s": 2.0, "status": session.status, "invocations": invocations,
            "continuation_latency_ms": {"p50": pct(0.5), "p99": pct(0.99), "samples": len(latencies),
                                        "mean": round(statistics.mean(latencies) * 1000, 1) if latencies else None},
            "note": "latency: from the yield's publish to the next invocation's start (Pub/Sub emulator pull)"}


def figures(fs_host: str, tmp: str, quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with sqlite_store(os.path.join(tmp, "plans.sqlite3")) as store:
        out["sqlite_file"] = per_act(store)
    with firestore_store(fs_host) as store:
        out["firestore_emulator"] = per_act(store)
    out["pubsub_slices"] = pubsub_slices(fs_host, quick)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    with firestore_emulator() as fs_host:
        print(json.dumps(figures(fs_host, tempfile.mkdtemp(prefix="bench-plans-"), args.quick), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
