"""A resume whose run's stored history cannot be read (issue 35's rule for stored values, issue 33's
third session, 33k): the document is refused by name, the run ends ``failed`` ``INCONSISTENT_STATE``
naming it, the message is handled (not raised, so not redelivered forever) and nothing of the
history runs. On both stores, through the resume's by-name read and its query fallback.
"""

from __future__ import annotations

import pytest

from shared.models.scripted import call
from shared.runtime import Runtime
from shared.state import paths
from shared.state.docstore import DocStore, Write
from tests.agent.test_approvals import approve, dispatcher
from tests.agent.test_resume_reads import handle, paused_run


def _corrupt_turns(rt: Runtime, run_id: str) -> str:
    """Every turn document of the run overwritten with one that holds no valid turn; the first's path."""
    from shared.state.docstore import Query

    docs = rt.store.query(Query(paths.turns(run_id)))
    rt.store.commit([Write("set", d.path, {"turns": [{"role": 7}]}) for d in docs])
    return docs[0].path


@pytest.mark.parametrize("older", [False, True])
def test_unreadable_turns_fail_the_run_after_its_last_decision_naming_the_document(
        store: DocStore, older: bool) -> None:
    """Two calls waiting, the run's turn documents then corrupted (issue 35's rule, 33k): the first
    decision's resume still waits for the second (its open actions are readable); the second's
    refuses the unreadable document: the run ends failed ``INCONSISTENT_STATE`` naming it, the
    message is handled (not raised, so not redelivered), and no call runs. ``older``: a run paused
    by older code (no ``pausedActionIds``), whose resume queries the turns."""
    calls = [call("send_note", {"to": "bob", "body": "1"}), call("send_note", {"to": "carol", "body": "2"})]
    rt, counted, model, ledger, result = paused_run(store, calls=calls)
    if older:
        doc = rt.store.get(paths.run(result.run_id))
        assert doc is not None
        rt.store.commit([Write("set", doc.path, {k: v for k, v in doc.data.items() if k != "pausedActionIds"})])
    path = _corrupt_turns(rt, result.run_id)
    assert result.approvals is not None
    approve(rt, result.approvals[0].id)
    (first,) = dispatcher(rt).take()
    handle(rt, counted, first)
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "awaiting_confirmation"
    approve(rt, result.approvals[1].id)
    (second,) = dispatcher(rt).take()
    handle(rt, counted, second)  # raised pydantic's ValidationError before
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "failed" and snap.run.error is not None
    assert snap.run.error.code == "INCONSISTENT_STATE" and path in snap.run.error.message, snap.run.error
    assert ledger.calls == [] and dispatcher(rt).take() == [] and len(model.requests) == 1  # no call, no model
    assert [a.status for a in rt.runs.open_actions(result.run_id)] == ["approved", "approved"]
    # a redelivery of the same message meets a terminal run: acknowledged, nothing runs
    handle(rt, counted, second)
    assert ledger.calls == []
