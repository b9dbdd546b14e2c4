"""``python -m hostagent.reference_host [--host H] [--port P] [--path /relay] [--fault SPEC]...``

Serves the reference host until interrupted; the first line on stdout is
``reference host listening on ws://H:P/PATH`` (with the real port when ``--port 0``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from hostagent.hosting import serve_until_stopped
from hostagent.reference_host.faults import FAULT_KINDS, Fault, parse_fault
from hostagent.reference_host.server import ReferenceHost


def _fault(spec: str) -> Fault:
    try:
        return parse_fault(spec)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def _serve(args: argparse.Namespace) -> None:
    server = ReferenceHost(faults=args.fault, host=args.host, port=args.port, path=args.path,
                           user_profile=None if args.no_user else ("Ada Lovelace", "ada@example.com"))
    await serve_until_stopped(server, "reference host")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hostagent.reference_host", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--path", default="/relay")
    parser.add_argument("--fault", type=_fault, action="append", default=[],
                        help=f"KIND[:TOOL[:TIMES[:TEXT]]], KIND one of: {', '.join(FAULT_KINDS)}")
    parser.add_argument("--no-user", action="store_true", help="no simulated user answering the agent's questions")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
