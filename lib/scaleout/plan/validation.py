"""The planner against published measurements, and the calibration fitted to them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import catalog
from ..layout import Plan
from .calibration import DEFAULT_CALIBRATION, Calibration
from .evaluate import evaluate
from .network import default_network

__all__ = ["ValidationRow", "fit_calibration", "validate", "validation_summary",
           "validation_table"]

@dataclass(frozen=True)
class ValidationRow:
    """One published measurement against the planner's prediction."""

    table: str
    case: str
    quantity: str
    published: float
    predicted: float

    @property
    def error_pct(self) -> float:
        """Signed error of the prediction, percent of the published value."""
        return 100 * (self.predicted / self.published - 1)


def validate(calibration: Calibration | None = None) -> list[ValidationRow]:
    """Predict the 18 published cases with one calibration.

    * Korthikanti et al. 2022 (arXiv 2205.05198), Table 5: seconds per iteration of
      four models on A100 80GB (configurations of their Table 3, in
      ``data/published/korthikanti_table5.toml``), with full recomputation and with
      sequence parallelism + selective recomputation.
    * Narayanan et al. 2021 (arXiv 2104.04473), Table 1: achieved TFLOP/s per GPU
      (Eq. 3's FLOPs over the iteration time) of ten models, 32 to 3,072 A100s, full
      recomputation. The table does not give the micro-batch size or the schedule:
      they are taken as 1 and plain (non-interleaved) 1F1B.
    """
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    rows = []
    kt = catalog.published("korthikanti_table5")
    for run in kt["run"]:
        m = catalog.model(run["model"])
        g = catalog.gpu("A100-SXM4-80GB")
        for key, rc, sp, label in (("seconds_full_recompute", "full", False, "full recompute"),
                                   ("seconds_selective_sp", "selective", True,
                                    "SP + selective")):
            plan = Plan(tp=run["tp"], pp=run["pp"], dp=run["gpus"] // (run["tp"] * run["pp"]),
                        micro_batch=run["micro_batch"], global_batch=run["global_batch"],
                        sp=sp, recompute=rc, interleave=run["interleave"])
            r = evaluate(m, g, plan, default_network(g), calibration=cal)
            rows.append(ValidationRow("Korthikanti et al. 2022, Table 5",
                                      f"{m.name}, {label}", "s/iteration", run[key], r.step_s))
    mt = catalog.published("megatron_lm_table1")
    for run in mt["run"]:
        m = catalog.model(run["model"])
        g = catalog.gpu("A100-SXM4-80GB")
        d = run["gpus"] // (run["tp"] * run["pp"])
        plan = Plan(tp=run["tp"], pp=run["pp"], dp=d, micro_batch=1, global_batch=run["batch"],
                    recompute="full")
        r = evaluate(m, g, plan, default_network(g), calibration=cal)
        rows.append(ValidationRow("Narayanan et al. 2021, Table 1",
                                  f"{m.name} on {run['gpus']:,} GPUs", "TFLOP/s per GPU",
                                  run["achieved_tflops_per_gpu"], r.megatron_tflops_per_gpu))
    return rows


def validation_summary(rows: Sequence[ValidationRow]) -> dict[str, dict[str, float]]:
    """Mean and worst absolute error (percent) per table."""
    out: dict[str, dict[str, float]] = {}
    for table in dict.fromkeys(r.table for r in rows):
        errs = np.abs([r.error_pct for r in rows if r.table == table])
        out[table] = {"cases": int(errs.size), "mean_abs_pct": float(errs.mean()),
                      "worst_abs_pct": float(errs.max())}
    return out


def validation_table(rows: Sequence[ValidationRow] | None = None) -> str:
    """Predicted against published as a plain-text table, with each table's mean and worst."""
    rows = validate() if rows is None else rows
    width = max(len(r.case) for r in rows)
    out = []
    for table, stats in validation_summary(rows).items():
        out.append(f"{table}  ({rows[[r.table for r in rows].index(table)].quantity})")
        out.append(f"  {'case':<{width}}  {'published':>10}  {'predicted':>10}  {'error':>7}")
        for r in rows:
            if r.table == table:
                out.append(f"  {r.case:<{width}}  {r.published:>10.2f}  {r.predicted:>10.2f}  "
                           f"{r.error_pct:>+6.1f}%")
        out.append(f"  mean |error| {stats['mean_abs_pct']:.1f}%, worst "
                   f"{stats['worst_abs_pct']:.1f}% over {stats['cases']} cases")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _objective(rows: Sequence[ValidationRow]) -> float:
    """Root-mean-square of the log errors over all cases: every case weighs the same."""
    return float(np.sqrt(np.mean(np.log([r.predicted / r.published for r in rows]) ** 2)))


def fit_calibration(
    gemm_efficiency: Sequence[float] = (0.70, 0.72, 0.74, 0.76, 0.78, 0.80, 0.82),
    gemm_half_dim: Sequence[float] = (0.0, 25.0, 50.0, 75.0, 100.0),
    nonmatmul_traffic: Sequence[float] = (6.0, 7.0, 8.0, 9.0, 10.0),
    collective_efficiency: Sequence[float] = (0.6, 0.7, 0.8, 0.9),
) -> tuple[Calibration, float]:
    """The grid point that minimises the RMS log error of :func:`validate`; and that error.

    How :data:`DEFAULT_CALIBRATION` was obtained (a test re-runs it): every
    combination of the four grids, all 18 published cases each.
    """
    best: tuple[float, Calibration] | None = None
    for e in gemm_efficiency:
        for x in gemm_half_dim:
            for k in nonmatmul_traffic:
                for c in collective_efficiency:
                    cal = Calibration(float(e), float(x), float(k), float(c))
                    score = _objective(validate(cal))
                    if best is None or score < best[0]:
                        best = (score, cal)
    assert best is not None
    return best[1], best[0]


