"""Our units in A2A's words (docs/a2a.md): a run is a task, its status the task's state, its
approvals the task's ``input-required`` status message, its answer the task's artifact, and its
event log (``runs/{runId}/events``) the stream of status and artifact updates.

Only this package imports the a2a-sdk (its protobuf types); nothing else of the runtime does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict, ParseDict

from shared.formats import b64decode_any
from shared.state.records import OutputFile, RunRecord, RunResult, waits_on_child

if TYPE_CHECKING:
    from shared.tools.registry import ToolRegistry

S = pb.TaskState
TERMINAL = frozenset({S.TASK_STATE_COMPLETED, S.TASK_STATE_FAILED, S.TASK_STATE_CANCELED, S.TASK_STATE_REJECTED})
INTERRUPTED = frozenset({S.TASK_STATE_INPUT_REQUIRED, S.TASK_STATE_AUTH_REQUIRED})
ANSWER_ARTIFACT = "answer"
DECISION_HINT = ('Reply with a message "approve" or "reject" (or a data part {"decision": "approve" | "reject", '
                 '"approvalId"?: ...}); any other reply rejects the call and tells the agent what you said.')
MAX_PROMPT_PART = 4000
BlobReader = Callable[[OutputFile], str | None]
"""The base64 bytes of a file the model answered with (kept in the run's stored turn)."""
AuthReader = Callable[[RunResult], list[str]]
"""The integrations a paused run's waiting calls need that its user has not connected."""
AUTH_HINT = ("Authorization needed: connect {0} first (the user connects it in the app: POST "
             "/api/integrations/{1}); then answer the approval below.")
MODES = "acceptedOutputModes"
"""The task document's field holding the media types its caller takes (``SendMessageConfiguration``)."""
TEXT, JSON = "text/plain", "application/json"


def accepts(modes: Sequence[str], media_type: str) -> bool:
    """Whether a caller that takes ``modes`` (``acceptedOutputModes``; none given: anything) takes a
    part of ``media_type``: the same media type, ``type/*`` or ``*/*`` (parameters and case ignored;
    a bare ``type``, as older A2A versions' ``text``, is ``type/*``)."""
    if not modes:
        return True
    bare = media_type.split(";", 1)[0].strip().lower()
    wanted = {m if "/" in m else m + "/*" for m in (m.split(";", 1)[0].strip().lower() for m in modes)}
    return bool(wanted & {bare, "*/*", bare.split("/", 1)[0] + "/*"})


def modes_of(doc: dict[str, Any]) -> list[str]:
    """The media types the task's caller takes, as stored with the task (none: anything)."""
    modes = doc.get(MODES)
    return [str(m) for m in modes] if isinstance(modes, list) else []


def missing_connectors(result: RunResult | None, connector_of: Callable[[str], str | None],
                       connected: Callable[[str], bool]) -> list[str]:
    """The integrations the calls a pause waits on act through (``Tool.connector``) that are not
    connected (each asked once), in order."""
    out: list[str] = []
    for approval in approvals_of(result):
        provider = connector_of(str(approval["tool"]))
        if provider and provider not in out and not connected(provider):
            out.append(provider)
    return out


def thread_for(uid: str, context_id: str) -> str:
    """The thread an A2A context continues: one per (caller, contextId), never another user's."""
    return "a2a_" + hashlib.sha256(f"{uid}\n{context_id}".encode()).hexdigest()[:40]


def timestamp(at: float) -> Any:
    from google.protobuf.timestamp_pb2 import Timestamp

    ts = Timestamp()
    ts.FromDatetime(datetime.fromtimestamp(at, UTC))
    return ts


def to_dict(message: Any) -> dict[str, Any]:
    """A protobuf message as its A2A JSON (camelCase), the way it is stored."""
    out: dict[str, Any] = MessageToDict(message, preserving_proto_field_name=False)
    return out


def message_from(doc: dict[str, Any]) -> pb.Message:
    msg = pb.Message()
    ParseDict(doc, msg, ignore_unknown_fields=True)
    return msg


def prompt_of(message: pb.Message) -> str:
    """What the model is told a caller's message says: its text parts, its data parts as JSON, its
    files by name and type (their bytes never)."""
    lines: list[str] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            lines.append(part.text)
        elif kind == "data":
            lines.append(json.dumps(MessageToDict(part.data), ensure_ascii=False)[:MAX_PROMPT_PART])
        elif kind == "url":
            lines.append(f"[file {part.filename or ''} ({part.media_type or 'unknown type'}) at {part.url}]")
        elif kind == "raw":
            lines.append(f"[file {part.filename or ''} ({part.media_type or 'unknown type'}), {len(part.raw)} bytes]")
    text = "\n".join(line for line in lines if line.strip())
    return text or "(an empty message)"


def origin_note(message: pb.Message, context_id: str, modes: Sequence[str] = ()) -> str:
    """What the system instruction says of a run an A2A message started (the model's provenance,
    and the output types the caller takes, when it said)."""
    note = (f"This request arrived over A2A (Agent2Agent) from another agent acting for the user: "
            f"A2A message {message.message_id} in context {context_id}. Answer it as you would the user.")
    if modes:
        note += (f" The caller takes only these output types: {', '.join(modes)}; answer in one of them "
                 "(a reply that is exactly a JSON object is sent as application/json, other text as text/plain).")
    return note


def agent_message(task_id: str, context_id: str, suffix: str, parts: Iterable[pb.Part]) -> pb.Message:
    return pb.Message(message_id=f"{task_id}-{suffix}", task_id=task_id, context_id=context_id,
                      role=pb.Role.ROLE_AGENT, parts=list(parts))


def _data_part(value: dict[str, Any]) -> pb.Part:
    from google.protobuf.struct_pb2 import Value

    v = Value()
    ParseDict(value, v)
    return pb.Part(data=v, media_type="application/json")


def missing_for(registry: ToolRegistry, connectors: Callable[[], Any] | None, uid: str) -> AuthReader:
    """Reads which integrations a paused run's waiting calls need that ``uid`` has not connected
    (``auth-required``): a read of the integration per waiting call of a connector tool."""

    def connector_of(name: str) -> str | None:
        tool = registry.get(name)
        return tool.connector if tool is not None else None

    def connected(provider: str) -> bool:
        try:
            return connectors is None or bool(connectors().vault.status(uid, provider).connected)
        except Exception:  # unknown (no credentials key): nothing is claimed
            return True

    return lambda result: missing_connectors(result, connector_of, connected)


def approvals_of(result: RunResult | None) -> list[dict[str, Any]]:
    if result is None:
        return []
    views = result.approvals or ([result.approval] if result.approval is not None else [])
    return [a.to_doc() for a in views]  # the one approval shape (docs/event-protocol.md, "Names")


def state_of(run: RunRecord) -> int:
    if run.status == "completed":
        return int(S.TASK_STATE_COMPLETED)
    if run.status == "failed":
        code = run.error.code if run.error is not None else ""
        return int(S.TASK_STATE_CANCELED if code == "CANCELLED" else S.TASK_STATE_FAILED)
    if run.status == "awaiting_confirmation" and not waits_on_child(run):
        return int(S.TASK_STATE_INPUT_REQUIRED)
    if run.status == "queued":
        return int(S.TASK_STATE_SUBMITTED)
    return int(S.TASK_STATE_WORKING)


def status_message(task_id: str, context_id: str, state: int, result: RunResult | None,
                   error: str | None, auth: Sequence[str] = ()) -> pb.Message | None:
    """The status message of a state: the approvals' previews (input-required; auth-required
    first names the integrations to connect), the answer (completed), what went wrong (failed,
    canceled)."""
    if state in INTERRUPTED:
        approvals = approvals_of(result)
        lines = [f"Approval needed for {a['tool']}: {a['preview']}" for a in approvals]
        if auth:
            lines.insert(0, AUTH_HINT.format(", ".join(auth), "/".join(auth)))
        first = approvals[0]["approvalId"] if approvals else ""
        return agent_message(task_id, context_id, f"input-{len(approvals)}-{first}",
                             [pb.Part(text="\n".join([*lines, DECISION_HINT])),
                              _data_part({"approvals": approvals})])
    if state == S.TASK_STATE_COMPLETED and result is not None and result.summary:
        return agent_message(task_id, context_id, "answer", [pb.Part(text=result.summary)])
    if state in (S.TASK_STATE_FAILED, S.TASK_STATE_CANCELED) and error:
        return agent_message(task_id, context_id, "error", [pb.Part(text=error)])
    return None


def answer_text(result: RunResult) -> str:
    """The final answer's own text (an answer that is only files has none)."""
    said = (result.output or {}).get("text") if result.files else None
    return said if isinstance(said, str) else result.summary


def answer_artifact(result: RunResult | None, modes: Sequence[str] = ()) -> pb.Artifact | None:
    """The final answer: its text, or, when the answer is exactly a JSON object, that object as a
    data part (``application/json``: structured output another agent can read as is); in a form
    the caller takes (``modes``, :func:`answer_part`)."""
    if result is None or not answer_text(result).strip():
        return None
    return pb.Artifact(artifact_id=ANSWER_ARTIFACT, name="answer", parts=[answer_part(answer_text(result), modes)])


def artifacts_of(result: RunResult | None, blob: BlobReader | None, modes: Sequence[str] = ()) -> list[pb.Artifact]:
    """The answer's artifacts: its text (``answer``), then one per file the model answered with
    (``file-<n>``, named like the file): its bytes (``raw``, read by ``blob``) or its ``url``. A file
    of a media type the caller does not take (``modes``) is left out (its number stays unused)."""
    answer = answer_artifact(result, modes)
    out = [answer] if answer is not None else []
    for n, f in enumerate((result.files if result is not None else None) or [], start=1):
        if not accepts(modes, f.media_type):
            continue
        part = pb.Part(filename=f.name, media_type=f.media_type)
        if f.uri:
            part.url = f.uri
        else:
            data = blob(f) if blob is not None else None
            if data is None:
                continue
            part.raw = b64decode_any(data)
        out.append(pb.Artifact(artifact_id=f"file-{n}", name=f.name, parts=[part]))
    return out


def answer_part(text: str, modes: Sequence[str] = ()) -> pb.Part:
    """The answer as one part: a data part when it is exactly a JSON object, else text; when the
    caller does not take that form (``modes``), the other one (a JSON object as its text, a text as
    ``{"text": ...}``). The request was refused unless it takes one of them (``text/plain``,
    ``application/json``)."""
    stripped = text.strip()
    value = None
    if stripped.startswith("{") and stripped.endswith("}"):
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
    if isinstance(value, dict) and accepts(modes, JSON):
        return _data_part(value)
    if accepts(modes, TEXT):
        return pb.Part(text=text)
    return _data_part({"text": text})


def answered_directly(run: RunRecord) -> bool:
    """Whether a run's answer may be a message instead of a task (docs/a2a.md, "Message or task"):
    it completed without the model asking for any tool and without files. (The caller must also
    have waited for it, and it must be the run's first stop: the handler decides when it answers
    and marks the task ``repliedAsMessage``.) A reply made of nothing but the model's words is
    safe to ask again: nothing happened that a task would track."""
    result = run.result
    return run.status == "completed" and run.tools_called == 0 and result is not None and not result.files


def replied_directly(doc: dict[str, Any]) -> bool:
    """The caller got a message instead of this task: it is not a task of theirs."""
    return doc.get("repliedAsMessage") is True


def reply_message(doc: dict[str, Any], run: RunRecord) -> pb.Message:
    """The answer of a run that :func:`answered_directly`: a message in the caller's context."""
    text = answer_text(run.result) if run.result is not None else ""
    return pb.Message(message_id=f"{doc['taskId']}-reply", context_id=str(doc["contextId"]),
                      role=pb.Role.ROLE_AGENT, parts=[answer_part(text, modes_of(doc))])


def interrupted_state(auth: Sequence[str]) -> int:
    """A run waiting for decisions: ``auth-required`` while a call it waits on needs an
    integration its user has not connected (``auth``), else ``input-required``."""
    return int(S.TASK_STATE_AUTH_REQUIRED if auth else S.TASK_STATE_INPUT_REQUIRED)


def task_of(doc: dict[str, Any], run: RunRecord, *, decided: bool = False, blob: BlobReader | None = None,
            auth: Sequence[str] = ()) -> pb.Task:
    """The task as of the run's last committed state; ``decided``: every approval its pause waits
    for is decided (it is about to resume: ``working``, not ``input-required``); ``blob`` reads the
    bytes of the answer's files (without it, files by reference only)."""
    task_id, context_id = str(doc["taskId"]), str(doc["contextId"])
    state = state_of(run)
    if decided and state == S.TASK_STATE_INPUT_REQUIRED:
        state = int(S.TASK_STATE_WORKING)
    elif state == S.TASK_STATE_INPUT_REQUIRED:
        state = interrupted_state(auth)
    error = run.error.message if run.error is not None else None
    status = pb.TaskStatus(state=state, timestamp=timestamp(run.updated_at))  # type: ignore[arg-type]
    message = status_message(task_id, context_id, state, run.result, error, auth)
    if message is not None:
        status.message.CopyFrom(message)
    task = pb.Task(id=task_id, context_id=context_id, status=status)
    history = [message_from(m) for m in doc.get("history") or []]
    for m in history:
        m.task_id, m.context_id = task_id, context_id
    if message is not None and state in TERMINAL | INTERRUPTED:
        history.append(message)
    task.history.extend(history)
    if state == S.TASK_STATE_COMPLETED:
        task.artifacts.extend(artifacts_of(run.result, blob, modes_of(doc)))
    return task


def stream_events(doc: dict[str, Any], run_events: Iterable[dict[str, Any]],
                  blob: BlobReader | None = None, auth_of: AuthReader | None = None) -> Iterable[Any]:
    """A run's events (from the log, in ``seq`` order) as A2A stream events: a ``status`` event is
    ``working``; a ``result`` is the answer's artifact then ``completed``, or ``input-required``
    with the approvals' previews; an ``error`` is ``failed`` (``canceled`` when cancelled). The
    other events (deltas, tool calls) say nothing A2A has a word for and are not sent."""
    task_id, context_id = str(doc["taskId"]), str(doc["contextId"])
    for ev in run_events:
        kind = ev.get("type")
        now = timestamp(datetime.now(UTC).timestamp())
        auth: list[str] = []
        if kind == "status":
            yield pb.TaskStatusUpdateEvent(task_id=task_id, context_id=context_id,
                                           status=pb.TaskStatus(state=S.TASK_STATE_WORKING, timestamp=now))
        elif kind == "result":
            result = RunResult.from_doc(ev["result"])
            if result.status == "completed":
                state = S.TASK_STATE_COMPLETED
                for artifact in artifacts_of(result, blob, modes_of(doc)):
                    yield pb.TaskArtifactUpdateEvent(task_id=task_id, context_id=context_id, artifact=artifact,
                                                     last_chunk=True)
            elif result.status == "awaiting_confirmation" and approvals_of(result):
                auth = auth_of(result) if auth_of is not None else []
                state = interrupted_state(auth)  # type: ignore[assignment]
            else:
                continue
            status = pb.TaskStatus(state=state, timestamp=now)
            message = status_message(task_id, context_id, state, result, None, auth)
            if message is not None:
                status.message.CopyFrom(message)
            yield pb.TaskStatusUpdateEvent(task_id=task_id, context_id=context_id, status=status)
        elif kind == "error":
            state = S.TASK_STATE_CANCELED if ev.get("code") == "CANCELLED" else S.TASK_STATE_FAILED
            status = pb.TaskStatus(state=state, timestamp=now)
            message = status_message(task_id, context_id, state, None, str(ev.get("error") or ""))
            if message is not None:
                status.message.CopyFrom(message)
            yield pb.TaskStatusUpdateEvent(task_id=task_id, context_id=context_id, status=status)


def ends_stream(event: Any) -> bool:
    """A status update in a terminal or interrupted state closes a stream (A2A: the task waits)."""
    return isinstance(event, pb.TaskStatusUpdateEvent) and event.status.state in TERMINAL | INTERRUPTED
