"""Minimal reproductions of runtime problems found by the benchmarks (see docs/benchmarks.md)."""
