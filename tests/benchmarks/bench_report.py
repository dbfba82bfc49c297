"""One cluster-plan report, parameters checked, run by papermill and rendered to HTML.

Target: under 15 s on the 2-core reference machine (kernel start included), so an engineer
can iterate on a plan; and a bad parameter refused in under 1 s, before any execution.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from scaleout import report

TARGET_S = 15.0
REFUSE_TARGET_S = 1.0
TITLE = "Reports"
HEADER = ("case", "seconds", "target")


def test_one_report_to_html(benchmark, results_table, tmp_path: Path) -> None:
    runs = iter(range(100))

    def once() -> report.ReportResult:
        return report.run_report(report.DEFAULT_REPORT, {}, tmp_path, name=f"r{next(runs)}",
                                 progress=False)

    result = benchmark.pedantic(once, rounds=3, iterations=1)
    assert result.html.is_file() and result.summary["wall_days"] > 0
    median = benchmark.stats.stats.median
    results_table(TITLE, HEADER).rows.append(
        ("cluster_plan with its defaults -> HTML", f"{median:.1f}", f"< {TARGET_S:g} s"))
    assert median < TARGET_S


def test_bad_parameter_refused_fast(results_table, tmp_path: Path) -> None:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "scaleout", "report", "-p", "gpu_name", "H900",
                           "-o", str(tmp_path)], capture_output=True, text=True, timeout=60)
    elapsed = time.perf_counter() - start
    assert done.returncode == 2 and "H900" in done.stderr
    results_table(TITLE, HEADER).rows.append(
        ("a bad GPU name refused (whole command)", f"{elapsed:.2f}", f"< {REFUSE_TARGET_S:g} s"))
    assert elapsed < REFUSE_TARGET_S
