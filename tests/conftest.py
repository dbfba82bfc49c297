"""Fixtures shared by every test folder (unit, notebooks, browser).

Keep this file to fixtures that more than one folder needs; a folder's own fixtures
live in its own ``conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository's top folder (the one holding ``workbook`` and ``pyproject.toml``)."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def notebooks_dir(repo_root: Path) -> Path:
    """``notebooks/``: the workbook's notebooks, and the working directory of their kernels."""
    return repo_root / "notebooks"


@pytest.fixture(scope="session")
def data_dir(repo_root: Path) -> Path:
    """``data/``: the catalog's TOML files (GPUs, systems, models)."""
    return repo_root / "data"
