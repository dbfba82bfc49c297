"""Reports: run a notebook with parameters (papermill) and render it to HTML without code.

``python -m scaleout report`` (and ``./workbook report``) call :func:`run_report` for one
parameter set and :func:`run_sweep` for a YAML file of sets. Parameters are checked
before anything runs (:func:`check_parameters`): an unknown name, a value of the wrong
type or, for the cluster-plan report, an unknown model, GPU or option fails in well under a
second with one line that says what is wrong, instead of half-way through a notebook.

A report notebook may take a parameter ``summary_path``: when it is set, the notebook writes
its headline numbers there as JSON, and a sweep gathers them into one comparison table.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

__all__ = [
    "REPORTS_DIR",
    "ReportError",
    "ReportResult",
    "SweepResult",
    "check_parameters",
    "load_sweep",
    "load_yaml",
    "notebook_parameters",
    "parameters_source",
    "parse_value",
    "plain_value",
    "render_html",
    "run_report",
    "run_sweep",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
REPORTS_DIR = NOTEBOOKS_DIR / "reports"
DEFAULT_REPORT = REPORTS_DIR / "cluster_plan.ipynb"
CELL_TIMEOUT_S = 600


# =========================================================================== parameters
#: Limits on what a parameter value may hold (a value is plain data: text, numbers, true/false,
#: null, and lists or mappings of those). They bound the work any value can cause.
MAX_DEPTH = 8            # lists or mappings nested at most this deep
MAX_ITEMS = 10_000       # scalars and containers in one value (or one YAML document)
MAX_TEXT = 10_000        # characters in one string, and in one -p value
MAX_SWEEP_BYTES = 1_000_000  # size of a sweep file
MAX_SETS = 1_000         # parameter sets in one sweep
SET_TIMEOUT_S = 1_800    # one sweep set (or one report) runs at most this long

_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "str",
                                                 "seq", "map")}


def _yaml_loader():
    """A YAML loader that builds plain data only.

    PyYAML's safe loader still builds tuples (``!!pairs``), bytes (``!!binary``), sets,
    ordered pairs and dates, and expands aliases (``*a``) into shared lists that grow
    exponentially when walked (an "alias bomb"). This loader refuses every tag but null,
    bool, int, float, str, sequence and mapping (a date is read as text), refuses aliases,
    duplicate keys and nesting deeper than :data:`MAX_DEPTH` + 2 (sweep files hold sets of
    values), and counts nodes against :data:`MAX_ITEMS`.
    """
    import yaml

    class PlainLoader(yaml.SafeLoader):
        yaml_constructors: ClassVar[dict] = {
            k: v for k, v in yaml.SafeLoader.yaml_constructors.items()
            if k in _PLAIN_TAGS}
        _depth = 0
        _nodes = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed", mark)
            PlainLoader._count(self)
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH + 2:
                    raise yaml.composer.ComposerError(
                        None, None, f"nested deeper than {MAX_DEPTH + 2} levels",
                        self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def _count(self):
            self._nodes += 1
            if self._nodes > MAX_ITEMS:
                raise yaml.composer.ComposerError(
                    None, None, f"more than {MAX_ITEMS:,} values", self.peek_event().start_mark)

        def construct_mapping(self, node, deep=False):
            keys = [self.construct_object(k, deep=True) for k, _ in node.value]
            for i, key in enumerate(keys):
                if not isinstance(key, str | int | float | bool) or key is None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"a mapping key must be text, got {key!r}",
                        node.value[i][0].start_mark)
                if key in keys[:i]:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key!r} appears twice",
                        node.value[i][0].start_mark)
            return super().construct_mapping(node, deep=deep)

        def construct_undefined(self, node):
            raise yaml.constructor.ConstructorError(
                None, None, f"the tag {node.tag!r} is not allowed (only plain text, numbers, "
                "true/false, null, lists and mappings)", node.start_mark)

    PlainLoader.add_constructor(None, PlainLoader.construct_undefined)
    PlainLoader.add_constructor("tag:yaml.org,2002:timestamp", PlainLoader.construct_yaml_str)
    return PlainLoader


def load_yaml(text: str, where: str) -> Any:
    """``text`` read as YAML into plain data (see :func:`_yaml_loader`).

    Raises
    ------
    ValueError
        One line naming ``where``, the line and column and the problem.
    """
    import yaml

    try:
        return _load_plain_yaml(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = " ".join(str(exc.problem or exc.context or "malformed").split())
        raise ValueError(f"{where} is not valid YAML{at}: {problem}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{where} is not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ValueError(f"{where} is nested too deeply") from None


def _load_plain_yaml(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=_yaml_loader())


def parse_value(text: str) -> Any:
    """A command-line value as YAML reads it: ``8`` → 8, ``1.5e12`` → 1.5e12, ``true`` → True,
    ``[8, 72]`` → a list, anything else → the string.

    Only plain data is built (see :func:`_yaml_loader`): a tag, an alias or too deep a
    nesting is a ``ValueError``; text that is not YAML at all is taken as text, and the
    parameter check then decides whether text is allowed there.
    """
    import yaml

    if len(text) > MAX_TEXT:
        raise ValueError(f"a -p value is {len(text):,} characters long; at most "
                         f"{MAX_TEXT:,} are allowed")
    try:
        value = _load_plain_yaml(text)
    except (yaml.scanner.ScannerError, yaml.parser.ParserError):
        if text.lstrip().startswith(("!", "&", "*")):  # meant as YAML with a tag or alias
            load_yaml(text, f"the -p value {_short_repr(text)}")
        return text  # not YAML: plain text such as "a: b: c"
    except (yaml.YAMLError, RecursionError):
        load_yaml(text, f"the -p value {_short_repr(text)}")  # raises the one-line message
        raise  # pragma: no cover - load_yaml always raises here
    return text if value is None else _yaml_number(value)


def _yaml_number(value: Any) -> Any:
    """``"1e12"`` and ``"1.0e12"`` as floats (YAML 1.1 reads them as strings; it wants 1.0e+12)."""
    if isinstance(value, str) and re.fullmatch(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+", value.strip()):
        return float(value)
    if isinstance(value, list):
        return [_yaml_number(v) for v in value]
    return value


def notebook_parameters(path: Path | str) -> dict[str, Any]:
    """The names and default values of a notebook's ``parameters`` cell.

    Reads the cell's assignments with :mod:`ast` and evaluates only literals and
    arithmetic on them (such as ``2**28``), as every notebook here holds; nothing in the
    cell is executed as code. A notebook without such a cell, or a cell with anything else,
    is a ``ValueError``. Reads the JSON directly (nbformat takes over a second to import,
    and this check must answer in well under one).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"notebook {str(path)!r} does not exist")
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{path.name} is not a notebook ({exc})") from None
    for cell in cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") == "code" and "parameters" in tags:
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            try:
                return _literal_assignments(source)
            except (SyntaxError, ValueError) as exc:
                raise ValueError(f"{path.name}: its parameters cell must hold only assignments "
                                 f"of literal values ({exc})") from None
    raise ValueError(f"{path.name} has no cell tagged 'parameters'")


def _literal_assignments(source: str) -> dict[str, Any]:
    """``name = literal`` lines of ``source`` as a dict (literals may use + - * / ** on numbers)."""
    import ast
    import operator

    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg,
           ast.UAdd: operator.pos}

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            left, right = value(node.left), value(node.right)
            if not all(isinstance(x, int | float) and not isinstance(x, bool)
                       for x in (left, right)):
                raise ValueError("arithmetic on non-numbers")
            if isinstance(node.op, ast.Pow) and abs(right) > 1024:
                raise ValueError("an exponent above 1024")
            return ops[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.operand))
        return ast.literal_eval(node)

    out: dict[str, Any] = {}
    for stmt in ast.parse(source).body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            raise ValueError(f"line {stmt.lineno} is not 'name = value'")
        out[stmt.targets[0].id] = value(stmt.value)
    return out


def _type_name(value: Any) -> str:
    return {bool: "true/false", int: "a whole number", float: "a number", str: "text",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def _element_default(default: list) -> Any:
    """A representative element of a list default (a float if any number is a float)."""
    if not default:
        return None
    if all(isinstance(x, int | float) and not isinstance(x, bool) for x in default):
        return next((x for x in default if isinstance(x, float)), default[0])
    return default[0]


def plain_value(name: str, value: Any, default: Any, *, _depth: int = 0,
                _budget: list[int] | None = None) -> Any:
    """``value`` checked as plain data and converted to the default's type where lossless.

    Plain data is text, whole numbers, finite numbers, true/false, null, and lists or
    mappings (with text keys) of those, at most :data:`MAX_DEPTH` deep and
    :data:`MAX_ITEMS` values in all; a list's elements are checked against the type of the
    default's elements. Anything else (tuples, bytes, sets, dates, objects) is refused:
    a value that reaches a notebook becomes source code in its injected-parameters cell,
    so only values whose ``repr`` is a literal may pass.

    Raises
    ------
    ValueError
        One line naming the parameter, the value and what is allowed.
    """
    budget = [MAX_ITEMS] if _budget is None else _budget
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError(f"parameter {name} holds more than {MAX_ITEMS:,} values")
    if _depth > MAX_DEPTH:
        raise ValueError(f"parameter {name} is nested deeper than {MAX_DEPTH} levels")
    shown = _short_repr(value)
    if value is not None and not isinstance(value, bool | int | float | str | list | dict):
        raise ValueError(f"parameter {name}={shown} is a {type(value).__name__}; only text, "
                         "numbers, true/false, null, lists and mappings are allowed")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"parameter {name}={shown} must be a finite number")
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise ValueError(f"parameter {name} is {len(value):,} characters long; at most "
                         f"{MAX_TEXT:,} are allowed")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**30:
        raise ValueError(f"parameter {name}={shown} is too large (at most 1e30 in size)")
    if default is None:
        if isinstance(value, list | dict):
            return _plain_container(name, value, None, _depth, budget)
        return value
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif isinstance(default, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    elif isinstance(default, list | dict):
        if isinstance(value, type(default)):
            return _plain_container(name, value, default, _depth, budget)
    raise ValueError(f"parameter {name}={shown} must be {_type_name(default)} "
                     f"(the default is {_short_repr(default)})")


def _plain_container(name: str, value: list | dict, default: list | dict | None, depth: int,
                     budget: list[int]) -> list | dict:
    if isinstance(value, list):
        element = _element_default(default) if isinstance(default, list) else None
        return [plain_value(f"{name}[{i}]", v, element, _depth=depth + 1, _budget=budget)
                for i, v in enumerate(value)]
    out = {}
    for key, v in value.items():
        if not isinstance(key, str):
            raise ValueError(f"parameter {name} has the key {_short_repr(key)}; keys must be "
                             "text")
        sub = default.get(key) if isinstance(default, dict) else None
        out[key] = plain_value(f"{name}[{key!r}]", v, sub, _depth=depth + 1, _budget=budget)
    return out


def _short_repr(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:  # a hostile object's repr
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parameters_source(params: Mapping[str, Any]) -> str:
    """The source of an injected-parameters cell: one ``name = literal`` line per parameter.

    Every value must already be plain data (:func:`plain_value`); its ``repr`` is a Python
    literal, and this function checks that it reads back (:func:`ast.literal_eval`) as the
    same value, so no value can become code.
    """
    import ast

    lines = ["# Parameters"]
    for name, value in params.items():
        if not name.isidentifier():
            raise ValueError(f"parameter name {name!r} is not a Python name")
        source = repr(value)
        if ast.literal_eval(source) != value:
            raise ValueError(f"parameter {name} does not read back as the same value")
        lines.append(f"{name} = {source}")
    return "\n".join(lines) + "\n"


def notebook_key(path: Path | str) -> str:
    """A notebook's name in :data:`scaleout.parameters.SPECS`: its path under ``notebooks/``
    without ``.ipynb`` (``"02_gpu_memory_math"``, ``"reports/cluster_plan"``)."""
    path = Path(path).resolve()
    try:
        return path.relative_to(NOTEBOOKS_DIR.resolve()).with_suffix("").as_posix()
    except ValueError:
        return path.stem


def check_parameters(path: Path | str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``params`` against the notebook's ``parameters`` cell before running it.

    Every name must be a parameter of the notebook (an unknown one suggests close
    names), every value plain data of its default's type (:func:`plain_value`); a notebook
    of the workbook also gets its own rules (:mod:`scaleout.parameters`: ranges, catalog
    names, options, and how the values must agree), the same rules its first code cell
    checks. Returns the parameters converted to their defaults' types.
    """
    from . import parameters
    from .checks import close_matches

    defaults = notebook_parameters(path)
    key = notebook_key(path)
    rules = parameters.SPECS[key].rules if key in parameters.SPECS else {}
    out = {}
    for name, value in params.items():
        if name not in defaults:
            near = close_matches(name, defaults)
            hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
            raise ValueError(f"{Path(path).name} has no parameter {name!r}{hint}")
        default = defaults[name]
        if isinstance(rules.get(name), parameters.Number) and isinstance(default, int):
            default = float(default)  # "400" in the cell, but any number is meant
        out[name] = plain_value(name, value, default)
        if name.endswith("_file") and isinstance(out[name], str) and out[name]:
            # the kernel runs in the notebook's folder: a file is named from where we are
            out[name] = str(Path(out[name]).expanduser().resolve())
    if rules:
        parameters.check(key, {**defaults, **out})
    return out


# =========================================================================== running
@dataclass(frozen=True)
class ReportResult:
    """One report run: the executed notebook, its HTML, its summary (if any) and the time."""

    name: str
    notebook: Path
    html: Path
    seconds: float
    summary: dict[str, Any] = field(default_factory=dict)


def render_html(executed: Path, out: Path) -> Path:
    """Render an executed notebook to one HTML file without code cells or prompts.

    Figures are embedded (PNG as base64, SVG inline), so the file reads offline: the
    scripts JupyterLab's template loads from a CDN (require.js, MathJax, Mermaid, the widget
    renderer) are left out unless the notebook needs them (widget views; ``$`` maths in
    its markdown).
    """
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    offline = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- if resources.needs_widgets -%}{{ super() }}{%- endif -%}
{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- if resources.needs_widgets -%}{{ super() }}{%- endif -%}
{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- if resources.needs_maths -%}{{ super() }}{%- endif -%}
{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}"""
    nb = nbformat.read(executed, as_version=4)
    views = any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    maths = any(re.search(r"\$[^$\n]+\$|\\\(|\\\[", c.source)
                for c in nb.cells if c.cell_type == "markdown")
    exporter = HTMLExporter(template_name="lab",
                            extra_loaders=[DictLoader({"offline.html.j2": offline})])
    exporter.template_file = "offline.html.j2"
    exporter.exclude_input = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(
        nb, resources={"needs_widgets": views, "needs_maths": maths})
    out.write_text(body, encoding="utf-8")
    return out


def _say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


def _literal_translator() -> type:
    """papermill's Python translator with every value written as a checked literal.

    papermill writes a value it has no rule for (a tuple, bytes, a set) with ``str()``, as
    source code; this translator writes :func:`parameters_source` instead, which refuses
    anything whose ``repr`` does not read back as the same plain value.
    """
    from papermill.translators import PythonTranslator

    class LiteralTranslator(PythonTranslator):
        @classmethod
        def codify(cls, parameters, comment="Parameters"):
            return parameters_source(parameters)

    return LiteralTranslator


def _prepare_out_dir(out_dir: Path | str) -> Path:
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"output folder {str(out_dir)!r} is an existing file; give a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot create output folder {str(out_dir)!r}: "
                         f"{exc.strerror or exc}") from None
    return out_dir


class ReportError(RuntimeError):
    """A report's notebook failed while running: which cell, and why (one line)."""


def run_report(path: Path | str, params: Mapping[str, Any], out_dir: Path | str, *,
               name: str | None = None, progress: bool = True,
               timeout_s: float = SET_TIMEOUT_S) -> ReportResult:
    """Check ``params``, run the notebook with papermill, render it to HTML in ``out_dir``.

    With ``progress`` papermill shows a progress bar of executed cells. When the notebook
    has a ``summary_path`` parameter, the summary JSON is written beside the report and
    returned in :attr:`ReportResult.summary`. The whole run may take at most ``timeout_s``
    seconds (each cell gets what is left; nbclient interrupts a cell that overruns).
    A run that fails leaves no ``.ipynb`` behind and raises :class:`ReportError`.
    """
    import papermill
    from papermill.translators import papermill_translators

    from scaleout.kernels import kernel_manager_class

    path = Path(path).resolve()
    checked = check_parameters(path, params)
    out_dir = _prepare_out_dir(out_dir)
    stem = name or f"{path.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    executed = out_dir / f"{stem}.ipynb"
    running = out_dir / f".{stem}.running.ipynb"
    summary_file = out_dir / f"{stem}.json"
    if "summary_path" in notebook_parameters(path):
        checked["summary_path"] = str(summary_file.resolve())
    translator = _literal_translator()
    for key in ("python", "python3"):
        papermill_translators.register(key, translator)
    start = time.perf_counter()
    deadline = start + timeout_s

    def remaining(_cell: Any) -> int:
        return max(1, math.ceil(deadline - time.perf_counter()))

    try:
        papermill.execute_notebook(
            str(path), str(running), parameters=checked, kernel_name="python3",
            cwd=str(path.parent), progress_bar=progress,
            execution_timeout=min(CELL_TIMEOUT_S, timeout_s), timeout_func=remaining,
            log_output=False, request_save_on_cell_execute=False,
            kernel_manager_class=kernel_manager_class())
    except Exception as exc:
        running.unlink(missing_ok=True)
        summary_file.unlink(missing_ok=True)
        raise ReportError(_run_failure(exc, time.perf_counter() - start, timeout_s)) from None
    running.replace(executed)
    html_path = render_html(executed, out_dir / f"{stem}.html")
    seconds = time.perf_counter() - start
    summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    return ReportResult(stem, executed, html_path, seconds, summary)


def _run_failure(exc: Exception, elapsed_s: float, timeout_s: float) -> str:
    """One line for a failed run: the cell and the error, or the time limit."""
    if type(exc).__name__ == "CellTimeoutError" or elapsed_s >= timeout_s:
        return f"stopped after {elapsed_s:.0f} s: the limit is {timeout_s:.0f} s per report"
    cell = getattr(exc, "exec_count", None) or getattr(exc, "cell_index", None)
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", None) or str(exc)
    lines = [x for x in str(evalue).strip().splitlines() if x.strip()]
    where = f"cell {cell}: " if cell is not None else ""
    return f"{where}{ename}: {lines[-1] if lines else ''}"


# =========================================================================== sweeps
@dataclass(frozen=True)
class SweepResult:
    """A sweep: the reports that ran, the sets that were refused or failed, the table."""

    reports: list[ReportResult]
    failures: dict[str, str]
    table_html: Path | None
    table_csv: Path | None


def load_sweep(path: Path | str) -> dict[str, dict[str, Any]]:
    """Parameter sets from YAML: a list of mappings, or a mapping ``{name: {param: value}}``.

    Sets in a list are named by an optional ``name`` key, else ``set-1``, ``set-2``, ...
    A top-level ``sets:`` key may hold either form. Two sets with the same name, or with
    names that give the same file name ("a b" and "a-b"), are refused, as is anything but
    plain data (see :func:`load_yaml`); the file may be at most
    :data:`MAX_SWEEP_BYTES` long and hold :data:`MAX_SETS` sets.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"sweep file {str(path)!r} does not exist")
    if path.stat().st_size > MAX_SWEEP_BYTES:
        raise ValueError(f"{path.name} is {path.stat().st_size:,} bytes; a sweep file may be "
                         f"at most {MAX_SWEEP_BYTES:,}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not UTF-8 text") from None
    raw = load_yaml(text, path.name)
    if isinstance(raw, dict) and "sets" in raw:
        raw = raw["sets"]
    named: list[tuple[str, Any]] = []
    if isinstance(raw, list):
        for i, entry in enumerate(raw, start=1):
            if not isinstance(entry, dict):
                raise ValueError(f"{path.name}: set {i} must be a mapping of parameters, "
                                 f"got {_short_repr(entry)}")
            entry = dict(entry)
            set_name = entry.pop("name", f"set-{i}")
            if not isinstance(set_name, str | int | float) or isinstance(set_name, bool):
                raise ValueError(f"{path.name}: set {i} has the name {_short_repr(set_name)};"
                                 " a name must be text")
            named.append((str(set_name), entry))
    elif isinstance(raw, dict):
        for set_name, entry in raw.items():
            if not isinstance(entry, dict):
                raise ValueError(f"{path.name}: set {set_name!r} must be a mapping of "
                                 "parameters")
            named.append((str(set_name), entry))
    else:
        raise ValueError(f"{path.name} must hold a list of parameter sets or a mapping of "
                         f"named sets")
    if not named:
        raise ValueError(f"{path.name} holds no parameter sets")
    if len(named) > MAX_SETS:
        raise ValueError(f"{path.name} holds {len(named):,} sets; at most {MAX_SETS:,}")
    sets: dict[str, dict[str, Any]] = {}
    files: dict[str, str] = {}
    for set_name, entry in named:
        if set_name in sets:
            raise ValueError(f"{path.name}: two sets are named {set_name!r}; names must differ")
        safe = _safe(set_name)
        if safe.lower() in files:
            raise ValueError(f"{path.name}: sets {files[safe.lower()]!r} and {set_name!r} would "
                             f"both be written to {safe}.html; rename one")
        files[safe.lower()] = set_name
        sets[set_name] = {str(k): _yaml_number(v) for k, v in entry.items()}
    return sets


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:100] or "set"


def _write_table(reports: Sequence[ReportResult], failures: Mapping[str, str],
                 out_dir: Path) -> tuple[Path, Path]:
    """A comparison table of the reports' summaries (and the failed sets), as HTML and CSV."""
    keys: list[str] = []
    for r in reports:
        keys += [k for k in r.summary if k not in keys]
    csv_path = out_dir / "comparison.csv"
    with csv_path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["set", "report", *keys])
        for r in reports:
            writer.writerow([r.name, r.html.name, *(r.summary.get(k, "") for k in keys)])
        for name, why in failures.items():
            writer.writerow([name, f"FAILED: {why}", *([""] * len(keys))])

    def fmt(v: Any) -> str:
        return f"{v:,.4g}" if isinstance(v, float) else html.escape(str(v))

    rows = "".join(
        f"<tr><th><a href='{html.escape(r.html.name)}'>{html.escape(r.name)}</a></th>"
        + "".join(f"<td>{fmt(r.summary.get(k, ''))}</td>" for k in keys) + "</tr>"
        for r in reports)
    failed = "".join(f"<li><b>{html.escape(n)}</b>: {html.escape(w)}</li>"
                     for n, w in failures.items())
    page = ("<!doctype html><meta charset='utf-8'><title>Sweep comparison</title>"
            "<style>body{font-family:sans-serif}td,th{padding:3px 10px;text-align:right}"
            "th{text-align:left}table{border-collapse:collapse}tr:nth-child(even){"
            "background:#f4f4f4}</style><h1>Sweep comparison</h1>"
            f"<table><tr><th>set</th>{''.join(f'<th>{html.escape(k)}</th>' for k in keys)}"
            f"</tr>{rows}</table>"
            + (f"<h2>Sets that did not run</h2><ul>{failed}</ul>" if failed else ""))
    html_path = out_dir / "comparison.html"
    html_path.write_text(page, encoding="utf-8")
    return html_path, csv_path


def run_sweep(path: Path | str, sweep: Path | str, out_dir: Path | str, *,
              progress: bool = True, timeout_s: float = SET_TIMEOUT_S) -> SweepResult:
    """One report per parameter set of ``sweep`` (YAML), then a comparison table.

    Every set is checked first; a set that fails its check, whose run fails, or that runs
    longer than ``timeout_s`` seconds, is reported and skipped, and the others still run.
    """
    sets = load_sweep(sweep)
    out_dir = _prepare_out_dir(out_dir)
    failures: dict[str, str] = {}
    good: dict[str, dict[str, Any]] = {}
    for name, params in sets.items():
        try:
            good[name] = check_parameters(path, params)
        except ValueError as exc:
            failures[name] = str(exc)
            _say(f"set {name!r} refused: {exc}")
    reports = []
    for i, (name, params) in enumerate(good.items(), start=1):
        _say(f"[{i}/{len(good)}] running set {name!r}")
        try:
            done = run_report(path, params, out_dir, name=_safe(name), progress=progress,
                              timeout_s=timeout_s)
            reports.append(replace(done, name=name))  # files by a safe name, tables by the set's
        except ReportError as exc:  # one bad set must not stop the sweep
            failures[name] = str(exc)
            _say(f"set {name!r} failed: {failures[name]}")
        except Exception as exc:  # nor must anything else in one set
            lines = str(exc).strip().splitlines() or [""]
            failures[name] = f"{type(exc).__name__}: {lines[-1]}"
            _say(f"set {name!r} failed: {failures[name]}")
    table_html = table_csv = None
    if reports or failures:
        table_html, table_csv = _write_table(reports, failures, out_dir)
    return SweepResult(reports, failures, table_html, table_csv)
