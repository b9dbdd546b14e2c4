"""The official a2a-sdk client against two of our server processes on one Firestore emulator: a task
needing approval reaches ``input-required`` (streamed by process A), the client approves it with a
follow-up message (to A), the resume is delivered twice (the side effect runs once), and a
resubscription on process B streams the rest of the task to its end.

The servers run without a dispatcher (``DISPATCHER=none``): the test delivers the resume itself,
twice, through the runtime's own router, as Pub/Sub would on a redelivery."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb

from shared.config import Settings
from shared.durable.kinds import RESUME
from shared.durable.messages import WorkMessage
from shared.runtime import Runtime
from tests.a2a.scripted_agent import ScriptedAgent
from tests.a2a.servers import a2a_servers
from tests.emulators import Emulator

PROJECT = "demo-a2a-client"
UID = "tck"
S = pb.TaskState


async def _client(port: int) -> Any:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer dev:{UID}"}, timeout=60)
    return await create_client(f"http://127.0.0.1:{port}", client_config=ClientConfig(httpx_client=http)), http


def _states(events: list[Any]) -> list[int]:
    out = []
    for e in events:
        if e.HasField("task"):
            out.append(e.task.status.state)
        elif e.HasField("status_update"):
            out.append(e.status_update.status.state)
    return out


@pytest.mark.firestore
def test_approve_by_follow_up_message_then_resubscribe_on_the_other_process(tmp_path: Path,
                                                                            firestore_emulator: Emulator) -> None:
    agent = ScriptedAgent()
    with a2a_servers(tmp_path, processes=2, firestore_host=firestore_emulator.host, project=PROJECT, agent=agent,
                     extra_env={"DISPATCHER": "none"}) as servers:
        port_a, port_b = servers.ports
        rt = Runtime(servers.model.settings(Settings(state_backend="firestore", google_cloud_project=PROJECT,
                                                     auth_mode="local", dispatcher="none")))
        asyncio.run(_scenario(port_a, port_b, rt, agent))


async def _scenario(port_a: int, port_b: int, rt: Runtime, agent: ScriptedAgent) -> None:
    client_a, http_a = await _client(port_a)
    client_b, http_b = await _client(port_b)
    try:
        # 1. A streams the new task to input-required: the approval's preview is in the status message.
        request = pb.SendMessageRequest(message=pb.Message(
            role=pb.Role.ROLE_USER, message_id="tck-input-required-client", parts=[pb.Part(text="note this")]))
        events = [e async for e in client_a.send_message(request)]
        assert events[0].HasField("task")
        assert _states(events)[-1] == S.TASK_STATE_INPUT_REQUIRED, events
        task_id = events[0].task.id
        status = events[-1].status_update.status
        assert "Approval needed for save_memory" in status.message.parts[0].text
        # 2. The client approves with a follow-up message (to A; answered at once, the run resumes later).
        approve = pb.SendMessageRequest(
            message=pb.Message(role=pb.Role.ROLE_USER, message_id="approve-1", task_id=task_id,
                               parts=[pb.Part(text="approve")]),
            configuration=pb.SendMessageConfiguration(return_immediately=True))
        no_stream_a = await create_client(f"http://127.0.0.1:{port_a}", client_config=ClientConfig(
            httpx_client=http_a, streaming=False))
        answered = [e async for e in no_stream_a.send_message(approve)]
        assert _states(answered) == [S.TASK_STATE_WORKING], answered
        # 3. B resubscribes (the task is working, its resume not yet delivered), then the resume
        #    arrives twice: B streams the rest from the log.
        stream_b: list[Any] = []

        async def follow() -> None:
            async for e in client_b.subscribe(pb.SubscribeToTaskRequest(id=task_id)):
                stream_b.append(e)

        subscription = asyncio.create_task(follow())
        for _ in range(300):  # the snapshot comes first, before anything happens to the task
            if stream_b or subscription.done():
                break
            await asyncio.sleep(0.05)
        assert stream_b and stream_b[0].HasField("task") and stream_b[0].task.status.state == S.TASK_STATE_WORKING
        await asyncio.to_thread(_deliver_resume_twice, rt, task_id)
        await asyncio.wait_for(subscription, timeout=60)
        assert _states(stream_b)[-1] == S.TASK_STATE_COMPLETED, stream_b
        artifacts = [e.artifact_update.artifact for e in stream_b if e.HasField("artifact_update")]
        assert [a.parts[0].text for a in artifacts] == ["Done: save_memory ran."]
        # The side effect ran exactly once: one memory, one call asked for.
        final = await client_a.get_task(pb.GetTaskRequest(id=task_id))
        assert final.status.state == S.TASK_STATE_COMPLETED
        assert [m.message_id for m in final.history if m.role == pb.Role.ROLE_USER] == [
            "tck-input-required-client", "approve-1"]
        assert agent.calls == 1
        assert len(rt.users.list_memories(UID)) == 1
    finally:
        await http_a.aclose()
        await http_b.aclose()


def _deliver_resume_twice(rt: Runtime, task_id: str) -> None:
    """The resume message of the decided approval, delivered twice at once (as Pub/Sub may)."""
    run = rt.runs.get_run(task_id)
    assert run is not None
    (approval_id,) = run.run.pending_approval_ids
    message = WorkMessage(kind=RESUME, unitId=task_id, uid=UID, approvalId=approval_id)
    threads = [threading.Thread(target=rt.router.handle, args=(message,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
