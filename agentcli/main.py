"""``agent plan "prompt" [--deadline 2h] [--repo URL] [--server URL]``.

Prints the proposed plan as a table, reads refinements until the user confirms (``y``) or cancels
(``q``), then follows execution live (task i of n, the current act, the time left), answers
approvals inline, and prints the final log. Talks to the public HTTP API only, so it works against
``make dev`` and a deployment alike (``--token`` or ``AGENT_TOKEN``: a Firebase ID token; locally
``dev:<uid>``, by default ``dev:$USER``).
"""

from __future__ import annotations

import argparse
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
        print(f"  {i:>2}  {t['id']:<4}  {t['title']:<{width}}  {t.get('status', 'pending')}", file=out)


def time_left(deadline: str) -> str:
    left = int(datetime.fromisoformat(deadline.replace("Z", "+00:00")).timestamp() - time.time())
    return f"{left // 60}m{left % 60:02d}s left" if left > 0 else "past the deadline"


def review(api: Api, sid: str, plan: dict[str, Any], inp: TextIO, out: TextIO) -> bool:
    """Refine until confirmed (True) or cancelled (False)."""
    while True:
        table(plan, out)
        print("Refine it in words, 'y' to confirm, 'q' to cancel:", file=out, flush=True)
        line = inp.readline()
        if not line:
            line = "q\n"
        answer = line.strip()
        if answer.lower() in ("y", "yes"):
            api.call("POST", f"/api/agent/sessions/{sid}/confirm", {"planVersion": plan["version"]})
            return True
        if answer.lower() in ("q", "quit", "cancel"):
            api.call("POST", f"/api/agent/sessions/{sid}/cancel")
            return False
        if answer:
            try:
                plan = api.call("POST", f"/api/agent/sessions/{sid}/refine", {"message": answer})
            except ApiError as exc:
                print(f"refinement refused: {exc}", file=out)


def follow(api: Api, sid: str, deadline: str, inp: TextIO, out: TextIO) -> dict[str, Any]:
    after = 0
    ended: dict[str, Any] | None = None
    while True:
        # Once the session has ended, one more (non-following) read prints the events it committed
        # after the last read: it can end between that read and the status check.
        for ev in api.lines(f"/api/agent/sessions/{sid}/events?after={after}" + ("" if ended else "&follow=1")):
            after = int(ev["seq"])
            kind = ev["type"]
            if kind == "task_start":
                print(f"[task {ev['index']} of {ev['total']}] {ev['title']}  ({time_left(deadline)})", file=out)
            elif kind == "act":
                print(f"    act: {ev['preview']}", file=out)
            elif kind == "observe":
                print(f"    observed: {ev['outcome']}", file=out)
            elif kind == "task_complete":
                print(f"    task {ev['taskId']} {ev['status']}: {ev['summary']}", file=out)
            elif kind == "plan_updated" and ev.get("changes"):
                print(f"  plan v{ev['version']}: " + "; ".join(c["what"] for c in ev["changes"]), file=out)
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


def run(argv: list[str], inp: TextIO = sys.stdin, out: TextIO = sys.stdout) -> int:
    p = argparse.ArgumentParser(prog="agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="plan, refine, confirm and follow a session")
    plan.add_argument("prompt")
    plan.add_argument("--deadline", type=deadline_arg, default=None, help="90m, 2h, 1d or an RFC 3339 time")
    plan.add_argument("--repo", default=None, help="https URL of a GitHub repository")
    plan.add_argument("--server", default=os.environ.get("AGENT_SERVER", "http://127.0.0.1:8080"))
    plan.add_argument("--token", default=os.environ.get("AGENT_TOKEN", f"dev:{os.environ.get('USER') or 'cli'}"))
    args = p.parse_args(argv)
    api = Api(args.server, args.token)
    body: dict[str, Any] = {"prompt": args.prompt}
    if args.deadline:
        body["deadline"] = args.deadline
    if args.repo:
        body["repoUrl"] = args.repo
    try:
        created = api.call("POST", "/api/agent/sessions", body)
        if not created["ok"]:
            print(f"planning failed: {created['error']['code']}: {created['error']['message']}", file=out)
            return 1
        sid = created["sessionId"]
        print(f"session {sid} (deadline {created['deadline']})", file=out)
        if not review(api, sid, created["plan"], inp, out):
            print("cancelled", file=out)
            return 1
        final = follow(api, sid, created["deadline"], inp, out)
    except ApiError as exc:
        print(f"error: {exc}", file=out)
        return 2
    except OSError as exc:
        print(f"cannot reach {args.server}: {exc}", file=out)
        return 2
    print(f"session {final['status']}", file=out)
    for entry in (final.get("result") or {}).get("log", []):
        at = datetime.fromtimestamp(entry["at"], UTC).strftime("%H:%M:%S")
        print(f"  {at}  {entry['taskId']:<4} {entry['tool']:<20} {entry['outcome']:<6} {entry['arguments']}", file=out)
    return 0 if final["status"] == "completed" else 1


def main() -> None:
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
