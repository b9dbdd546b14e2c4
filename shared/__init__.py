"""Agent Runtime domain package: loop, policy, tools, state stores and model adapters."""
