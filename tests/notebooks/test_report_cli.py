"""The report command as a user runs it: a real papermill run rendered to HTML, a sweep with one
bad set, and bad parameters refused before any execution."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.notebook

REPORT = ["-m", "scaleout", "report"]
SMALL = ["-p", "model_name", "llama3-8b", "-p", "n_gpus", "256", "-p", "global_batch", "512",
         "-p", "tokens", "1e12"]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *REPORT, *args, "--no-progress"], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_one_report_renders_to_html_without_code(tmp_path: Path):
    done = run("cluster_plan", *SMALL, "-p", "currency", "EUR", "-o", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    html = next(tmp_path.glob("cluster_plan-*.html")).read_text()
    assert "Cluster plan" in html and "llama3-8b" in html
    # the verdict comes before the summary table, with its costs in the chosen currency
    assert "<b>Verdict.</b> Build 256 " in html and "Main risk:" in html
    assert html.index("Verdict.") < html.index("formula / source")
    assert "It costs rented, about €" in html and "owned, about €" in html
    assert "cost if rented (cloud)" in html and "cost if owned" in html
    assert "self-check" not in html  # no test output in the document: it is in the summary
    assert "import json" not in html and "def cash" not in html  # no code cells
    assert "data:image/svg+xml;base64" in html  # figures embedded: readable offline
    # no script from a CDN: the report reads offline (it has no maths, no widgets)
    assert not re.findall(r"<script[^>]*\bsrc=[\"']?https?://", html), \
        re.findall(r"<script[^>]*>", html)
    summary = json.loads(next(tmp_path.glob("cluster_plan-*.json")).read_text())
    assert summary["n_gpus"] == 256 and summary["wall_days"] >= summary["compute_days"] > 0
    assert summary["self_checks_passed"] >= 8 and summary["currency"] == "EUR"
    assert 0 < summary["memory_fraction"] <= 1 and summary["main_risk"] in (
        "memory", "failures", "communication")


def test_a_bad_currency_is_refused_with_its_name(tmp_path: Path):
    done = run("cluster_plan", *SMALL, "-p", "currency", "euros", "-o", str(tmp_path),
               cwd=tmp_path)
    assert done.returncode != 0
    assert "currency" in done.stderr and "ISO 4217" in done.stderr


def test_sweep_reports_a_bad_set_and_still_runs_the_others(tmp_path: Path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "- name: eight per node\n  model_name: llama3-8b\n  n_gpus: 256\n  global_batch: 512\n"
        "  tokens: 1.0e12\n"
        "- name: typo\n  model_name: llama3-8\n"
        "- name: rack\n  model_name: llama3-8b\n  gpu_name: GB200\n  n_gpus: 288\n"
        "  global_batch: 576\n  tokens: 1.0e12\n")
    done = run("--sweep", str(sweep), "-o", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]  # one set failed: not a clean run
    assert "typo: FAILED" in done.stdout and "did you mean" in done.stdout
    out = next(tmp_path.glob("sweep-*"))
    assert sorted(p.name for p in out.glob("*.html")) == [
        "comparison.html", "eight-per-node.html", "rack.html"]
    rows = list(csv.DictReader((out / "comparison.csv").open()))
    assert [r["set"] for r in rows] == ["eight per node", "rack", "typo"]
    assert float(rows[0]["wall_days"]) > 0 and rows[2]["report"].startswith("FAILED")
    assert "[1/2] running set 'eight per node'" in done.stderr  # progress


@pytest.mark.parametrize(("args", "message"), [
    (["-p", "gpu_name", "H200X"], "gpu 'H200X' is not in the catalog"),
    (["-p", "n_gpus", "lots"], "n_gpus='lots' must be a whole number"),
    (["-p", "colour", "blue"], "has no parameter 'colour'"),
    (["no_such_notebook"], "notebook 'no_such_notebook' not found"),
])
def test_bad_parameters_exit_before_running(tmp_path: Path, args, message):
    start = time.perf_counter()
    done = run(*args, "-o", str(tmp_path), cwd=tmp_path)
    elapsed = time.perf_counter() - start
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and message in done.stderr
    assert not list(tmp_path.glob("*.ipynb"))  # nothing was executed
    assert elapsed < 5  # a few tenths of a second here; generous for a loaded machine
