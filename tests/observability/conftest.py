"""The loop tests' fixtures (a runtime on each real store: ``store`` is tests/conftest.py's), for the
tracing tests that reuse them."""

from tests.agent.conftest import make_runtime

__all__ = ["make_runtime"]
