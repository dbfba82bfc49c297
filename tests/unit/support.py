"""Helpers shared by the unit tests, imported as ``support``: this folder's ``conftest.py``
puts the folder on the import path, whatever pytest's import mode or working directory."""

from __future__ import annotations

import signal
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def hang_guard(seconds: float, error: type[Exception] = TimeoutError) -> Iterator[None]:
    """Raise ``error`` in the block once it has run ``seconds`` (a SIGALRM timer, not a timing
    assertion): a call that loops fails instead of stalling the suite."""
    def _alarm(_signum, _frame):
        raise error(f"call still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def write_toml(folder: Path, name: str, text: str) -> Path:
    """``text`` (dedented) written to ``folder / name``: a catalog file for a loader test."""
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def toml_value(v) -> str:
    """A TOML literal for a string, a list or a number (for writing one catalog entry back)."""
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(v)


def write_entry(path: Path, table: str, entry: dict) -> Path:
    """One ``[[table]]`` entry written to ``path`` as TOML: a catalog file for a loader test."""
    lines = [f"[[{table}]]"] + [f"{k} = {toml_value(v)}" for k, v in entry.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
