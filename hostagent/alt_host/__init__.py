"""A second, independent movie host ("Lumière") speaking mvp-0.2, written from
docs/host-protocol.md and its tool list only: same stages and tools as the reference host, its own
screens (nested components, other key names, a seat grid), wording and fault switches. The agent's
acceptance suite runs against both; ``python -m hostagent.alt_host`` serves it.
"""
