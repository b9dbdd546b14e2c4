"""Model adapters: one module per provider; only that module imports the provider's SDK."""
