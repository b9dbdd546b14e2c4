"""Signed HTTP deliveries, at least once (docs/run-control.md, "Webhooks").

Generic: a delivery is a URL, a body, an event type and the name of the secret that signs it. Its
record and an outbox entry are written in the commit of the change it announces; the ``deliver``
message then makes the first attempt, and a sweep task publishes the retries that are due. The
agent's webhooks (``shared/agent/webhooks.py``) are one user; A2A push notifications may be another.
"""
