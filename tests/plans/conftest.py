"""Plan-session fixtures: the dev app over a real store with a scripted model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import install
from tests.plans.support import Script, model

MakeRuntime = Callable[..., Runtime]


@pytest.fixture
def make_rt(store: DocStore) -> Iterator[MakeRuntime]:
    def make(script: Script, **overrides: Any) -> Runtime:
        return install(store, model(script), **overrides)

    yield make
    set_runtime(None)
