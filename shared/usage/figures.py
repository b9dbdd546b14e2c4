"""Moved: the ``Usage`` figures of model calls are a leaf of their own (``shared/token_usage.py``),
below the state and usage packages (no package cycle); this name stays for code written before."""

from shared.token_usage import Usage as Usage
