"""The host agent (seed 002): an external agent that drives a host app over a WebSocket protocol.

The wire format is ``docs/host-protocol.md``. Components, one module each: ``protocol`` (message
models), ``schemas`` (the JSON Schema of every message and the validation of every frame),
``transport`` (the only module importing the ``websockets`` client), ``relay_client`` (request/reply
correlation and timeouts), ``event_bus`` (inbound routing), ``perception`` with ``screen`` (any
host's uiSpec normalised into one view), ``planner`` (the interface), ``rules_planner`` (with
``tool_choice``: tools and params from the host's schemas) and ``llm_planner``, ``executor``,
``verifier``, ``memory``, ``policies`` (retry and safety), ``session_log`` (the JSONL log) and
``agent`` (the control loop). ``cli`` is ``host-agent``; ``conform`` its conformance checker for
host builders; ``reference_host`` and ``alt_host`` (an independent host with another uiSpec
dialect) are the movie-booking host simulators the tests and ``make host-demo`` use.

It uses ``shared.models``, ``shared.config`` and ``shared.logs`` only, never the runtime's agent
loop or state store: it is a separate, long-lived client process.
"""
