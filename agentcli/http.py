"""A tiny JSON/NDJSON client of the runtime's HTTP API (stdlib only)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class Api:
    def __init__(self, server: str, token: str, *, timeout_s: float = 120.0) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def _request(self, method: str, path: str, body: Any = None) -> urllib.request.Request:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        return req

    def call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(self._request(method, path, body), timeout=self.timeout_s) as resp:
                out: dict[str, Any] = json.loads(resp.read() or b"{}")
                return out
        except urllib.error.HTTPError as exc:
            try:
                err = json.loads(exc.read()).get("error", {})
            except ValueError:
                err = {}
            raise ApiError(exc.code, err.get("code", "HTTP_ERROR"), err.get("message", str(exc))) from None

    def lines(self, path: str) -> Iterator[dict[str, Any]]:
        try:
            with urllib.request.urlopen(self._request("GET", path), timeout=self.timeout_s) as resp:
                for raw in resp:
                    if raw.strip():
                        yield json.loads(raw)
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, "HTTP_ERROR", str(exc)) from None
