"""Files over A2A (docs/a2a.md, "Files"), through the dev app on both transports:

- files the model answers with (its ``inlineData`` bytes, its ``fileData`` references) are the
  task's file artifacts, in ``tasks/get``, ``message/send`` and the stream alike;
- files a caller sends (bytes, URLs) reach the model: a type it reads as bytes, any other type as
  text when the content is text; bytes that are not text, of a type it cannot read, are refused
  with ContentTypeNotSupportedError; a URL is fetched under the user-URL rule (SSRF guard).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.models.base import Blob, FileData, ModelRequest, Part, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.a2a.test_a2a_http import ALICE, message, rpc
from tests.agent.conftest import make_settings

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
                       "RU5ErkJggg==")
FILES_OUT = [Part(text="here they are"),
             Part(inline_data=Blob(mime_type="image/png", data=base64.b64encode(PNG).decode(), display_name="dot.png")),
             Part(file_data=FileData(file_uri="https://example.com/report.pdf", mime_type="application/pdf",
                                     display_name="report.pdf"))]


class Seen:
    """The model: answers "files please" with files (after a look-up, so it is a task) and
    anything else with a description of the parts of the caller's turn it was given."""

    def __init__(self) -> None:
        self.turns: list[list[Part]] = []
        self.instructions: list[str] = []

    def __call__(self, request: ModelRequest) -> Turn:
        last = request.turns[-1]
        if any(p.function_response for p in last.parts):
            return Turn(role="model", parts=FILES_OUT)
        self.turns.append(list(last.parts))
        self.instructions.append(request.system_instruction)
        if "json please" in last.text:
            return text_turn('{"answer": 42}')
        if "files please" in last.text:
            return calls_turn(call("search_memory", {"query": "files"}))
        return text_turn(json.dumps([_kind(p) for p in last.parts]))


def _kind(part: Part) -> str:
    if part.inline_data is not None:
        return f"bytes {part.inline_data.mime_type} {part.inline_data.display_name}"
    return f"text {(part.text or '')[:60]}"


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def client(sqlite_docstore: DocStore, seen: Seen) -> Iterator[FlaskClient]:
    rt = Runtime(make_settings(dispatcher="inline"), store=sqlite_docstore, model=FunctionModel(seen))
    set_runtime(rt)
    yield create_app().test_client()
    set_runtime(None)


def _file_artifacts(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The file artifacts (without the empty fields some renderings of the SDK keep)."""
    return [{k: v for k, v in a.items() if v not in ("", [])} for a in task["artifacts"] if a["artifactId"] != "answer"]


def test_files_the_model_answers_with_are_the_tasks_file_artifacts(client: FlaskClient) -> None:
    expected = [{"artifactId": "file-1", "name": "dot.png",
                 "parts": [{"raw": base64.b64encode(PNG).decode(), "filename": "dot.png", "mediaType": "image/png"}]},
                {"artifactId": "file-2", "name": "report.pdf",
                 "parts": [{"url": "https://example.com/report.pdf", "filename": "report.pdf",
                            "mediaType": "application/pdf"}]}]
    task = rpc(client, "SendMessage", {"message": message("files please")})["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "here they are"}]
    assert _file_artifacts(task) == expected
    got = client.get(f"/a2a/tasks/{task['id']}", headers=ALICE).get_json()
    assert _file_artifacts(got) == expected
    listed = rpc(client, "ListTasks", {"includeArtifacts": True})["result"]["tasks"]
    assert _file_artifacts(listed[0]) == expected
    resp = client.post("/a2a/message:stream", json={"message": message("files please", message_id="m-2")},
                       headers=ALICE)
    events = [json.loads(line[len("data: "):]) for line in resp.get_data(as_text=True).splitlines()
              if line.startswith("data: ")]
    streamed = [e["artifactUpdate"]["artifact"] for e in events if "artifactUpdate" in e]
    assert [a for a in streamed if a["artifactId"] != "answer"] == expected


def test_files_a_caller_sends_reach_the_model(client: FlaskClient, seen: Seen) -> None:
    parts = [{"text": "look at these"},
             {"raw": base64.b64encode(PNG).decode(), "mediaType": "image/png", "filename": "dot.png"},
             {"raw": base64.b64encode(b"key: value\n").decode(), "mediaType": "application/x-yaml",
              "filename": "conf.yaml"},
             {"raw": base64.b64encode(b"tck").decode(), "mediaType": "application/x-unlisted-type"}]
    msg = {"role": "ROLE_USER", "messageId": "m-1", "parts": parts}
    reply = rpc(client, "SendMessage", {"message": msg})["result"]["message"]  # answered directly
    said = json.loads(reply["parts"][0]["text"])
    assert said[1:] == ["bytes image/png dot.png", "text [file conf.yaml (application/x-yaml)]\nkey: value\n",
                        "text [file (unnamed) (application/x-unlisted-type)]\ntck"]
    assert said[0].startswith("text look at these")


def test_bytes_that_are_not_text_of_a_type_the_model_cannot_read_are_refused(client: FlaskClient,
                                                                             seen: Seen) -> None:
    binary = {"raw": base64.b64encode(b"\x00\xff\xfe\x01binary").decode(), "mediaType": "application/x-unknown"}
    msg = {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}, binary]}
    refused = rpc(client, "SendMessage", {"message": msg})
    assert refused["error"]["code"] == -32005, refused  # ContentTypeNotSupportedError
    rest = client.post("/a2a/message:send", json={"message": msg}, headers=ALICE)
    assert rest.status_code == 415, rest.get_data()[:300]
    assert "application/x-unknown" in rest.get_data(as_text=True)
    assert seen.turns == []  # no run started


class _Files(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b"hello from a url\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def file_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/notes/hello.txt"
    server.shutdown()
    server.server_close()


def test_a_file_url_is_fetched_under_the_ssrf_guard(sqlite_docstore: DocStore, file_server: str) -> None:
    for allow_private in (False, True):
        # Off (production): a loopback or metadata address is refused before any run, nothing fetched.
        msgs = [{"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "read this"}, {"url": url}]}
                for url in ([file_server, "http://169.254.169.254/computeMetadata/v1/"] if not allow_private
                            else [file_server])]
        seen = Seen()
        set_runtime(Runtime(make_settings(dispatcher="inline", mcp_allow_private_urls=allow_private),
                            store=sqlite_docstore, model=FunctionModel(seen)))
        try:
            client = create_app().test_client()
            answers = [rpc(client, "SendMessage", {"message": msg}) for msg in msgs]
        finally:
            set_runtime(None)
        if not allow_private:
            for answer in answers:
                assert answer["error"]["code"] == -32602 and "refused" in answer["error"]["message"], answer
            assert "non-public" in answers[1]["error"]["message"] and seen.turns == []
            continue
        said = json.loads(answers[0]["result"]["message"]["parts"][0]["text"])
        assert said[1] == "text [file hello.txt (text/plain)]\nhello from a url\n"


def test_accepted_output_modes_tailor_the_answer(client: FlaskClient, seen: Seen) -> None:
    """``configuration.acceptedOutputModes`` (spec 1.0, ``SendMessageConfiguration``: "Agents SHOULD
    use this to tailor their output"): the model is told them; a file of a type the caller does not
    take is left out of the task's artifacts (sent, read, listed, streamed); the answer takes a form
    the caller takes (a JSON object as text, text as a data part); a list taking neither text/plain
    nor application/json is ``ContentTypeNotSupportedError`` (an artifact type the agent cannot
    answer in), before anything runs."""
    config = {"acceptedOutputModes": ["text/plain", "image/*"]}
    task = rpc(client, "SendMessage", {"message": message("files please"), "configuration": config})["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "text/plain, image/*" in seen.instructions[-1]
    assert [a["artifactId"] for a in task["artifacts"]] == ["answer", "file-1"]  # the PDF is left out
    got = client.get(f"/a2a/tasks/{task['id']}", headers=ALICE).get_json()
    assert [a["artifactId"] for a in got["artifacts"]] == ["answer", "file-1"]
    listed = rpc(client, "ListTasks", {"includeArtifacts": True})["result"]["tasks"]
    assert [a["artifactId"] for a in listed[0]["artifacts"]] == ["answer", "file-1"]
    resp = client.post("/a2a/message:stream", json={"message": message("files please", message_id="m-2"),
                                                    "configuration": config}, headers=ALICE)
    events = [json.loads(line[len("data: "):]) for line in resp.get_data(as_text=True).splitlines()
              if line.startswith("data: ")]
    assert [e["artifactUpdate"]["artifact"]["artifactId"] for e in events if "artifactUpdate" in e] == \
        ["answer", "file-1"]

    # A JSON object answered to a text-only caller is text; a text answer to a JSON-only caller is data.
    as_text = rpc(client, "SendMessage", {"message": message("json please", message_id="m-3"),
                                          "configuration": {"acceptedOutputModes": ["text/plain"]}})
    assert as_text["result"]["message"]["parts"] == [{"text": '{"answer": 42}'}]
    as_data = rpc(client, "SendMessage", {"message": message("hello", message_id="m-4"),
                                          "configuration": {"acceptedOutputModes": ["application/json"]}})
    [part] = as_data["result"]["message"]["parts"]
    assert part["mediaType"] == "application/json" and json.loads(part["data"]["text"]) == ["text hello"]
    unasked = rpc(client, "SendMessage", {"message": message("json please", message_id="m-5")})
    assert unasked["result"]["message"]["parts"][0]["data"] == {"answer": 42}  # no list: as before

    asked = len(seen.instructions)
    refused = rpc(client, "SendMessage", {"message": message("hello", message_id="m-6"),
                                          "configuration": {"acceptedOutputModes": ["video/mp4"]}})
    assert refused["error"]["code"] == -32005, refused
    assert "text/plain" in refused["error"]["message"]
    rest = client.post("/a2a/message:send", json={"message": message("hello", message_id="m-7"),
                                                  "configuration": {"acceptedOutputModes": ["video/*"]}},
                       headers=ALICE)
    assert rest.status_code == 415, rest.get_data()[:300]
    assert len(seen.instructions) == asked  # nothing ran
    too_many = rpc(client, "SendMessage", {"message": message("hello", message_id="m-8"),
                                           "configuration": {"acceptedOutputModes": ["text/plain"] * 33}})
    assert too_many["error"]["code"] == -32602 and "acceptedOutputModes" in too_many["error"]["message"]
    old_style = rpc(client, "SendMessage", {"message": message("json please", message_id="m-9"),
                                            "configuration": {"acceptedOutputModes": ["text"]}})  # A2A 0.2's words
    assert old_style["result"]["message"]["parts"] == [{"text": '{"answer": 42}'}]
