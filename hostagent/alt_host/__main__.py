"""``python -m hostagent.alt_host [--host H] [--port P] [--path /ws] [--fault SPEC]... [--no-user]``

Serves the alternative host until interrupted; the first line on stdout is
``alt host listening on ws://H:P/PATH``.
"""

from __future__ import annotations

from hostagent.alt_host.faults import KINDS, switch
from hostagent.alt_host.server import AltHost
from hostagent.hosting import host_main


def _spec(value: str) -> str:
    switch(value)  # a ValueError names what is wrong with it
    return value


def main(argv: list[str] | None = None) -> int:
    return host_main(argv, prog="python -m hostagent.alt_host", doc=__doc__, label="alt host", port=8766, path="/ws",
                     fault=_spec, fault_kinds=KINDS, no_user_help="nobody answers the agent's questions", make=AltHost)


if __name__ == "__main__":
    raise SystemExit(main())
