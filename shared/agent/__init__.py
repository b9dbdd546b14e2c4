"""The agent loop, tool calls under policy, and how runs start, stop and resume."""
