"""The Standard Webhooks signature scheme (https://www.standardwebhooks.com): headers
``webhook-id``, ``webhook-timestamp`` and ``webhook-signature: v1,<base64 HMAC-SHA256>`` over
``{id}.{timestamp}.{body}``, keyed by the base64 secret after ``whsec_``."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24
SECRET_PATTERN = r"^whsec_[A-Za-z0-9+/]{32,88}={0,2}$"
"""A secret as receivers' libraries take it: ``whsec_`` and 24 to 64 bytes of base64."""


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(os.urandom(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key of ``secret`` (ValueError when it is not base64 after its prefix)."""
    raw = secret.removeprefix(SECRET_PREFIX)
    try:
        return base64.b64decode(raw, validate=True)
    except binascii.Error as exc:
        raise ValueError("the secret is not base64 after whsec_") from exc


def signature(secret: str, message_id: str, timestamp: int, body: str) -> str:
    digest = hmac.new(secret_key(secret), f"{message_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(secret: str, message_id: str, timestamp: int, body: str) -> dict[str, str]:
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(secret, message_id, timestamp, body),
            "content-type": "application/json"}
