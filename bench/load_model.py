"""The fake Gemini server of ``make load``, in a process of its own (``python -m bench.load_model``).

The dev server's real ``google-genai`` SDK talks to it (tests/fakes/fake_gemini.py). Every answer
waits ``--latency-s`` first, as a real model would, so the load tool can subtract a known model time.
Script per run: the first turn asks for ``save_memory`` (a side effect that needs approval) with the
text of the prompt's ``remember:`` line; the turn after the tool's answer (done or rejected) is text.

It runs apart from the load driver so that neither one's CPU (and GIL) slows the other. It prints
``{"baseUrl", "apiKey", "model"}`` as one JSON line on stdout, then serves until stdin closes or it
is terminated.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from tests.fakes.fake_gemini import FakeGemini, Received, Reply, Script, call

REMEMBER = re.compile(r"remember: (load-[A-Za-z0-9_-]+)")
"""The prompt line naming what the user asks to remember (one unique token per run)."""


def _last_parts(received: Received) -> list[dict[str, Any]]:
    contents = received.body.get("contents") or []
    parts: list[dict[str, Any]] = contents[-1].get("parts", []) if contents else []
    return parts


def script(latency_s: float) -> FakeGemini:
    fake = FakeGemini()

    def handle(received: Received) -> Script:
        parts = _last_parts(received)
        if any("functionResponse" in p for p in parts):
            rejected = any(p["functionResponse"].get("response", {}).get("rejected") for p in parts
                           if "functionResponse" in p)
            return Reply.text("Understood, I did not save it." if rejected else "Saved, I will remember that.",
                              delay_s=latency_s)
        prompt = " ".join(str(p.get("text", "")) for p in parts)
        found = REMEMBER.search(prompt)
        token = found.group(1) if found else "load-unknown"
        return Reply([call("save_memory", {"text": f"The user asked to remember {token}."})], delay_s=latency_s)

    fake.handler = handle
    return fake


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-s", type=float, default=0.5, help="wait before every answer (seconds)")
    args = parser.parse_args(argv)
    with script(args.latency_s) as fake:
        print(json.dumps({"baseUrl": fake.base_url, "apiKey": fake.api_key, "model": fake.model}), flush=True)
        sys.stdin.read()  # until the load driver closes our stdin (or ends)


if __name__ == "__main__":
    main(sys.argv[1:])
