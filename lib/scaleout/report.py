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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = [
    "REPORTS_DIR",
    "ReportResult",
    "SweepResult",
    "check_parameters",
    "load_sweep",
    "notebook_parameters",
    "parse_value",
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
def parse_value(text: str) -> Any:
    """A command-line value as YAML reads it: ``8`` → 8, ``1.5e12`` → 1.5e12, ``true`` → True,
    ``[8, 72]`` → a list, anything else → the string."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return text if value is None else _yaml_number(value)


def _yaml_number(value: Any) -> Any:
    """``"1e12"`` and ``"1.0e12"`` as floats (YAML 1.1 reads them as strings; it wants 1.0e+12)."""
    if isinstance(value, str) and re.fullmatch(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+", value.strip()):
        return float(value)
    return value


def notebook_parameters(path: Path | str) -> dict[str, Any]:
    """The names and default values of a notebook's ``parameters`` cell.

    Runs the cell alone, without builtins (it must hold only plain assignments of
    literals and arithmetic such as ``2**28``, as every notebook here does); a notebook
    without such a cell is a ``ValueError``. Reads the JSON directly (nbformat takes
    over a second to import, and this check must answer in well under one).
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
            namespace: dict[str, Any] = {}
            try:
                exec(compile(source, str(path), "exec"), {"__builtins__": {}}, namespace)
            except Exception as exc:
                raise ValueError(f"{path.name}: its parameters cell does not run alone "
                                 f"({type(exc).__name__}: {exc})") from None
            return namespace
    raise ValueError(f"{path.name} has no cell tagged 'parameters'")


def _type_name(value: Any) -> str:
    return {bool: "true/false", int: "a whole number", float: "a number", str: "text",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def _check_type(name: str, value: Any, default: Any) -> Any:
    """``value`` converted to the default's type where that is lossless, else a ValueError."""
    if default is None:
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
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    elif isinstance(default, list):
        if isinstance(value, list):
            return value
    elif type(value) is type(default):
        return value
    raise ValueError(f"parameter {name}={value!r} must be {_type_name(default)} "
                     f"(the default is {default!r})")


#: Extra checks per report notebook (by file stem), run by :func:`check_parameters`.
SEMANTIC_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {}


def check_parameters(path: Path | str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``params`` against the notebook's ``parameters`` cell before running it.

    Every name must be a parameter of the notebook (an unknown one suggests close
    names), every value of its default's type; a notebook with an entry in
    :data:`SEMANTIC_CHECKS` also gets its own checks (catalog names, ranges, options).
    Returns the parameters converted to their defaults' types.
    """
    from .checks import close_matches

    defaults = notebook_parameters(path)
    out = {}
    for name, value in params.items():
        if name not in defaults:
            near = close_matches(name, defaults)
            hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
            raise ValueError(f"{Path(path).name} has no parameter {name!r}{hint}")
        out[name] = _check_type(name, value, defaults[name])
    check = SEMANTIC_CHECKS.get(Path(path).stem)
    if check is not None:
        check({**defaults, **out})
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


def run_report(path: Path | str, params: Mapping[str, Any], out_dir: Path | str, *,
               name: str | None = None, progress: bool = True) -> ReportResult:
    """Check ``params``, run the notebook with papermill, render it to HTML in ``out_dir``.

    With ``progress`` papermill shows a progress bar of executed cells. When the notebook
    has a ``summary_path`` parameter, the summary JSON is written beside the report and
    returned in :attr:`ReportResult.summary`.
    """
    import papermill

    path = Path(path).resolve()
    checked = check_parameters(path, params)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = name or f"{path.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    executed = out_dir / f"{stem}.ipynb"
    summary_file = out_dir / f"{stem}.json"
    if "summary_path" in notebook_parameters(path):
        checked["summary_path"] = str(summary_file.resolve())
    start = time.perf_counter()
    papermill.execute_notebook(
        str(path), str(executed), parameters=checked, kernel_name="python3",
        cwd=str(path.parent), progress_bar=progress, execution_timeout=CELL_TIMEOUT_S,
        log_output=False, request_save_on_cell_execute=False)
    html_path = render_html(executed, out_dir / f"{stem}.html")
    seconds = time.perf_counter() - start
    summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    return ReportResult(stem, executed, html_path, seconds, summary)


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
    A top-level ``sets:`` key may hold either form.
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"sweep file {str(path)!r} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"{path.name} is not valid YAML: {exc}") from None
    if isinstance(raw, dict) and "sets" in raw:
        raw = raw["sets"]
    sets: dict[str, dict[str, Any]] = {}
    if isinstance(raw, list):
        for i, entry in enumerate(raw, start=1):
            if not isinstance(entry, dict):
                raise ValueError(f"{path.name}: set {i} must be a mapping of parameters, "
                                 f"got {entry!r}")
            entry = {k: _yaml_number(v) for k, v in entry.items()}
            sets[str(entry.pop("name", f"set-{i}"))] = entry
    elif isinstance(raw, dict):
        for name, entry in raw.items():
            if not isinstance(entry, dict):
                raise ValueError(f"{path.name}: set {name!r} must be a mapping of parameters")
            sets[str(name)] = {k: _yaml_number(v) for k, v in entry.items()}
    else:
        raise ValueError(f"{path.name} must hold a list of parameter sets or a mapping of "
                         f"named sets")
    if not sets:
        raise ValueError(f"{path.name} holds no parameter sets")
    return sets


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "set"


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
              progress: bool = True) -> SweepResult:
    """One report per parameter set of ``sweep`` (YAML), then a comparison table.

    Every set is checked first; a set that fails its check, or whose run fails, is
    reported and skipped, and the others still run.
    """
    sets = load_sweep(sweep)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
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
            done = run_report(path, params, out_dir, name=_safe(name), progress=progress)
            reports.append(replace(done, name=name))  # files by a safe name, tables by the set's
        except Exception as exc:  # one bad set must not stop the sweep
            failures[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1]}"
            _say(f"set {name!r} failed: {failures[name]}")
    table_html = table_csv = None
    if reports or failures:
        table_html, table_csv = _write_table(reports, failures, out_dir)
    return SweepResult(reports, failures, table_html, table_csv)


# =========================================================================== the cluster plan
def _check_cluster_plan(p: dict[str, Any]) -> None:
    """The cluster-plan report's own checks: catalog names, options and ranges."""
    from . import catalog, fabric, optics, reliability
    from .checks import check_choice, check_int, check_positive, check_range

    if p["model_name"] == "custom":
        for name in ("custom_layers", "custom_hidden", "custom_heads", "custom_vocab"):
            check_int(name, p[name])
    else:
        catalog.model(p["model_name"])
    catalog.gpu(p["gpu_name"])
    for name in ("n_gpus", "global_batch", "planes"):
        check_int(name, p[name])
    for name in ("gpus_per_node", "seq_len"):
        check_int(name, p[name], minimum=0)
    check_positive("tokens", p["tokens"])
    check_range("oversubscription", p["oversubscription"], 1.0, 64.0)
    if p["network_name"]:
        port = catalog.link(p["network_name"])
        if port.scope != "scale-out":
            raise ValueError(f"network_name={p['network_name']!r} is a {port.scope} link; "
                             "choose a network port: " + ", ".join(
                                 x.name for x in catalog.links() if x.scope == "scale-out"))
    if p["switch_name"]:
        fabric.switch_chip(p["switch_name"])
    check_choice("optics_choice", p["optics_choice"], optics.CHOICES)
    check_choice("failure_study", p["failure_study"], reliability.study_names())
    check_positive("storage_gbytes_s", p["storage_gbytes_s"], allow_zero=True)
    for name in ("price_per_gpu_hour", "price_per_kwh", "module_price"):
        check_positive(name, p[name], allow_zero=True)
    check_range("pue", p["pue"], 1.0, 3.0)
    # the layout search itself (tens of milliseconds): a cluster no layout can use, or a
    # model that fits nowhere, is refused here rather than half-way through the report
    from . import plan

    model = (catalog.model({"name": "custom", "n_layers": p["custom_layers"],
                            "hidden": p["custom_hidden"], "n_heads": p["custom_heads"],
                            "vocab": p["custom_vocab"], "seq_len": p["seq_len"] or 2048})
             if p["model_name"] == "custom" else catalog.model(p["model_name"]))
    network = plan.default_network(p["gpu_name"], p["gpus_per_node"] or None,
                                   p["network_name"] or None)
    plan.search(model, p["gpu_name"], p["n_gpus"], p["global_batch"], network,
                seq_len=p["seq_len"] or model.seq_len, flash_attention=p["flash_attention"],
                uneven_layers=p["uneven_layers"])


SEMANTIC_CHECKS["cluster_plan"] = _check_cluster_plan
