"""Issue 33's acceptance figures of one ``make bench`` output, as the Markdown table docs/benchmarks.md quotes.

    mkdir -p var && BENCH_PEERS=1 make -s bench > var/bench.json 2> var/bench.log
    python -m bench.acceptance var/bench.json     (the table; --json: the same rows as JSON)

Each row names its JSON path, the value, the target and ``met`` as the run reported them; a figure
the run does not carry (no peers: ``BENCH_PEERS`` unset) says "not measured".
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

Row = tuple[str, str, str, str, str]
"""(figure, JSON path, value, target, met)."""


def _at(d: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def _cold(t: dict[str, Any]) -> str:
    """A cold-start target's figures: wall and CPU, each with its halves and whether they agree."""
    return (f"{t.get('value')} {t.get('halves')} {_stable(t.get('stable'))}; "
            f"CPU {t.get('cpu_value')} {t.get('cpu_halves')} {_stable(t.get('cpu_stable'))}")


def _stable(flag: Any) -> str:
    return "stable" if flag is True else "**not stable**" if flag is False else "—"


def _met(v: Any) -> str:
    return {True: "yes", False: "**no**", None: "—"}.get(v, str(v))


def _target_row(out: dict[str, Any], figure: str, path: str, target: str) -> Row:
    t = _at(out, path)
    if t is None:
        return figure, f"`{path}`", "not measured", target, "—"
    return figure, f"`{path}`", str(t.get("value")), target, _met(t.get("met"))


def rows(out: dict[str, Any]) -> list[Row]:
    """The acceptance table of issue 33 (docs/benchmarks.md, "Issue 33: the acceptance run")."""
    got: list[Row] = [
        _target_row(out, "store round trips before the first model call", "targets.round_trips_to_first_model_call",
                    "≤ 2"),
        _target_row(out, "round trips per tool step", "targets.round_trips_per_tool_step", "1"),
        _target_row(out, "round trips to resume after an approval", "targets.round_trips_to_resume", "≤ 2"),
        _target_row(out, "round trips per plan act", "targets.plan_act_round_trips", "report"),
        _target_row(out, "round trips before a plan session's first model call",
                    "targets.plan_session_start_round_trips", "report"),
    ]
    path = "targets.ms_to_first_model_call_at_10ms_per_round_trip"
    lat = _at(out, path) or {}
    ours = (f"ours {lat.get('value')} ms ({lat.get('round_trips')} round trips; emulator "
            f"{lat.get('value_firestore_emulator')})")
    if lat.get("best_peer"):
        ours += (f"; best peer {lat['best_peer']} {lat['best_peer_ms']} ms ({lat['best_peer_round_trips']} round "
                 f"trips): ratio {lat['ratio_to_best_peer']}; fastest {lat['fastest_peer']}: ratio "
                 f"{lat['ratio_to_fastest_peer']}")
    else:
        ours += "; peers not measured"
    got.append(("ms to the first model call at 10 ms per round trip, ours vs the best durable peer's own start",
                f"`{path}`", ours, "report",
                {True: "ours faster", False: "peer faster"}.get(lat.get("faster_than_best_peer"), "—")))
    for fn in ("run", "stream", "goals"):
        t = _at(out, f"targets.cold_start_vs_sdk_first_use_pct.{fn}") or {}
        got.append((f"cold start `{fn}` vs the SDK first-use function (%, wall [halves] stable; CPU [halves] stable)",
                    f"`targets.cold_start_vs_sdk_first_use_pct.{fn}`", _cold(t), "≤ +10", _met(t.get("met"))))
    for fn in ("approve", "resume", "runs"):
        t = _at(out, f"targets.cold_start_vs_imports_pct.{fn}") or {}
        got.append((f"cold start `{fn}` vs the imports it needs: Firestore's first read validated by pydantic "
                    "(%, wall [halves] stable; CPU [halves] stable; CPU vs Firestore's first read alone)",
                    f"`targets.cold_start_vs_imports_pct.{fn}`",
                    f"{_cold(t)}; {t.get('cpu_vs_sdk_first_read_alone')}", "≤ +10", _met(t.get("met"))))
    joint = {fn: _at(out, f"cold_start.functions.{fn}.overhead_pct_vs_joint_imports")
             for fn in ("run", "stream", "goals")}
    got.append(("cold start vs the joint SDK imports (history, %)",
                "`cold_start.functions.<fn>.overhead_pct_vs_joint_imports`",
                ", ".join(f"{fn} {v}" for fn, v in joint.items()), "—", "—"))
    got.append(("reads cost no writes (a GET writes nothing; 50 concurrent GETs, no store transaction)",
                "a test: `tests/limits/test_runs_and_requests.py`", "counted by the test", "0", "test"))
    for store in ("sqlite_file", "firestore_emulator"):
        got.append(_target_row(out, f"documents written per tool step ({store})",
                               f"targets.documents_written_per_tool_step.{store}", "≤ 4"))
        reads = _at(out, f"per_step.{store}.store_reads_per_step_with_read_only_tool")
        got.append((f"store reads per tool step ({store})",
                    f"`per_step.{store}.store_reads_per_step_with_read_only_tool`", str(reads), "0",
                    _met(None if reads is None else reads == 0)))
    targets = out.get("targets") or {}
    off = {k.removeprefix("free_when_off_"): v for k, v in targets.items() if k.startswith("free_when_off_")}
    got.append(("new features free when off", "`targets.free_when_off_<feature>`",
                ", ".join(f"{k} {'yes' if v.get('met') else 'no'}" for k, v in off.items()), "0 each",
                _met(all(v.get("met") for v in off.values()) if off else None)))
    for key, what, target in (("peers_per_step_ratio", "per step vs the best durable peer (REF-normalised)", "≤ 0.12"),
                              ("peers_run_1_step_ratio", "one-step run vs the best durable peer", "≤ 0.5")):
        t = targets.get(key)
        value = (f"{t['ratio']} (rounds {t.get('ratios_per_round')}; {t['best_durable_peer']}; clock "
                 f"{_at(out, 'peers.clock')})" if t else "not measured (BENCH_PEERS=1)")
        got.append((what, f"`targets.{key}`", value, target, _met(t.get("met") if t else None)))
    for store in ("sqlite_file", "firestore_emulator"):
        t = _at(out, f"targets.per_step_not_worse_than_baseline.{store}") or {}
        c = _at(out, f"targets.commits_per_step_not_worse_than_baseline.{store}") or {}
        got.append((f"per step and commits per step vs the previous commit ({store})",
                    f"`targets.per_step_not_worse_than_baseline.{store}`",
                    f"{t.get('head_ms')} vs {t.get('baseline_ms')} ms; commits {c.get('head')} vs {c.get('baseline')}",
                    "not worse", _met(None if t.get("met") is None else bool(t.get("met") and c.get("met")))))
    return got


def header(out: dict[str, Any]) -> str:
    commit = out.get("commit") or {}
    return (f"`make bench` of {commit.get('head')} (baseline `versus_baseline.ref` "
            f"{_at(out, 'versus_baseline.ref')}), {out.get('duration_s')} s, peers "
            f"{'measured, clock ' + str(_at(out, 'peers.clock')) if _at(out, 'peers.measured') else 'not measured'}, "
            f"reference loop {_at(out, 'reference.ms')} ms, {_at(out, 'machine.cpus')} CPUs")


def markdown(out: dict[str, Any]) -> str:
    lines = [header(out), "", "| figure (issue 33) | JSON path | this run | target | met |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows(out)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("output", help="make bench's JSON (a file; - for stdin)")
    p.add_argument("--json", action="store_true", help="the rows as JSON instead of Markdown")
    args = p.parse_args(argv)
    if args.output == "-":
        text = sys.stdin.read()
    else:
        with open(args.output) as f:
            text = f.read()
    out = json.loads(text[text.index("{"):])  # tolerates lines a make without -s printed first
    print(json.dumps([dict(zip(("figure", "path", "value", "target", "met"), r, strict=True)) for r in rows(out)],
                     indent=2) if args.json else markdown(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
