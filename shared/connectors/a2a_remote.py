"""The A2A client adapter: our runs' messages to remote A2A agents (``A2A_AGENTS``, a user's own
agents), through the a2a-sdk's client (docs/a2a.md, "Remote agents as tools").

Every call is bounded in time and made from scratch (the agent's card is read, a client made): no
connection outlives the call. A message is sent with ``returnImmediately`` and its task is then
polled (``GetTask``) until it stops (terminal, or waiting for input) or the time is spent; a task
still working is answered as it is, and :func:`wait` polls it later, never sending again. The
message id the caller gives is the idempotency key: :func:`find` looks for a task that already
holds it (recovery after a crash asks it before anything is sent again).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from shared.config import A2aAgent
from shared.errors import ToolError

if TYPE_CHECKING:
    from a2a.client import Client
    from a2a.types import a2a_pb2 as pb

log = logging.getLogger("agent_runtime.a2a")
T = TypeVar("T")
POLL_S = 0.5
MAX_TEXT = 16_000
STOPPED = {"completed", "failed", "canceled", "rejected", "input-required", "auth-required"}


class RemoteError(ToolError):
    """The remote agent could not be reached, refused the request, or answered something else than
    a task or a message. ``maybe_sent``: the message had been sent when the answer was lost."""

    def __init__(self, message: str, *, maybe_sent: bool = False) -> None:
        super().__init__(message)
        self.maybe_sent = maybe_sent


@dataclass
class RemoteTask:
    """What a remote agent's task says now, as the model is told it."""

    task_id: str
    context_id: str
    state: str
    """``completed``, ``input-required``, ``working``, ... (A2A's names, lower case)."""
    text: str = ""
    data: list[Any] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)

    def to_result(self) -> dict[str, Any]:
        out: dict[str, Any] = {"agentTaskId": self.task_id, "contextId": self.context_id, "state": self.state}
        if self.text:
            out["text"] = self.text[:MAX_TEXT]
        if self.data:
            out["data"] = self.data[:10]
        return out


def _state(value: int) -> str:
    from a2a.types import a2a_pb2 as pb

    name = str(pb.TaskState.Name(value))
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def _parts(parts: Any) -> tuple[list[str], list[Any]]:
    from google.protobuf.json_format import MessageToDict

    texts, data = [], []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            texts.append(part.text)
        elif kind == "data":
            data.append(MessageToDict(part.data))
        elif kind == "url":
            texts.append(f"[file {part.filename} at {part.url}]")
        elif kind == "raw":
            texts.append(f"[file {part.filename} ({part.media_type}), {len(part.raw)} bytes]")
    return texts, data


def remote_task(task: pb.Task) -> RemoteTask:
    texts, data = _parts(task.status.message.parts) if task.status.HasField("message") else ([], [])
    for artifact in task.artifacts:
        more, more_data = _parts(artifact.parts)
        texts += [t for t in more if t not in texts]
        data += [d for d in more_data if d not in data]
    ids = [m.message_id for m in task.history]
    return RemoteTask(task.id, task.context_id, _state(task.status.state), "\n".join(texts), data, ids)


def _run(agent: A2aAgent, what: str, fn: Callable[[Client], Awaitable[T]], timeout_s: float,
         sent: list[bool] | None = None) -> T:
    """``fn(client)`` within ``timeout_s`` on a fresh client (a user's agent: its host checked first)."""
    if agent.public_only:
        from shared.connectors.url_guard import UrlNotAllowed, check_public_url

        try:
            check_public_url(agent.url)
        except UrlNotAllowed as exc:
            raise RemoteError(f"A2A agent {agent.name} not reached: {exc.message}") from None

    async def go() -> T:
        import httpx
        from a2a.client import ClientConfig, create_client

        async with httpx.AsyncClient(headers=dict(agent.headers), timeout=max(1.0, timeout_s)) as http:
            client = await create_client(agent.url, client_config=ClientConfig(httpx_client=http, streaming=False))
            return await asyncio.wait_for(fn(client), timeout=max(0.05, timeout_s))

    try:
        return asyncio.run(go())
    except RemoteError:
        raise
    except TimeoutError:
        raise RemoteError(f"A2A agent {agent.name} did not answer {what} within {timeout_s:.0f} s",
                          maybe_sent=bool(sent)) from None
    except Exception as exc:  # the SDK's and the transport's errors
        log.warning("A2A %s failed: %s", what, exc, extra={"fields": {"component": "a2a", "agent": agent.name}})
        raise RemoteError(f"A2A agent {agent.name} failed at {what}: {str(exc)[:300] or type(exc).__name__}",
                          maybe_sent=bool(sent)) from None


async def _poll(client: Client, task: RemoteTask, until: float) -> RemoteTask:
    from a2a.types import a2a_pb2 as pb

    while task.state not in STOPPED and time.monotonic() < until:
        await asyncio.sleep(POLL_S)
        task = remote_task(await client.get_task(pb.GetTaskRequest(id=task.task_id)))
    return task


def send(agent: A2aAgent, *, message_id: str, text: str, context_id: str, task_id: str | None,
         timeout_s: float) -> RemoteTask:
    """Send one message (a new task in ``context_id``, or an answer to ``task_id``) and wait for
    its task to stop, at most ``timeout_s``."""
    from a2a.types import a2a_pb2 as pb

    sent: list[bool] = []
    until = time.monotonic() + timeout_s * 0.9

    async def go(client: Client) -> RemoteTask:
        message = pb.Message(role=pb.Role.ROLE_USER, message_id=message_id, parts=[pb.Part(text=text)])
        if task_id:
            message.task_id = task_id
        else:
            message.context_id = context_id
        request = pb.SendMessageRequest(message=message,
                                        configuration=pb.SendMessageConfiguration(return_immediately=True))
        sent.append(True)
        last: Any = None
        async for event in client.send_message(request):
            last = event
        if last is None:
            raise RemoteError(f"A2A agent {agent.name} answered nothing", maybe_sent=True)
        if last.HasField("message"):  # a task-less answer
            texts, data = _parts(last.message.parts)
            return RemoteTask("", last.message.context_id, "completed", "\n".join(texts), data, [message_id])
        task = last.task if last.HasField("task") else None
        if task is None:
            raise RemoteError(f"A2A agent {agent.name} answered neither a task nor a message", maybe_sent=True)
        return await _poll(client, remote_task(task), until)

    return _run(agent, "SendMessage", go, timeout_s, sent)


def wait(agent: A2aAgent, task_id: str, *, timeout_s: float) -> RemoteTask:
    """A remote task's state, polled until it stops or ``timeout_s`` is spent (nothing is sent)."""
    from a2a.types import a2a_pb2 as pb

    until = time.monotonic() + timeout_s * 0.9

    async def go(client: Client) -> RemoteTask:
        return await _poll(client, remote_task(await client.get_task(pb.GetTaskRequest(id=task_id))), until)

    return _run(agent, "GetTask", go, timeout_s)


def find(agent: A2aAgent, *, message_id: str, context_id: str, task_id: str | None,
         timeout_s: float) -> RemoteTask | None:
    """The task holding the message ``message_id`` (waited on until it stops, at most
    ``timeout_s``), or ``None``: the agent never received it."""
    from a2a.types import a2a_pb2 as pb

    until = time.monotonic() + timeout_s * 0.9

    async def go(client: Client) -> RemoteTask | None:
        if task_id:
            candidates = [remote_task(await client.get_task(pb.GetTaskRequest(id=task_id)))]
        else:
            listed = await client.list_tasks(pb.ListTasksRequest(context_id=context_id, page_size=100))
            candidates = [remote_task(t) for t in listed.tasks]
        for task in candidates:
            if message_id in task.message_ids:
                return await _poll(client, task, until)
        return None

    return _run(agent, "ListTasks", go, timeout_s)
