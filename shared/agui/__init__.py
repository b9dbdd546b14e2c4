"""AG-UI (``POST /api/agent/agui``): a run's events as the AG-UI protocol's event stream, through the
official ``ag-ui-protocol`` types and encoder (docs/ag-ui.md). Only this package imports ``ag_ui``.

- ``translate.py``: the run's event log (one AG-UI run = a range of it) into AG-UI events;
- ``inputs.py``: ``RunAgentInput`` into a run request or the decisions of its ``resume`` entries;
- ``endpoint.py``: start or resume, follow, translate, frame (SSE ``id: <start>:<seq>:<n>``).
"""
