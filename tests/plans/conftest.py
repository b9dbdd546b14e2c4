"""Plan-session fixtures: the dev app over a real store with a scripted model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.plans.support import Script, model

MakeRuntime = Callable[..., Runtime]


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def store(request: pytest.FixtureRequest) -> DocStore:
    return request.getfixturevalue(f"{request.param}_docstore")  # type: ignore[no-any-return]


@pytest.fixture
def make_rt(store: DocStore) -> Iterator[MakeRuntime]:
    def make(script: Script, **overrides: Any) -> Runtime:
        rt = Runtime(make_settings(**overrides), store=store, model=model(script),
                     authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
        set_runtime(rt)
        return rt

    yield make
    set_runtime(None)
