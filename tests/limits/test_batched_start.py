"""A start reads the documents of its limit checks and the user's profile in one round trip
(``BatchedReads``, issue 33), without weakening the checks those reads feed: a slot taken after
the batch was read still refuses, the daily-token limit still refuses, and a failed batched read
falls back to reading each document on its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

import pytest
from flask.testing import FlaskClient

from bench.growth import ledger_writes
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import StoreError
from shared.models.scripted import FunctionModel, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import Doc, DocStore
from tests.agent.conftest import make_settings
from tests.limits.conftest import ALICE, OFF, Clock
from tests.limits.support import refused, snapshot

DAY = "2031-03-04"


class AfterBatch:
    """The store, with ``hook`` run once right after the first ``get_many`` that reads the user's
    document (the start's batch) returned, or ``fail`` raised instead of it."""

    def __init__(self, inner: DocStore, uid: str = "alice") -> None:
        self.inner = inner
        self.user_path = f"users/{uid}"
        self.hook: Callable[[], None] | None = None
        self.fail = False
        self.batches: list[list[str]] = []

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        if self.user_path not in paths:
            return self.inner.get_many(paths)
        self.batches.append(list(paths))
        if self.fail:
            self.fail = False
            raise StoreError("the batched read failed")
        out = self.inner.get_many(paths)
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def make_wrapped(store: DocStore) -> Iterator[Callable[..., tuple[Runtime, AfterBatch]]]:
    """``make_wrapped(**limits)``: the process runtime on ``AfterBatch(store)``, every other limit off."""

    def make(**limits: Any) -> tuple[Runtime, AfterBatch]:
        wrapped = AfterBatch(store)
        rt = Runtime(make_settings(**{**OFF, **limits}), store=wrapped,  # type: ignore[arg-type]
                     model=FunctionModel(lambda r: text_turn("hi")), authenticator=LocalAuthenticator(),
                     dispatcher=RecordingDispatcher())
        rt.limits.clock = Clock(datetime.fromisoformat(f"{DAY}T12:00:00+00:00").timestamp())
        set_runtime(rt)
        return rt, wrapped

    yield make
    set_runtime(None)


MakeWrapped = Callable[..., tuple[Runtime, AfterBatch]]


def test_a_slot_taken_after_the_batched_read_still_refuses_the_start(make_wrapped: MakeWrapped, store: DocStore,
                                                                     client: FlaskClient) -> None:
    rt, wrapped = make_wrapped(limit_active_runs=1, limit_daily_tokens=1_000_000)
    # A rival start of alice reserves the only slot between the batch and this start's reservation.
    wrapped.hook = lambda: rt.limits.slot("alice", "runs").reserve("run_rival")  # type: ignore[union-attr]
    before = snapshot(store, "alice")
    resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
    refused(client, resp, "TOO_MANY_ACTIVE_RUNS", path="/api/agent/run", method="post")
    assert snapshot(store, "alice") == before
    # The batch did hold the slot document (its stale token failed the reservation's write).
    assert wrapped.batches == [["users/alice", f"users/alice/usageDays/{DAY}", "users/alice/limits/runs"]]


def test_the_daily_token_limit_still_refuses_with_the_batched_read(make_wrapped: MakeWrapped, store: DocStore,
                                                                   client: FlaskClient) -> None:
    _, wrapped = make_wrapped(limit_daily_tokens=100)
    for batch in ledger_writes("alice", DAY, 10, tokens_each=10):
        store.commit(batch)
    before = snapshot(store, "alice")
    resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
    refused(client, resp, "DAILY_TOKEN_LIMIT", path="/api/agent/run", method="post")
    assert snapshot(store, "alice") == before
    assert wrapped.batches == [["users/alice", f"users/alice/usageDays/{DAY}"]]


def test_a_failed_batched_read_falls_back_to_reading_each_document(make_wrapped: MakeWrapped,
                                                                   client: FlaskClient) -> None:
    _, wrapped = make_wrapped(limit_active_runs=1, limit_daily_tokens=1_000_000)
    wrapped.fail = True
    resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    assert resp.get_json()["status"] == "completed"
    assert len(wrapped.batches) == 1  # tried once; then each read on its own
    # The slot was reserved and released as without the batch: a second run gets the one slot.
    assert client.post("/api/agent/run", json={"prompt": "again"}, headers=ALICE).status_code == 200
