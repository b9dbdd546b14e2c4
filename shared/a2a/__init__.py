"""A2A (Agent2Agent, spec 1.0): our agent as an A2A server at ``/a2a`` and remote A2A agents as
tools (docs/a2a.md). The a2a-sdk is imported by this package only, and only when A2A is used."""
