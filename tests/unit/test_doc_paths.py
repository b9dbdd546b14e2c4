"""``split_doc_path`` (shared/state/docstore.py): every path of a small alphabet, against its definition."""

from __future__ import annotations

import itertools

import pytest

from shared.state.docstore import split_doc_path


def _defined(path: str) -> tuple[str, str] | None:
    """A document path is an even number of non-empty segments: (collection path, id); else None."""
    parts = path.split("/")
    if len(parts) % 2 or not all(parts):
        return None
    return "/".join(parts[:-1]), parts[-1]


def test_every_short_path_splits_as_defined() -> None:
    for n in range(7):
        for pieces in itertools.product(("a", "/", "bc", "é"), repeat=n):
            path = "".join(pieces)
            want = _defined(path)
            if want is None:
                with pytest.raises(ValueError, match="not a document path"):
                    split_doc_path(path)
            else:
                assert split_doc_path(path) == want, path


def test_examples() -> None:
    assert split_doc_path("users/u1/runs/r1") == ("users/u1/runs", "r1")
    for bad in ("", "users", "users/", "/users/u1", "users//u1/runs", "users/u1/runs"):
        with pytest.raises(ValueError):
            split_doc_path(bad)
