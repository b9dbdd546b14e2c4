"""Benchmarks and the reliability scenario (``make bench``, ``make reliability``); see docs/benchmarks.md.

Not part of the deployed bundle. Measurement code only: every figure is taken on the real runtime
(real stores, the real HTTP apps, the real functions-framework), wrapped where needed by thin
instruments that count and time calls but never replace behaviour.
"""
