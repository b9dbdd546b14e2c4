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
