"""The reference host: a movie-booking app simulator that speaks the host protocol, with its own
relay and switchable faults (``faults``). Tests and ``make host-demo`` run the agent against it;
``python -m hostagent.reference_host --port 8765`` serves it on its own.

Flow: ``browse`` -> ``showtimes`` -> ``seats`` -> ``checkout`` -> ``confirmation``; each
``state.updated`` carries exactly the current stage's tools (``catalog.STAGE_TOOLS``).
"""
