"""Helpers shared by the unit tests, imported as ``support``: this folder's ``conftest.py``
puts the folder on the import path, whatever pytest's import mode or working directory."""

from __future__ import annotations

import math
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


def goodput_by_hand(params: float, bytes_per_param: float, n_gpus: int,
                    gpus_per_node: int) -> tuple[float, float]:
    """Daly's exact goodput at the optimal interval and the MTBF in seconds, worked by hand for
    the planner's whole-run reading (Llama 3's failure study, a checkpoint written at 2 TB/s,
    MegaScale's detection and restart): every input from the data files, typed here."""
    from scipy.special import lambertw  # here: most tests that import support need no scipy

    hours = 54 * 24  # Llama 3's snapshot, 16,384 GPUs in nodes of 8 (2,048 nodes)
    per_gpu = 148 + 72 + 54 + 35 + 19 + 17 + 7 + 7 + 6 + 6 + 2  # Table 5 rows per GPU
    per_node = 32 + 3 + 3 + 2 + 2 + 2 + 2  # host, SSD, power, chassis, IO board, CPU, memory
    assert per_gpu + per_node == 419
    nodes = math.ceil(n_gpus / gpus_per_node)
    rate_per_h = per_gpu * n_gpus / (16384 * hours) + per_node * nodes / (2048 * hours)
    m = 3600 / rate_per_h
    delta = bytes_per_param * params / 2e12  # written (and read) at 2 TB/s
    restart = 600 + delta + 30  # MegaScale's detection, the read, MegaScale's init
    tau = m * (1 + lambertw(-math.exp(-delta / m - 1)).real)
    return tau / (m * math.exp(restart / m) * math.expm1((tau + delta) / m)), m
