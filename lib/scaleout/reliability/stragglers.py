"""Stragglers: a synchronous step waits for its slowest GPU.

Order statistics (David & Nagaraja, "Order Statistics", 3rd ed., 2003): the largest of
``n`` exponential draws has mean ``H_n`` times theirs (Renyi's representation,
:func:`expected_max_exponential`); of ``n`` normal draws about ``sqrt(2 ln n)``
(:func:`expected_max_normal`). A slow host slows every step; MegaScale (Jiang et al.
2024, arXiv 2402.15627, Sec. 6.3) found hosts about 10% slower than the rest
(:func:`slow_host_step_factor`).
"""

from __future__ import annotations

import math

import numpy as np

from ..checks import MAX_WORK, check_array, check_choice, check_int, check_work
from ._common import _check_gpus, _nonneg, _out, _pos

_EULER_GAMMA = 0.5772156649015329


def harmonic_number(n):
    """``H_n = 1 + 1/2 + ... + 1/n``; exact sums below 64, the asymptotic series above."""
    n = check_array("n", n, integer=True, minimum=1)
    small = np.cumsum(1.0 / np.arange(1, 65))
    safe = np.maximum(n, 1.0)
    asym = (np.log(safe) + _EULER_GAMMA + 1 / (2 * safe) - 1 / (12 * safe**2)
            + 1 / (120 * safe**4))
    exact = small[np.minimum(safe, 64).astype(int) - 1]
    return _out(np.where(n <= 64, exact, asym))


def expected_max_exponential(n, mean: float = 1.0):
    """Mean of the largest of ``n`` independent exponential draws of mean ``mean``: ``mean H_n``.

    Renyi's representation: the gaps between sorted exponentials are independent
    exponentials of means ``mean/n, mean/(n-1), ..., mean``. It grows as ``ln n``.
    """
    return _out(np.asarray(harmonic_number(n)) * float(_pos("mean", mean)))


def expected_max_normal(n):
    """Mean of the largest of ``n`` standard normal draws, ``int x n phi(x) Phi(x)^(n-1) dx``.

    Numerical integration on a fine grid (exact to about 1e-6): 0 for ``n = 1``,
    ``1/sqrt(pi)`` for 2, ``3/(2 sqrt(pi))`` for 3; about ``sqrt(2 ln n)`` for large n.
    """
    n = check_array("n", n, integer=True, minimum=1)
    x = np.linspace(-9.0, 9.0, 7201)
    log_cdf = np.log(np.clip(0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in x]),
                             1e-300, 1.0))
    pdf = np.exp(-x**2 / 2) / math.sqrt(2 * math.pi)
    flat = n.ravel()
    dens = flat[:, None] * pdf[None, :] * np.exp((flat[:, None] - 1) * log_cdf[None, :])
    out = np.trapezoid(x[None, :] * dens, x, axis=1)
    return _out(out.reshape(n.shape))


def straggler_step_time_s(n_gpus, base_s: float, jitter: float, dist: str = "exponential"):
    """Expected time of a synchronous step of ``n_gpus`` GPUs whose own times vary.

    GPU ``i`` needs ``base_s (1 + s_i)``; the step (and its all-reduce) waits
    for the slowest, so it takes ``base_s (1 + E[max s_i])``:

    * ``"exponential"``: ``s_i`` exponential with mean ``jitter``,
      ``E[max] = jitter H_n`` (:func:`expected_max_exponential`);
    * ``"normal"``: ``s_i`` normal with standard deviation ``jitter`` (mean 0),
      ``E[max] = jitter x`` :func:`expected_max_normal`.
    """
    n = _check_gpus(n_gpus)
    base = _pos("base_s", base_s)
    jitter = float(_nonneg("jitter", jitter))
    dist = check_choice("dist", dist, ("exponential", "normal"))
    if jitter == 0:
        return _out(base * np.ones_like(n))
    emax = (expected_max_exponential(n, jitter) if dist == "exponential"
            else jitter * np.asarray(expected_max_normal(n)))
    return _out(base * (1 + np.asarray(emax)))


def straggler_step_mc(n_gpus: int, base_s: float, jitter: float, dist: str = "exponential", *,
                      steps: int = 2000, seed: int = 0) -> np.ndarray:
    """Monte-Carlo synchronous step times: the maximum over ``n_gpus`` draws, ``steps`` times.

    The check of :func:`straggler_step_time_s`; draws in blocks so memory stays small.
    """
    n = int(_check_gpus(n_gpus))
    base = float(_pos("base_s", base_s))
    jitter = float(_nonneg("jitter", jitter))
    dist = check_choice("dist", dist, ("exponential", "normal"))
    steps = check_int("steps", steps)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    check_work(f"steps={steps:,} of n_gpus={n:,} draws", steps * n, "use fewer steps or GPUs; "
               "straggler_step_time_s() gives the expectation at any size", limit=10 * MAX_WORK)
    out = np.empty(steps)
    block = max(1, 2_000_000 // n)
    for lo in range(0, steps, block):
        size = (min(block, steps - lo), n)
        draws = rng.exponential(jitter, size) if dist == "exponential" else rng.normal(
            0.0, jitter, size)
        out[lo:lo + size[0]] = base * (1 + draws.max(axis=1))
    return out


def slow_host_step_factor(n_hosts, slow_fraction: float, slowdown: float):
    """Expected step-time factor when each host is slow with probability ``slow_fraction``.

    One slow host makes every synchronous step ``1 + slowdown`` times longer; the
    chance that a job of ``n_hosts`` has at least one is ``1 - (1 - p)^n``, so the
    expected factor is ``1 + slowdown (1 - (1 - p)^n)``. MegaScale found hosts
    about 10% slower than the rest (``figure("megascale-straggler-slowdown")``).
    """
    n = _check_gpus(n_hosts)
    p = float(_nonneg("slow_fraction", slow_fraction))
    if p > 1:
        raise ValueError(f"slow_fraction must be a probability from 0 to 1, got {p!r}")
    s = float(_nonneg("slowdown", slowdown))
    return _out(1 + s * -np.expm1(n * np.log1p(-min(p, 1 - 1e-16))))
