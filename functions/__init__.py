"""Thin route handlers, one module per deployed function (``shared/routes.py``): parse, authenticate, call
the domain, render."""
