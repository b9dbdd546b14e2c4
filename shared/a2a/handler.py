"""The A2A server's request handling (docs/a2a.md): the a2a-sdk's ``RequestHandler`` interface
implemented on our runtime. Every transport of the SDK (JSON-RPC, HTTP+JSON) dispatches to it.

- A message without ``taskId`` starts a run on the thread of its ``contextId`` (one per caller and
  context); the run's id is the task's, and the task document is created in the run's transaction.
- A message to a task waiting for input decides its approvals ("approve", "reject", a data part
  ``{"decision"}``; anything else rejects with the caller's words as the reason, so the agent
  hears them) and follows the run to its next stop.
- Reads (``tasks/get``, ``tasks/list``) and streams (``message/stream``, ``tasks/subscribe``) come
  from the store: the run record and its event log by ``seq``. Nothing is kept in memory between
  requests, so any instance serves any request.

The runtime is synchronous: each call runs in a worker thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import a2a_pb2 as pb
from a2a.utils import errors as a2a_errors
from a2a.utils.task import apply_history_length, validate_history_length

from shared.a2a import inputs
from shared.agent import a2a_convert as convert
from shared.agent import a2a_push
from shared.errors import Conflict, DomainError, InvalidInput, NotFound, ToolError
from shared.routes import ID_SEGMENT
from shared.state.a2a_tasks_repo import A2aTasksRepo

if TYPE_CHECKING:
    from shared.agent.service import StartedRun
    from shared.connectors.credentials import CredentialVault
    from shared.runtime import Runtime
    from shared.state.records import RunRecord

log = logging.getLogger("agent_runtime.a2a")
_TASK_ID = re.compile(ID_SEGMENT)
"""A task id is its run's id (``run_...``): an id, never a path or a reserved ``__…__``."""
T = TypeVar("T")

FOLLOW_S = 20.0
"""How long a ``message/send`` answering a pause waits for the resumed run's next stop (then it
answers ``working``: the client gets the task or subscribes). Below common client read timeouts
(the TCK's is 30 s)."""
CANCEL_WAIT_S = 10.0
"""How long ``tasks/cancel`` of a working task waits for its run to stop at a step boundary."""
STREAM_S = 300.0
"""How long one stream (``message/stream``, ``tasks/subscribe``) follows a run before it ends."""
_APPROVE = {"approve", "approved", "yes", "ok", "allow", "accept", "confirm"}
_REJECT = {"reject", "rejected", "no", "deny", "decline", "cancel"}
_END = object()


def uid_of(context: ServerCallContext) -> str:
    uid = context.state.get("uid")
    if not isinstance(uid, str) or not uid:  # the edge authenticates every /a2a request first
        raise a2a_errors.InvalidRequestError(message="unauthenticated")
    return uid


def _a2a_error(err: DomainError) -> a2a_errors.A2AError:
    """Our refusals in A2A's words (the SDK renders them per transport)."""
    text = f"{err.code}: {err.message}"
    if isinstance(err, NotFound):
        return a2a_errors.TaskNotFoundError(message=text)
    if isinstance(err, InvalidInput):
        return a2a_errors.InvalidParamsError(message=text)
    return a2a_errors.InvalidRequestError(message=text)


def _domain_errors(fn: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except DomainError as err:
            raise _a2a_error(err) from None

    return wrapper


async def _off(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread, our refusals (a stored value that cannot be read too) in
    A2A's words."""
    return await asyncio.to_thread(_domain_errors(fn), *args)


Decision = Literal["approve", "reject"]


def decision_of(message: pb.Message) -> tuple[Decision, str | None, list[str]]:
    """``(approve | reject, reason, approval ids named)`` a caller's reply says. A data part
    ``{"decision": ..., "approvalId"?: ..., "reason"?: ...}`` says it exactly; a text that is just
    a yes or no word says it too; any other reply rejects, its words the reason."""
    from google.protobuf.json_format import MessageToDict

    texts: list[str] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "data":
            data = MessageToDict(part.data)
            if isinstance(data, dict) and data.get("decision") in ("approve", "reject"):
                named = data.get("approvalId")
                reason = data.get("reason")
                said: Decision = "approve" if data["decision"] == "approve" else "reject"
                return said, str(reason)[:2000] if reason else None, [str(named)] if named else []
        elif kind == "text":
            texts.append(part.text)
    text = " ".join(texts).strip()
    word = text.lower().strip(" .!")
    if word in _APPROVE:
        return "approve", None, []
    if word in _REJECT:
        return "reject", None, []
    return "reject", (f"the caller answered (A2A message {message.message_id}): {text}")[:2000], []


class RuntimeRequestHandler(RequestHandler):
    """Every A2A operation on the runtime ``rt()`` (the process's, read per call)."""

    def __init__(self, rt: Callable[[], Runtime], card: Callable[[], pb.AgentCard]) -> None:
        self._rt = rt
        self._card = card

    @property
    def tasks(self) -> A2aTasksRepo:
        return A2aTasksRepo(self._rt().store)

    # ---- reads -------------------------------------------------------------------------------
    def _load(self, uid: str, task_id: str) -> tuple[dict[str, Any], RunRecord]:
        """The task and its run; a run answered with a message (no task) is not a task."""
        doc, run = self._load_run(uid, task_id)
        if convert.replied_directly(doc):
            raise a2a_errors.TaskNotFoundError(message=f"task {task_id[:128]} not found")
        return doc, run

    def _load_run(self, uid: str, task_id: str) -> tuple[dict[str, Any], RunRecord]:
        if not _TASK_ID.fullmatch(task_id):  # no task has it (a path, or an id Firestore reserves: a 500)
            raise a2a_errors.TaskNotFoundError(message=f"task {task_id[:128]} not found")
        doc = self.tasks.get(uid, task_id)
        snap = self._rt().runs.get_run(task_id) if doc is not None else None
        if doc is None or snap is None or snap.run.uid != uid:
            raise a2a_errors.TaskNotFoundError(message=f"task {task_id[:128]} not found")
        return doc, snap.run

    def _blob(self, task_id: str) -> convert.BlobReader:
        """Reads the bytes of the files a task's answer holds from its run's stored turns (once)."""
        turns: list[Any] = []

        def read(f: Any) -> str | None:
            if f.turn is None or f.part is None:
                return None
            if not turns:
                turns.extend(self._rt().runs.load_turns(task_id))
            try:
                blob = turns[f.turn].parts[f.part].inline_data
            except IndexError:
                return None
            return None if blob is None else str(blob.data)

        return read

    def _task(self, uid: str, task_id: str) -> pb.Task:
        doc, run = self._load(uid, task_id)
        return self._task_of(uid, doc, run)

    def _task_of(self, uid: str, doc: dict[str, Any], run: RunRecord) -> pb.Task:
        waits = convert.state_of(run) == pb.TaskState.TASK_STATE_INPUT_REQUIRED
        decided = waits and not self._pending(uid, run)
        auth = self._auth_of(uid)(run.result) if waits and not decided and run.result is not None else []
        return convert.task_of(doc, run, decided=decided, blob=self._blob(run.run_id), auth=auth)

    def _auth_of(self, uid: str) -> convert.AuthReader:
        """The integrations the calls a paused run waits on need and ``uid`` has not connected
        (``auth-required``; docs/a2a.md)."""
        rt = self._rt()
        return convert.missing_for(rt.registry, rt.connectors, uid)

    async def on_get_task(self, params: pb.GetTaskRequest, context: ServerCallContext) -> pb.Task | None:
        validate_history_length(params)
        task = await _off(self._task, uid_of(context), params.id)
        return apply_history_length(task, params)

    async def on_list_tasks(self, params: pb.ListTasksRequest, context: ServerCallContext) -> pb.ListTasksResponse:
        check_list_query(context.state.get("query") or ())
        validate_history_length(params)
        size = params.page_size or 50
        if size < 1 or size > 100:
            raise a2a_errors.InvalidParamsError(message="pageSize must be between 1 and 100")
        before: float | None = None
        if params.page_token:
            try:
                before = float(params.page_token)
            except ValueError:
                raise a2a_errors.InvalidParamsError(message="pageToken is not one this server gave") from None
        return await _off(self._list, uid_of(context), params, size, before)

    def _list(self, uid: str, params: pb.ListTasksRequest, size: int, before: float | None) -> pb.ListTasksResponse:
        rt = self._rt()
        docs = self.tasks.list_tasks(uid, context_id=params.context_id or None, limit=size + 1, before=before)
        more = len(docs) > size
        docs = docs[:size]
        runs = rt.store.get_many([f"runs/{d['taskId']}" for d in docs])
        after = params.status_timestamp_after.ToDatetime().timestamp() if params.HasField("status_timestamp_after") \
            else None
        out = pb.ListTasksResponse(page_size=size)
        from shared.state import pages
        from shared.state.records import RunRecord

        read_run = pages.as_records(RunRecord, log)
        for doc, run_doc in zip(docs, runs, strict=True):
            run = None if run_doc is None else read_run(run_doc)
            if run is None:
                continue
            if convert.replied_directly(doc):
                continue
            auth = self._auth_of(uid)(run.result) if convert.state_of(run) in convert.INTERRUPTED else []
            task = convert.task_of(doc, run, blob=self._blob(run.run_id) if params.include_artifacts else None,
                                   auth=auth)
            if params.status and task.status.state != params.status:
                continue
            if after is not None and run.updated_at <= after:
                continue
            if not params.include_artifacts:
                task.ClearField("artifacts")
            out.tasks.append(apply_history_length(task, params))
        if more and docs:
            out.next_page_token = repr(float(docs[-1]["createdAt"]))
        out.total_size = len(out.tasks)
        return out

    # ---- messages ----------------------------------------------------------------------------
    def _check(self, params: pb.SendMessageRequest) -> None:
        validate_history_length(params.configuration)
        inputs.check_modes(params.message)
        check_output_modes(params.configuration.accepted_output_modes)
        if not params.message.message_id:
            raise a2a_errors.InvalidParamsError(message="message.messageId is required")
        if not params.message.parts:
            raise a2a_errors.InvalidParamsError(message="message.parts must not be empty")

    @_domain_errors
    def _start(self, uid: str, message: pb.Message, modes: list[str]) -> tuple[StartedRun, dict[str, Any]]:
        """Start the message's run (its files read first); ``modes``: the output types its caller takes."""
        from shared.api import RunRequest

        rt = self._rt()
        files = inputs.attachments(message, inputs.fetcher(rt.settings))
        context_id = message.context_id or str(uuid.uuid4())
        stored = convert.to_dict(message)
        stored["contextId"] = context_id
        request = RunRequest(prompt=convert.prompt_of(message)[:16_000], threadId=convert.thread_for(uid, context_id))
        tasks = self.tasks
        started = rt.agent.start(
            uid, request, instruction_note=convert.origin_note(message, context_id, modes), attachments=files,
            extra_writes=lambda run_id: [tasks.create_write(uid, run_id, context_id=context_id,
                                                            thread_id=request.threadId or "", message=stored,
                                                            modes=modes)])
        doc = tasks.get(uid, started.outcome.snapshot.run.run_id)
        assert doc is not None  # written with the run
        return started, doc

    def _drive(self, started: StartedRun) -> None:
        agent = self._rt().agent
        agent.run(agent.context(started))

    def _pending(self, uid: str, run: RunRecord) -> list[str]:
        runs = self._rt().runs
        out = []
        for approval_id in run.pending_approval_ids:
            got = runs.get_approval(uid, approval_id)
            if got is not None and got[0].status == "pending":
                out.append(approval_id)
        return out

    @_domain_errors
    def _answer(self, uid: str, message: pb.Message, modes: list[str]) -> tuple[dict[str, Any], RunRecord]:
        """A follow-up to a task: it must wait for input; its approvals are decided by the reply."""
        from shared.agent.approvals import decide
        from shared.api import ApproveRequest

        rt = self._rt()
        doc, run = self._load(uid, message.task_id)
        if message.context_id and message.context_id != doc["contextId"]:
            raise a2a_errors.InvalidParamsError(
                message=f"context {message.context_id[:128]} is not the context of task {message.task_id}")
        state = convert.state_of(run)
        if state in convert.TERMINAL:
            raise a2a_errors.UnsupportedOperationError(
                message=f"task {message.task_id} is {pb.TaskState.Name(state)}: it takes no more messages "
                        "(send a new message in its context)")
        pending = self._pending(uid, run)
        if state != pb.TaskState.TASK_STATE_INPUT_REQUIRED or not pending:
            raise a2a_errors.UnsupportedOperationError(
                message=f"task {message.task_id} is working and waits for no input; subscribe to it")
        decision, reason, named = decision_of(message)
        unknown = [a for a in named if a not in pending]
        if unknown:
            raise a2a_errors.InvalidParamsError(message=f"approval {unknown[0][:128]} is not waiting on this task")
        stored = convert.to_dict(message)
        stored["contextId"] = doc["contextId"]
        self.tasks.add_message(uid, message.task_id, stored, modes)
        for approval_id in named or pending:
            try:
                decide(rt.services, rt.dispatcher, uid,
                       ApproveRequest(approvalId=approval_id, decision=decision, reason=reason))
            except Conflict as err:
                if err.code != "ALREADY_DECIDED":
                    raise
        return self._load(uid, message.task_id)

    def _follow(self, uid: str, task_id: str, after: int, max_wait_s: float) -> Iterator[dict[str, Any]]:
        from shared.agent.streaming import replay_events

        rt = self._rt()
        return replay_events(rt.runs, task_id, after, follow=True, until_end=True, max_wait_s=max_wait_s,
                             sessions=lambda: rt.sessions)

    def _wait(self, uid: str, doc: dict[str, Any], after: int) -> pb.Task:
        """Follow the run from ``after`` to the end of its stream (its next stop), then the task."""
        for event in convert.stream_events(doc, self._follow(uid, str(doc["taskId"]), after, FOLLOW_S),
                                           self._blob(str(doc["taskId"])), self._auth_of(uid)):
            if convert.ends_stream(event):
                break
        return self._task(uid, str(doc["taskId"]))

    async def on_message_send(self, params: pb.SendMessageRequest,
                              context: ServerCallContext) -> pb.Task | pb.Message:
        self._check(params)
        uid = uid_of(context)
        if params.message.task_id:
            doc, run = await _off(self._answer, uid, params.message, list(params.configuration.accepted_output_modes))
            if params.configuration.return_immediately:
                task = await _off(self._task_of, uid, doc, run)
                return apply_history_length(task, params.configuration)
            task = await _off(self._wait, uid, doc, run.last_seq)
            return apply_history_length(task, params.configuration)
        started, doc = await _off(self._start, uid, params.message, list(params.configuration.accepted_output_modes))
        task_id = str(doc["taskId"])
        if params.configuration.HasField("task_push_notification_config"):
            await _off(self._put_push, uid, task_id, params.configuration.task_push_notification_config)
        if params.configuration.return_immediately:
            # The run goes on in this instance; were it stopped, the sweep takes the run over.
            threading.Thread(target=self._drive, args=(started,), daemon=True, name=f"a2a-{task_id}").start()
            first = await _off(self._task, uid, task_id)
            return apply_history_length(first, params.configuration)
        await _off(self._drive, started)
        doc, run = await _off(self._load_run, uid, task_id)
        if convert.answered_directly(run) and not params.configuration.HasField("task_push_notification_config"):
            # The caller waited and the run's first stop is a direct answer: a message, no task.
            await _off(self.tasks.mark_replied, uid, task_id)
            return convert.reply_message(doc, run)
        task = await _off(self._task_of, uid, doc, run)
        return apply_history_length(task, params.configuration)

    async def on_message_send_stream(self, params: pb.SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator[Any, None]:
        self._check(params)
        uid = uid_of(context)
        if params.message.task_id:
            doc, run = await _off(self._answer, uid, params.message, list(params.configuration.accepted_output_modes))
            first = await _off(self._task_of, uid, doc, run)
            yield apply_history_length(first, params.configuration)
            async for event in _relay(convert.stream_events(
                    doc, self._follow(uid, str(doc["taskId"]), run.last_seq, STREAM_S), self._blob(run.run_id),
                    self._auth_of(uid))):
                yield event
            return
        started, doc = await _off(self._start, uid, params.message, list(params.configuration.accepted_output_modes))
        task_id = str(doc["taskId"])
        if params.configuration.HasField("task_push_notification_config"):
            await _off(self._put_push, uid, task_id, params.configuration.task_push_notification_config)
        first = await _off(self._task, uid, task_id)
        first.status.state = pb.TaskState.TASK_STATE_SUBMITTED
        yield apply_history_length(first, params.configuration)
        from shared.agent.streaming import live_events

        rt = self._rt()
        live = live_events(rt.agent.context(started), started.first_events, lambda: rt.sessions)
        last = 0

        def seen(events: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            nonlocal last
            for ev in events:
                if ev.get("type") == "error" and ev.get("code") == "RUN_TAKEN_OVER":
                    return  # another invocation carries on: follow the log below
                last = max(last, int(ev.get("seq") or 0))
                yield ev

        async for event in _relay(convert.stream_events(doc, seen(live), self._blob(task_id), self._auth_of(uid))):
            yield event
            if convert.ends_stream(event):
                return
        # The live stream ended before a stop A2A waits for (its plan goes on, or another
        # invocation took the run over): follow the log.
        async for event in _relay(convert.stream_events(doc, self._follow(uid, task_id, last, STREAM_S),
                                                        self._blob(task_id), self._auth_of(uid))):
            yield event

    async def on_subscribe_to_task(self, params: pb.SubscribeToTaskRequest,
                                   context: ServerCallContext) -> AsyncGenerator[Any, None]:
        uid = uid_of(context)
        doc, run = await _off(self._load, uid, params.id)
        task = await _off(self._task_of, uid, doc, run)
        if task.status.state in convert.TERMINAL:
            raise a2a_errors.UnsupportedOperationError(
                message=f"task {params.id} is in terminal state {pb.TaskState.Name(task.status.state)}")
        yield task
        async for event in _relay(convert.stream_events(doc, self._follow(uid, params.id, run.last_seq, STREAM_S),
                                                        self._blob(params.id), self._auth_of(uid))):
            yield event

    # ---- cancel ------------------------------------------------------------------------------
    async def on_cancel_task(self, params: pb.CancelTaskRequest, context: ServerCallContext) -> pb.Task | None:
        return await _off(self._cancel, uid_of(context), params.id)

    def _cancel(self, uid: str, task_id: str) -> pb.Task:
        """The run's cancel (``run_queue.cancel_run``): a task waiting for input or queued ends now;
        a working one stops at its next step boundary (waited for, at most ``CANCEL_WAIT_S``)."""
        from shared.agent.run_queue import cancel_run

        rt = self._rt()
        _, run = self._load(uid, task_id)
        state = convert.state_of(run)
        if state in convert.TERMINAL:
            raise a2a_errors.TaskNotCancelableError(message=f"task {task_id} is {pb.TaskState.Name(state)}")
        try:
            _, stopping = cancel_run(rt.services, uid, task_id, reason="canceled by the A2A caller")
        except Conflict as err:
            raise a2a_errors.TaskNotCancelableError(message=f"{err.code}: {err.message}") from None
        deadline = time.monotonic() + (CANCEL_WAIT_S if stopping else 0.0)
        while True:
            task = self._task(uid, task_id)
            if stopping and task.status.state in convert.INTERRUPTED:
                # It reached a pause before its next step: the pause is closed now.
                with contextlib.suppress(Conflict):
                    cancel_run(rt.services, uid, task_id, reason="canceled by the A2A caller")
                stopping = False
                continue
            if task.status.state in convert.TERMINAL or time.monotonic() >= deadline:
                return task
            time.sleep(0.2)

    # ---- push notifications (stored with the task; delivered by shared/agent/a2a_push.py) -------------
    def _put_push(self, uid: str, task_id: str, config: pb.TaskPushNotificationConfig) -> pb.TaskPushNotificationConfig:
        self._load(uid, task_id)
        if not config.url.startswith(("http://", "https://")):
            raise a2a_errors.InvalidParamsError(message="a push notification url must be http(s)")
        if not self._rt().settings.mcp_allow_private_urls:
            from shared.connectors.url_guard import UrlNotAllowed, check_public_url

            try:
                check_public_url(config.url)
            except UrlNotAllowed as exc:
                raise a2a_errors.InvalidParamsError(message=f"push notification url refused: {exc.message}") from None
        stored = pb.TaskPushNotificationConfig()
        stored.CopyFrom(config)
        stored.task_id = task_id
        stored.id = config.id or str(uuid.uuid4())
        stored.ClearField("tenant")
        tasks = self.tasks
        location = tasks.push_config_location(uid, task_id, stored.id)
        try:
            plain, sealed = a2a_push.seal(self._vault(), location, convert.to_dict(stored))
        except ToolError as err:  # no credentials key: a secret is never stored in clear
            raise a2a_errors.InvalidParamsError(
                message=f"a push notification token or credentials cannot be stored: {err}") from None
        with_errors = _domain_errors(tasks.put_push_config)
        with_errors(uid, task_id, plain, sealed)
        return stored

    def _vault(self) -> CredentialVault:
        return self._rt().connectors().vault

    def _push_configs(self, uid: str, task_id: str) -> list[pb.TaskPushNotificationConfig]:
        self._load(uid, task_id)
        return [self._push_config_of(uid, task_id, doc) for doc in self.tasks.list_push_configs(uid, task_id)]

    def _push_config(self, uid: str, task_id: str, config_id: str) -> pb.TaskPushNotificationConfig:
        self._load(uid, task_id)
        doc = self.tasks.get_push_config(uid, task_id, config_id)
        if doc is None:
            raise a2a_errors.TaskNotFoundError(message=f"no push notification config {config_id[:128]} on this task")
        return self._push_config_of(uid, task_id, doc)

    def _push_config_of(self, uid: str, task_id: str, doc: dict[str, Any]) -> pb.TaskPushNotificationConfig:
        """A stored configuration (:meth:`A2aTasksRepo.list_push_configs`) with its secrets opened."""
        from google.protobuf.json_format import ParseDict

        plain = {k: v for k, v in doc.items() if not k.startswith("_")}
        if doc.get("_sealed"):
            location = self.tasks.push_config_location(uid, task_id, str(doc.get("id") or ""))
            try:
                plain = a2a_push.opened(self._vault(), location, plain, doc["_sealed"])
            except ToolError as err:
                raise a2a_errors.InvalidRequestError(message=str(err)) from None
        config = pb.TaskPushNotificationConfig()
        ParseDict(plain, config, ignore_unknown_fields=True)
        return config

    async def on_create_task_push_notification_config(self, params: pb.TaskPushNotificationConfig,
                                                      context: ServerCallContext) -> pb.TaskPushNotificationConfig:
        return await _off(self._put_push, uid_of(context), params.task_id, params)

    async def on_get_task_push_notification_config(self, params: pb.GetTaskPushNotificationConfigRequest,
                                                   context: ServerCallContext) -> pb.TaskPushNotificationConfig:
        return await _off(self._push_config, uid_of(context), params.task_id, params.id)

    async def on_list_task_push_notification_configs(
            self, params: pb.ListTaskPushNotificationConfigsRequest,
            context: ServerCallContext) -> pb.ListTaskPushNotificationConfigsResponse:
        configs = await _off(self._push_configs, uid_of(context), params.task_id)
        return pb.ListTaskPushNotificationConfigsResponse(configs=configs)

    async def on_delete_task_push_notification_config(self, params: pb.DeleteTaskPushNotificationConfigRequest,
                                                      context: ServerCallContext) -> None:
        uid = uid_of(context)
        await _off(self._load, uid, params.task_id)
        await _off(self.tasks.delete_push_config, uid, params.task_id, params.id)

    async def on_get_extended_agent_card(self, params: pb.GetExtendedAgentCardRequest,
                                         context: ServerCallContext) -> pb.AgentCard:
        raise a2a_errors.ExtendedAgentCardNotConfiguredError


def check_list_query(query: Sequence[tuple[str, str]]) -> None:
    """The HTTP+JSON ``GET /tasks`` query as sent: a ``status`` that names no task state, or an
    ``includeArtifacts`` that is neither true nor false, is ``InvalidParamsError`` (the SDK's query
    parser drops the first and reads the second as false, answering as if nothing had been asked)."""
    for key, value in query:
        if key == "status" and value not in pb.TaskState.DESCRIPTOR.values_by_name:
            raise a2a_errors.InvalidParamsError(message=f"status {value[:64]!r} is not a task state (TASK_STATE_...)")
        if key == "includeArtifacts" and value.lower() not in ("true", "false"):
            raise a2a_errors.InvalidParamsError(message=f"includeArtifacts {value[:64]!r} is neither true nor false")


MAX_OUTPUT_MODES = 32
MAX_MODE_CHARS = 255


def check_output_modes(modes: Sequence[str]) -> None:
    """``configuration.acceptedOutputModes``: at most ``MAX_OUTPUT_MODES`` media types (``InvalidParamsError``
    otherwise), taking ``text/plain`` or ``application/json``: every answer of ours (the answer
    artifact, a direct reply) is one of them, so a caller taking neither is refused with
    ``ContentTypeNotSupportedError`` (spec 1.0: a media type "implied for an artifact" the agent does
    not support), before anything runs."""
    if not modes:
        return
    if len(modes) > MAX_OUTPUT_MODES or any(not m.strip() or len(m) > MAX_MODE_CHARS for m in modes):
        raise a2a_errors.InvalidParamsError(
            message=f"acceptedOutputModes must be at most {MAX_OUTPUT_MODES} media types, each of 1 to "
                    f"{MAX_MODE_CHARS} characters")
    if not convert.accepts(modes, convert.TEXT) and not convert.accepts(modes, convert.JSON):
        raise a2a_errors.ContentTypeNotSupportedError(
            message=f"acceptedOutputModes {', '.join(modes)[:300]}: this agent answers in text/plain or "
                    "application/json (and files of the types its card lists); accept one of them")


async def _relay(events: Any) -> AsyncGenerator[Any, None]:
    """A synchronous iterable (it reads the store, it may wait) relayed from a worker thread; ends
    after the first event that ends an A2A stream. Our refusals on the way (a run that cannot be
    read any more) end it in A2A's words."""
    it = iter(events)
    step = _domain_errors(next)
    while True:
        event = await asyncio.to_thread(step, it, _END)
        if event is _END:
            return
        yield event
        if convert.ends_stream(event):
            close = getattr(it, "close", None)
            if close is not None:
                await asyncio.to_thread(close)
            return
