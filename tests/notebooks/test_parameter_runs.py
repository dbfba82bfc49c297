"""Whatever a notebook's rules accept (scaleout.parameters), the notebook runs with.

Two kinds of runs through papermill: values that once broke a notebook although its parameters
cell allowed them (a sequence length off the explorer's menu, a micro-batch above its slider, a
one-tier fabric, an eight-GPU cluster), and, for every notebook, a set drawn at random inside
its rules (one to three parameters changed from the defaults; seeded, so every machine runs
the same sets). A set the rules accept must run to the end, self-checks included.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import papermill
import pytest
from scaleout import parameters, report
from scaleout.kernels import kernel_manager_class

sys.path.insert(0, str(Path(__file__).parent))
import param_gen

pytestmark = pytest.mark.notebook
SEED = 20261203  # change it to explore other sets; failures name the set


def run(key: str, params: dict[str, Any], tmp_path: Path) -> None:
    path = report.NOTEBOOKS_DIR / f"{key}.ipynb"
    report.check_parameters(path, params)  # what ./workbook report does first
    papermill.execute_notebook(
        str(path), str(tmp_path / "out.ipynb"), parameters=params, kernel_name="python3",
        cwd=str(path.parent), progress_bar=False, execution_timeout=300,
        kernel_manager_class=kernel_manager_class())


@pytest.mark.parametrize(("key", "params"), [
    ("02_gpu_memory_math", {"seq_len": 3000}),          # not a power of two: off the menu
    ("02_gpu_memory_math", {"micro_batch": 64}),        # above the slider's range
    ("09_clos_fabrics", {"n_gpus": 8}),                 # one switch: a one-tier fabric
    ("11_fault_tolerance", {"n_gpus": 8, "tp": 8, "pp": 1}),  # fewer GPUs than a sixteenth
], ids=["02-seq3000", "02-mb64", "09-8gpus", "11-8gpus"])
def test_values_that_once_broke_a_notebook_run(key, params, tmp_path):
    run(key, params, tmp_path)


def _drawn() -> list[Any]:
    out = []
    for key in sorted(parameters.SPECS):
        defaults = report.notebook_parameters(report.NOTEBOOKS_DIR / f"{key}.ipynb")
        for i, params in enumerate(param_gen.varied_sets(key, defaults, SEED, n=1)):
            out.append(pytest.param(key, params, id=f"{key}-drawn{i}"))
    return out


@pytest.mark.parametrize(("key", "params"), _drawn())
def test_a_set_drawn_inside_the_rules_runs(key, params, tmp_path):
    try:
        run(key, params, tmp_path)
    except papermill.PapermillExecutionError as exc:
        pytest.fail(f"{key} with {params}: {exc.ename}: {exc.evalue}")
