from __future__ import annotations

from pathlib import Path

import pytest
from harness import STACKS, Declared, deploy


@pytest.fixture(scope="session")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stand-in bundle: the program only hashes and uploads it."""
    root = tmp_path_factory.mktemp("bundle")
    (root / "main.py").write_text("from functions.run import run\n")
    (root / "requirements.txt").write_text("functions-framework==3.10.2\n")
    return root


@pytest.fixture(scope="session")
def stacks(bundle_dir: Path) -> dict[str, list[Declared]]:
    return {stack: deploy(stack, bundle_dir) for stack in STACKS}
