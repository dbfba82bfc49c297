"""Monte-Carlo runs of a checkpointed job, against the exact model they check.

Failures arrive as a Poisson process; the runs are vectorised across repetitions (one
matrix of failure times, no loop over events) and their mean goodput is compared with
the exact finite-horizon mean of Daly's model (Daly 2006, FGCS 22(3); a renewal-reward
argument with edges, :func:`expected_goodput_finite`), which tends to
:func:`scaleout.reliability.goodput` as the horizon grows. With elastic shrink each
failure takes one data-parallel replica away for its repair
(:func:`scaleout.reliability.elastic_capacity`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..checks import check_int, check_work
from ._common import _MTBF_HINT, _nonneg, _pos
from .intervals import _check_interval, goodput
from .recovery import elastic_capacity


@dataclass(frozen=True)
class SimulationResult:
    """Goodput of ``reps`` simulated runs of ``horizon_s`` each, and what theory expects.

    ``analytic`` is the long-run goodput (:func:`goodput`, times
    :func:`elastic_capacity` when shrinking); ``expected`` the exact mean over
    this finite horizon (:func:`expected_goodput_finite`: the run starts without
    a restart and stops mid-segment). ``tolerance`` is the stated bound on
    ``|mean - expected|``: four standard errors of the mean, plus, for elastic
    runs, ``(M + T_repair)/(H dp)`` for the horizon's effect on the capacity term.
    """

    goodput: np.ndarray
    failures: np.ndarray
    kept_s: np.ndarray
    horizon_s: float
    analytic: float
    expected: float
    edge: float

    @property
    def mean(self) -> float:
        """Mean goodput over the repetitions."""
        return float(self.goodput.mean())

    @property
    def stderr(self) -> float:
        """Standard error of that mean."""
        n = self.goodput.size
        return float(self.goodput.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf

    @property
    def tolerance(self) -> float:
        """``4 x stderr + edge``: how far the mean may sit from :attr:`expected`."""
        return 4 * self.stderr + self.edge

    @property
    def error(self) -> float:
        """``mean - expected``."""
        return self.mean - self.expected


def expected_goodput_finite(horizon_s, interval_s, delta_s, mtbf_s, restart_s=0.0) -> float:
    """The exact mean goodput of :func:`simulate` over a finite horizon ``H``.

    Renewal reward with edges: the first stretch (from time 0, no restart) keeps
    ``tau sum_k e^{-kL/M}``; failures arrive at rate ``1/M`` and the stretch after
    a failure at ``t`` keeps ``tau sum_k e^{-(R + kL)/M}`` over the segments that
    end before ``H``. Integrating over ``t``:
    ``[tau sum_{kL<=H} e^{-kL/M} + (tau/M) sum_{R+kL<=H} e^{-(R+kL)/M}(H - R - kL)] / H``,
    which tends to :func:`goodput` as ``H`` grows (the difference is ``O((L + R)/H)``).
    """
    h = float(_pos("horizon_s", horizon_s))
    tau, d = (float(x) for x in _check_interval(interval_s, delta_s))
    m = float(_pos("mtbf_s", mtbf_s, _MTBF_HINT))
    r = float(_nonneg("restart_s", restart_s))
    length = tau + d
    check_work(f"summing {h / length:.3g} segments (horizon_s / (interval_s + delta_s))",
               h / length, _SIM_HINT)
    k = np.arange(1, int(h / length) + 1)
    first = k * length
    after = r + first
    after = after[after <= h]
    kept = tau * np.sum(np.exp(-first / m)) + tau / m * np.sum(np.exp(-after / m) * (h - after))
    return float(kept / h)


def _failure_times(rng: np.random.Generator, reps: int, start: float, horizon: float,
                   mtbf: float) -> np.ndarray:
    """Poisson failure times in ``[start, horizon)`` per repetition, padded with ``inf``.

    One matrix of exponential gaps, cumulated along each row, grown until every
    row has passed the horizon.
    """
    span = horizon - start
    k = int(span / mtbf + 6 * math.sqrt(span / mtbf) + 16)
    times = start + np.cumsum(rng.exponential(mtbf, size=(reps, k)), axis=1)
    while times[:, -1].min() < horizon:
        more = times[:, -1:] + np.cumsum(rng.exponential(mtbf, size=(reps, k)), axis=1)
        times = np.concatenate([times, more], axis=1)
    times[times >= horizon] = np.inf
    last = int(np.isfinite(times).sum(axis=1).max())
    return times[:, :max(last, 1)]


def _kept_compute(v, n, tau, length):
    """Kept compute time in the first ``v`` seconds after an interval's restart (arrays)."""
    v = np.maximum(v, 0.0)
    whole = np.minimum(np.floor(v / length), n)
    part = np.where(whole < n, np.minimum(v - whole * length, tau), 0.0)
    return whole * tau + part


def _cumulative_kept(starts, offset, segments, tau, length, horizon):
    """``K(t)``: kept compute from time 0 to ``t``, per repetition (a function of arrays).

    Intervals start at ``starts`` (sorted per row, ``inf`` past the horizon); in
    interval ``i`` kept compute begins ``offset`` after its start and runs for
    ``segments`` segments. One ``searchsorted`` over all rows at once (each row
    shifted by its own stride keeps the flattened starts sorted).
    """
    reps, cols = starts.shape
    kept = segments * tau
    before = np.cumsum(kept, axis=1) - kept
    stride = 4.0 * horizon + 1.0
    shift = np.arange(reps)[:, None] * stride
    flat = (np.minimum(starts, 2.0 * horizon) + shift).ravel()

    def cum(t):
        t = np.clip(t, 0.0, horizon)
        row = np.broadcast_to(np.arange(reps)[:, None], t.shape)
        idx = np.searchsorted(flat, (t + shift).ravel(), side="right").reshape(t.shape) - 1
        idx = idx - row * cols
        s_i, o_i = starts[row, idx], offset[row, idx]
        return before[row, idx] + _kept_compute(t - s_i - o_i, segments[row, idx], tau, length)

    return cum


_SIM_HINT = ("shorten horizon_s, use fewer reps, a longer mtbf_s or a longer interval_s; "
             "goodput() gives the model at any size")


def _check_sim(horizon_s, interval_s, delta_s, mtbf_s, restart_s, reps, seed):
    horizon = float(_pos("horizon_s", horizon_s))
    tau, d = (float(x) for x in _check_interval(interval_s, delta_s))
    m = float(_pos("mtbf_s", mtbf_s, _MTBF_HINT))
    r = float(_nonneg("restart_s", restart_s))
    reps = check_int("reps", reps)
    seed = check_int("seed", seed, minimum=0)
    failures = horizon / m + 6 * math.sqrt(horizon / m) + 16
    check_work(f"reps={reps:,} runs of {failures:.3g} failures each (horizon_s / mtbf_s)",
               4 * reps * failures, _SIM_HINT)
    check_work(f"a run of {horizon / (tau + d):.3g} segments (horizon_s / (interval_s + "
               "delta_s))", horizon / (tau + d), _SIM_HINT)
    return horizon, tau, d, m, r, reps, seed


def simulate(horizon_s: float, interval_s: float, delta_s: float, mtbf_s: float,
             restart_s: float = 0.0, *, reps: int = 1000, seed: int = 0,
             dp: int | None = None, repair_s: float | None = None) -> SimulationResult:
    """Monte-Carlo runs of a checkpointed job, vectorised across repetitions.

    Failures arrive as a Poisson process of mean gap ``mtbf_s`` over the wall
    time ``[0, horizon_s)``. The run starts working at once; after each failure
    it restarts for ``restart_s`` (a failure during the restart starts it
    again), then repeats segments of ``interval_s`` of work and ``delta_s`` of
    checkpoint. Work is kept when its segment's checkpoint completes; the rest
    of the segment a failure interrupts is lost. One matrix of failure times
    per call (``reps`` rows) and a few array operations: no loop over events.

    With ``dp`` and ``repair_s`` the job shrinks elastically: each failure takes
    one of ``dp`` replicas away for ``repair_s`` and kept compute counts at
    ``1 - k/dp`` while ``k`` replicas are out (failures before time 0 are
    drawn too, so the run starts in steady state).

    Returns
    -------
    SimulationResult
        Per-repetition goodput, failures and kept work, and the analytic
        :func:`goodput` (times :func:`elastic_capacity` when shrinking).
    """
    horizon, tau, d, m, r, reps, seed = _check_sim(horizon_s, interval_s, delta_s, mtbf_s,
                                                   restart_s, reps, seed)
    elastic = dp is not None or repair_s is not None
    if elastic:
        if dp is None or repair_s is None:
            raise ValueError("elastic shrink needs both dp and repair_s")
        capacity = elastic_capacity(tau, d, m, r, repair_s=repair_s, dp=dp)
        t_rep = float(repair_s)
    rng = np.random.default_rng(seed)
    length = tau + d
    fail = _failure_times(rng, reps, 0.0, horizon, m)
    starts = np.concatenate([np.zeros((reps, 1)), fail], axis=1)
    ends = np.minimum(np.concatenate([fail, np.full((reps, 1), np.inf)], axis=1), horizon)
    live = starts < horizon
    offset = np.zeros_like(starts)
    offset[:, 1:] = r
    avail = np.where(live, np.maximum(ends - starts - offset, 0.0), 0.0)
    segments = np.floor(avail / length)
    kept = segments.sum(axis=1) * tau
    if elastic:
        pre = -_failure_times(rng, reps, 0.0, t_rep, m) if t_rep > 0 else np.full((reps, 1),
                                                                                  -np.inf)
        windows = np.concatenate([pre, fail], axis=1)
        ok = np.isfinite(windows)
        cum = _cumulative_kept(starts, offset, segments, tau, length, horizon)
        lost = np.where(ok, cum(np.where(ok, windows + t_rep, 0.0))
                        - cum(np.where(ok, windows, 0.0)), 0.0).sum(axis=1)
        kept = kept - lost / dp
    factor = capacity if elastic else 1.0
    return SimulationResult(
        goodput=kept / horizon, failures=np.isfinite(fail).sum(axis=1), kept_s=kept,
        horizon_s=horizon, analytic=float(goodput(tau, d, m, r)) * factor,
        expected=expected_goodput_finite(horizon, tau, d, m, r) * factor,
        edge=(m + t_rep) / (horizon * dp) if elastic else 0.0)


@dataclass(frozen=True)
class RunTimeline:
    """One simulated run as bars: ``kind[i]`` from ``start_s[i]`` to ``end_s[i]``.

    Kinds: ``"compute"`` (kept work), ``"checkpoint"``, ``"lost"`` (work and
    checkpoint a failure threw away), ``"restart"``, ``"unfinished"`` (cut by
    the horizon). ``failures_s`` are the failure times.
    """

    kind: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    failures_s: np.ndarray
    horizon_s: float

    def total_s(self, kind: str) -> float:
        """Summed duration of one kind of bar."""
        sel = self.kind == kind
        return float(np.sum(self.end_s[sel] - self.start_s[sel]))


def simulate_timeline(horizon_s: float, interval_s: float, delta_s: float, mtbf_s: float,
                      restart_s: float = 0.0, *, seed: int = 0) -> RunTimeline:
    """The events of one run, for drawing: the same draws as ``simulate(..., reps=1)``."""
    horizon, tau, d, m, r, _, seed = _check_sim(horizon_s, interval_s, delta_s, mtbf_s,
                                                restart_s, 1, seed)
    fail = _failure_times(np.random.default_rng(seed), 1, 0.0, horizon, m)[0]
    fail = fail[np.isfinite(fail)]
    length = tau + d
    starts = np.concatenate([[0.0], fail])
    ends = np.concatenate([fail, [horizon]])
    kinds: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []

    def add(kind: str, a, b) -> None:
        a, b = np.atleast_1d(a), np.atleast_1d(b)
        keep = b > a
        kinds.append(np.full(int(keep.sum()), kind))
        lo.append(a[keep])
        hi.append(b[keep])

    for i, (s, e) in enumerate(zip(starts, ends, strict=True)):
        t0 = s
        if i > 0:
            add("restart", s, min(s + r, e))
            t0 = s + r
        if t0 >= e:
            continue
        n = int((e - t0) // length)
        seg = t0 + np.arange(n) * length
        add("compute", seg, seg + tau)
        add("checkpoint", seg + tau, seg + length)
        add("unfinished" if e >= horizon else "lost", t0 + n * length, e)
    return RunTimeline(np.concatenate(kinds), np.concatenate(lo), np.concatenate(hi), fail,
                       horizon)
