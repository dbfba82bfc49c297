"""The optimal checkpoint interval, and goodput: the exponential-failure model.

A job saves its state every ``tau`` seconds of work at a cost of ``delta`` seconds and
restarts (in ``R`` seconds) from the last save after each failure; failures form a
Poisson process of mean gap ``M``.

* First order: Young 1974, "A first order approximation to the optimum checkpoint
  interval", Communications of the ACM 17(9):530-531: ``tau = sqrt(2 delta M)``
  (:func:`young_interval_s`, :func:`goodput_first_order`).
* The exact model and its higher-order optimum: Daly 2006, "A higher order estimate of
  the optimum checkpoint interval for restart dumps", Future Generation Computer
  Systems 22(3):303-312. Expected wall time
  ``T_w = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau`` (failures strike at any time,
  also during restarts; :func:`goodput`); his perturbation solution
  ``tau = sqrt(2 delta M)[1 + (1/3) sqrt(delta/(2M)) + (1/9) delta/(2M)] - delta`` for
  ``delta < 2M``, else ``M`` (:func:`daly_interval_s`). His Figs. 3-5 print ``tau_opt`` =
  117, 57 and 9.1 minutes for ``M`` = 24 h, 6 h and 15 min with ``delta`` = 5 min.
* The exact optimum through the Lambert W function (:func:`exact_optimal_interval_s`).
"""

from __future__ import annotations

import numpy as np

from ._common import _MTBF_HINT, _nonneg, _out, _pos


# =========================================================================== optimal interval
def young_interval_s(delta_s, mtbf_s):
    """Young's optimal compute time between checkpoints, ``tau = sqrt(2 delta M)``.

    Young 1974 (CACM 17(9)), from the first-order cost: each checkpoint costs
    ``delta``, each failure loses half an interval on average, so the waste per
    unit of work is ``delta/tau + tau/(2M)``, smallest at ``sqrt(2 delta M)``.
    With ``delta`` = 5 min and ``M`` = 24 h: exactly 120 min. Works on arrays.
    """
    d = _pos("delta_s", delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    return _out(np.sqrt(2 * d * m))


def daly_interval_s(delta_s, mtbf_s):
    """Daly's higher-order optimum (FGCS 22(3), 2006), seconds; works on arrays.

    ``tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta/(2M)) + (1/9) delta/(2M)] - delta``
    for ``delta < 2M``; ``tau = M`` otherwise. It approximates the optimum of the
    exact model (:func:`exact_optimal_interval_s`) and tends to Young's formula
    as ``delta/M`` goes to 0. Daly's Figs. 3-5 (``delta`` = 5 min): 117, 57 and
    9.1 min for ``M`` = 24 h, 6 h and 15 min.
    """
    d = _pos("delta_s", delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    x = d / (2 * m)
    tau = np.sqrt(2 * d * m) * (1 + np.sqrt(x) / 3 + x / 9) - d
    return _out(np.where(d < 2 * m, tau, m))


def lambert_w0(z):
    """The principal branch ``W0`` of the Lambert W function (``w e^w = z``) for ``z >= -1/e``.

    Halley's iteration from a branch-point series near ``-1/e`` and ``log1p(z)``
    elsewhere; about 1e-15 relative accuracy. Works on arrays (numpy has no W,
    and the workbook does not depend on scipy).
    """
    if isinstance(z, str | bytes) or np.asarray(z).dtype.kind not in "iuf":
        raise ValueError(f"lambert_w0 needs numbers z >= -1/e, got {z!r}")
    z = np.asarray(z, dtype=float)
    if np.any(~np.isfinite(z)) or np.any(z < -1 / np.e - 1e-15):
        raise ValueError(f"lambert_w0 needs z >= -1/e, got {z.min()!r}")
    p = np.sqrt(np.maximum(2 * (np.e * z + 1), 0.0))
    near = p < 0.5
    w = np.where(near, -1 + p - p**2 / 3 + 11 / 72 * p**3, np.log1p(np.maximum(z, -0.3)))
    for _ in range(30):
        ew = np.exp(w)
        f = w * ew - z
        wp1 = w + 1
        denom = ew * wp1 - (w + 2) * f / (2 * np.where(wp1 == 0, 1, wp1))
        step = np.where(np.abs(denom) > 0, f / np.where(denom == 0, 1, denom), 0.0)
        w = w - step
        if np.all(np.abs(step) <= 1e-15 * np.maximum(1, np.abs(w))):
            break
    return _out(np.where(p == 0, -1.0, w))


def exact_optimal_interval_s(delta_s, mtbf_s):
    """The interval that maximises :func:`goodput` exactly: ``M [1 + W0(-e^{-delta/M - 1})]``.

    Setting the derivative of Daly's ``(e^{(tau + delta)/M} - 1)/tau`` to zero gives
    ``(tau/M - 1) e^{tau/M - 1} = -e^{-delta/M - 1}``, solved by the Lambert W
    function (Daly 2006 names it as the route to the exact optimum). The restart
    time ``R`` only scales the wall time, so the optimum does not depend on it.

    Where ``delta/M`` is below 10^-9, ``1 + W0`` would cancel to nothing in floating
    point; there Daly's expansion (:func:`daly_interval_s`), whose error is of a
    higher order in ``delta/M``, gives the optimum to full precision.
    """
    d = _pos("delta_s", delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    tiny = d / m < 1e-9
    exact = m * (1 + np.asarray(lambert_w0(-np.exp(-np.where(tiny, 1.0, d / m) - 1))))
    return _out(np.where(tiny, daly_interval_s(d, m), exact))


# =========================================================================== goodput
def _check_interval(interval_s, delta_s, write_s=None):
    tau = _pos("interval_s", interval_s)
    d = _nonneg("delta_s", delta_s)
    floor = np.maximum(d, 0.0 if write_s is None else _nonneg("write_s", write_s))
    short = tau < floor
    if np.any(short):
        t = tau[short].ravel()[0] if tau.ndim else float(tau)
        f = np.broadcast_to(floor, tau.shape)[short].ravel()[0] if tau.ndim else float(floor)
        what = "delta_s" if write_s is None else "delta_s or write_s"
        raise ValueError(f"interval_s = {t:g} s is shorter than the checkpoint write time "
                         f"{what} ({f:g} s): the next checkpoint would start before the last "
                         "one is written; choose interval_s >= the write time")
    return tau, d


def segment_wall_time_s(interval_s, delta_s, mtbf_s, restart_s=0.0):
    """Expected wall time to complete one segment of ``tau`` work plus its checkpoint.

    Daly 2006 (the complete model): failures form a Poisson process of mean gap
    ``M`` that also strikes during restarts; a segment of ``L = tau + delta``
    completes only if no failure falls in it, each failure costs a restart of
    ``R`` (redone from the start if a failure strikes during it) and the segment
    is redone. Then ``E = M e^{R/M} (e^{L/M} - 1)``. Works on arrays.
    """
    tau = _pos("interval_s", interval_s)
    d = _nonneg("delta_s", delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    r = _nonneg("restart_s", restart_s)
    with np.errstate(over="ignore"):
        return _out(m * np.exp(r / m) * np.expm1((tau + d) / m))


def goodput(interval_s, delta_s, mtbf_s, restart_s=0.0, *, write_s=None):
    """Fraction of wall time spent on work that is kept: the exact exponential model.

    ``tau / (M e^{R/M} (e^{(tau + delta)/M} - 1))`` (Daly 2006; the long-run
    ratio of kept work to wall time). This is what Llama 3 calls "effective
    training time" and Kokolis et al. ETTR. Works on arrays of intervals.

    Raises
    ------
    ValueError
        A non-positive MTBF or interval, a negative cost, or an interval shorter
        than the checkpoint's blocking time ``delta`` or its ``write_s``.
    """
    tau, d = _check_interval(interval_s, delta_s, write_s)
    with np.errstate(over="ignore"):
        return _out(tau / segment_wall_time_s(tau, d, mtbf_s, restart_s))


def goodput_first_order(interval_s, delta_s, mtbf_s, restart_s=0.0):
    """Young's first-order goodput, ``max(0, 1 - delta/tau - tau/(2M) - R/M)``.

    The waste terms of Young 1974 (a checkpoint per interval, half an interval
    lost per failure) plus the restart; accurate while ``tau``, ``delta`` and
    ``R`` are all small against ``M``; its maximum is at :func:`young_interval_s`.

    Outside that range the terms can sum past 1 (``tau`` = 10^6 s against an
    MTBF of 3 h gives 1 - 46.3), which no goodput can be: the approximation
    has broken down, and the result is clipped at 0 (a run that keeps nothing).
    :func:`goodput` is the exact model at any interval.
    """
    tau, d = _check_interval(interval_s, delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    r = _nonneg("restart_s", restart_s)
    return _out(np.maximum(0.0, 1 - d / tau - tau / (2 * m) - r / m))


def expected_lost_work_s(interval_s, delta_s, mtbf_s):
    """Mean time into a segment when a failure strikes it: the work (and checkpoint) lost.

    For exponential failures conditioned on falling in a segment of
    ``L = tau + delta``: ``M - L / (e^{L/M} - 1)``, which tends to ``L/2`` when
    ``L << M`` (Young's "half an interval").
    """
    tau, d = _check_interval(interval_s, delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    length = tau + d
    with np.errstate(over="ignore"):
        return _out(m - length / np.expm1(length / m))


def expected_run_time_s(work_s, interval_s, delta_s, mtbf_s, restart_s=0.0):
    """Expected wall time to finish ``work_s`` of training: ``work / tau`` segments.

    ``work_s / goodput`` in Daly's model. Without checkpoints (``interval_s =
    work_s``, ``delta_s = 0``) the whole job must run without one failure:
    ``M e^{R/M} (e^{T/M} - 1)``, which overflows to ``inf`` for a long job on a
    large cluster; :func:`log10_expected_run_time_s` gives its size.
    """
    w = _pos("work_s", work_s)
    with np.errstate(over="ignore", divide="ignore"):
        return _out(w / np.asarray(goodput(interval_s, delta_s, mtbf_s, restart_s)))


def log10_expected_run_time_s(work_s, interval_s, delta_s, mtbf_s, restart_s=0.0):
    """``log10`` of :func:`expected_run_time_s`, finite even where the time overflows."""
    w = _pos("work_s", work_s)
    tau, d = _check_interval(interval_s, delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    r = _nonneg("restart_s", restart_s)
    x = (tau + d) / m
    # log(e^x - 1) = x + log(1 - e^-x), stable for large x
    log_expm1 = np.where(x > 30, x + np.log1p(-np.exp(-np.minimum(x, 700))),
                         np.log(np.expm1(np.minimum(x, 30))))
    ln = np.log(w / tau) + np.log(m) + r / m + log_expm1
    return _out(ln / np.log(10))
