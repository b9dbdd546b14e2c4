"""The agent's policies: what to do after a failure (``retry``), what may be sent at all (``safety``)."""
