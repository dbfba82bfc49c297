"""Every notebook defines a glossary term before it uses it.

For each notebook of the walk (``data/glossary.toml``) the text a reader sees, in order, is its
markdown and the string literals of its code cells (what they print and title figures with;
not the ``parameters`` cell, not comments, not identifiers). A **use** of a glossary term is
its name or one of its aliases as a whole word, outside headings (a title announces a subject,
it does not use a word), formulas (a symbol in a formula is defined by the formula and the
sentence around it) and inline code (a module or function name is a name). A term is known at
a point of a notebook when

* it is taught by an earlier notebook of the walk (the reader has met it), or
* it has been **defined** (written in bold or italics, the workbook's way of introducing a
  word) at or before that point, in this notebook or an earlier one, or
* the cell that uses it names the notebook that teaches it (a forward reference:
  "notebook 07", "`07`", "07_all_reduce_cost", "`03`-`08`").

A notebook's opening (its title cell, the first markdown cell, and the set-up code cells around
it) announces what is coming: words in it are not uses, though a definition there counts. Code
strings are what a cell prints or draws; docstrings and comments are not read. A catalog entry's
name inside a code string (a link such as ``"InfiniBand NDR"``, a GPU, a model, a system, a
switch, an optical module) is a name, not a use.

Aliases that are ordinary English words (a pipeline *stage*, a *node*, a *failure*) are
listed in :data:`EVERYDAY` and left out: they are read in their everyday sense long before the
notebook that makes them precise. Acronyms of up to four capitals (TP, GB, FEC) match their
case exactly.

``python tests/unit/test_define_before_use.py`` prints every finding.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import dataclass

import pytest
from scaleout import catalog, fabric, glossary, optics

#: Aliases (and terms) read in their everyday sense before the notebook that teaches them.
EVERYDAY = frozenset(s.casefold() for s in (
    "accelerator", "bandwidth", "checkpoint", "collective", "failure", "GPU memory", "lane",
    "leaf", "node", "optics", "plane", "rail", "reach", "recompute", "resilience", "server",
    "shard", "spine", "stage", "training state", "transceiver", "pluggable", "grads",
    "copper cable", "effective training time", "slow node", "tail latency", "fan-out",
    "splitter cable", "send/receive", "load/store", "scale up", "scale out", "GB", "GiB",
    "per direction", "bidirectional", "gigabyte", "gigabit", "collective communication",
    "replica", "gradient", "activations", "mesh", "dispatch", "combine",
    # number formats, named long before the technique that mixes them
    "fp16", "bf16",
))

_NOTEBOOK_REF = re.compile(
    r"notebooks?\s+`?(\d\d)`?|`(\d\d)(?:_[a-z0-9_]+)?`|(\d\d)_[a-z]+_[a-z0-9_]+", re.I)
_RANGE_REF = re.compile(r"`?(\d\d)`?\s*(?:-|–|to)\s*`?(\d\d)`?")
_EMPHASIS = re.compile(r"\*\*(.+?)\*\*|(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])|"
                       r"(?<![_\w])_(?!\s)(.+?)(?<!\s)_(?![_\w])", re.S)


@dataclass(frozen=True)
class Finding:
    notebook: str
    term: str
    word: str
    cell: int
    context: str

    def __str__(self) -> str:
        return (f"{self.notebook} cell {self.cell}: {self.word!r} (term {self.term!r}) is used "
                f"before it is defined: ...{self.context}...")


def _pattern(word: str) -> re.Pattern[str]:
    flags = 0 if (word.isupper() and len(word) <= 4) else re.I
    return re.compile(r"(?<![\w-])" + re.escape(word) + r"s?(?![\w-])", flags)


def _code_strings(source: str) -> list[str]:
    """The string literals of a code cell (f-strings' literal parts), in source order."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []
    docstrings = {id(n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found = [(n.lineno, n.col_offset, n.value) for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and id(n) not in docstrings]
    return [s for *_, s in sorted(found)]


@functools.cache
def _catalog_names() -> frozenset[str]:
    names = [*catalog.link_names(), *catalog.gpu_names(), *catalog.model_names(),
             *catalog.system_names(), *(c.name for c in fabric.switch_chips()),
             *optics.module_names()]
    return frozenset(n.casefold() for n in names)


def _cells(nb_path) -> list[tuple[int, str, bool, str]]:
    """(cell index, text the reader sees, is in the opening, the cell's whole text): the text
    without headings, formulas and inline code; the whole text for its references.

    The opening is the first markdown cell (the title) with the set-up code cells around it;
    when that cell is the lecture summary (title, **In short.**, 핵심 요약), the introduction
    that follows the parameters is part of the opening too.
    """
    cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
    out: list[tuple[int, str, bool, str]] = []
    title_seen = opening = False
    markdown_seen = 0
    opening_cells = 1
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            if markdown_seen == 0 and "**In short.**" in source:
                opening_cells = 2  # the summary, then the introduction
            text = re.sub(r"(?m)^#{1,6} .*$", "", source)
            text = re.sub(r"\$\$.+?\$\$|\$[^$\n]+\$", " ", text, flags=re.S)  # formulas
            text = re.sub(r"`[^`\n]+`", " ", text)  # code names (`scaleout.calibration`)
            markdown_seen += 1
            opening = markdown_seen <= opening_cells
            out.append((i, " ".join(text.split()), opening, source))
            title_seen = True
        elif cell["cell_type"] == "code" and "parameters" not in cell["metadata"].get("tags", []):
            text = "\n".join(_code_strings(source))
            for name in sorted(_catalog_names(), key=len, reverse=True):
                text = re.sub(re.escape(name), " ", text, flags=re.I)
            out.append((i, " ".join(text.split()), opening or not title_seen, text))
    return out


def _refers_to(text: str, notebook_id: str) -> bool:
    number = int(notebook_id[:2]) if notebook_id[:2].isdigit() else -1
    refs = {int(x) for m in _NOTEBOOK_REF.finditer(text) for x in m.groups() if x}
    for m in _RANGE_REF.finditer(text):
        refs |= set(range(int(m.group(1)), int(m.group(2)) + 1))
    return number in refs


def _words(t: glossary.Term) -> list[str]:
    return [w for w in dict.fromkeys((t.term, *t.aliases)) if w.casefold() not in EVERYDAY]


def _scan(notebook_id: str, g: glossary.Glossary, known: set[str]) -> list[Finding]:
    """Findings of one notebook; adds the terms it defines to ``known``."""
    order = [nb.id for nb in g.notebooks]
    here = order.index(notebook_id)
    cells = _cells(g.notebook(notebook_id).path)
    out = []
    for t in g.terms:
        if t.term in known or order.index(t.notebook) < here:
            continue
        words = _words(t)
        patterns = [_pattern(w) for w in words]
        for cell, text, title, whole in cells:
            first_def = min((m.start() for m in _EMPHASIS.finditer(text)
                             if any(p.search(next(x for x in m.groups() if x)) for p in patterns)),
                            default=None)
            hits = [(m.start(), w, m) for w, p in zip(words, patterns, strict=True)
                    for m in [p.search(text)] if m]
            early = [h for h in hits if first_def is None or h[0] < first_def]
            if early and not title and not _refers_to(whole, t.notebook):
                _, word, m = min(early, key=lambda h: h[0])
                context = " ".join(text[max(0, m.start() - 70):m.end() + 70].split())
                out.append(Finding(notebook_id, t.term, word, cell, context))
                break
            if first_def is not None:
                known.add(t.term)  # defined here (bold or italics): known from now on
                break
    return out


def all_findings(g: glossary.Glossary) -> dict[str, list[Finding]]:
    """Findings of every written notebook of the walk but 00, in one pass (see the module doc).

    Terms defined (emphasised) by the notebooks before one in the walk count as known there.
    """
    known: set[str] = set()
    return {nb.id: _scan(nb.id, g, known) for nb in g.notebooks
            if nb.written and not nb.id.startswith("00_")}


@functools.cache
def _project_findings() -> dict[str, list[Finding]]:
    return all_findings(glossary.load())


def findings(notebook_id: str, g: glossary.Glossary | None = None) -> list[Finding]:
    """Uses of glossary terms before they are defined in one notebook."""
    found = _project_findings() if g is None else all_findings(g)
    if notebook_id not in found:
        raise ValueError(f"notebook {notebook_id!r} is not a written notebook of the walk")
    return found[notebook_id]


def _walk_ids() -> list[str]:
    return [nb.id for nb in glossary.walk() if nb.written and not nb.id.startswith("00_")]


@pytest.mark.parametrize("notebook_id", _walk_ids())
def test_terms_are_defined_before_use(notebook_id):
    found = findings(notebook_id)
    assert not found, "\n".join(map(str, found))


def test_the_check_can_fail(tmp_path):
    """A notebook that uses a term of its own before defining it, one that uses a later
    notebook's term without pointing to it, and the same fixed."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "glossary.toml").write_text(
        '[[notebook]]\nid = "01_a"\nshort = "a"\ntitle = "A"\nquestion = "?"\n'
        '[[notebook]]\nid = "02_b"\nshort = "b"\ntitle = "B"\nquestion = "?"\n'
        '[[term]]\nterm = "bubble"\nkorean = "버블"\ndefinition = "idle time"\nnotebook = "01_a"\n'
        '[[term]]\nterm = "all-reduce"\nkorean = "올 리듀스"\ndefinition = "sum"\n'
        'notebook = "02_b"\n'
        '[[concept]]\nconcept = "c"\nnotebook = "01_a"\n',
        encoding="utf-8")

    def notebook(name, cells):
        nb = {"cells": [{"cell_type": k, "metadata": {}, "source": s} for k, s in cells]}
        (tmp_path / "notebooks" / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")

    def g():
        return glossary.load(tmp_path / "glossary.toml", tmp_path / "notebooks")

    notebook("01_a", [("markdown", "# A\n\nThe bubble and the all-reduce, announced."),
                      ("markdown", "## 1 · The bubble\n\nThe bubble is idle."),
                      ("code", "print('an all-reduce $x$')"),
                      ("markdown", "A **bubble** is the idle time.")])
    notebook("02_b", [("markdown", "# B"),
                      ("markdown", "An **all-reduce** sums; the bubble is known from 01.")])
    got = findings("01_a", g())
    assert [(f.term, f.cell) for f in got] == [("bubble", 1), ("all-reduce", 2)]
    assert findings("02_b", g()) == []
    notebook("01_a", [("markdown", "# A"),
                      ("markdown", "In a formula, $\\text{bubble} = (p-1)/m$ is no use."),
                      ("markdown", "A **bubble** is idle; the all-reduce (Notebook 02) sums.")])
    assert findings("01_a", g()) == []


if __name__ == "__main__":  # pragma: no cover
    for nb_id in _walk_ids():
        for f in findings(nb_id):
            print(f)
