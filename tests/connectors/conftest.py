"""Fixtures of the connector tests."""

from __future__ import annotations

import pytest

from shared.state.docstore import DocStore


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def store(request: pytest.FixtureRequest) -> DocStore:
    """Connector tests that need a store run on both real stores (Firestore through its emulator)."""
    return request.getfixturevalue(f"{request.param}_docstore")  # type: ignore[no-any-return]
