"""The notebook suite: each notebook once through papermill with its defaults, and the total.

Target: the whole suite (kernel starts included) under 60 s of wall time on the 2-core
reference machine, run as ``./workbook test`` runs it: one notebook per core at a time (each
notebook's kernel is one process), so that the suite stays quick enough to run before every
commit. The sum of the notebooks' own times (one core, one after another) is reported beside
it. The
notebooks that run real engines (:data:`ENGINE_NOTEBOOKS`: JAX compiles, MPI processes) are
timed apart, each against its own target, with JAX's compilation cache warm (their first run
on a machine compiles for about a minute).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import papermill
import pytest
from scaleout.kernels import kernel_manager_class

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
TARGET_S = 60.0
CELL_TIMEOUT = 300
#: Notebooks that run real engines, and each one's target in seconds (a warm cache).
ENGINE_NOTEBOOKS = {"15_measure_it_yourself.ipynb": 40.0}


def discover_notebooks() -> list[Path]:
    """The same notebooks as tests/notebooks: ``NN_*.ipynb``, then ``reports/*.ipynb``."""
    return (sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
            + sorted(NOTEBOOKS_DIR.glob("reports/*.ipynb")))


def run(notebook: Path, out_dir: Path) -> float:
    """Run one notebook with its defaults; return the wall time in seconds."""
    start = time.perf_counter()
    papermill.execute_notebook(
        str(notebook), str(out_dir / notebook.name), kernel_name="python3",
        cwd=str(notebook.parent), execution_timeout=CELL_TIMEOUT, progress_bar=False,
        kernel_manager_class=kernel_manager_class(),
    )
    return time.perf_counter() - start


def test_notebook_suite(benchmark, tmp_path: Path, results_table) -> None:
    notebooks = [nb for nb in discover_notebooks() if nb.name not in ENGINE_NOTEBOOKS]
    if not notebooks:
        pytest.fail(f"no notebooks in {NOTEBOOKS_DIR}")
    workers = os.cpu_count() or 1
    times: dict[str, float] = {}
    wall: list[float] = []

    def run_all() -> None:
        start = time.perf_counter()
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {nb: pool.submit(run, nb, tmp_path) for nb in notebooks}
            for nb, future in futures.items():
                times[nb.relative_to(NOTEBOOKS_DIR).as_posix()] = future.result()
        wall.append(time.perf_counter() - start)

    benchmark.pedantic(run_all, rounds=1, iterations=1)
    total, elapsed = sum(times.values()), wall[0]
    benchmark.extra_info.update({name: round(s, 2) for name, s in times.items()})
    benchmark.extra_info["wall_s"] = round(elapsed, 2)
    table = results_table(f"Notebooks: one papermill run each, defaults, {workers} at a time",
                          ("notebook", "seconds"))
    table.rows += [(name, f"{s:.1f}") for name, s in times.items()]
    table.rows.append((f"sum of the {len(times)} notebooks' times", f"{total:.1f}"))
    verdict = "ok" if elapsed < TARGET_S else "TOO SLOW"
    table.rows.append((f"wall time, {workers} at a time (target < {TARGET_S:.0f} s: {verdict})",
                       f"{elapsed:.1f}"))
    assert elapsed < TARGET_S, (f"the notebook suite took {elapsed:.1f} s of wall time "
                                f"(target {TARGET_S:.0f} s)")


@pytest.mark.parametrize("name", list(ENGINE_NOTEBOOKS))
def test_engine_notebook(name: str, tmp_path: Path, results_table) -> None:
    """One real-engine notebook, run twice: the first fills JAX's compilation cache, the
    second (what a learner's next run costs) is timed against the notebook's target."""
    path = NOTEBOOKS_DIR / name
    if not path.is_file():
        pytest.fail(f"{name} does not exist")
    first = run(path, tmp_path)
    second = run(path, tmp_path)
    target = ENGINE_NOTEBOOKS[name]
    verdict = "ok" if second < target else "TOO SLOW"
    table = results_table("Notebooks with real engines (papermill, defaults)",
                          ("notebook", "first run s", "next run s", "target"))
    table.rows.append((name.removesuffix(".ipynb"), f"{first:.1f}", f"{second:.1f}",
                       f"< {target:.0f} s {verdict}"))
    assert second < target, f"{name} took {second:.1f} s with a warm cache (target {target:.0f} s)"
