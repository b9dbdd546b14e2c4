"""``agent plan "prompt" [--deadline 2h] [--repo URL] [--server URL] [--token T]`` and
``agent approvals [--status pending|decided|all] [--decide]``.

``plan`` prints the proposed plan as a table, reads refinements (each shows what changed) until the
user confirms (``y``) or cancels (``q``), then follows execution live (task i of n, each act and
its outcome, the time left), answers approvals inline, and prints the final log (arguments as
JSON). ``approvals`` lists the caller's approvals inbox (chat runs and plan sessions alike) and with
``--decide`` asks for each pending one. Talks to the public HTTP API only, so it works against
``make dev`` and a deployment alike. Server: ``--server``, else ``AGENT_SERVER``, else ``make dev``'s
address (``http://127.0.0.1:$PORT``, port 8080 unless ``PORT`` is set, as in the Makefile). Token:
``--token``, else ``AGENT_TOKEN`` (a Firebase ID token; locally ``dev:<uid>``), else ``dev:$USER``.
Every command's first line says which server and which user it acts as, and where each came from.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from agentcli.http import Api, ApiError

DURATION = re.compile(r"^(\d+)\s*([smhd])$")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def deadline_arg(text: str) -> str:
    m = DURATION.match(text.strip())
    if m:
        at = datetime.now(UTC) + timedelta(seconds=int(m.group(1)) * UNITS[m.group(2)])
        return at.isoformat().replace("+00:00", "Z")
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError("use a duration (90m, 2h, 1d) or an RFC 3339 time") from None
    return text


def table(plan: dict[str, Any], out: TextIO) -> None:
    print(f"Plan v{plan['version']}:", file=out)
    width = max([len(t["title"]) for t in plan["tasks"]] + [5])
    print(f"  {'#':>2}  {'id':<4}  {'task':<{width}}  status", file=out)
    for i, t in enumerate(plan["tasks"], 1):
        print(f"  {i:>2}  {t['taskId']:<4}  {t['title']:<{width}}  {t.get('status', 'pending')}", file=out)


def as_json(value: Any) -> str:
    """Arguments and results as the API has them (JSON), not Python's repr."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def clock(at: str) -> str:
    """``HH:MM:SS`` (UTC) of an RFC 3339 time, with its date when it is not today's."""
    when = datetime.fromisoformat(at.replace("Z", "+00:00"))
    today = datetime.now(UTC).date()
    return when.strftime("%H:%M:%S" if when.date() == today else "%Y-%m-%d %H:%M:%S")


INTERNAL_TOOLS = frozenset({"task_done"})
"""Pseudo-tools of the plan loop (a task's end), not acts: never shown as one."""


def show_changes(api: Api, sid: str, out: TextIO) -> None:
    """What the last refinement changed and why (the session's newest plan version)."""
    versions = api.call("GET", f"/api/agent/sessions/{sid}")["plan"].get("versions") or []
    if versions:
        last = versions[-1]
        for change in last["changes"]:
            print(f"  changed ({change['op']}): {change['what']}", file=out)
        if last["reason"]:
            print(f"  why: {last['reason']}", file=out)


def time_left(deadline: str) -> str:
    left = int(datetime.fromisoformat(deadline.replace("Z", "+00:00")).timestamp() - time.time())
    return f"{left // 60}m{left % 60:02d}s left" if left > 0 else "past the deadline"


def review(api: Api, sid: str, plan: dict[str, Any], inp: TextIO, out: TextIO) -> int:
    """Refine until confirmed (the plan version confirmed) or cancelled (0)."""
    while True:
        table(plan, out)
        print("Refine it in words, 'y' to confirm, 'q' to cancel:", file=out, flush=True)
        line = inp.readline()
        if not line:
            line = "q\n"
        answer = line.strip()
        if answer.lower() in ("y", "yes"):
            api.call("POST", f"/api/agent/sessions/{sid}/confirm", {"planVersion": plan["version"]})
            return int(plan["version"])
        if answer.lower() in ("q", "quit", "cancel"):
            api.call("POST", f"/api/agent/sessions/{sid}/cancel", {"reason": "cancelled at review (agent plan)"})
            return 0
        if answer:
            try:
                plan = api.call("POST", f"/api/agent/sessions/{sid}/refine", {"message": answer})["plan"]
            except ApiError as exc:
                print(f"refinement refused: {exc}", file=out)
                continue
            show_changes(api, sid, out)


def act_line(act: dict[str, Any] | None, observed: dict[str, Any]) -> str:
    """One act and its outcome: ``act: <preview> -> ok``, ``rejected: <preview>`` when the user (or
    the policy) refused it, ``act: <preview> -> error: <message>`` when it failed."""
    preview = act["preview"] if act else observed["tool"]
    observation = observed.get("observation") or {}
    if observed["outcome"] == "rejected" or observation.get("rejected") is True:
        return f"rejected: {preview}"
    if observed["outcome"] == "error":
        return f"act: {preview} -> error: {observation.get('error', '')}"
    return f"act: {preview} -> {observed['outcome']}"


def follow(api: Api, sid: str, deadline: str, inp: TextIO, out: TextIO, confirmed: int = 0) -> dict[str, Any]:
    """Print the session's progress live; plan versions up to ``confirmed`` were shown at review
    (they are in the event log too) and are not printed again."""
    after = 0
    ended: dict[str, Any] | None = None
    act: dict[str, Any] | None = None  # shown with its outcome, once observed
    while True:
        # Once the session has ended, one more (non-following) read prints the events it committed
        # after the last read: it can end between that read and the status check.
        for ev in api.lines(f"/api/agent/sessions/{sid}/events?after={after}" + ("" if ended else "&follow=1")):
            kind = ev["type"]
            if kind in ("heartbeat", "stream_end"):  # the connection is alive / why the follow closed
                continue
            after = int(ev["seq"])
            if kind == "task_start":
                print(f"[task {ev['index']} of {ev['total']}] {ev['title']}  ({time_left(deadline)})", file=out)
            elif kind == "act":
                act = ev
            elif kind == "observe":
                print("    " + act_line(act, ev), file=out)
                act = None
            elif kind == "task_complete":
                print(f"    task {ev['taskId']} {ev['status']}: {ev['summary']}", file=out)
            elif kind == "plan_updated" and ev.get("changes") and ev["plan"]["version"] > confirmed:
                print(f"  plan v{ev['plan']['version']}: " + "; ".join(c["what"] for c in ev["changes"]), file=out)
            elif kind == "approval_required":
                print(f"  approval needed: {ev['preview']} ({ev['reason']}). Approve? [y/N]", file=out, flush=True)
                decision = "approve" if inp.readline().strip().lower() in ("y", "yes") else "reject"
                api.call("POST", "/api/agent/approve", {"approvalId": ev["approvalId"], "decision": decision})
        if ended is not None:
            return ended
        session = api.call("GET", f"/api/agent/sessions/{sid}")
        if session["status"] not in ("executing", "planning", "awaiting_confirmation"):
            ended = session
            continue
        time.sleep(0.2)


def approvals(api: Api, status: str, decide: bool, inp: TextIO, out: TextIO) -> int:
    """The caller's approvals inbox, newest first; with ``decide``, a y/N/skip question per pending one."""
    listed = api.call("GET", f"/api/agent/approvals?status={status}")["approvals"]
    if not listed:
        print("nothing is waiting for a decision" if status == "pending" else "no approvals", file=out)
        return 0
    for a in listed:
        where = f"session {a['sessionId']} task {a.get('taskId') or '?'}" if a.get("sessionId") else f"run {a['runId']}"
        print(f"{a['approvalId']}  {a['status']:<8} {clock(a['createdAt'])}  {a['tool']}: {a['preview']}", file=out)
        print(f"    {where}; {a['reason']} (expires {clock(a['expiresAt'])})", file=out)
        if decide and a["status"] == "pending":
            print("    Approve? [y/N/s(kip)]", file=out, flush=True)
            answer = inp.readline().strip().lower()
            if answer in ("s", "skip"):
                continue
            decision = "approve" if answer in ("y", "yes") else "reject"
            api.call("POST", "/api/agent/approve", {"approvalId": a["approvalId"], "decision": decision})
            print(f"    {decision}d", file=out)
    return 0


def chosen(given: str | None, env: str, default: str, default_from: str) -> tuple[str, str]:
    """The value to use and where it came from: the option, the environment variable, or the default."""
    if given:
        return given, "--" + ("server" if env == "AGENT_SERVER" else "token")
    from_env = os.environ.get(env, "").strip()
    if from_env:
        return from_env, env
    return default, f"default: {default_from}"


def who(token: str) -> str:
    """The user a token acts as, as far as the CLI can tell (a local ``dev:<uid>`` names it)."""
    if token.startswith("dev:"):
        return f"user {token.removeprefix('dev:')}"
    return "the user of a Firebase ID token"


def run(argv: list[str], inp: TextIO = sys.stdin, out: TextIO = sys.stdout) -> int:
    p = argparse.ArgumentParser(prog="agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="plan, refine, confirm and follow a session")
    plan.add_argument("prompt")
    plan.add_argument("--deadline", type=deadline_arg, default=None, help="90m, 2h, 1d or an RFC 3339 time")
    plan.add_argument("--repo", default=None, help="https URL of a GitHub repository")
    inbox = sub.add_parser("approvals", help="list (and decide) what waits for your decision")
    inbox.add_argument("--status", choices=("pending", "decided", "all"), default="pending")
    inbox.add_argument("--decide", action="store_true", help="ask approve/reject for each pending approval")
    for cmd in (plan, inbox):
        cmd.add_argument("--server", default=None, help="the API's root (default: AGENT_SERVER, else make dev's)")
        cmd.add_argument("--token", default=None, help="bearer token (default: AGENT_TOKEN, else dev:$USER)")
    args = p.parse_args(argv)
    args.server, server_from = chosen(args.server, "AGENT_SERVER",
                                      f"http://127.0.0.1:{os.environ.get('PORT', '').strip() or '8080'}", "make dev")
    args.token, token_from = chosen(args.token, "AGENT_TOKEN", f"dev:{os.environ.get('USER') or 'cli'}", "$USER")
    print(f"agent {args.command}: {args.server} ({server_from}) as {who(args.token)} ({token_from})", file=out)
    api = Api(args.server, args.token)
    try:
        if args.command == "approvals":
            return approvals(api, args.status, args.decide, inp, out)
        return plan_session(api, args, inp, out)
    except ApiError as exc:
        print(f"error: {exc}", file=out)
        return 2
    except OSError as exc:
        print(f"cannot reach {args.server}: {exc}", file=out)
        return 2


def plan_session(api: Api, args: argparse.Namespace, inp: TextIO, out: TextIO) -> int:
    """``agent plan``: create, review, follow, then print the final log."""
    body: dict[str, Any] = {"prompt": args.prompt}
    if args.deadline:
        body["deadline"] = args.deadline
    if args.repo:
        body["repoUrl"] = args.repo
    created = api.call("POST", "/api/agent/sessions", body)
    if not created["ok"]:
        print(f"planning failed: {created['error']['code']}: {created['error']['message']}", file=out)
        return 1
    sid = created["sessionId"]
    print(f"session {sid} (deadline {created['deadline']})", file=out)
    confirmed = review(api, sid, created["plan"], inp, out)
    if not confirmed:
        print("cancelled", file=out)
        return 1
    final = follow(api, sid, created["deadline"], inp, out, confirmed)
    print(f"session {final['status']}", file=out)
    for entry in (final.get("result") or {}).get("log", []):
        if entry["tool"] in INTERNAL_TOOLS:
            continue
        print(f"  {clock(entry['at'])}  {entry['taskId']:<4} {entry['tool']:<20} {entry['outcome']:<8} "
              f"{as_json(entry['arguments'])}", file=out)
    return 0 if final["status"] == "completed" else 1


def main() -> None:
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
