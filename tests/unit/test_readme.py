"""The README stays true to the code: every environment variable the runtime reads is documented."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
READ = re.compile(r'(?:environ\.get|environ\[|getenv|_int|_float|_bool|_key32|_limit)\(\s*"([A-Z][A-Z0-9_]+)"')


def _variables_read() -> set[str]:
    sources = [*REPO.glob("shared/**/*.py"), *REPO.glob("functions/*.py"), REPO / "main.py", REPO / "devserver.py"]
    return {name for path in sources for name in READ.findall(path.read_text())}


def _configuration_section() -> str:
    readme = (REPO / "README.md").read_text()
    start = readme.index("## Configuration")
    return readme[start:readme.index("\n## ", start + 1)]


def test_every_variable_the_runtime_reads_is_in_the_configuration_table() -> None:
    read = _variables_read()
    assert {"GEMINI_API_KEY", "AGENT_MAX_LOOP_STEPS", "CREDENTIALS_ENCRYPTION_KEY"} <= read  # the scan works
    table = _configuration_section()
    missing = sorted(name for name in read if f"`{name}`" not in table)
    assert missing == [], f"README configuration table lacks {missing}"


FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
LITERAL_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
DEADLINE_VALUE = re.compile(r'(?:\\?"deadline\\?"\s*:\s*\\?"|--deadline[ =])([^"\\\s]+)')


def _examples() -> list[tuple[str, str]]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return [(path.name, block) for path in docs for block in FENCE.findall(path.read_text())]


def test_no_example_gives_a_fixed_deadline_date() -> None:
    """Issue 18 finding 7: a fixed deadline in an example is refused once it has passed (or is more
    than PLAN_MAX_DEADLINE_S away); examples compute it (``date``) or give a duration."""
    values = [(name, v) for name, block in _examples() for v in DEADLINE_VALUE.findall(block)]
    assert any(name == "README.md" for name, _ in values)  # the scan finds the README's plan example
    fixed = [(name, v) for name, v in values if LITERAL_DATE.search(v)]
    assert fixed == [], f"examples with a fixed deadline date: {fixed}"


def test_the_readme_deadline_command_gives_a_deadline_the_service_accepts() -> None:
    import subprocess
    from datetime import UTC, datetime, timedelta

    lines = [line for _, block in _examples() for line in block.splitlines() if line.startswith("DEADLINE=$(date")]
    assert lines, "the README's plan example computes its deadline with date"
    for line in lines:
        out = subprocess.run(["bash", "-c", f"{line.split('#')[0]}\nprintf %s \"$DEADLINE\""], capture_output=True,
                             text=True, check=True).stdout
        at = datetime.fromisoformat(out)
        now = datetime.now(UTC)
        assert now < at <= now + timedelta(days=7), out  # future and within PLAN_MAX_DEADLINE_S's default
