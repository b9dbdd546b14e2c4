"""``python -m hostagent.alt_host [--host H] [--port P] [--path /ws] [--fault SPEC]... [--no-user]``

Serves the alternative host until interrupted; the first line on stdout is
``alt host listening on ws://H:P/PATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from hostagent.alt_host.faults import KINDS, switch
from hostagent.alt_host.server import AltHost
from hostagent.hosting import serve_until_stopped


def _spec(value: str) -> str:
    try:
        switch(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


async def _serve(args: argparse.Namespace) -> None:
    host = AltHost(faults=args.fault, host=args.host, port=args.port, path=args.path,
                   user_profile=None if args.no_user else ("Ada Lovelace", "ada@example.com"))
    await serve_until_stopped(host, "alt host")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hostagent.alt_host", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--path", default="/ws")
    parser.add_argument("--fault", type=_spec, action="append", default=[],
                        help=f"KIND[:TOOL[:TIMES[:TEXT]]], KIND one of: {', '.join(KINDS)}")
    parser.add_argument("--no-user", action="store_true", help="nobody answers the agent's questions")
    asyncio.run(_serve(parser.parse_args(sys.argv[1:] if argv is None else argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
