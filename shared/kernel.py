"""The composition of the durable kernel: which hosts act on which units, which handler serves
which message kind. Called once per process by ``shared/runtime.py`` (the edge); the durability
layer itself knows none of these names.

| kind       | published by                          | handler                         |
|------------|---------------------------------------|---------------------------------|
| `resume`   | a decided approval (outbox)           | continue the run (loop/resume)  |
| `continue` | a unit that yielded its invocation    | continue the run (loop/resume)  |
| `deliver`  | a recorded webhook delivery (outbox); the sweep for due retries | one signed attempt (shared/delivery) |
| `schedule_tick` | Cloud Scheduler every minute / `make dev`'s ticker | fire the due schedules (agent/schedules) |
| `schedule_fire` | a due schedule's occurrence (outbox) | start its run, once |
| `dequeue`  | a run queued on a busy thread (outbox) | start it when its turn came (agent/run_queue) |
| `sweep`    | Cloud Scheduler / `make dev`'s thread | the router's sweep (every kind; sessions past deadline) |

Hosts: ``chat`` (seed 001 runs), ``plan`` (a confirmed plan session's execution, shared/plans/host.py).

The loop itself is imported only when a router is built (deciding an approval never loads it), and
each handler's modules when a message of its kind first comes (the loop's resume when a ``resume``
or ``continue`` message does, which imports the rest of the loop only once it has a run to drive:
a message for a run that is gone or still waits loads no step, tool or model module; issue 33).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from shared.durable.kinds import CONTINUE, DELIVER, DEQUEUE, RESUME, SCHEDULE_FIRE, SCHEDULE_TICK

if TYPE_CHECKING:
    from shared.durable.messages import WorkMessage
    from shared.durable.router import Disposition, Router
    from shared.loop.host import Host, HostRegistry
    from shared.loop.services import Services
    from shared.state.sessions_repo import SessionsRepo


CHAT_KIND = "chat"
PLAN_KIND = "plan"
"""``ChatHost.kind`` and ``shared.plans.plan_state.KIND``, written here so that building the hosts
imports no host: each is built (its modules imported) when a unit of its kind first needs it, so
deciding an approval loads neither, and a chat run never loads the plan executor
(tests/unit/test_entry_point_imports.py checks the kinds agree)."""


def build_hosts(sessions: SessionsRepo, extra: list[Host] | None = None) -> HostRegistry:
    from shared.loop.host import HostRegistry

    def chat_host() -> Host:
        from shared.agent.chat_host import ChatHost
        from shared.agent.plan_tool import PlanTools

        tools = PlanTools(sessions)
        return ChatHost({t.name: t for t in (tools.create, tools.execute)}, sessions)

    def plan_host() -> Host:
        from shared.plans.host import PlanHost

        return PlanHost(sessions)

    hosts = HostRegistry()
    hosts.register_lazy(CHAT_KIND, chat_host)
    hosts.register_lazy(PLAN_KIND, plan_host)
    for host in extra or []:
        hosts.register(host)
    return hosts


def build_router(services: Services, sessions: Callable[[], SessionsRepo]) -> Router:
    """``sessions``: the sessions repository, built when the sweep first needs it."""
    from shared.durable.router import Router

    def session_deadlines(limit: int) -> int:
        from shared.plans.sessions import end_past_deadline  # the plan engine: only when the sweep runs

        return end_past_deadline(services, sessions(), limit)

    def run_message(message: WorkMessage) -> Disposition:
        from shared.loop.resume import handle_run_message

        return handle_run_message(services, message)

    def runs(limit: int) -> int:
        from shared.loop.resume import recover_runs

        return recover_runs(services, limit)

    def expired_pauses(limit: int) -> int:
        from shared.loop.resume import close_expired_pauses

        return close_expired_pauses(services, limit)

    router = Router(services.outbox)
    router.register(RESUME, run_message, recover=runs)
    router.register(CONTINUE, run_message)

    def dequeue(message: WorkMessage) -> Disposition:
        from shared.agent.run_queue import handle_dequeue

        return handle_dequeue(services, message)

    def queues(limit: int) -> int:
        from shared.agent.run_queue import recover_queues

        return recover_queues(services, limit)

    router.register(DEQUEUE, dequeue, recover=queues)

    def deliver(message: WorkMessage) -> Disposition:
        from shared.agent.webhooks import Webhooks

        return Webhooks(services).deliverer().handle(message)

    def retries(limit: int) -> int:
        from shared.agent.webhooks import Webhooks

        return Webhooks(services).deliverer().retry_due(limit)

    router.register(DELIVER, deliver, recover=retries)

    def tick(message: WorkMessage) -> Disposition:
        from shared.agent.schedules import Schedules, tick_time

        Schedules(services).tick(tick_time(message))
        return "done"

    def fire(message: WorkMessage) -> Disposition:
        from shared.agent.schedules import Schedules

        return Schedules(services).fire(message)

    router.register(SCHEDULE_TICK, tick)
    router.register(SCHEDULE_FIRE, fire)
    router.add_recoverer("session_deadlines", session_deadlines)
    router.add_recoverer("expired_pauses", expired_pauses)

    def approvals_waiting(_limit: int) -> int:
        from shared.approvals_waiting import report  # the gauge's line (docs/observability.md)

        report(services.runs)
        return 0  # a measurement, nothing recovered

    router.add_recoverer("approvals_waiting", approvals_waiting)
    if services.settings.sandbox_url:
        router.add_recoverer("workspaces", lambda limit: sweep_workspaces(services, limit))
    return router


def sweep_workspaces(services: Services, limit: int) -> int:
    """Workspaces idle past their TTL, and those of units that ended (unless kept), are destroyed."""
    from shared.workspaces import Workspaces

    return Workspaces(services.runs.store, services.settings, services.connectors() if services.connectors else None
                      ).sweep(limit=limit)
