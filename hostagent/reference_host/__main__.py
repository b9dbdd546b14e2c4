"""``python -m hostagent.reference_host [--host H] [--port P] [--path /relay] [--fault SPEC]...``

Serves the reference host until interrupted; the first line on stdout is
``reference host listening on ws://H:P/PATH`` (with the real port when ``--port 0``).
"""

from __future__ import annotations

from hostagent.hosting import host_main
from hostagent.reference_host.faults import FAULT_KINDS, parse_fault
from hostagent.reference_host.server import ReferenceHost


def main(argv: list[str] | None = None) -> int:
    return host_main(argv, prog="python -m hostagent.reference_host", doc=__doc__, label="reference host", port=8765,
                     path="/relay", fault=parse_fault, fault_kinds=FAULT_KINDS,
                     no_user_help="no simulated user answering the agent's questions", make=ReferenceHost)


if __name__ == "__main__":
    raise SystemExit(main())
