"""The scripted planner/executor of plan-session tests lives with the benchmarks that use it too."""

from bench.plan_model import Script, model

__all__ = ["Script", "model"]
