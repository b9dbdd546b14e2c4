"""The loop tests' fixtures (a runtime on each real store), for the tracing tests that reuse them."""

from tests.agent.conftest import make_runtime, store

__all__ = ["make_runtime", "store"]
