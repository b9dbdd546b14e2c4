"""The usage ledger: one document per model call, whoever makes it (seed 003 §5.8-5.9)."""
