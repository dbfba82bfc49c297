"""The workbook's map: the walk of notebooks, the glossary and the concept map.

The words and the map live in ``data/glossary.toml`` (English terms with the
Korean term beside each, one-line definitions, and the notebook that teaches
each term and concept). This module loads and validates that file, says
which notebooks of the walk are written yet (by looking for the file, so the
map never goes stale), searches it, and lists the library's own modules.

Loading fails with a ``ValueError`` that names the file, the entry and the
field, like :func:`scaleout.catalog.load_entries`.

Taught in ``notebooks/00_start_here.ipynb``.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import DATA_DIR, check_fields, read_toml, table_entries
from .checks import check_choice, close_matches

__all__ = [
    "ALL",
    "GLOSSARY_PATH",
    "NOTEBOOKS_DIR",
    "Concept",
    "Glossary",
    "Notebook",
    "SearchResult",
    "Term",
    "concepts",
    "library_modules",
    "load",
    "notebook",
    "search",
    "term",
    "terms",
    "walk",
]

#: The glossary file.
GLOSSARY_PATH = DATA_DIR / "glossary.toml"
#: Where the walk's notebooks live (``<repo>/notebooks``).
NOTEBOOKS_DIR = DATA_DIR.parent / "notebooks"
#: The notebook filter of :func:`search` that keeps everything.
ALL = "all"

_HANGUL = re.compile("[\uac00-\ud7a3]")
_SHORT_MAX = 14


@dataclass(frozen=True)
class Notebook:
    """One notebook of the walk. ``status`` is read from the file system when asked."""

    id: str
    short: str
    title: str
    question: str
    notebooks_dir: Path = field(default=NOTEBOOKS_DIR, repr=False, compare=False)

    @property
    def path(self) -> Path:
        """``notebooks/<id>.ipynb``."""
        return self.notebooks_dir / f"{self.id}.ipynb"

    @property
    def written(self) -> bool:
        """Whether the notebook's file exists."""
        return self.path.is_file()

    @property
    def status(self) -> str:
        """``"available"`` if the file exists, else ``"planned"``."""
        return "available" if self.written else "planned"


@dataclass(frozen=True)
class Term:
    """One glossary entry: English term, Korean term, one-line definition, where taught."""

    term: str
    korean: str
    definition: str
    notebook: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Concept:
    """One idea of the walk and the notebook that teaches it."""

    concept: str
    notebook: str
    detail: str = ""


@dataclass(frozen=True)
class Glossary:
    """The whole file: the walk (in order), the terms and the concepts."""

    notebooks: tuple[Notebook, ...]
    terms: tuple[Term, ...]
    concepts: tuple[Concept, ...]

    def notebook(self, notebook_id: str) -> Notebook:
        """A notebook of the walk by id; a ``ValueError`` suggests close ids."""
        for nb in self.notebooks:
            if nb.id == notebook_id:
                return nb
        check_choice("notebook", notebook_id, [nb.id for nb in self.notebooks])
        raise AssertionError("unreachable")  # pragma: no cover


# --------------------------------------------------------------------------- loading
_FIELDS: dict[str, tuple[type, set[str], set[str]]] = {
    # table: (class, required fields, optional fields)
    "notebook": (Notebook, {"id", "short", "title", "question"}, set()),
    "term": (Term, {"term", "korean", "definition", "notebook"}, {"aliases"}),
    "concept": (Concept, {"concept", "notebook"}, {"detail"}),
}


def _check_entry(entry: dict, table: str, where: str) -> None:
    _, required, optional = _FIELDS[table]
    check_fields(entry, required | optional, required, where)
    for key, value in entry.items():
        if key == "aliases":
            if not isinstance(value, list) or not all(
                isinstance(a, str) and a.strip() for a in value
            ):
                raise ValueError(f"{where}: field 'aliases' must be a list of non-empty strings")
        elif not isinstance(value, str) or not value.strip():
            raise ValueError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")


def load(path: Path | str = GLOSSARY_PATH, notebooks_dir: Path | str = NOTEBOOKS_DIR) -> Glossary:
    """Load and validate a glossary file.

    Checks: every entry has its required fields as non-empty strings and no
    unknown field; notebook ids are unique and ``short`` labels at most 14
    characters; every term's and concept's ``notebook`` is an id of the walk;
    every ``korean`` contains Hangul; no term (or alias) appears twice.

    Raises
    ------
    ValueError
        Naming the file, the entry and the field.
    """
    path = Path(path)
    notebooks_dir = Path(notebooks_dir)
    raw = read_toml(path, "glossary")
    unknown_tables = sorted(set(raw) - set(_FIELDS))
    if unknown_tables:
        raise ValueError(
            f"{path.name}: unknown table {unknown_tables[0]!r}; expected "
            + ", ".join(f"[[{t}]]" for t in _FIELDS)
        )

    notebooks: list[Notebook] = []
    for i, e in enumerate(table_entries(raw, "notebook", path), start=1):
        where = f"{path.name}: [[notebook]] entry {i} ({e.get('id', '<no id>')!r})"
        _check_entry(e, "notebook", where)
        if any(nb.id == e["id"] for nb in notebooks):
            raise ValueError(f"{where}: duplicate id {e['id']!r}")
        if len(e["short"]) > _SHORT_MAX:
            raise ValueError(
                f"{where}: field 'short' must be at most {_SHORT_MAX} characters, "
                f"got {e['short']!r}"
            )
        notebooks.append(Notebook(notebooks_dir=notebooks_dir, **e))
    ids = [nb.id for nb in notebooks]

    def check_notebook(e: dict, where: str) -> None:
        if e["notebook"] not in ids:
            near = close_matches(e["notebook"], ids)
            hint = f"did you mean {near[0]!r}?" if near else "see the [[notebook]] entries"
            raise ValueError(
                f"{where}: field 'notebook' is {e['notebook']!r}, not a notebook of the walk; "
                f"{hint}"
            )

    found_terms: list[Term] = []
    seen: dict[str, str] = {}
    for i, e in enumerate(table_entries(raw, "term", path), start=1):
        where = f"{path.name}: [[term]] entry {i} ({e.get('term', '<no term>')!r})"
        _check_entry(e, "term", where)
        check_notebook(e, where)
        if not _HANGUL.search(e["korean"]):
            raise ValueError(f"{where}: field 'korean' must contain Hangul, got {e['korean']!r}")
        # an alias may repeat its own term; it must not name another term
        for name in dict.fromkeys([e["term"], *e.get("aliases", [])]):
            key = name.casefold()
            if key in seen and seen[key] != e["term"]:
                raise ValueError(f"{where}: {name!r} is already the term or an alias of "
                                 f"{seen[key]!r}")
            seen[key] = e["term"]
        found_terms.append(Term(**{**e, "aliases": tuple(e.get("aliases", ()))}))

    found_concepts: list[Concept] = []
    for i, e in enumerate(table_entries(raw, "concept", path), start=1):
        where = f"{path.name}: [[concept]] entry {i} ({e.get('concept', '<no concept>')!r})"
        _check_entry(e, "concept", where)
        check_notebook(e, where)
        found_concepts.append(Concept(**e))

    return Glossary(tuple(notebooks), tuple(found_terms), tuple(found_concepts))


@functools.cache
def _default() -> Glossary:
    return load()


def walk() -> list[Notebook]:
    """The notebooks of the walk, in reading order."""
    return list(_default().notebooks)


def notebook(notebook_id: str) -> Notebook:
    """One notebook of the walk by id (``"01_scale_up_limits"``)."""
    return _default().notebook(notebook_id)


def term(name: str) -> Term:
    """One glossary term by its English term or an alias, case-insensitive (``"all-reduce"``).

    Raises
    ------
    ValueError
        For an unknown term, with close matches suggested.
    """
    for t in _default().terms:
        if str(name).casefold() in (x.casefold() for x in (t.term, *t.aliases)):
            return t
    names = [x for t in _default().terms for x in (t.term, *t.aliases)]
    near = close_matches(str(name), names)
    hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
    raise ValueError(f"term {name!r} is not in the glossary{hint}")


def terms() -> list[Term]:
    """Every glossary term, in file order."""
    return list(_default().terms)


def concepts() -> list[Concept]:
    """Every concept of the concept map, in file order."""
    return list(_default().concepts)


# --------------------------------------------------------------------------- search
@dataclass(frozen=True)
class SearchResult:
    """Terms and concepts that matched a query, and their count per notebook of the walk."""

    query: str
    notebook: str
    terms: tuple[Term, ...]
    concepts: tuple[Concept, ...]

    def per_notebook(self, glossary: Glossary | None = None) -> dict[str, int]:
        """Matches (terms + concepts) per notebook id, for every notebook of the walk."""
        counts = {nb.id: 0 for nb in (glossary or _default()).notebooks}
        for item in (*self.terms, *self.concepts):
            counts[item.notebook] += 1
        return counts

    @property
    def total(self) -> int:
        """Terms plus concepts found."""
        return len(self.terms) + len(self.concepts)


def search(query: str, notebook: str = ALL, glossary: Glossary | None = None) -> SearchResult:
    """Terms and concepts whose text contains ``query`` (case-insensitive), in English or Korean.

    A term matches on its term, Korean term, aliases or definition; a concept
    on its text. An empty query matches everything. ``notebook`` keeps only
    what one notebook teaches (``"all"`` keeps everything).

    Raises
    ------
    ValueError
        ``query`` matches nothing (close terms are suggested), or ``notebook``
        is not an id of the walk.
    """
    g = glossary or _default()
    if not isinstance(query, str):
        raise ValueError(f"query must be text, got {query!r}")
    notebook = check_choice("notebook", notebook, [ALL, *(nb.id for nb in g.notebooks)])
    q = query.strip().casefold()

    def keep(nb_id: str) -> bool:
        return notebook in (ALL, nb_id)

    found_terms = tuple(
        t for t in g.terms
        if keep(t.notebook)
        and any(q in text.casefold() for text in (t.term, t.korean, t.definition, *t.aliases))
    )
    found_concepts = tuple(
        c for c in g.concepts if keep(c.notebook) and q in f"{c.concept} {c.detail}".casefold()
    )
    if not found_terms and not found_concepts:
        if notebook != ALL:
            elsewhere = [nb for nb, n in search(query, ALL, g).per_notebook(g).items() if n]
            raise ValueError(
                f"query {query!r} matches nothing taught in {notebook}; "
                f"see {', '.join(elsewhere)}"
            )
        names = [name for t in g.terms for name in (t.term, *t.aliases)]
        near = close_matches(query.strip(), names)
        hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
        raise ValueError(f"query {query!r} matches no glossary term or concept{hint}")
    return SearchResult(query, notebook, found_terms, found_concepts)


# --------------------------------------------------------------------------- the library
def library_modules() -> dict[str, str]:
    """Every module of the ``scaleout`` package with the first line of its docstring.

    Read from the installed package, so the list is always the library as it is.
    Sub-packages are listed with their modules (``widgets.common``).
    """
    import scaleout

    out: dict[str, str] = {}
    for info in pkgutil.walk_packages(scaleout.__path__, prefix="scaleout."):
        mod = importlib.import_module(info.name)
        doc = (mod.__doc__ or "").strip().splitlines()
        out[info.name.removeprefix("scaleout.")] = doc[0] if doc else ""
    return out
