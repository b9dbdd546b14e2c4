"""What JSON request fields accept, stated once for the server and the OpenAPI document.

Whitespace: Python's ``str.isspace`` and the JSON Schema (ECMA-262) ``\\s`` disagree: Python counts
``\\x1c``-``\\x1f`` and ``\\x85``, ECMA-262 counts ``\\ufeff``. A field checked with ``strip()`` but
documented with ``\\s`` would accept what its document rejects, or refuse what it allows (the
OpenAPI fuzz test sends exactly such values). So both sides use the union of the two sets, spelled
out as a character class every regex engine reads the same way (Python ``re``, ECMA-262, Rust).

Dates: pydantic's lax ``date``/``datetime`` also take numbers (``0`` is 1970-01-01); the document
says string, so :data:`NOT_A_NUMBER` refuses numbers (and booleans) before pydantic parses them.

Integers: JSON Schema's ``integer`` includes ``3.0``; pydantic's strict ``int`` refuses it and its
lax one also takes ``"3"``. :data:`JsonInt` takes exactly what the document calls an integer.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, Strict, WithJsonSchema

WHITESPACE = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                       "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
"""Every character ``str.isspace`` accepts, plus U+FEFF (whitespace to ECMA-262)."""

WHITESPACE_CLASS = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""``WHITESPACE`` as the inside of a regex character class, to compose patterns with."""
NOT_BLANK_PATTERN = f"[^{WHITESPACE_CLASS}]"
"""JSON Schema ``pattern`` (unanchored: search) of a string with at least one non-whitespace character."""
NO_WHITESPACE_PATTERN = f"^[^{WHITESPACE_CLASS}]+$"
"""JSON Schema ``pattern`` of a non-empty string without any whitespace."""


def is_blank(text: str) -> bool:
    """Empty or only whitespace (``NOT_BLANK_PATTERN`` does not match)."""
    return all(c in WHITESPACE for c in text)


def has_whitespace(text: str) -> bool:
    return any(c in WHITESPACE for c in text)


MAX_INT64 = 2**63 - 1
"""The largest integer the stores keep (SQLite INTEGER, Firestore integer): a bound for any number
a request hands to a query (``after``)."""


def _integral_float_as_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


INTEGRAL = BeforeValidator(_integral_float_as_int)
"""Last in an ``Annotated[int, Strict(), <constraints>, INTEGRAL]``: constraints placed after a
validator would reach the JSON schema as pydantic's names (``ge``), not ``minimum``."""
JsonInt = Annotated[int, Strict(), INTEGRAL]
"""An integer as JSON Schema reads one: ``3`` and ``3.0``, never ``"3"``, ``true`` or ``3.5``."""


def _not_a_number(value: Any) -> Any:
    if isinstance(value, int | float):
        raise ValueError("must be an ISO 8601 string, not a number")
    return value


NOT_A_NUMBER = BeforeValidator(_not_a_number)
"""For ``Annotated[date, NOT_A_NUMBER]`` and ``Annotated[datetime, NOT_A_NUMBER]``: from JSON, a
string; the service's own ``date`` objects still pass."""


RFC3339_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
"""Every time the API answers: RFC 3339, UTC (``Z``), always milliseconds."""


MAX_EPOCH_S = 253402300799.0
"""9999-12-31T23:59:59Z: the latest instant the API can write (``rfc3339``; Python's ``datetime``
stops at year 9999). Every stored time is validated to ``0..MAX_EPOCH_S`` when written, and a stored
one outside it is read as unknown: ``expiresAt: 1.6e308`` once made every later read a 500."""


def epoch_or_none(value: Any) -> float | None:
    """``value`` as epoch seconds if it is a finite number in ``0..MAX_EPOCH_S``, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 <= value <= MAX_EPOCH_S else None


def rfc3339(at: float) -> str:
    """Epoch seconds as the API writes every time: ``2026-11-24T19:14:54.120Z``."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _epoch(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):  # an answer read back (a client's model, a test): the same instant
        return datetime.fromisoformat(value).timestamp()
    return value


UtcTime = Annotated[float, BeforeValidator(_epoch), PlainSerializer(rfc3339, return_type=str, when_used="json"),
                    WithJsonSchema({"type": "string", "format": "date-time", "pattern": RFC3339_PATTERN})]
"""A time in a response model: kept as epoch seconds (what the records hold), written as
:func:`rfc3339`, documented as that string. Every response model's time field is this type (the
contract test, tests/e2e/test_wire_contract.py, walks the OpenAPI document for it)."""
