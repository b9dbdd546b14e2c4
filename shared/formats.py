"""Small checks and conversions used across the package, each defined once (a leaf module).

- :func:`is_email`: an e-mail address as the connectors accept it;
- :func:`b64decode_any`: base64 in the standard or URL-safe alphabet, padding optional;
- :func:`validation_problems`: a pydantic ``ValidationError`` as ``(field, message)`` pairs;
- :func:`clean_json_schema`: a pydantic JSON schema as models and tools are shown it.
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

_EMAIL = re.compile(r"^[^@\s<>(),;:\"\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)+$")
_NAME_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def is_email(text: str) -> bool:
    """``local@domain.tld`` without spaces, brackets or list separators (one address, not a list)."""
    return bool(_EMAIL.match(text))


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
