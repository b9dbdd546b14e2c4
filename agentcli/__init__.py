"""``agent``: the command line of plan sessions (seed 004), a client of the public HTTP API."""
