"""The durability layer: messages, dispatchers, the outbox, leases, routing by kind and the sweep.

Generic over kinds of durable work (chat runs, plan sessions, ...): it knows message kinds and
handler tables registered at the edge, never the agent domain (a test enforces the imports).
"""
