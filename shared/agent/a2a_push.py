"""A2A push notifications (docs/a2a.md, "Push notifications"): when a run that is an A2A task stops
(completes, fails, pauses for input), one delivery per push configuration of its task is recorded
in the stop's commit and published after it, through the webhook delivery machinery
(``shared/delivery``: at least once, retried on the Standard Webhooks schedule). The body is a
``StreamResponse`` holding the task as of that stop; the configuration's ``token`` goes in
``X-A2A-Notification-Token`` and its ``authentication`` (scheme, credentials) in ``Authorization``.

The token and the credentials are secrets of the caller's: they are stored sealed
(:func:`seal`: AES-256-GCM under the credentials key, the configuration document's path as
associated data, like a user's MCP server token) and never copied into a delivery record: each
attempt opens them from the configuration (:func:`headers_of`), so deleting the configuration
stops its notifications.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from shared.agent import a2a_convert as convert
from shared.state.a2a_tasks_repo import A2aTasksRepo
from shared.state.deliveries_repo import DeliveryRecord

if TYPE_CHECKING:
    from shared.connectors.credentials import CredentialVault
    from shared.delivery.sender import Deliverer
    from shared.loop.context import RunContext
    from shared.state.docstore import DocStore
    from shared.state.records import RunResult

LABEL = "A2A push notification"
THREAD_PREFIX = "a2a_"
"""The threads of A2A contexts (``convert.thread_for``): only their runs can be tasks."""
TOKEN_HEADER = "X-A2A-Notification-Token"


def announce(ctx: RunContext, result: RunResult, deliverer: Deliverer) -> list[str]:
    """Record (in the run's next commit) a delivery per push configuration of the run's task; the ids
    to publish after the commit. Runs outside A2A contexts cost nothing (no read)."""
    run = ctx.run
    if not run.thread_id.startswith(THREAD_PREFIX):
        return []
    from a2a.types import a2a_pb2 as pb
    from google.protobuf.json_format import MessageToDict

    tasks = A2aTasksRepo(ctx.services.runs.store)
    doc = tasks.readable(run.uid, run.run_id)
    configs = tasks.list_push_configs(run.uid, run.run_id) if doc is not None else []
    if doc is None or not configs:
        return []
    pending = [a.approval_id for a in (result.approvals or ([result.approval] if result.approval else []))]
    stopped = run.model_copy(update={"status": result.status, "result": result, "error": result.error,
                                     "pending_approval_ids": pending, "updated_at": time.time()})
    auth = convert.missing_for(ctx.registry, ctx.services.connectors, run.uid)(result) if pending else []
    task = convert.task_of(doc, stopped, auth=auth)
    body = json.dumps(MessageToDict(pb.StreamResponse(task=task)), ensure_ascii=False, separators=(",", ":"))
    ids: list[str] = []
    for config in configs:
        location = str(config["_path"])
        sealed = config.get("_sealed") is not None
        record = DeliveryRecord(delivery_id=ctx.services.new_id("msg"), uid=run.uid,
                                target=f"a2a:{run.run_id}", url=str(config.get("url")), event_type="a2a.task",
                                body=body, secret_name="", subject=run.run_id,
                                headers={} if sealed else _headers(config), headers_from=location if sealed else None,
                                created_at=time.time())
        ctx.write(*deliverer.recorded(record))
        ids.append(record.delivery_id)
    return ids


def _headers(config: dict[str, Any]) -> dict[str, str]:
    headers: dict[str, str] = {}
    if config.get("token"):
        headers[TOKEN_HEADER] = str(config["token"])
    auth = config.get("authentication") or {}
    if auth.get("scheme") and auth.get("credentials"):
        headers["Authorization"] = f"{auth['scheme']} {auth['credentials']}"
    return headers


def seal(vault: CredentialVault, location: str, config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``config`` (A2A JSON) without its secrets (``token``, ``authentication.credentials``), and
    them sealed for the document at ``location`` (None when it has none)."""
    out = dict(config)
    token = out.pop("token", None)
    auth = dict(out.get("authentication") or {})
    credentials = auth.pop("credentials", None)
    if auth or "authentication" in out:
        out["authentication"] = auth
    if not token and not credentials:
        return out, None
    secret = json.dumps({"token": token, "credentials": credentials})
    return out, vault.seal_text(location, secret, LABEL)


def opened(vault: CredentialVault, location: str, config: dict[str, Any], sealed: dict[str, Any]) -> dict[str, Any]:
    """The configuration with what :func:`seal` sealed put back (``ConnectorError`` when it cannot
    be read: another key sealed it)."""
    secret = json.loads(vault.open_text(location, sealed, LABEL))
    out = dict(config)
    if secret.get("token"):
        out["token"] = secret["token"]
    if secret.get("credentials"):
        out["authentication"] = {**dict(out.get("authentication") or {}), "credentials": secret["credentials"]}
    return out


def headers_of(store: DocStore,
               vault: Callable[[], CredentialVault]) -> Callable[[DeliveryRecord], dict[str, str] | None]:
    """The sender's reader of a push notification's secret headers, from its configuration (None:
    the configuration is gone or cannot be read; the delivery is refused)."""

    def read(record: DeliveryRecord) -> dict[str, str] | None:
        location = record.headers_from or ""
        got = A2aTasksRepo(store).push_config_at(location)
        if got is None or got[1] is None:
            return None
        try:
            return _headers(opened(vault(), location, got[0], got[1]))
        except Exception:
            return None

    return read
