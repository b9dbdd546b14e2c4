"""A local fake of the Gemini REST API, so tests drive the real ``google-genai`` SDK end to end.

It speaks ``POST /v1beta/models/{model}:generateContent`` and
``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (camelCase JSON, SSE events
``data: {...}\\r\\n\\r\\n`` over chunked HTTP/1.1), checks the ``x-goog-api-key`` header, and is as
strict as Gemini 3 about thought signatures: every functionCall it returns carries a
``thoughtSignature`` (base64 of random bytes), and a later request that replays that call
without the same signature bytes gets HTTP 400 INVALID_ARGUMENT.

Answers come from a queue of scripted items (``Reply`` or ``Fail``), or, when the queue is empty,
from ``handler`` (a function of the ``Received`` request). Every request is recorded.

Example::

    from tests.fakes.fake_gemini import FakeGemini, Reply, call, thought

    with FakeGemini() as fake:
        fake.push(Reply([thought("Checking the weather."), call("get_weather", {"city": "Paris"})]),
                  Reply.text("It is sunny in Paris."))
        model = GeminiModel(fake.settings())      # or: monkeypatch env with fake.env()
        ...
        assert fake.requests[0].headers["x-goog-api-key"] == fake.api_key
        fake.assert_complete()
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import itertools
import json
import os
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from devfakes.loopback import LoopbackServer
from shared.config import Settings

WirePart = dict[str, Any]
AUTO: Literal["auto"] = "auto"
_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 408: "DEADLINE_EXCEEDED", 429: "RESOURCE_EXHAUSTED",
                 500: "INTERNAL", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def text(value: str, *, signature: str | None = None) -> WirePart:
    """A visible text part (``signature``: an explicit base64 thoughtSignature to attach)."""
    return _with_signature({"text": value}, signature)


def thought(value: str, *, signature: str | None = None) -> WirePart:
    """A thought-summary part (``thought: true``)."""
    return _with_signature({"text": value, "thought": True}, signature)


def call(name: str, args: dict[str, Any] | None = None, *, id: str | None = AUTO,
         signed: bool = True) -> WirePart:
    """A functionCall part. ``id="auto"`` gets a fresh id; ``signed`` gets a fresh signature."""
    part: WirePart = {"functionCall": {"name": name, "args": args or {}}}
    if id is not None:
        part["functionCall"]["id"] = id
    if not signed:
        part["_unsigned"] = True
    return part


def inline(data: bytes, mime_type: str, *, name: str | None = None) -> WirePart:
    """A file part with its bytes (``inlineData``; ``name``: its ``displayName``)."""
    blob: dict[str, Any] = {"mimeType": mime_type, "data": base64.b64encode(data).decode("ascii")}
    if name is not None:
        blob["displayName"] = name
    return {"inlineData": blob}


def file_ref(uri: str, mime_type: str, *, name: str | None = None) -> WirePart:
    """A file part by reference (``fileData``)."""
    ref: dict[str, Any] = {"fileUri": uri, "mimeType": mime_type}
    if name is not None:
        ref["displayName"] = name
    return {"fileData": ref}


def grounding(*sources: tuple[str, str], queries: list[str] | None = None) -> dict[str, Any]:
    """A ``groundingMetadata`` object for ``sources`` (title, uri), as Google Search grounding
    returns it: served only when the request enabled the ``googleSearch`` tool."""
    return {"webSearchQueries": list(queries or []),
            "groundingChunks": [{"web": {"uri": uri, "title": title}} for title, uri in sources],
            "searchEntryPoint": {"renderedContent": "<div class=\"fake-search-chips\"></div>"}}


def usage(prompt: int = 0, output: int = 0, thinking: int = 0) -> dict[str, int]:
    """A ``usageMetadata`` object (camelCase, as the API sends it)."""
    meta = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output + thinking}
    if thinking:
        meta["thoughtsTokenCount"] = thinking
    return meta


@dataclass
class Reply:
    """One scripted answer. ``break_after``: a stream sends that many events, then drops the
    connection; ``delay_s``: wait before answering; ``candidates=False``: answer without any
    candidate (with ``prompt_feedback``, a blocked prompt)."""

    parts: list[WirePart]
    usage: dict[str, int] | None = None
    finish_reason: str = "STOP"
    delay_s: float = 0.0
    break_after: int | None = None
    candidates: bool = True
    prompt_feedback: dict[str, Any] | None = None
    model_version: str = "fake-gemini-3"
    grounding: dict[str, Any] | None = None

    @staticmethod
    def text(value: str, **kwargs: Any) -> Reply:
        return Reply([text(value)], **kwargs)

    @staticmethod
    def blocked(reason: str = "SAFETY") -> Reply:
        return Reply([], candidates=False, prompt_feedback={"blockReason": reason})


@dataclass
class Fail:
    """One scripted HTTP error with a Google-style body ``{"error": {code, message, status}}``."""

    status: int
    message: str = "scripted failure"
    delay_s: float = 0.0


Script = Reply | Fail
Handler = Callable[["Received"], Script]


@dataclass
class Received:
    """A request as the fake saw it. ``json`` is the body as sent; ``body`` is the same with every
    field name in lowerCamelCase (the API accepts proto field names in either case, and the SDK
    sends some nested ones in snake_case); user data (args, response, JSON schemas) is untouched.
    ``rejected`` says why the fake refused it (None if served); ``response`` is the complete
    (unstreamed) response JSON it answered with."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    json: dict[str, Any]
    model: str | None = None
    stream: bool = False
    rejected: str | None = None
    response: dict[str, Any] | None = None

    @property
    def body(self) -> dict[str, Any]:
        camel: dict[str, Any] = _camelize(self.json)
        return camel

    @property
    def system_instruction(self) -> str:
        """The text of the request's system instruction ("" without one)."""
        parts = (self.body.get("systemInstruction") or {}).get("parts") or [{}]
        return str(parts[0].get("text", ""))

    def function_response(self, name: str) -> dict[str, Any] | None:
        """The response the request carries for the function call ``name`` (None: not answered yet)."""
        for content in self.body.get("contents", []):
            for part in content.get("parts", []):
                fr = part.get("functionResponse")
                if fr and fr.get("name") == name:
                    return fr.get("response")  # type: ignore[no-any-return]
        return None

    @property
    def google_search(self) -> bool:
        """Whether the request enables Gemini's built-in Google Search tool."""
        return any(isinstance(t, dict) and "googleSearch" in t for t in self.body.get("tools") or [])


class FakeGemini(LoopbackServer):
    """The fake server; ``start()``/``close()`` or use as a context manager. See the module doc."""

    def __init__(self, *, api_key: str = "fake-gemini-key", model: str = "gemini-3-flash-preview",
                 chunks_per_text: int = 3) -> None:
        self.api_key = api_key
        self.model = model
        self.chunks_per_text = chunks_per_text
        self.handler: Handler | None = None
        self.requests: list[Received] = []
        self._queue: deque[Script] = deque()
        self._signatures: dict[str, bytes] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()

    # lifecycle ---------------------------------------------------------------------------
    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_class(self)

    def close(self) -> None:
        self._closing.set()  # a delayed chunk stops waiting
        super().close()

    def drop_connections(self) -> None:
        with self._lock:
            for conn in self._connections:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

    @property
    def base_url(self) -> str:
        return self.root

    def settings(self, base: Settings | None = None, **overrides: Any) -> Settings:
        """``Settings`` that point the Gemini adapter here (API-key mode), plus ``overrides``."""
        values: dict[str, Any] = {"gemini_api_key": self.api_key, "gemini_base_url": self.base_url,
                                  "gemini_model": self.model, "gemini_use_vertex": False}
        return dataclasses.replace(base or Settings(), **{**values, **overrides})

    def env(self) -> dict[str, str]:
        """Environment variables that point ``Settings.from_env()`` (or a subprocess) here."""
        return {"GEMINI_API_KEY": self.api_key, "GEMINI_BASE_URL": self.base_url,
                "GEMINI_MODEL": self.model, "GEMINI_USE_VERTEX": "false"}

    # scripting ---------------------------------------------------------------------------
    def push(self, *items: Script) -> None:
        """Queue answers, served in order, one per accepted request."""
        with self._lock:
            self._queue.extend(items)

    def reset(self) -> None:
        """Forget the queue, the handler, the recorded requests and the issued signatures."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self._signatures.clear()
            self.handler = None

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    def assert_complete(self) -> None:
        """Every scripted answer was used and no request was rejected."""
        rejected = [r.rejected for r in self.requests if r.rejected]
        assert not self.remaining, f"FakeGemini: {self.remaining} scripted answer(s) never requested"
        assert not rejected, f"FakeGemini rejected requests: {rejected}"

    # serving (called from handler threads) -------------------------------------------------
    def _next(self, received: Received) -> Script:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            handler = self.handler
        if handler is not None:
            return handler(received)
        return Fail(400, "FakeGemini: no scripted answer left for this request")

    def _check(self, received: Received) -> Fail | None:
        if received.headers.get("x-goog-api-key") != self.api_key:
            return Fail(400, "API key not valid. Please pass a valid API key.")
        if received.model != self.model:
            return Fail(404, f"models/{received.model} is not found for API version v1beta")
        contents = received.body.get("contents")
        if not isinstance(contents, list) or not contents:
            return Fail(400, "* GenerateContentRequest.contents: contents is not specified")
        for i, content in enumerate(contents):
            if content.get("role") not in ("user", "model") or not content.get("parts"):
                return Fail(400, f"* GenerateContentRequest.contents[{i}]: needs a role and parts")
            if content["role"] != "model":
                continue
            for j, part in enumerate(content["parts"]):
                problem = self._signature_problem(part)
                if problem:
                    return Fail(400, f"{problem} (contents[{i}].parts[{j}])")
        return None

    def _signature_problem(self, part: WirePart) -> str | None:
        fc = part.get("functionCall")
        if fc is None:
            return None
        with self._lock:
            issued = self._signatures.get(_call_key(fc))
        if issued is None:
            return None
        sent = part.get("thoughtSignature")
        if sent is None:
            return (f"Function call is missing a thought_signature in functionCall parts "
                    f"(function `{fc.get('name')}`). Replay the model's parts verbatim.")
        if _b64decode(sent) != issued:
            return "Corrupted thought signature: thought_signature does not match the one issued."
        return None

    def _materialize(self, reply: Reply, *, google_search: bool = False) -> dict[str, Any]:
        """The complete response for ``reply``: ids and signatures issued and remembered; its
        grounding metadata only when the request enabled Google Search."""
        parts: list[WirePart] = []
        for raw in reply.parts:
            part = {k: v for k, v in raw.items() if k != "_unsigned"}
            fc = part.get("functionCall")
            if fc is not None:
                fc = dict(fc)
                if fc.get("id") == AUTO:
                    fc["id"] = f"fc_{next(self._ids)}"
                part["functionCall"] = fc
                if not raw.get("_unsigned") and "thoughtSignature" not in part:
                    part["thoughtSignature"] = base64.b64encode(os.urandom(24)).decode("ascii")
                if "thoughtSignature" in part:
                    with self._lock:
                        self._signatures[_call_key(fc)] = _b64decode(part["thoughtSignature"])
            parts.append(part)
        body: dict[str, Any] = {"modelVersion": reply.model_version, "responseId": f"resp_{next(self._ids)}",
                                "usageMetadata": reply.usage or _default_usage(parts)}
        if reply.candidates:
            candidate: dict[str, Any] = {"finishReason": reply.finish_reason, "index": 0}
            if parts:
                candidate["content"] = {"role": "model", "parts": parts}
            if reply.grounding is not None and google_search:
                candidate["groundingMetadata"] = reply.grounding
            body["candidates"] = [candidate]
        if reply.prompt_feedback is not None:
            body["promptFeedback"] = reply.prompt_feedback
        return body

    def _events(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Split a complete response into stream events, as the API streams it."""
        head = {"modelVersion": body["modelVersion"], "responseId": body["responseId"]}
        candidates = body.get("candidates")
        parts = candidates[0].get("content", {}).get("parts", []) if candidates else []
        events: list[dict[str, Any]] = []
        for part in parts:
            if "text" in part:
                pieces = _split(part["text"], self.chunks_per_text)
                for k, piece in enumerate(pieces):
                    chunk = {**part, "text": piece}
                    if k < len(pieces) - 1:
                        chunk.pop("thoughtSignature", None)  # the signature rides on the last piece
                    events.append({"candidates": [{"content": {"role": "model", "parts": [chunk]},
                                                   "index": 0}], **head})
            else:
                events.append({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
                               **head})
        last = {k: v for k, v in body.items() if k != "candidates"}
        if candidates:
            if events:
                events[-1]["candidates"][0]["finishReason"] = candidates[0]["finishReason"]
                if "groundingMetadata" in candidates[0]:
                    events[-1]["candidates"][0]["groundingMetadata"] = candidates[0]["groundingMetadata"]
                events[-1].update(last)
            else:
                events.append({**last, "candidates": [dict(candidates[0])]})
        else:
            events.append(last)
        return events


def _handler_class(fake: FakeGemini) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30
        # Keep-alive connections: without TCP_NODELAY, the small writes of a response wait ~40 ms
        # for the client's delayed ACK on every call after the first (a stall the real API has not).
        disable_nagle_algorithm = True

        def setup(self) -> None:
            super().setup()
            with fake._lock:
                fake._connections.add(self.connection)

        def finish(self) -> None:
            with fake._lock:
                fake._connections.discard(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

        def do_POST(self) -> None:
            try:
                self._serve()
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                self.close_connection = True  # the client gave up (e.g. its timeout): nothing to tell

        def _serve(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            url = urlsplit(self.path)
            model, _, method = url.path.removeprefix("/v1beta/models/").partition(":")
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {}
            received = Received(method=method, path=url.path, query=parse_qs(url.query),
                                headers={k.lower(): v for k, v in self.headers.items()}, json=body,
                                model=model or None, stream=method == "streamGenerateContent")
            with fake._lock:
                fake.requests.append(received)
            if not url.path.startswith("/v1beta/models/") or method not in (
                    "generateContent", "streamGenerateContent") or (
                    received.stream and received.query.get("alt") != ["sse"]):
                received.rejected = f"unknown path {self.path}"
                return self._error(Fail(404, f"FakeGemini does not serve {self.path}"))
            problem = fake._check(received)
            if problem is not None:
                received.rejected = problem.message
                return self._error(problem)
            item = fake._next(received)
            if item.delay_s and fake._closing.wait(item.delay_s):
                self.close_connection = True
                return None
            if isinstance(item, Fail):
                return self._error(item)
            response = fake._materialize(item, google_search=received.google_search)
            received.response = response
            if not received.stream:
                return self._send(200, response)
            events = fake._events(response)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for n, event in enumerate(events):
                if item.break_after is not None and n >= item.break_after:
                    self.wfile.flush()
                    self.close_connection = True  # no terminating chunk: an incomplete body
                    return None
                data = f"data: {json.dumps(event)}\r\n\r\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return None

        def _error(self, fail: Fail) -> None:
            status = _STATUS_NAMES.get(fail.status, "UNKNOWN")
            self._send(fail.status, {"error": {"code": fail.status, "message": fail.message, "status": status}})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return _Handler


# Fields whose values are user data (google.protobuf.Struct or a JSON schema), not messages.
_OPAQUE = frozenset({"args", "response", "parametersJsonSchema", "responseJsonSchema", "properties"})


def _camelize(value: Any) -> Any:
    if isinstance(value, list):
        return [_camelize(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        name = head + "".join(w[:1].upper() + w[1:] for w in rest)
        out[name] = item if name in _OPAQUE else _camelize(item)
    return out


def _with_signature(part: WirePart, signature: str | None) -> WirePart:
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def _call_key(fc: dict[str, Any]) -> str:
    return json.dumps([fc.get("id"), fc.get("name"), fc.get("args") or {}], sort_keys=True)


def _b64decode(value: str) -> bytes:
    normal = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(normal + "=" * (-len(normal) % 4), validate=True)
    except (binascii.Error, ValueError):
        return b"<invalid base64>" + value.encode()


def _split(value: str, pieces: int) -> list[str]:
    """Split text into about ``pieces`` chunks at word boundaries (concatenation is lossless)."""
    words = value.split(" ")
    if pieces <= 1 or len(words) < 2:
        return [value]
    size = -(-len(words) // pieces)
    groups = [words[i:i + size] for i in range(0, len(words), size)]
    return [" ".join(g) + (" " if k < len(groups) - 1 else "") for k, g in enumerate(groups)]


def _default_usage(parts: list[WirePart]) -> dict[str, int]:
    visible = sum(len(p.get("text", "").split()) for p in parts if not p.get("thought"))
    visible += 5 * sum(1 for p in parts if "functionCall" in p)
    thinking = sum(len(p.get("text", "").split()) for p in parts if p.get("thought"))
    return usage(prompt=10, output=visible, thinking=thinking)
