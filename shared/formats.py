"""Small checks and conversions used across the package, each defined once (a leaf module).

- :func:`is_email`: an e-mail address as the connectors accept it;
- :func:`rfc3339_datetime` / :func:`full_date`: RFC 3339 ``date-time`` and ``full-date``, exactly
  what the OpenAPI document's ``format`` says (``datetime.fromisoformat`` alone takes far more);
- :func:`b64decode_any`: base64 in the standard or URL-safe alphabet, padding optional;
- :func:`validation_problems`: a pydantic ``ValidationError`` as ``(field, message)`` pairs;
- :func:`clean_json_schema`: a pydantic JSON schema as models and tools are shown it;
- :func:`args_hash`: a stable hash of a tool call's arguments (binds an approval to them).
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import re
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

_EMAIL = re.compile(r"^[^@\s<>(),;:\"\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)+$")
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_DATE_TIME = re.compile(_DATE + r"[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})")
_FULL_DATE = re.compile(_DATE)
_NAME_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def is_email(text: str) -> bool:
    """``local@domain.tld`` without spaces, brackets or list separators (one address, not a list)."""
    return bool(_EMAIL.match(text))


def rfc3339_datetime(text: str) -> datetime | None:
    """An RFC 3339 ``date-time`` (always with a zone: ``Z`` or ``+hh:mm``) as an aware datetime;
    ``None`` for anything else (no zone, spaces, other digits, an impossible day, a leap second)."""
    if not _DATE_TIME.fullmatch(text):
        return None
    normal = text[:10] + "T" + text[11:].upper().replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(normal)
    except ValueError:
        return None


def full_date(text: str) -> date | None:
    """An RFC 3339 ``full-date`` (``YYYY-MM-DD``); ``None`` for anything else."""
    if not _FULL_DATE.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def b64decode_any(text: str) -> bytes:
    """Decode base64 in either alphabet, with or without padding; ``ValueError`` when malformed."""
    normal = text.strip().replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(normal + "=" * (-len(normal) % 4), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64: {exc}") from None


def validation_problems(exc: ValidationError, *, root: str = "(root)") -> list[tuple[str, str]]:
    """``(dotted field, message)`` of every error, without pydantic's URLs or the input values."""
    return [(".".join(str(p) for p in e["loc"]) or root, e["msg"])
            for e in exc.errors(include_url=False, include_input=False)]


def clean_json_schema(schema: dict[str, Any], *, inline_refs: bool = False,
                      drop: frozenset[str] = frozenset({"title"})) -> dict[str, Any]:
    """``schema`` without pydantic's annotations in ``drop`` (they tell a model nothing) and, with
    ``inline_refs``, with every ``$ref`` replaced by its definition. Keys of a ``properties`` (or
    ``$defs``) mapping are names, not annotations: an argument called ``title`` stays."""
    defs: dict[str, Any] = dict(schema.get("$defs", {})) if inline_refs else {}

    def clean(node: Any) -> Any:
        if isinstance(node, list):
            return [clean(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if inline_refs and isinstance(ref, str):
            return clean(copy.deepcopy(defs[ref.rsplit("/", 1)[-1]]))
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in drop or (inline_refs and key == "$defs"):
                continue
            if key in _NAME_MAPS and isinstance(value, dict):
                out[key] = {name: clean(sub) for name, sub in value.items()}
            else:
                out[key] = clean(value)
        return out

    cleaned: dict[str, Any] = clean(schema)
    return cleaned


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""``json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False)``, built once (a step
hashes its calls' arguments)."""


def args_hash(args: dict[str, Any]) -> str:
    """A stable hash of tool arguments (binds an approval to exactly what was approved)."""
    canonical = _CANONICAL.encode(args)
    return hashlib.sha256(canonical.encode()).hexdigest()
