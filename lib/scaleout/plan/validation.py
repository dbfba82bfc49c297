"""The planner against published measurements: fitted, held out, left out one source at a time.

The calibration's four numbers (:class:`~scaleout.plan.Calibration`) are fitted once, to the
:data:`~scaleout.plan.published.TRAINING` sources; every other source of
:mod:`scaleout.plan.published` is predicted without ever being fitted to. Three tables tell how
far to trust the planner on a run nobody has measured:

* **fitted**: errors on the training sources (in sample, the least informative);
* **held out**: errors on the other sources, with the shipped calibration;
* **leave one source out**: each training source predicted by a calibration fitted to the
  others only;

each beside a **constant baseline**: one fraction of peak FLOP/s (an MFU) for every run, fitted
to the same training sources. A model of mechanisms earns its keep by beating that baseline on
runs it was not fitted to.

Errors are in each source's own quantity (seconds per iteration, TFLOP/s per GPU, tokens per
second per GPU); the fit weighs every source the same (the mean over sources of each source's
root-mean-square log error), so a source with many rows does not drown the others.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .. import compute
from ..units import GIB
from .calibration import DEFAULT_CALIBRATION, Calibration
from .evaluate import PlanResult, evaluate
from .published import TRAINING, Case, cases, source_title

__all__ = ["CrossValidation", "MemoryCheck", "StepGap", "ValidationRow", "baseline_rows",
           "cross_validation", "fit_baseline", "fit_calibration", "memory_checks",
           "scaling_series", "step_gaps", "validate", "validation_summary", "validation_table"]

#: The grid each calibration number moves on when fitted (coordinate descent from the shipped
#: values: a few dozen evaluations of the training set instead of the whole product).
GRID = {
    "gemm_efficiency": (0.60, 0.64, 0.68, 0.70, 0.71, 0.72, 0.73, 0.74, 0.75, 0.76, 0.77, 0.78,
                        0.80, 0.82, 0.85),
    "gemm_half_dim": (0.0, 10.0, 25.0, 35.0, 50.0, 65.0, 75.0, 100.0, 150.0),
    "nonmatmul_traffic": (4.0, 5.0, 6.0, 7.0, 7.5, 8.0, 8.5, 9.0, 10.0, 12.0),
    "collective_efficiency": (0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
}


@dataclass(frozen=True)
class ValidationRow:
    """One published measurement against the planner's prediction (or the baseline's)."""

    table: str
    case: str
    quantity: str
    published: float
    predicted: float
    source: str = ""
    mechanisms: tuple[str, ...] = ()

    @property
    def error_pct(self) -> float:
        """Signed error of the prediction, percent of the published value."""
        return 100 * (self.predicted / self.published - 1)


def _published_step_s(case: Case) -> float:
    """The published number read back as seconds per steady-state iteration (how the fit
    compares): a whole-run average's time times the run's goodput (:attr:`Case.goodput`)."""
    return _printed_step_s(case) * case.goodput


#: The quantities a published run may be measured in (``GPU-hours`` of any GPU).
QUANTITIES = ("s/iteration", "tokens/s per GPU", "<GPU> GPU-hours per 10^12 tokens",
              "TFLOP/s per GPU (Eq. 3)", "TFLOP/s per GPU (model FLOPs)")


def _is_gpu_hours(quantity: str) -> bool:
    """A cost in GPU-hours per 10^12 tokens, of whichever GPU ran it."""
    return quantity.endswith("GPU-hours per 10^12 tokens")


def _printed_step_s(case: Case) -> float:
    p = case.plan
    s = p.seq_len or case.model.seq_len
    n = p.n_gpus
    if case.quantity == "s/iteration":
        return case.published
    if case.quantity == "tokens/s per GPU":
        return p.global_batch * s / (case.published * n)
    if _is_gpu_hours(case.quantity):
        return p.global_batch * s * case.published * 3600 / 1e12 / n
    if case.quantity == "TFLOP/s per GPU (Eq. 3)":
        flops = compute.megatron_iteration_flops(case.model, p.global_batch, s, recompute=True)
        return flops / (case.published * 1e12 * n)
    if case.quantity == "TFLOP/s per GPU (model FLOPs)":
        flops = compute.flops_per_token(case.model, s) * p.global_batch * s
        return flops / (case.published * 1e12 * n)
    raise ValueError(f"quantity={case.quantity!r} of {case.label} cannot be read as a step "
                     f"time; allowed: {', '.join(map(repr, QUANTITIES))}")


def _row(case: Case, predicted: float) -> ValidationRow:
    return ValidationRow(source_title(case.source), case.label, case.quantity, case.published,
                         predicted, case.source, case.mechanisms)


def _selected(sources: Iterable[str] | None) -> list[Case]:
    every, _ = cases()
    if sources is None:
        return list(every)
    wanted = set(sources)
    return [c for c in every if c.source in wanted]


def _evaluate(case: Case, cal: Calibration | None = None) -> PlanResult:
    """``case``'s layout evaluated as it ran: its GPU, network, framework preset and recipe."""
    return evaluate(case.model, case.gpu, case.plan, case.network, calibration=cal,
                    framework=case.framework, recipe=case.recipe)


def _predicted(case: Case, cal: Calibration) -> float:
    """The planner's prediction of ``case``, in the case's own quantity."""
    return case.predict(_evaluate(case, cal))


def validate(calibration: Calibration | None = None, sources: Iterable[str] | None = None
             ) -> list[ValidationRow]:
    """Predict the published runs (of ``sources``; all by default) with one calibration."""
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    return [_row(case, _predicted(case, cal)) for case in _selected(sources)]


@dataclass(frozen=True)
class StepGap:
    """A published run's steady-state step beside the planner's, in seconds.

    Read in seconds, a miss tells what kind of mechanism is missing: a fixed cost per step
    (the training loop's own work, a collective that never hides) stays about the same number
    of seconds whatever the step's length, so its share of the step shrinks as steps grow; a
    rate priced too fast (a kernel slower than assumed) grows in proportion to the step.
    ``published_s`` is the printed number read back as seconds per steady-state iteration
    (a whole-run average times its goodput, as the fit compares), ``predicted_s`` the
    planner's prediction read back the same way."""

    table: str
    case: str
    gpu: str
    recompute: str
    published_s: float
    predicted_s: float
    source: str = ""
    mechanisms: tuple[str, ...] = ()

    @property
    def gap_s(self) -> float:
        """Seconds a step takes beyond the planner's (negative: the planner is slower)."""
        return self.published_s - self.predicted_s

    @property
    def gap_share(self) -> float:
        """The gap as a share of the published step."""
        return self.gap_s / self.published_s


def step_gaps(calibration: Calibration | None = None, sources: Iterable[str] | None = None,
              rows: Sequence[ValidationRow] = ()) -> list[StepGap]:
    """Each published run (of ``sources``; all by default) as a :class:`StepGap`.

    ``rows``: predictions already made with the same calibration (:func:`validate`'s rows, a
    :class:`CrossValidation`'s ``fitted`` and ``held_out``), reused for the runs they cover,
    matched by source and case; the other runs are evaluated here."""
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    known = {(r.source, r.case): r.predicted for r in rows}
    out = []
    for case in _selected(sources):
        value = known.get((case.source, case.label))
        predicted = replace(case, published=value if value is not None
                            else _predicted(case, cal))
        out.append(StepGap(source_title(case.source), case.label, case.gpu, case.plan.recompute,
                           _published_step_s(case), _published_step_s(predicted), case.source,
                           case.mechanisms))
    return out


@dataclass(frozen=True)
class MemoryCheck:
    """A published layout's memory on its fullest GPU by the planner's model, against that
    GPU's HBM.

    Every published run ran, so its layout fit: one the model puts above its HBM shows where
    the memory model is pessimistic (a reserve larger than the run kept, activations the
    framework freed or never stored, fewer micro-batches in flight than the schedule's
    count). ``predicted_gib`` is :attr:`~scaleout.plan.PlanResult.memory_bytes` (the reserve
    included), ``activations_gib`` its stored activations, ``capacity_gib`` the GPU's HBM."""

    table: str
    case: str
    gpu: str
    predicted_gib: float
    capacity_gib: float
    source: str = ""
    activations_gib: float = 0.0

    @property
    def fits(self) -> bool:
        """Whether the model keeps the layout within HBM, as the run did."""
        return self.predicted_gib <= self.capacity_gib

    @property
    def share(self) -> float:
        """The model's memory as a share of HBM (above 1: it says the run could not fit)."""
        return self.predicted_gib / self.capacity_gib


def memory_checks(sources: Iterable[str] | None = None) -> list[MemoryCheck]:
    """Each published run's layout (of ``sources``; all by default) as a :class:`MemoryCheck`,
    with the framework preset and recipe that ran it."""
    out = []
    for case in _selected(sources):
        r = _evaluate(case)
        out.append(MemoryCheck(source_title(case.source), case.label, case.gpu,
                               r.memory_bytes / GIB, r.capacity_bytes / GIB, case.source,
                               r.memory["activations"] / GIB))
    return out


def _log_step_errors(rows: Sequence[ValidationRow]) -> dict[str, np.ndarray]:
    """Per source, log(predicted step time / published step time) of every row."""
    by: dict[str, list[float]] = {}
    for r in rows:
        slow = r.quantity == "s/iteration" or _is_gpu_hours(r.quantity)
        ratio = r.predicted / r.published if slow else r.published / r.predicted
        by.setdefault(r.source, []).append(float(np.log(ratio)))
    return {k: np.asarray(v) for k, v in by.items()}


def _objective(rows: Sequence[ValidationRow]) -> float:
    """Mean over sources of each source's root-mean-square log error (every source weighs the
    same, whatever its number of rows)."""
    errs = _log_step_errors(rows)
    return float(np.mean([np.sqrt(np.mean(e ** 2)) for e in errs.values()]))


def fit_calibration(sources: Iterable[str] = TRAINING, start: Calibration | None = None,
                    rounds: int = 3) -> tuple[Calibration, float]:
    """The calibration that minimises :func:`_objective` over ``sources``, and that objective.

    Coordinate descent on :data:`GRID`: each number in turn moves to its best grid value with
    the others held, ``rounds`` times over (or until nothing moves). How
    :data:`~scaleout.plan.DEFAULT_CALIBRATION` was obtained; a test re-runs it.
    """
    chosen = list(sources)
    cal = start or DEFAULT_CALIBRATION
    seen: dict[Calibration, float] = {}  # a later round meets some trials again

    def objective(trial: Calibration) -> float:
        if trial not in seen:
            seen[trial] = _objective(validate(trial, chosen))
        return seen[trial]

    best = objective(cal)
    for _ in range(rounds):
        moved = False
        for name, grid in GRID.items():
            for value in grid:
                trial = replace(cal, **{name: value})
                score = objective(trial)
                if score < best - 1e-12:
                    best, cal, moved = score, trial, True
        if not moved:
            break
    return cal, best


# ---------------------------------------------------------------------------- the baseline
def _peak_step_s(case: Case) -> float:
    """Seconds per iteration at the GPUs' peak dense BF16 FLOP/s, model FLOPs only."""
    from .. import catalog

    s = case.plan.seq_len or case.model.seq_len
    flops = compute.flops_per_token(case.model, s) * case.plan.global_batch * s
    return flops / (catalog.gpu(case.gpu).bf16_dense_flops * case.plan.n_gpus)


def fit_baseline(sources: Iterable[str] = TRAINING) -> float:
    """The one MFU that fits the training sources best (same objective as the planner)."""
    chosen = _selected(sources)
    grid = np.linspace(0.20, 0.70, 501)
    # log(predicted step / published step) = log(peak step / published step) - log(mfu)
    by: dict[str, list[float]] = {}
    for case in chosen:
        by.setdefault(case.source, []).append(np.log(_peak_step_s(case) / _published_step_s(case)))
    log_mfu = np.log(grid)[:, None]
    scores = np.mean([np.sqrt(np.mean((np.asarray(v)[None, :] - log_mfu) ** 2, axis=1))
                      for v in by.values()], axis=0)
    return float(grid[int(np.argmin(scores))])


def baseline_rows(mfu: float, selected: Sequence[Case] | None = None) -> list[ValidationRow]:
    """The constant-MFU baseline's prediction of each case, in the case's quantity."""
    out = []
    for case in (selected if selected is not None else _selected(None)):
        step = _peak_step_s(case) / mfu
        published_step = _published_step_s(case)
        if case.quantity == "s/iteration":
            predicted = step
        elif _is_gpu_hours(case.quantity):  # a cost: it scales as the step
            predicted = case.published * step / published_step
        else:  # a throughput: it scales as 1 / step
            predicted = case.published * published_step / step
        out.append(_row(case, predicted))
    return out


# ---------------------------------------------------------------------------- summaries
def validation_summary(rows: Sequence[ValidationRow]) -> dict[str, dict[str, float]]:
    """Mean and worst absolute error (percent) per table."""
    out: dict[str, dict[str, float]] = {}
    for table in dict.fromkeys(r.table for r in rows):
        errs = np.abs([r.error_pct for r in rows if r.table == table])
        out[table] = {"cases": int(errs.size), "mean_abs_pct": float(errs.mean()),
                      "worst_abs_pct": float(errs.max())}
    return out


@dataclass(frozen=True)
class CrossValidation:
    """Fitted, held-out and leave-one-source-out errors, each beside the constant baseline."""

    calibration: Calibration
    baseline_mfu: float
    fitted: list[ValidationRow]
    held_out: list[ValidationRow]
    left_out: list[ValidationRow]
    baseline_fitted: list[ValidationRow]
    baseline_held_out: list[ValidationRow]
    baseline_left_out: list[ValidationRow]
    skipped: tuple[str, ...]

    def table(self) -> list[dict[str, object]]:
        """One row per source: its role, cases, the planner's and the baseline's errors."""
        out = []
        groups = (("fitted", self.fitted, self.baseline_fitted),
                  ("held out", self.held_out, self.baseline_held_out),
                  ("left out", self.left_out, self.baseline_left_out))
        for role, rows, base in groups:
            model = validation_summary(rows)
            baseline = validation_summary(base)
            for table, stats in model.items():
                out.append({"source": table, "role": role, "cases": stats["cases"],
                            "mean_abs_pct": stats["mean_abs_pct"],
                            "worst_abs_pct": stats["worst_abs_pct"],
                            "baseline_mean_abs_pct": baseline[table]["mean_abs_pct"],
                            "baseline_worst_abs_pct": baseline[table]["worst_abs_pct"]})
        return out

    def overall(self, role: str, dense_16bit: bool | None = None) -> dict[str, float]:
        """Mean and worst absolute error over every case of ``role`` (planner, baseline).

        ``dense_16bit``: True keeps the dense 16-bit runs only, False the runs that exercise
        a mixture of experts, FP8 or context parallelism (:attr:`ValidationRow.mechanisms`),
        None all of them."""
        rows, base = {"fitted": (self.fitted, self.baseline_fitted),
                      "held out": (self.held_out, self.baseline_held_out),
                      "left out": (self.left_out, self.baseline_left_out)}[role]
        if dense_16bit is not None:
            keep = [not r.mechanisms if dense_16bit else bool(r.mechanisms) for r in rows]
            rows = [r for r, k in zip(rows, keep, strict=True) if k]
            base = [r for r, k in zip(base, keep, strict=True) if k]
        e = np.abs([r.error_pct for r in rows])
        b = np.abs([r.error_pct for r in base])
        return {"cases": int(e.size), "mean_abs_pct": float(e.mean()),
                "worst_abs_pct": float(e.max()), "baseline_mean_abs_pct": float(b.mean()),
                "baseline_worst_abs_pct": float(b.max())}


@functools.cache
def cross_validation(calibration: Calibration | None = None) -> CrossValidation:
    """Everything :func:`validation_table` prints (cached: it fits the calibration once per
    left-out source)."""
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    every, skipped = cases()
    held = sorted({c.source for c in every} - set(TRAINING))
    fitted = validate(cal, TRAINING)
    held_rows = validate(cal, held)
    mfu = fit_baseline(TRAINING)
    left: list[ValidationRow] = []
    base_left: list[ValidationRow] = []
    for source in TRAINING:
        others = [s for s in TRAINING if s != source]
        cal_without, _ = fit_calibration(others, start=cal, rounds=2)
        left += validate(cal_without, [source])
        base_left += baseline_rows(fit_baseline(others), _selected([source]))
    return CrossValidation(cal, mfu, fitted, held_rows, left,
                           baseline_rows(mfu, _selected(TRAINING)),
                           baseline_rows(mfu, _selected(held)), base_left, skipped)


def validation_table(rows: Sequence[ValidationRow] | None = None) -> str:
    """Predicted against published as a plain-text table, with each table's mean and worst.

    Without ``rows``: every published source with the shipped calibration, then the
    cross-validation summary (fitted, held out, left out, each beside the constant baseline).
    """
    show = validate() if rows is None else rows
    width = max(len(r.case) for r in show)
    out = []
    for table, stats in validation_summary(show).items():
        mine = [r for r in show if r.table == table]
        out.append(f"{table}  ({mine[0].quantity})")
        out.append(f"  {'case':<{width}}  {'published':>10}  {'predicted':>10}  {'error':>7}")
        for r in mine:
            out.append(f"  {r.case:<{width}}  {r.published:>10.2f}  {r.predicted:>10.2f}  "
                       f"{r.error_pct:>+6.1f}%")
        out.append(f"  mean |error| {stats['mean_abs_pct']:.1f}%, worst "
                   f"{stats['worst_abs_pct']:.1f}% over {stats['cases']} cases")
        out.append("")
    if rows is None:
        cv = cross_validation()
        out.append(f"Cross-validation (constant baseline: one MFU of {cv.baseline_mfu:.1%} "
                   "for every run, fitted to the same training sources)")
        out.append(f"  {'source':<52} {'role':<9} {'cases':>5}  {'mean':>6} {'worst':>6}   "
                   f"{'baseline mean':>13} {'worst':>6}")
        for r in cv.table():
            out.append(f"  {r['source']:<52} {r['role']:<9} {r['cases']:>5}  "
                       f"{r['mean_abs_pct']:>5.1f}% {r['worst_abs_pct']:>5.1f}%   "
                       f"{r['baseline_mean_abs_pct']:>12.1f}% {r['baseline_worst_abs_pct']:>5.1f}%")
        for role, dense, label in (("fitted", None, "all fitted"),
                                   ("held out", None, "all held out"),
                                   ("held out", True, "held out, dense 16-bit"),
                                   ("held out", False, "held out, MoE / FP8 / CP"),
                                   ("left out", None, "all left out")):
            o = cv.overall(role, dense)
            out.append(f"  {label:<52}       {o['cases']:>5}  {o['mean_abs_pct']:>5.1f}% "
                       f"{o['worst_abs_pct']:>5.1f}%   {o['baseline_mean_abs_pct']:>12.1f}% "
                       f"{o['baseline_worst_abs_pct']:>5.1f}%")
        if cv.skipped:
            out.append("")
            out.append(f"Not predicted: {len(cv.skipped)} runs the planner cannot represent "
                       "yet, by reason:")
            reasons: dict[str, int] = {}
            for why in cv.skipped:
                source, _, rest = why.partition(": ")
                reason = rest.split(": ", 1)[-1]
                reasons[f"{source}: {reason}"] = reasons.get(f"{source}: {reason}", 0) + 1
            out += [f"  {count:>3} × {reason}" for reason, count in reasons.items()]
        out += ["", *_memory_lines(memory_checks())]
    return "\n".join(out).rstrip() + "\n"


def _memory_lines(checks: Sequence[MemoryCheck]) -> list[str]:
    """The layouts the memory model puts above their HBM, fullest first (for the table)."""
    over = sorted((c for c in checks if not c.fits), key=lambda c: -c.share)
    if not over:
        return [f"Memory: every one of the {len(checks)} published layouts fits its GPU by the "
                "planner's memory model, as it did when it ran."]
    width = max(len(c.case) for c in over)
    return [f"Memory: the planner's model puts {len(over)} of the {len(checks)} published "
            "layouts above their GPU's HBM, though every one ran (where it is pessimistic):",
            *(f"  {c.case:<{width}}  {c.predicted_gib:>7,.1f} of {c.capacity_gib:,.1f} GiB "
              f"({c.share:.1%})" for c in over)]


def scaling_series(source: str = "narayanan2021_table2_zero3",
                   calibration: Calibration | None = None
                   ) -> dict[str, dict[str, np.ndarray]]:
    """A published source's runs as series over the GPU count, one per model and framework:
    ``{"korthikanti-175b, deepspeed-2021": {"gpus": ..., "published": ..., "predicted": ...}}``
    (GPU counts ascending). For the fixed-batch ZeRO-3 against PTD-P comparison of Narayanan
    et al. 2021 (Table 2, Fig. 10): the trend each framework's mechanisms produce."""
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    chosen = _selected([source])
    if not chosen:
        raise ValueError(f"source={source!r} has no runs the planner can predict")
    rows: dict[str, list[tuple[int, float, float]]] = {}
    for case in chosen:
        key = f"{case.model.name}, {case.framework}"
        rows.setdefault(key, []).append((case.plan.n_gpus, case.published,
                                         _predicted(case, cal)))
    out = {}
    for key, points in rows.items():
        points.sort()
        g, pub, pred = (np.asarray(v, dtype=float) for v in zip(*points, strict=True))
        out[key] = {"gpus": g, "published": pub, "predicted": pred}
    return out
