"""Every notebook: committed clean and well-formed, and it runs from top to bottom.

Notebooks are found automatically (``notebooks/NN_*.ipynb`` and ``notebooks/reports/*.ipynb``).
Each one is checked for its structure, run through papermill with its defaults and with
every alternative parameter set of ``notebooks/parameter_sets.toml``, and the defaults' output
run again by nbval, which compares every cell's outputs with papermill's. Kernels run in the
notebook's folder.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import nbformat
import papermill
import pytest
from scaleout.kernels import kernel_manager_class

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
PARAMETER_SETS_FILE = NOTEBOOKS_DIR / "parameter_sets.toml"
CELL_TIMEOUT = 300  # seconds for any one cell (the slowest take a few seconds here)
NBVAL_TIMEOUT = 900  # seconds for a whole nbval run of one notebook
#: pytest with nbval, whose kernels use the same private Unix sockets as papermill's
#: (scaleout.kernels: parallel workers racing for TCP ports once killed a kernel at start).
NBVAL_OVER_SOCKETS = (
    "import sys, pytest, nbval.kernel; from scaleout.kernels import kernel_manager_class; "
    "nbval.kernel.KernelManager = kernel_manager_class(asynchronous=False); "
    "sys.exit(pytest.main(sys.argv[1:]))"
)

pytestmark = pytest.mark.notebook


def discover_notebooks() -> list[Path]:
    """The workbook's notebooks, in order: ``NN_*.ipynb``, then ``reports/*.ipynb``."""
    return (sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
            + sorted(NOTEBOOKS_DIR.glob("reports/*.ipynb")))


def notebook_key(path: Path) -> str:
    """A notebook's name in ``parameter_sets.toml`` and in test ids: ``02_x``, ``reports/y``."""
    return path.relative_to(NOTEBOOKS_DIR).with_suffix("").as_posix()


def load_parameter_sets() -> dict[str, list[dict[str, Any]]]:
    """``parameter_sets.toml`` as ``{notebook key: [set, ...]}`` (empty if the file is missing)."""
    if not PARAMETER_SETS_FILE.is_file():
        return {}
    with PARAMETER_SETS_FILE.open("rb") as f:
        return tomllib.load(f)


def read(path: Path) -> nbformat.NotebookNode:
    """Read a notebook as nbformat 4."""
    return nbformat.read(path, as_version=4)


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The notebook's code cells, in order."""
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def parameters_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The code cell tagged ``parameters`` (papermill injects values after it)."""
    return next(c for c in nb.cells
                if c.cell_type == "code" and "parameters" in c.metadata.get("tags", []))


def parameter_names(nb: nbformat.NotebookNode) -> set[str]:
    """Names assigned at the top level of the notebook's parameters cell."""
    names: set[str] = set()
    for node in ast.parse(parameters_cell(nb).source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def papermill_runs(notebooks: list[Path], sets: dict[str, list[dict[str, Any]]]) -> list[Any]:
    """One ``pytest.param(path, params)`` per alternative set (the defaults run in
    :func:`test_defaults_run_then_rerun_identically`)."""
    runs = []
    for path in notebooks:
        key = notebook_key(path)
        runs += [pytest.param(path, params, id=f"{key}-set{i}")
                 for i, params in enumerate(sets.get(key, []), 1)]
    return runs


NOTEBOOKS = discover_notebooks()
KEYS = [notebook_key(p) for p in NOTEBOOKS]
PARAMETER_SETS = load_parameter_sets()
RUNS = papermill_runs(NOTEBOOKS, PARAMETER_SETS)
each_notebook = pytest.mark.parametrize("path", NOTEBOOKS, ids=KEYS)


def test_notebooks_are_found() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOKS_DIR}"


def test_parameter_sets_name_existing_notebooks() -> None:
    stale = sorted(set(PARAMETER_SETS) - set(KEYS))
    assert not stale, f"{PARAMETER_SETS_FILE.name} has sets for missing notebooks: {stale}"


# -- structure --------------------------------------------------------------------------------

@each_notebook
def test_first_code_cell_is_tagged_parameters(path: Path) -> None:
    first = code_cells(read(path))[0]
    assert "parameters" in first.metadata.get("tags", []), \
        "the first code cell must carry the tag 'parameters' (papermill injects values after it)"


@each_notebook
def test_opens_with_its_title_and_summaries_before_any_code(path: Path) -> None:
    """Lecture mode: the title, a short English summary and a Korean one (핵심 요약) come first."""
    first = read(path).cells[0]
    assert first.cell_type == "markdown", "the first cell must be markdown: title and summaries"
    text = first.source
    assert re.match(r"# \S", text), "the first cell must start with the notebook's title (# ...)"
    assert "**In short.**" in text, "the first cell needs a short English summary (**In short.**)"
    english = text.split("**In short.**", 1)[1].split("**핵심 요약.**", 1)[0]
    assert 2 <= len(re.findall(r"[.!?](?:\s|$)", english.strip())) <= 5, \
        "the English summary should be two to five sentences"
    assert "**핵심 요약.**" in text, "the first cell needs a Korean summary (**핵심 요약.**)"
    korean = text.split("**핵심 요약.**", 1)[1]
    assert len(re.findall("[\uac00-\ud7a3]", korean)) >= 60, "the Korean summary is too short"
    sentences = re.findall(r"[.!?](?:\s|$)", korean.strip())
    assert 3 <= len(sentences) <= 6, \
        f"the Korean summary should be 3 to 6 sentences, has {len(sentences)}"


@each_notebook
def test_committed_without_outputs(path: Path) -> None:
    dirty = [i for i, cell in enumerate(read(path).cells)
             if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)]
    assert not dirty, (f"cells {dirty} have stored outputs or execution counts; clear them "
                       "(JupyterLab: Edit > Clear Outputs of All Cells) before committing")


@each_notebook
def test_cells_have_unique_ids_and_the_file_validates(path: Path) -> None:
    """nbformat 4.5 cells carry ids (Jupyter warns, and will refuse, without them)."""
    import json

    raw = json.loads(path.read_text(encoding="utf-8"))
    missing = [i for i, cell in enumerate(raw["cells"]) if "id" not in cell]
    assert not missing, f"cells {missing} have no id; run nbformat.validator.normalize"
    ids = [cell["id"] for cell in raw["cells"]]
    assert len(set(ids)) == len(ids), "cell ids repeat"
    nbformat.validate(nbformat.reads(path.read_text(encoding="utf-8"), as_version=4))


@each_notebook
def test_last_code_cell_has_self_checks(path: Path) -> None:
    """The closing cell reports ``{sentence: bool}`` through ``scaleout.selfcheck.report``."""
    last = code_cells(read(path))[-1].source
    calls = [node for node in ast.walk(ast.parse(last)) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", None) == "report"
             and getattr(node.func.value, "id", None) == "selfcheck"]
    assert calls, ("the last code cell must hold the notebook's self-checks: "
                   "selfcheck.report({sentence: bool, ...})")
    checks = calls[0].args[0] if calls[0].args else None
    if isinstance(checks, ast.Dict):  # written out in the call: sentences are string literals
        assert len(checks.keys) >= 3, "a notebook should check at least three of its claims"
        assert all(isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.strip()
                   for k in checks.keys), "every self-check needs a sentence saying what it checks"


@each_notebook
def test_kernelspec_is_python3(path: Path) -> None:
    kernelspec = read(path).metadata.get("kernelspec", {})
    assert kernelspec.get("name") == "python3", f"kernelspec is {kernelspec!r}, not python3"


@each_notebook
def test_has_alternative_parameter_sets(path: Path) -> None:
    key = notebook_key(path)
    sets = PARAMETER_SETS.get(key, [])
    assert sets, (f"{PARAMETER_SETS_FILE.relative_to(REPO_ROOT)} has no alternative parameter "
                  f'set for this notebook: add one under [["{key}"]]')
    known = parameter_names(read(path))  # ast: papermill's own parser skips some lines
    for i, params in enumerate(sets, 1):
        unknown = sorted(set(params) - known)
        assert not unknown, f"set {i} names {unknown}, not in the parameters cell {sorted(known)}"


# -- execution --------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "params"), RUNS)
def test_papermill_run(path: Path, params: dict[str, Any], tmp_path: Path) -> None:
    papermill.execute_notebook(
        str(path), str(tmp_path / path.name), parameters=params, kernel_name="python3",
        cwd=str(path.parent), execution_timeout=CELL_TIMEOUT, progress_bar=False,
        kernel_manager_class=kernel_manager_class(),
    )


@each_notebook
def test_defaults_run_then_rerun_identically(path: Path) -> None:
    """papermill runs the notebook with its defaults; nbval then runs that output again, cell
    by cell in a new kernel, and compares every output with papermill's (text, HTML, SVG; not
    PNG bytes or widget ids): the notebook gives the same numbers every time it runs, no
    hidden state, no unseeded randomness. A cell whose output is a measurement (a timing, a
    process's log) carries the tag ``nbval-ignore-output``: it still runs, unchecked."""
    # the output sits beside the notebook (hidden name) so that relative paths resolve
    out = path.parent / f".nbval-{path.stem}-{os.getpid()}.ipynb"
    try:
        papermill.execute_notebook(
            str(path), str(out), kernel_name="python3", cwd=str(path.parent),
            execution_timeout=CELL_TIMEOUT, progress_bar=False,
            kernel_manager_class=kernel_manager_class(),
        )
        cmd = [
            sys.executable, "-c", NBVAL_OVER_SOCKETS, "--nbval", "--nbval-current-env",
            f"--nbval-cell-timeout={CELL_TIMEOUT}", "-p", "no:cacheprovider", "-p", "no:xdist",
            "-o", "addopts=", "-q", "-rs", str(out),
        ]
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
        proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                              timeout=NBVAL_TIMEOUT, check=False)
    finally:
        out.unlink(missing_ok=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, \
        f"a second run gave other outputs (exit {proc.returncode}):\n{output}"
    passed = re.search(r"(\d+) passed", output)
    n_cells = len(code_cells(read(path)))
    assert passed and int(passed.group(1)) == n_cells, \
        f"nbval should run and compare all {n_cells} code cells:\n{output}"
