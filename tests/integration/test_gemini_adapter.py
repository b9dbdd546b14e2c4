"""GeminiModel through the real google-genai SDK against the local fake Gemini server."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import BaseModel

from shared.config import Settings
from shared.errors import ModelError, ModelTimeout
from shared.formats import b64decode_any
from shared.models.base import (
    Blob,
    DeltaKind,
    FileData,
    FunctionResponse,
    ModelRequest,
    ModelResponse,
    Part,
    ToolDeclaration,
    Turn,
    Usage,
)
from shared.models.factory import clear_model_cache, create_model
from shared.models.gemini import MAX_OUTPUT_FILE_BYTES, GeminiModel
from shared.models.offline import OfflineModel
from tests.fakes.fake_gemini import (
    Fail,
    FakeGemini,
    Received,
    Reply,
    call,
    file_ref,
    inline,
    text,
    thought,
    usage,
)

MakeModel = Callable[..., GeminiModel]


class WeatherArgs(BaseModel):
    city: str
    unit: str = "celsius"


class Forecast(BaseModel):
    city: str
    temp_c: float


WEATHER_TOOL = ToolDeclaration(name="get_weather", description="Current weather in a city.",
                               parameters=WeatherArgs.model_json_schema())


@pytest.fixture
def make_model(fake_gemini: FakeGemini) -> Iterator[MakeModel]:
    """GeminiModel factory pointed at the fake, with tiny backoff; closes what it made."""
    made: list[GeminiModel] = []

    def make(**overrides: Any) -> GeminiModel:
        model = GeminiModel(fake_gemini.settings(**overrides), backoff_initial_s=0.01, backoff_max_s=0.05)
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


def ask(text_: str, **kwargs: Any) -> ModelRequest:
    return ModelRequest(turns=[Turn(role="user", parts=[Part(text=text_)])], **kwargs)


def collect(model: GeminiModel, request: ModelRequest) -> tuple[ModelResponse, list[tuple[DeltaKind, str]]]:
    deltas: list[tuple[DeltaKind, str]] = []
    response = model.generate(request, lambda kind, chunk: deltas.append((kind, chunk)))
    return response, deltas


def normalized(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Wire parts with signatures decoded to bytes (the SDK re-encodes them URL-safe)."""
    out = []
    for part in parts:
        part = dict(part)
        if "thoughtSignature" in part:
            sig = part["thoughtSignature"]
            part["thoughtSignature"] = base64.urlsafe_b64decode(
                sig.replace("+", "-").replace("/", "_") + "=" * (-len(sig) % 4))
        out.append(part)
    return out


def camel(value: Any) -> Any:
    """JSON with every key in lowerCamelCase (proto JSON takes both spellings of a field)."""
    if isinstance(value, list):
        return [camel(v) for v in value]
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): camel(v) for k, v in value.items()}
    return value


def stored(turn: Turn) -> Turn:
    """The turn after a trip through the run store's JSON."""
    return Turn.model_validate(json.loads(json.dumps(turn.model_dump(mode="json"))))


def test_text_streams_deltas_in_order(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    answer = "The quick brown fox jumps over the lazy dog."
    fake_gemini.push(Reply.text(answer))
    response, deltas = collect(make_model(), ask("Say the pangram.", system_instruction="Be brief."))

    assert len(deltas) >= 3
    assert all(kind == "text" for kind, _ in deltas)
    assert "".join(chunk for _, chunk in deltas) == answer
    assert response.turn == Turn(role="model", parts=[Part(text=answer)])
    assert response.finish_reason == "STOP"
    assert response.model_version == "fake-gemini-3"
    sent = fake_gemini.requests[0]
    assert sent.path == f"/v1beta/models/{fake_gemini.model}:streamGenerateContent"
    assert sent.query["alt"] == ["sse"]
    assert sent.json["contents"] == [{"role": "user", "parts": [{"text": "Say the pangram."}]}]
    assert sent.json["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    fake_gemini.assert_complete()


def test_api_key_header_is_sent_and_checked(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply.text("hello"))
    make_model().generate(ask("hi"))
    assert fake_gemini.requests[0].headers["x-goog-api-key"] == fake_gemini.api_key

    with pytest.raises(ModelError) as err:
        make_model(gemini_api_key="wrong-key").generate(ask("hi"))
    assert err.value.status == 400 and not err.value.retryable
    assert "API key not valid" in str(err.value)


def test_thought_deltas_and_usage_with_thinking_tokens(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply([thought("Let me work this out carefully"), text("The answer is 42")],
                           usage=usage(prompt=7, output=4, thinking=6)))
    response, deltas = collect(make_model(), ask("What is six times seven?"))

    kinds = [kind for kind, _ in deltas]
    assert kinds == sorted(kinds, key=lambda k: k != "thought")  # every thought delta before any text
    assert "".join(c for k, c in deltas if k == "thought") == "Let me work this out carefully"
    assert "".join(c for k, c in deltas if k == "text") == "The answer is 42"
    assert response.turn.parts == [Part(text="Let me work this out carefully", thought=True),
                                   Part(text="The answer is 42")]
    assert response.turn.text == "The answer is 42"
    assert response.usage == Usage(requests=1, input_tokens=7, output_tokens=4, thinking_tokens=6,
                                   total_tokens=17)
    assert fake_gemini.requests[0].body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True}


def test_function_call_signature_round_trips_through_the_store(
        fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    model = make_model()
    fake_gemini.push(Reply([thought("I should look the weather up"), call("get_weather", {"city": "Paris"})]),
                     Reply.text("It is sunny in Paris."))
    question = Turn(role="user", parts=[Part(text="Weather in Paris?")])
    first = model.generate(ModelRequest(turns=[question], tools=[WEATHER_TOOL]))

    declared = fake_gemini.requests[0].body["tools"]
    assert declared == [{"functionDeclarations": [{
        "name": "get_weather", "description": "Current weather in a city.",
        "parametersJsonSchema": WeatherArgs.model_json_schema()}]}]
    [fc] = first.turn.function_calls
    issued = fake_gemini.requests[0].response
    assert issued is not None
    issued_parts = issued["candidates"][0]["content"]["parts"]
    assert fc.id == issued_parts[1]["functionCall"]["id"]
    assert fc.args == {"city": "Paris"}
    assert first.turn.parts[1].thought_signature is not None

    model_turn = stored(first.turn)
    assert model_turn == first.turn
    result = Turn(role="user", parts=[Part(function_response=FunctionResponse(
        name="get_weather", response={"temp_c": 21}, id=fc.id))])
    second = model.generate(ModelRequest(turns=[question, model_turn, result], tools=[WEATHER_TOOL]))

    assert second.turn.text == "It is sunny in Paris."
    replay = fake_gemini.requests[1].body["contents"]
    assert normalized(replay[1]["parts"]) == normalized(issued_parts)  # verbatim, signature bytes included
    assert replay[2]["parts"] == [{"functionResponse": {"name": "get_weather", "response": {"temp_c": 21},
                                                        "id": fc.id}}]
    fake_gemini.assert_complete()


def test_file_parts_the_model_answers_with_are_kept_and_replayed_without_their_names(
        fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    """``inlineData`` bytes and ``fileData`` references come back whole (name, media type, bytes),
    survive the store, and go back to the model as they came minus ``displayName`` (the Gemini
    API takes none); a file too large for a stored turn is a model error."""
    model = make_model()
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    fake_gemini.push(Reply([text("Here:"), inline(png, "image/png", name="chart.png"),
                            file_ref("https://example.com/r.pdf", "application/pdf", name="r.pdf")]),
                     Reply.text("ok"))
    jpeg = Blob(mime_type="image/jpeg", data=base64.b64encode(b"jp").decode(), display_name="in.jpg")
    question = Turn(role="user", parts=[Part(text="Draw it"), Part(inline_data=jpeg)])
    first = model.generate(ask("x").model_copy(update={"turns": [question]}))
    assert first.turn.text == "Here:"
    assert first.turn.files == first.turn.parts[1:]
    blob, ref = first.turn.parts[1].inline_data, first.turn.parts[2].file_data
    assert blob == Blob(mime_type="image/png", data=base64.b64encode(png).decode(), display_name="chart.png")
    assert ref == FileData(file_uri="https://example.com/r.pdf", mime_type="application/pdf", display_name="r.pdf")
    # (The SDK writes the blob's fields as their proto names, which the API takes like camelCase.)
    assert camel(fake_gemini.requests[0].json["contents"][0]["parts"][1]) == {
        "inlineData": {"mimeType": "image/jpeg", "data": base64.b64encode(b"jp").decode()}}
    model.generate(ModelRequest(turns=[question, stored(first.turn), Turn(role="user", parts=[Part(text="thanks")])]))
    replay = camel(fake_gemini.requests[1].json["contents"][1]["parts"])
    assert b64decode_any(replay[1]["inlineData"].pop("data")) == png  # (URL-safe base64, as the SDK writes bytes)
    assert replay[1] == {"inlineData": {"mimeType": "image/png"}}
    assert replay[2] == {"fileData": {"fileUri": "https://example.com/r.pdf", "mimeType": "application/pdf"}}

    fake_gemini.push(Reply([inline(b"x" * (MAX_OUTPUT_FILE_BYTES + 1), "image/png")]))
    with pytest.raises(ModelError) as err:
        model.generate(ask("a big one"))
    assert "keeps files of up to" in str(err.value) and not err.value.retryable
    fake_gemini.assert_complete()


def test_dropping_the_signature_is_rejected_and_not_retried(
        fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    model = make_model()
    fake_gemini.push(Reply([call("get_weather", {"city": "Oslo"})]), Reply.text("never served"))
    question = Turn(role="user", parts=[Part(text="Weather in Oslo?")])
    first = model.generate(ModelRequest(turns=[question], tools=[WEATHER_TOOL]))
    [fc] = first.turn.function_calls
    unsigned = Turn(role="model", parts=[p.model_copy(update={"thought_signature": None})
                                         for p in first.turn.parts])
    result = Turn(role="user", parts=[Part(function_response=FunctionResponse(
        name="get_weather", response={"temp_c": -3}, id=fc.id))])

    with pytest.raises(ModelError) as err:
        model.generate(ModelRequest(turns=[question, unsigned, result], tools=[WEATHER_TOOL]))

    assert err.value.status == 400 and not err.value.retryable
    assert "thought_signature" in str(err.value)
    assert len(fake_gemini.requests) == 2
    assert "thought_signature" in (fake_gemini.requests[1].rejected or "")
    assert fake_gemini.remaining == 1


def test_parallel_calls_keep_order_ids_and_signatures(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    model = make_model()
    fake_gemini.push(Reply([call("get_weather", {"city": "Rome"}), call("get_weather", {"city": "Lima"}),
                            call("get_time", {"zone": "UTC"})]),
                     Reply.text("Done."))
    question = Turn(role="user", parts=[Part(text="Rome, Lima and the time?")])
    first = model.generate(ModelRequest(turns=[question]))

    issued = fake_gemini.requests[0].response
    assert issued is not None
    issued_calls = [p["functionCall"] for p in issued["candidates"][0]["content"]["parts"]]
    calls = first.turn.function_calls
    assert [(c.name, c.args, c.id) for c in calls] == [(c["name"], c["args"], c["id"]) for c in issued_calls]
    signatures = [p.thought_signature for p in first.turn.parts]
    assert all(signatures) and len(set(signatures)) == 3

    results = Turn(role="user", parts=[Part(function_response=FunctionResponse(
        name=c.name, response={"ok": True}, id=c.id)) for c in calls])
    assert model.generate(ModelRequest(turns=[question, stored(first.turn), results])).turn.text == "Done."
    fake_gemini.assert_complete()


def test_text_signature_stays_on_its_part_across_stream_chunks(
        fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    sig = base64.b64encode(b"\xfb\xff-text-signature").decode()
    fake_gemini.push(Reply([thought("thinking about the reply"), text("one two three four five six", signature=sig)]))
    response, deltas = collect(make_model(), ask("count"))

    assert len([d for d in deltas if d[0] == "text"]) >= 3
    assert response.turn.parts == [Part(text="thinking about the reply", thought=True),
                                   Part(text="one two three four five six", thought_signature=sig)]


def test_structured_output_request_carries_the_schema(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    schema = Forecast.model_json_schema()
    fake_gemini.push(Reply.text('{"city": "Paris", "temp_c": 21.5}'))
    response = make_model().generate(ask("Forecast for Paris as JSON", response_schema=schema, temperature=0.2))

    config = fake_gemini.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == schema
    assert config["temperature"] == 0.2
    assert Forecast.model_validate_json(response.turn.text) == Forecast(city="Paris", temp_c=21.5)


def test_429_then_success_is_retried(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Fail(429, "Resource has been exhausted"), Reply.text("ok"))
    response = make_model().generate(ask("hi"))
    assert response.turn.text == "ok"
    assert response.usage.requests == 2
    assert len(fake_gemini.requests) == 2


def test_500_exhausts_retries(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(*[Fail(500, "Internal error")] * 3, Reply.text("too late"))
    with pytest.raises(ModelError) as err:
        make_model(model_max_retries=2).generate(ask("hi"))
    assert err.value.status == 500 and err.value.retryable
    assert len(fake_gemini.requests) == 3
    assert fake_gemini.remaining == 1


def test_400_is_not_retried(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Fail(400, "Invalid JSON payload"), Reply.text("never"))
    with pytest.raises(ModelError) as err:
        make_model().generate(ask("hi"))
    assert err.value.status == 400 and not err.value.retryable
    assert "Invalid JSON payload" in str(err.value)
    assert len(fake_gemini.requests) == 1


def test_timeout_raises_model_timeout(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply.text("late", delay_s=30), Reply.text("never"))
    with pytest.raises(ModelTimeout):
        make_model().generate(ask("hi", timeout_s=0.3))
    assert len(fake_gemini.requests) == 1


def test_attempt_timeout_is_retried_within_the_call_budget(
        fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply.text("late", delay_s=30), Reply.text("on time"))
    response = make_model(model_timeout_s=0.3).generate(ask("hi", timeout_s=20))
    assert response.turn.text == "on time"
    assert response.usage.requests == 2


def test_broken_stream_after_deltas_raises_instead_of_retrying(
        fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply.text("one two three four five six", break_after=1), Reply.text("unused"))
    deltas: list[str] = []
    with pytest.raises(ModelError) as err:
        make_model().generate(ask("count"), lambda _kind, chunk: deltas.append(chunk))
    assert "partial output was already streamed" in str(err.value)
    assert deltas == ["one two "]
    assert fake_gemini.remaining == 1


def test_broken_stream_before_any_delta_is_retried(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply.text("lost", break_after=0), Reply.text("second try"))
    response, deltas = collect(make_model(), ask("hi"))
    assert response.turn.text == "second try"
    assert "".join(c for _, c in deltas) == "second try"
    assert response.usage.requests == 2


def test_blocked_prompt_is_a_model_error(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply.blocked("PROHIBITED_CONTENT"))
    with pytest.raises(ModelError, match="blocked the prompt: PROHIBITED_CONTENT") as err:
        make_model().generate(ask("something bad"))
    assert not err.value.retryable


def test_safety_finish_is_a_model_error(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply([text("partial answer")], finish_reason="SAFETY"))
    with pytest.raises(ModelError, match="finish_reason SAFETY"):
        make_model().generate(ask("hi"))


def test_empty_response_is_retried_then_reported(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    fake_gemini.push(Reply([]), Reply([]))
    with pytest.raises(ModelError, match="empty response"):
        make_model(model_max_retries=1).generate(ask("hi"))
    assert len(fake_gemini.requests) == 2


def test_one_model_serves_many_threads(fake_gemini: FakeGemini, make_model: MakeModel) -> None:
    def echo(request: Received) -> Reply:
        return Reply.text("echo " + request.json["contents"][-1]["parts"][0]["text"])

    fake_gemini.handler = echo
    model = make_model()
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda i: model.generate(ask(f"message {i}")).turn.text, range(8)))
    assert answers == [f"echo message {i}" for i in range(8)]


def test_factory_picks_the_model_and_caches_it(fake_gemini: FakeGemini) -> None:
    try:
        offline = create_model(fake_gemini.settings(gemini_api_key=None))
        assert isinstance(offline, OfflineModel)
        gemini = create_model(fake_gemini.settings())
        assert isinstance(gemini, GeminiModel)
        assert create_model(fake_gemini.settings()) is gemini
        # Vertex AI mode needs no key; credentials are only looked up on the first request.
        vertex = create_model(Settings(gemini_use_vertex=True, google_cloud_project="demo-project",
                                       gemini_location="us-central1"))
        assert isinstance(vertex, GeminiModel)
    finally:
        clear_model_cache()


def test_factory_does_not_import_the_sdk_until_asked() -> None:
    probe = ("import sys; import shared.models.factory; "
             "assert 'google.genai' not in sys.modules, 'google.genai imported eagerly'")
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=str(_repo_root()))


def _repo_root() -> Any:
    from pathlib import Path

    return Path(__file__).resolve().parents[2]
