"""Thin entry points, one per deployed function: parse, authenticate, call the domain, render."""
