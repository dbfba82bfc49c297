"""Recovery options after a failure: plain restart, hot spares, elastic shrink.

Each option's time to resume (:func:`restart_time_s`) enters Daly's goodput
(:mod:`scaleout.reliability.intervals`). Hot spares are sized by Palm's theorem: nodes
under repair form an M/G/infinity queue whose occupancy is Poisson whatever the repair
time's distribution (:func:`spares_needed`). Elastic shrink (TorchElastic-style) runs on
fewer data-parallel replicas until the repair; its mean capacity is an exact sum over
the segments of a repair (:func:`elastic_capacity`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..checks import check_choice, check_int, check_work
from ..units import SECONDS_PER_HOUR
from ._common import _MTBF_HINT, _check_gpus, _nonneg, _pos
from .intervals import _check_interval, goodput

RECOVERY_OPTIONS = ("restart", "spares", "elastic")


def restart_time_s(option: str, *, detect_s: float, restore_s: float, init_s: float,
                   replace_s: float = 0.0) -> float:
    """Time from a failure until training resumes, for one recovery option.

    * ``"restart"``: detect the failure, wait ``replace_s`` for the failed node to
      be repaired or replaced, then restore the checkpoint and re-initialise;
    * ``"spares"``: a hot spare node takes the failed one's place at once;
    * ``"elastic"``: the survivors re-form without the failed data-parallel
      replica (TorchElastic-style) and resume from the checkpoint.

    Both of the last two skip the wait; they pay with idle spares or with fewer
    replicas until the repair (:func:`compare_recovery`).
    """
    option = check_choice("option", option, RECOVERY_OPTIONS)
    parts = [_nonneg(n, v) for n, v in (("detect_s", detect_s), ("restore_s", restore_s),
                                        ("init_s", init_s), ("replace_s", replace_s))]
    wait = parts[3] if option == "restart" else 0.0
    return float(parts[0] + wait + parts[1] + parts[2])


def elastic_capacity(interval_s, delta_s, mtbf_s, restart_s, *, repair_s, dp) -> float:
    """Mean share of the data-parallel replicas at work during kept compute, elastic shrink.

    Each failure takes one of ``dp`` replicas away for ``repair_s``; with ``k``
    replicas out the job runs at ``1 - k/dp``. Returns ``1 - E[k]/dp`` where the
    mean is over kept compute time (the time that counts): at age ``a`` since
    the last failure, ``k`` is that failure (if ``a < T``) plus a Poisson number
    of earlier ones, mean ``1 + (T - a)/M``; compute at ages
    ``R + sL .. R + sL + tau`` is kept if the segment ends before the next
    failure, with probability ``e^{-(R + (s+1)L)/M}``. The sum over ``s`` is
    exact for the model :func:`simulate` runs (failure rates assumed unchanged
    while replicas are out).

    Raises
    ------
    ValueError
        When ``repair_s / M`` (the mean number of replicas out) reaches ``dp / 2``:
        a shrinking job would then spend long stretches with few replicas left.
    """
    tau, d = _check_interval(interval_s, delta_s)
    tau, d = float(tau), float(d)
    m = float(_pos("mtbf_s", mtbf_s, _MTBF_HINT))
    r = float(_nonneg("restart_s", restart_s))
    t_rep = float(_nonneg("repair_s", repair_s))
    dp = check_int("dp", dp)
    if t_rep / m >= dp / 2:
        raise ValueError(f"elastic shrink: on average {t_rep / m:.3g} of dp = {dp} replicas would "
                         "be under repair (repair_s / MTBF); it must stay below dp / 2")
    length = tau + d
    check_work(f"summing {(t_rep - r) / length:.3g} segments of a repair (repair_s / "
               "(interval_s + delta_s))", (t_rep - r) / length,
               "use a longer interval_s or a shorter repair_s")
    s = np.arange(max(0, math.ceil((t_rep - r) / length)) + 1)
    lo = r + s * length
    hi = np.minimum(lo + tau, t_rep)
    inside = hi > lo
    lam = 1 / m
    integral = np.where(inside, (hi - lo) * (1 + lam * t_rep) - lam * (hi**2 - lo**2) / 2, 0.0)
    weights = np.exp(-lam * (r + (s + 1) * length))
    kept = tau * np.exp(-lam * (r + length)) / -np.expm1(-lam * length)
    mean_out = float(np.sum(weights * integral)) / kept if kept > 0 else 0.0
    return float(1 - mean_out / dp)


def spares_needed(node_failures_per_h: float, repair_s: float, risk: float = 1e-3) -> int:
    """Hot spare nodes so that a failure finds none left with probability below ``risk``.

    Nodes under repair form an M/G/infinity queue: their number is Poisson with
    mean ``a = rate x repair time`` whatever the repair-time distribution
    (Palm's theorem). Returns the smallest ``S`` with ``P(Poisson(a) > S) <= risk``.
    """
    rate = _nonneg("node_failures_per_h", node_failures_per_h)
    a = float(rate) * float(_nonneg("repair_s", repair_s)) / SECONDS_PER_HOUR
    risk = float(_pos("risk", risk))
    if risk >= 1:
        raise ValueError(f"risk must be a probability below 1, got {risk!r}")
    if a == 0:
        return 0
    check_work(f"a Poisson tail of mean {a:.3g} nodes under repair (node_failures_per_h x "
               "repair_s)", a, "the failure rate times the repair time is more nodes than a "
               "cluster has", limit=10**6)
    k = np.arange(int(a + 12 * math.sqrt(a) + 30))
    log_pmf = k * math.log(a) - a - np.array([math.lgamma(x + 1) for x in k])
    tail = 1 - np.cumsum(np.exp(log_pmf))
    return int(np.argmax(tail <= risk))


@dataclass(frozen=True)
class RecoveryResult:
    """One recovery option's restart time, capacity while degraded, and goodput.

    ``goodput`` is kept work over wall time for the job; ``per_owned_gpu`` divides
    by all GPUs paid for, idle spares included.
    """

    option: str
    restart_s: float
    capacity: float
    goodput: float
    per_owned_gpu: float
    spare_gpus: int


def elastic_viable(mtbf_s: float, repair_s: float, dp: int) -> bool:
    """Whether elastic shrink is modelled for ``dp`` replicas: fewer than ``dp / 2`` of them
    under repair on average (``repair_s / mtbf_s``), the condition of
    :func:`elastic_capacity`."""
    m = float(_pos("mtbf_s", mtbf_s, _MTBF_HINT))
    return float(_nonneg("repair_s", repair_s)) / m < check_int("dp", dp) / 2


def compare_recovery(interval_s: float, delta_s: float, mtbf_s: float, *, detect_s: float,
                     restore_s: float, init_s: float, replace_s: float, repair_s: float,
                     n_gpus: int, dp: int, spare_gpus: int = 0,
                     options: Iterable[str] = RECOVERY_OPTIONS) -> dict[str, RecoveryResult]:
    """Plain restart, hot spares and elastic shrink side by side (Daly's model for each).

    ``replace_s``: how long a plain restart waits for a replacement; ``repair_s``:
    how long an elastic job runs without the failed replica; ``spare_gpus``: the
    idle GPUs kept for the spares option (they do no work, so goodput per owned
    GPU is ``goodput x n_gpus / (n_gpus + spare_gpus)``). ``options``: which of
    :data:`RECOVERY_OPTIONS` to compare (leave out ``"elastic"`` where
    :func:`elastic_viable` is false).
    """
    n = int(_check_gpus(n_gpus))
    spare = check_int("spare_gpus", spare_gpus, minimum=0)
    chosen = [check_choice("options", o, RECOVERY_OPTIONS) for o in options]
    out: dict[str, RecoveryResult] = {}
    for option in chosen:
        r = restart_time_s(option, detect_s=detect_s, restore_s=restore_s, init_s=init_s,
                           replace_s=replace_s)
        cap = (elastic_capacity(interval_s, delta_s, mtbf_s, r, repair_s=repair_s, dp=dp)
               if option == "elastic" else 1.0)
        g = float(goodput(interval_s, delta_s, mtbf_s, r)) * cap
        owned = n + (spare if option == "spares" else 0)
        out[option] = RecoveryResult(option, r, cap, g, g * n / owned,
                                     spare if option == "spares" else 0)
    return out
