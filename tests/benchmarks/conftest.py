"""Benchmark plumbing: result tables that the benchmarks fill and pytest prints at the end.

The benchmarks are not collected by a plain ``pytest`` run (``norecursedirs``); run them
with ``./workbook bench``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest


@dataclass
class Table:
    """A titled table of rows, printed after the run whether the benchmarks passed or not."""

    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)

    def render(self) -> list[str]:
        """The table as aligned text lines."""
        cells = [self.header, *self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                 for row in cells]
        return [self.title, lines[0], "  ".join("-" * w for w in widths), *lines[1:]]


TABLES: dict[str, Table] = {}


@pytest.fixture(scope="session")
def results_table():
    """``results_table(title, header) -> Table``: the table of that title (made once)."""

    def get(title: str, header: tuple[str, ...]) -> Table:
        return TABLES.setdefault(title, Table(title, header))

    return get


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print every table that has rows."""
    for table in TABLES.values():
        if table.rows:
            terminalreporter.write_line("")
            for line in table.render():
                terminalreporter.write_line(line)
