"""The alternative host on its own: its fault switches, its screens (not the reference host's
dialect), and ``python -m hostagent.alt_host``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hostagent.alt_host.cinema import Visit
from hostagent.alt_host.faults import switch
from hostagent.screen import read_screen

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("spec", "message"), [
    ("teleport", "unknown fault 'teleport'"),
    ("tool_execution_failed:confirm_booking:0", "TIMES must be a positive integer"),
    ("goal_change:select_seats:1", "fault goal_change needs TEXT"),
])
def test_a_bad_fault_spec_is_refused(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        switch(spec)


def test_a_fault_spec_reads_like_the_reference_hosts() -> None:
    s = switch("goal_change:select_showtime:2:Make it: Oppenheimer")
    assert (s.kind, s.target, s.times, s.text) == ("goal_change", "select_showtime", 2, "Make it: Oppenheimer")
    assert switch("drop_state_update:*").target is None and switch("drop_state_update").applies("anything")


def test_its_screens_are_another_dialect_the_agent_still_reads() -> None:
    visit = Visit()
    browse = visit.screen()
    assert "movies" not in browse and browse["components"][1]["children"][0]["name"] == "Dune: Part Two"
    assert [m.title for m in read_screen(browse).movies][:2] == ["Dune: Part Two", "Inside Out 2"]
    visit.run("select_movie", {"movieId": "film-opp"})
    visit.run("select_showtime", {"showtimeId": "scr:opp:20260702T2100"})
    seats = visit.screen()
    grid = seats["components"][1]
    assert grid["type"] == "seatmap" and len(grid["grid"]) == 6 and len(grid["grid"][0]) == 10
    view = read_screen(seats)
    assert len(view.seats) == 60 and {s.id for s in view.seats if not s.available} == {
        "A5", "A6", "C5", "C6", "D9", "F1", "F2"}
    assert view.showtime is not None and (view.showtime.date, view.showtime.time) == ("2026-07-02", "21:00")
    assert Visit(hide_listing=True).screen()["components"][1]["type"] == "hint"


def test_the_module_serves_it() -> None:
    with subprocess.Popen([sys.executable, "-m", "hostagent.alt_host", "--port", "0", "--fault", "hide_listing"],
                          cwd=REPO, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("alt host listening on ws://127.0.0.1:") and line.rstrip().endswith("/ws")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    bad = subprocess.run([sys.executable, "-m", "hostagent.alt_host", "--fault", "teleport"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown fault 'teleport'" in bad.stderr
