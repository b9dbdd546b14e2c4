"""Gemini adapter over the official ``google-genai`` SDK; the only module that imports it.

``GeminiModel.generate`` streams one model turn (``generate_content_stream``), forwards text and
thought deltas as they arrive, and returns the turn *losslessly*: text, thought, file (``inlineData``,
``fileData``) and functionCall parts with their ids, args and ``thoughtSignature`` (SDK bytes <->
our base64 text), so a run can store it and replay it verbatim in another process. SDK and
transport failures are mapped to ``ModelError`` / ``ModelTimeout`` here; retries (exponential
backoff with jitter) are ours, the SDK's own retry is left off.

Thread safety: one ``genai.Client`` serves every thread of the process. It holds a single
``httpx.Client`` (a thread-safe connection pool), copies its ``HttpOptions`` for each request
before applying per-request options (our timeout), guards credential refresh (Vertex AI) with a
lock, and keeps no per-call state. ``GeminiModel`` itself holds only immutable settings.
"""

from __future__ import annotations

import base64
import math
import random
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from shared.config import Settings
from shared.errors import ConfigurationError, ModelError, ModelTimeout
from shared.formats import b64decode_any
from shared.models.base import (
    Blob,
    DeltaSink,
    FileData,
    FunctionCall,
    GroundedAnswer,
    ModelRequest,
    ModelResponse,
    Part,
    SearchSource,
    Turn,
    Usage,
)

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
SEARCH_INSTRUCTION = ("Answer the question using Google Search. Be concise and factual, say when the sources "
                      "disagree or do not answer it, and include dates and version numbers where they matter.")
MAX_SEARCH_SOURCES = 10
# A turn that ended for one of these reasons is a normal answer; any other reason is a failure.
_NORMAL_FINISH = frozenset({"STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED"})
# The model may well produce a valid call on a second try.
_RETRYABLE_FINISH = frozenset({"MALFORMED_FUNCTION_CALL"})


def _is_one_of(exc: BaseException, names: tuple[str, ...]) -> bool:
    """Whether ``exc`` is an instance of one of the exception classes ``names`` of the HTTP stacks
    the SDK may use (``httpx2`` by default, else ``httpx``; ``requests`` under google-auth mTLS).

    Looked up in the modules already imported: an exception of a module's class can only exist once
    that module is loaded, so none of them must be installed, and none is imported just to classify
    an error (``requests`` alone costs ~30 ms of cold start to a function that never uses it)."""
    for dotted in names:
        module_name, _, attr = dotted.rpartition(".")
        cls = getattr(sys.modules.get(module_name), attr, None)
        if isinstance(cls, type) and issubclass(cls, BaseException) and isinstance(exc, cls):
            return True
    return False


_TIMEOUTS = ("httpx2.TimeoutException", "httpx.TimeoutException", "requests.exceptions.Timeout")
_TRANSPORT_ERRORS = ("httpx2.TransportError", "httpx.TransportError", "requests.exceptions.ConnectionError",
                     "requests.exceptions.ChunkedEncodingError")


def create_client(settings: Settings) -> genai.Client:
    """The SDK client for ``settings``: Vertex AI (ADC credentials) or the Gemini API key."""
    base_url = settings.gemini_base_url
    if settings.gemini_use_vertex:
        options = types.HttpOptions(base_url=base_url) if base_url else None
        return genai.Client(vertexai=True, project=settings.google_cloud_project,
                            location=settings.gemini_location, http_options=options)
    if not settings.gemini_api_key:
        raise ConfigurationError("Gemini needs GEMINI_API_KEY or GEMINI_USE_VERTEX=true")
    options = types.HttpOptions(base_url=base_url, api_version="v1beta") if base_url else None
    return genai.Client(vertexai=False, api_key=settings.gemini_api_key, http_options=options)


T = TypeVar("T")


class _NotRetried(Exception):
    """Raised by an attempt whose ``error`` must reach the caller as it is (not retried)."""

    def __init__(self, error: ModelError) -> None:
        super().__init__(str(error))
        self.error = error


class GeminiModel:
    """The ``Model`` for Gemini. Create one per process (``shared.models.factory`` does) and share it.

    ``MODEL_TIMEOUT_S`` bounds each HTTP attempt; the whole call including retries is bounded by
    ``request.timeout_s`` (or ``MODEL_TIMEOUT_S`` when the request has none). At most
    ``MODEL_MAX_RETRIES`` retries follow a retryable failure (408/429/5xx, connection errors,
    attempt timeouts), and never once a delta was emitted: that failure is raised instead.
    """

    def __init__(self, settings: Settings, *, client: genai.Client | None = None,
                 backoff_initial_s: float = 0.5, backoff_max_s: float = 8.0) -> None:
        self._settings = settings
        self._client = client if client is not None else create_client(settings)
        self._backoff_initial_s = backoff_initial_s
        self._backoff_max_s = backoff_max_s

    @property
    def name(self) -> str:
        return self._settings.gemini_model

    def close(self) -> None:
        """Release the HTTP connections (tests and shutdown; a process normally keeps its model)."""
        self._client.close()

    def __enter__(self) -> GeminiModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        budget = request.timeout_s if request.timeout_s is not None else self._settings.model_timeout_s
        contents = to_contents(request.turns)

        def attempt(n: int, remaining: float, deadline: float) -> ModelResponse:
            stream = _TurnAssembler(on_delta)
            try:
                self._stream(contents, self._config(request, min(self._settings.model_timeout_s, remaining)),
                             stream, deadline)
                response = stream.finish()
            except ModelError as err:
                if err.retryable and stream.emitted:
                    # Retrying would send the caller the same deltas twice: let it decide.
                    final = type(err)(f"{err} (not retried: partial output was already streamed)",
                                      status=err.status, retryable=True)
                    final.__cause__ = err
                    raise _NotRetried(final) from err
                raise
            return response.model_copy(update={"usage": response.usage.model_copy(update={"requests": n})})

        return self._with_retries(budget, "", attempt)

    def grounded_search(self, query: str, *, timeout_s: float | None = None) -> GroundedAnswer:
        """One model call with Gemini's built-in Google Search tool: the answer, the web pages it is
        grounded on (``groundingMetadata.groundingChunks``) and the queries the model ran.

        Same time budget and retries as :meth:`generate` (not streamed: nothing is shown until the
        answer is complete). A ``ModelError`` when Gemini fails or answers nothing.
        """

        def attempt(n: int, remaining: float, deadline: float) -> GroundedAnswer:
            config = types.GenerateContentConfig(
                system_instruction=SEARCH_INSTRUCTION,
                tools=[types.Tool(google_search=types.GoogleSearch())],
                max_output_tokens=self._settings.model_max_output_tokens,  # its maximum cost (docs/budgets.md)
                http_options=types.HttpOptions(
                    timeout=max(1, math.ceil(min(self._settings.model_timeout_s, remaining) * 1000))))
            try:
                response = self._client.models.generate_content(
                    model=self._settings.gemini_model, contents=query, config=config)
            except Exception as exc:  # only SDK code runs here: map everything it raises
                raise map_error(exc) from exc
            answer = _grounded_answer(response)
            return answer.model_copy(update={"usage": answer.usage.model_copy(update={"requests": n})})

        return self._with_retries(timeout_s if timeout_s is not None else self._settings.model_timeout_s,
                                  "the search ", attempt)

    def _with_retries(self, budget: float, what: str, attempt: Callable[[int, float, float], T]) -> T:
        """``attempt(n, remaining, deadline)`` (n = 1, 2, ...) until it answers within ``budget``
        seconds: a retryable ``ModelError`` is retried after a backoff, up to ``MODEL_MAX_RETRIES``
        times, while the backoff ends before the deadline."""
        deadline = time.monotonic() + budget
        max_attempts = 1 + max(0, self._settings.model_max_retries)
        n = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ModelTimeout(f"Gemini did not answer {what}within {budget:g}s", retryable=True)
            n += 1
            try:
                return attempt(n, remaining, deadline)
            except _NotRetried as final:
                raise final.error from final.error.__cause__
            except ModelError as err:
                if not err.retryable or n >= max_attempts:
                    raise
                delay = self._backoff(n)
                if time.monotonic() + delay >= deadline:
                    raise
                time.sleep(delay)

    def _backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff: uniform in [0, initial * 2^(attempt-1)], capped."""
        return random.uniform(0, min(self._backoff_max_s, self._backoff_initial_s * 2 ** (attempt - 1)))

    def _config(self, request: ModelRequest, attempt_timeout_s: float) -> types.GenerateContentConfig:
        tools = None
        if request.tools:
            tools = [types.Tool(function_declarations=[
                types.FunctionDeclaration(name=t.name, description=t.description,
                                          parameters_json_schema=t.parameters)
                for t in request.tools
            ])]
        schema = request.response_schema
        return types.GenerateContentConfig(
            system_instruction=request.system_instruction or None,
            temperature=request.temperature,
            max_output_tokens=self._settings.model_max_output_tokens,
            tools=tools,
            response_mime_type="application/json" if schema is not None else None,
            response_json_schema=schema,
            thinking_config=types.ThinkingConfig(include_thoughts=True),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            # Continuation hops would be requests our retry budget does not see.
            automatic_continuation=False,
            # The SDK's timeout is in milliseconds.
            http_options=types.HttpOptions(timeout=max(1, math.ceil(attempt_timeout_s * 1000))),
        )

    def _stream(self, contents: list[types.Content], config: types.GenerateContentConfig,
                stream: _TurnAssembler, deadline: float) -> None:
        chunks: Iterator[types.GenerateContentResponse] = self._client.models.generate_content_stream(
            model=self._settings.gemini_model, contents=contents, config=config)
        try:
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
                except Exception as exc:  # only SDK code runs inside next(): map everything it raises
                    raise map_error(exc) from exc
                stream.add(chunk)  # calls on_delta, whose own errors propagate unchanged
                if time.monotonic() > deadline:
                    raise ModelTimeout("Gemini stream exceeded the call's deadline", retryable=True)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()


def map_error(exc: BaseException) -> ModelError:
    """Translate an SDK or transport exception into our error family."""
    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code) if exc.code else None
        retryable = code in RETRYABLE_STATUSES
        message = f"Gemini API error {code} {exc.status or ''}: {exc.message or exc.details}"
        if code == 408:
            return ModelTimeout(message, status=code, retryable=True)
        return ModelError(message, status=code, retryable=retryable)
    if _is_one_of(exc, _TIMEOUTS):
        return ModelTimeout(f"Gemini did not answer in time ({type(exc).__name__})", retryable=True)
    if _is_one_of(exc, _TRANSPORT_ERRORS):
        return ModelError(f"connection to Gemini failed: {type(exc).__name__}: {exc}", retryable=True)
    return ModelError(f"unexpected failure talking to Gemini: {type(exc).__name__}: {exc}")


class _TurnAssembler:
    """Builds one model turn from streamed chunks and forwards text deltas as they arrive.

    Consecutive text chunks of the same kind (thought or not) merge into one part until a chunk
    carries a ``thoughtSignature``; that chunk closes the part, so the signature stays on it.
    functionCall parts arrive whole and are kept as they are, signature included.
    """

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._on_delta = on_delta
        self.emitted = False
        self.parts: list[Part] = []
        self.candidates = 0
        self.block: str | None = None
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.model_version: str | None = None
        self.usage: types.GenerateContentResponseUsageMetadata | None = None

    def add(self, chunk: types.GenerateContentResponse) -> None:
        if chunk.usage_metadata is not None:
            self.usage = chunk.usage_metadata  # each chunk carries the running total
        if chunk.model_version:
            self.model_version = chunk.model_version
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self.block = f"{_enum_text(feedback.block_reason)} {feedback.block_reason_message or ''}".strip()
        if not chunk.candidates:
            return
        self.candidates += 1
        candidate = chunk.candidates[0]
        if candidate.finish_reason is not None:
            self.finish_reason = _enum_text(candidate.finish_reason)
            self.finish_message = candidate.finish_message
        if candidate.content is not None and candidate.content.parts:
            for part in candidate.content.parts:
                self._add_part(part)

    def _add_part(self, part: types.Part) -> None:
        signature = _signature_text(part.thought_signature)
        unsupported = [name for name in ("executable_code", "code_execution_result", "function_response")
                       if getattr(part, name, None) is not None]
        if unsupported:
            raise ModelError(f"Gemini answered with a part this runtime cannot store: {unsupported}")
        if part.inline_data is not None or part.file_data is not None:
            self.parts.append(_file_part(part, signature))
            return
        if part.function_call is not None:
            call = part.function_call
            if not call.name:
                raise ModelError("Gemini answered with a functionCall without a name", retryable=True)
            self.parts.append(Part(
                function_call=FunctionCall(name=call.name, args=dict(call.args or {}), id=call.id),
                thought_signature=signature))
            return
        if part.text is None:
            if signature is not None:
                self.parts.append(Part(thought_signature=signature))
            return
        thought = bool(part.thought)
        if part.text and self._on_delta is not None:
            self.emitted = True
            self._on_delta("thought" if thought else "text", part.text)
        last = self.parts[-1] if self.parts else None
        if (last is not None and last.text is not None and last.function_call is None
                and last.thought == thought and last.thought_signature is None):
            self.parts[-1] = last.model_copy(update={"text": last.text + part.text,
                                                     "thought_signature": signature})
        else:
            self.parts.append(Part(text=part.text, thought=thought, thought_signature=signature))

    def finish(self) -> ModelResponse:
        if self.candidates == 0:
            if self.block:
                raise ModelError(f"Gemini blocked the prompt: {self.block}")
            raise ModelError("Gemini returned no candidates", retryable=True)
        reason = self.finish_reason
        if reason is None:
            raise ModelError("Gemini stream ended without a finish reason", retryable=True)
        if reason not in _NORMAL_FINISH:
            detail = f": {self.finish_message}" if self.finish_message else ""
            raise ModelError(f"Gemini stopped with finish_reason {reason}{detail}",
                             retryable=reason in _RETRYABLE_FINISH)
        if not self.parts:
            raise ModelError(f"Gemini returned an empty response (finish_reason {reason})", retryable=True)
        return ModelResponse(turn=Turn(role="model", parts=self.parts), usage=_usage(self.usage),
                             finish_reason=reason, model_version=self.model_version)


def _grounded_answer(response: types.GenerateContentResponse) -> GroundedAnswer:
    """Text, sources and queries of a grounded (non-streamed) response."""
    feedback = response.prompt_feedback
    if not response.candidates:
        if feedback is not None and feedback.block_reason is not None:
            raise ModelError(f"Gemini blocked the search: {_enum_text(feedback.block_reason)}")
        raise ModelError("Gemini returned no candidates for the search", retryable=True)
    candidate = response.candidates[0]
    reason = _enum_text(candidate.finish_reason) if candidate.finish_reason is not None else None
    if reason is not None and reason not in _NORMAL_FINISH:
        raise ModelError(f"Gemini stopped the search with finish_reason {reason}")
    parts = candidate.content.parts if candidate.content is not None and candidate.content.parts else []
    text = "".join(p.text for p in parts if p.text and not p.thought).strip()
    if not text:
        raise ModelError("Gemini returned an empty search answer", retryable=True)
    meta = candidate.grounding_metadata
    sources: list[SearchSource] = []
    seen: set[str] = set()
    for chunk in (meta.grounding_chunks or []) if meta is not None else []:
        web = chunk.web
        if web is None or not web.uri or web.uri in seen:
            continue
        seen.add(web.uri)
        sources.append(SearchSource(title=web.title or web.domain or "", uri=web.uri))
    queries = list(meta.web_search_queries or []) if meta is not None else []
    return GroundedAnswer(text=text, sources=sources[:MAX_SEARCH_SOURCES], queries=queries,
                          usage=_usage(response.usage_metadata), model_version=response.model_version)


def _usage(meta: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    if meta is None:
        return Usage(requests=1)
    prompt = meta.prompt_token_count or 0
    output = meta.candidates_token_count or 0
    thinking = meta.thoughts_token_count or 0
    cached = meta.cached_content_token_count or 0
    total = meta.total_token_count or (prompt + output + thinking)
    return Usage(requests=1, input_tokens=prompt, output_tokens=output, thinking_tokens=thinking, cached_tokens=cached,
                 total_tokens=total)


def to_contents(turns: list[Turn]) -> list[types.Content]:
    """Our turns as SDK ``Content``, reproducing exactly the parts the model sent."""
    return [types.Content(role=t.role, parts=[_sdk_part(p) for p in t.parts]) for t in turns]


def _sdk_part(part: Part) -> types.Part:
    call = part.function_call
    answer = part.function_response
    blob, ref = part.inline_data, part.file_data
    # A file's name stays ours: the Gemini API takes no ``displayName`` on inline data or files.
    return types.Part(
        text=part.text,
        thought=True if part.thought else None,
        thought_signature=_signature_bytes(part.thought_signature),
        function_call=types.FunctionCall(name=call.name, args=call.args, id=call.id) if call else None,
        function_response=(types.FunctionResponse(name=answer.name, response=answer.response, id=answer.id)
                           if answer else None),
        inline_data=types.Blob(mime_type=blob.mime_type, data=b64decode_any(blob.data)) if blob else None,
        file_data=types.FileData(file_uri=ref.file_uri, mime_type=ref.mime_type) if ref else None,
    )


MAX_OUTPUT_FILE_BYTES = 512 * 1024
"""The largest file the model may answer with inline: a turn is stored as one document (Firestore
takes 1 MiB, the bytes are kept as base64 text)."""


def _file_part(part: types.Part, signature: str | None) -> Part:
    """A file the model answered with (``inlineData`` bytes or a ``fileData`` reference), kept
    whole with its name (``displayName``) and media type."""
    if part.inline_data is not None:
        blob = part.inline_data
        raw = blob.data or b""
        if len(raw) > MAX_OUTPUT_FILE_BYTES:
            raise ModelError(f"Gemini answered with a file of {len(raw)} bytes; this runtime keeps files "
                             f"of up to {MAX_OUTPUT_FILE_BYTES} bytes in a turn")
        return Part(inline_data=Blob(mime_type=blob.mime_type or "application/octet-stream",
                                     data=base64.b64encode(raw).decode("ascii"), display_name=blob.display_name),
                    thought_signature=signature)
    ref = part.file_data
    assert ref is not None
    if not ref.file_uri:
        raise ModelError("Gemini answered with a fileData part without a fileUri")
    return Part(file_data=FileData(file_uri=ref.file_uri, mime_type=ref.mime_type, display_name=ref.display_name),
                thought_signature=signature)


def _signature_text(raw: bytes | None) -> str | None:
    return base64.b64encode(raw).decode("ascii") if raw is not None else None


def _signature_bytes(text: str | None) -> bytes | None:
    """Decode a stored signature; accepts the standard and the URL-safe base64 alphabets."""
    if text is None:
        return None
    try:
        return b64decode_any(text)
    except ValueError as exc:
        raise ModelError(f"stored thought_signature is not base64: {text[:20]!r}") from exc


def _enum_text(value: Any) -> str:
    return str(getattr(value, "value", value))
