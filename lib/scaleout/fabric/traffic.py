"""Spreading traffic over equal-cost paths: ECMP, spraying, flowlets, and reordering.

ECMP hashes whole flows onto equal-cost paths (Hopps 2000, RFC 2992) and collides;
spraying a stream's packets over all paths (or planes) does not, at the price of
reordering at the receiver. :func:`simulate_load_balance` simulates five schemes
(ECMP, oblivious round-robin spraying, adaptive packet spraying, adaptive flowlet
switching as in CONGA and LetFlow) on paths of unequal speed;
:func:`ecmp_expected_utilisation` is ECMP's mean in closed form (balls into bins);
:func:`simulate_reordering` measures a receiver's reorder buffer against the bound of
:func:`reorder_buffer_bytes`. Designs that spray: Ultra Ethernet's transport (1.0,
2025); DeepSeek's planes and Alibaba HPN's dual-plane NICs for comparison (sources in
:func:`simulate_load_balance`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import units
from ..checks import (
    MAX_WORK,
    check_int,
    check_positive,
    check_range,
    check_work,
)


@dataclass(frozen=True)
class LoadBalanceResult:
    """Per-trial utilisations of five ways to spread one NIC's traffic over equal-cost paths
    (:func:`simulate_load_balance`).

    Every ``*_utilisation`` (and ``ecmp_sync``) is an outcome of the simulated mechanism,
    in ``[0, 1]``: the ideal time to send the message at the offered rate over the time
    the scheme takes, except ``ecmp_utilisation``, ECMP's steady-state throughput (served
    over offered while every flow lasts). ``path_rates`` are the trials' path speeds
    (1 = a port's nominal rate), the assumption that was varied.
    """

    n_flows: int
    n_paths: int
    load: float
    #: ECMP, steady state: Σ_j min(r_j, n_j × flow rate) over the offered load
    ecmp_utilisation: np.ndarray
    #: ECMP, a collective: the whole message waits for its slowest flow
    ecmp_sync: np.ndarray
    #: adaptive packet spraying: each packet to the path that delivers it first
    spray_utilisation: np.ndarray
    #: the busiest path's offered load over its speed under ECMP (> 1: congested)
    max_path_load: np.ndarray
    #: oblivious round-robin spraying: packet k on path k mod E, whatever its speed
    rr_utilisation: np.ndarray | None = None
    #: adaptive switching of flowlets (bursts of ``flowlet_packets``) instead of packets
    flowlet_utilisation: np.ndarray | None = None
    #: path speeds per trial, shape (trials, n_paths)
    path_rates: np.ndarray | None = None
    #: round-robin's largest queue on a path, packets (a slow path keeps receiving its share)
    rr_queue_packets: np.ndarray | None = None
    #: packets a receiver that delivers in order must hold under round-robin spraying
    rr_reorder_packets: np.ndarray | None = None
    #: packets in the message (a multiple of n_flows) and per flowlet
    message_packets: int = 0
    flowlet_packets: float = 0.0

    @property
    def ecmp_mean(self) -> float:
        """Mean ECMP throughput utilisation over the trials."""
        return float(self.ecmp_utilisation.mean())

    @property
    def spray_mean(self) -> float:
        """Mean utilisation of adaptive packet spraying."""
        return float(self.spray_utilisation.mean())

    @property
    def ecmp_sync_mean(self) -> float:
        """Mean ECMP utilisation when the slowest flow decides (a collective)."""
        return float(self.ecmp_sync.mean())

    @property
    def rr_mean(self) -> float:
        """Mean utilisation of oblivious round-robin spraying."""
        return float(np.mean(self.rr_utilisation))

    @property
    def flowlet_mean(self) -> float:
        """Mean utilisation of adaptive flowlet switching."""
        return float(np.mean(self.flowlet_utilisation))

    @property
    def capacity_mean(self) -> float:
        """Mean share of the nominal capacity the paths offered (Σ r_j / E): the most any
        scheme could reach at full load."""
        return float(np.mean(self.path_rates.mean(axis=1)))


def _greedy_makespan(rates: np.ndarray, jobs: int) -> np.ndarray:
    """Time at which ``jobs`` equal jobs (size 1) finish when each goes to the path that
    completes it first, paths of speeds ``rates`` (trials, E) serving one job at a time.

    The greedy choice is optimal for equal jobs on paths of different speeds: the makespan
    is the ``jobs``-th smallest of the completion slots ``k / r_j`` (k = 1, 2, ...). It lies
    in ``[N/Σr, (N+E)/Σr]``: the slots up to ``N/Σr`` are counted at once, and the remaining
    ones (at most E) are taken one by one, each the earliest next slot of any path.
    """
    n_trials, _ = rates.shape
    x = jobs / rates.sum(axis=1)                                      # (T,)
    taken = np.floor(x[:, None] * rates + 1e-9)                       # slots <= x per path
    need = jobs - taken.sum(axis=1)                                   # (T,), 0..E
    out = x.copy()
    rows = np.arange(n_trials)
    nxt = (taken + 1) / rates                                         # each path's next slot
    for step in range(1, int(need.max(initial=0)) + 1):
        j = nxt.argmin(axis=1)
        slot = nxt[rows, j]
        out = np.where(need == step, slot, out)
        taken[rows, j] += 1
        nxt[rows, j] = (taken[rows, j] + 1) / rates[rows, j]
    return out


def simulate_load_balance(n_flows: int, n_paths: int, *, load: float = 1.0,
                          path_slowdown: float = 0.0, trials: int = 2000,
                          seed: int = 0, slow_paths: int = 0, slow_factor: float = 0.5,
                          message_packets: int = 1024,
                          flowlet_packets: float = 64) -> LoadBalanceResult:
    """How well five schemes use ``n_paths`` equal-cost paths (or planes) of unequal speed.

    One NIC sends a message of ``message_packets`` packets as ``n_flows`` equal flows over
    ``n_paths`` paths whose nominal rate is one packet per unit time each, offering
    ``load × n_paths`` packets per unit time in all (load 1: its full line rate). What
    varies between trials, the stated assumption:

    * **path speeds** ``r_j``: each path loses a random share, uniform in
      ``[0, path_slowdown]`` (cross traffic, pauses, retransmissions), and the first
      ``slow_paths`` paths run at ``slow_factor`` of their rate (a plane with a degraded or
      failed link, a link retrained to a lower speed);
    * **ECMP's hash**: each flow lands on a uniformly random path (Hopps 2000, RFC 2992).

    The schemes, each simulated as paths serving their own queues (first in, first out):

    * **ECMP** pins each flow to its path; flows sharing a path split it fairly. Throughput
      utilisation = Σ_j min(r_j, n_j × flow rate) / offered (``ecmp_utilisation``); a
      collective ends with its slowest flow, ``min_j (r_j / n_j) / flow rate``
      (``ecmp_sync``).
    * **Oblivious round-robin spraying** sends packet k on path k mod E. Every path gets the
      same share, so the slowest path decides the finish, its queue grows by
      ``load − r_j`` per unit time, and packets arrive out of order by as much as the
      queues differ: ``rr_queue_packets`` and ``rr_reorder_packets`` (what a receiver that
      delivers in order must hold; a NIC that places packets straight into memory,
      out of order, needs none of it).
    * **Adaptive packet spraying** sends each packet to the path that will deliver it
      first (the path with the least queued work: switch adaptive routing, a sender that
      steers by congestion signals). It pools the paths' speeds, up to a last-packet
      tail: ``spray_utilisation``.
    * **Adaptive flowlet switching** does the same for bursts of ``flowlet_packets``
      (CONGA, LetFlow): coarser choices leave a longer tail; a flowlet as large as a flow
      is adaptive flow placement. Flowlets are assumed separated by gaps long enough to
      keep each flow in order (the premise of flowlet switching; an RDMA stream that
      never pauses has no such gaps and falls back to ECMP).

    Every utilisation is the ideal time (the message at the offered rate,
    ``N / (load × E)``) over the time the scheme needs, so it is an outcome of the queues,
    not an input; at full load it cannot exceed the paths' mean speed, ``capacity_mean``.
    The NIC's own injection is fluid (no per-packet serialisation at the sender).

    Published multi-plane designs for comparison: DeepSeek's multi-plane two-layer fat
    tree (DeepSeek-AI, arXiv 2412.19437; Zhao et al., "Insights into DeepSeek-V3", ISCA 2025,
    arXiv 2505.09343, Sec. 5) puts each GPU's NIC on one of eight 400G InfiniBand planes;
    spraying one connection over several ports needs out-of-order placement, which its
    ConnectX-7 NICs lack. Alibaba HPN (Qian et al., SIGCOMM 2024) gives each NIC two 200G
    ports on two planes, removing hash polarisation between tiers; it reports about 15 %
    more training throughput than its previous network. Ultra Ethernet's transport (1.0,
    2025) sprays packets and accepts them out of order.

    Exact repeats for a seed; ``message_packets`` is rounded to a multiple of ``n_flows``.
    """
    f = check_int("n_flows", n_flows)
    e = check_int("n_paths", n_paths)
    ld = check_range("load", load, 0.0, 1.0)
    if ld == 0:
        raise ValueError("load must be a number > 0 and <= 1, got 0")
    slow = check_range("path_slowdown", path_slowdown, 0.0, 0.99)
    n_slow = check_int("slow_paths", slow_paths, minimum=0, maximum=e)
    factor = check_range("slow_factor", slow_factor, 0.01, 1.0)
    n_trials = check_int("trials", trials)
    per_flow = max(1, round(check_int("message_packets", message_packets) / f))
    n_pkts = f * per_flow
    burst = check_positive("flowlet_packets", flowlet_packets)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    check_work(f"simulating n_flows={f:,} on n_paths={e:,}, trials={n_trials:,}",
               n_trials * (f + 2 * e + e * e), "use fewer trials, flows or paths")
    path = rng.integers(0, e, size=(n_trials, f))
    loss = rng.uniform(0.0, slow, size=(n_trials, e)) if slow > 0 else np.zeros((n_trials, e))
    rates = (1.0 - loss) * np.where(np.arange(e) < n_slow, factor, 1.0)[None, :]
    counts = np.bincount((np.arange(n_trials)[:, None] * e + path).ravel(),
                         minlength=n_trials * e).reshape(n_trials, e).astype(float)
    ideal = n_pkts / (ld * e)                                         # time at the offered rate

    # ECMP: flows pinned, fair share per path
    rate = ld * e / f
    served = np.minimum(rates, counts * rate).sum(axis=1)
    with np.errstate(divide="ignore"):
        share = np.where(counts > 0, rates / np.where(counts > 0, counts, 1.0), np.inf)
    sync = np.minimum(1.0, share.min(axis=1) / rate)

    # adaptive spraying (packets) and flowlet switching (bursts), greedy earliest finish
    spray = ideal / np.maximum(_greedy_makespan(rates, n_pkts), ideal)
    per_burst = per_flow / math.ceil(per_flow / burst)                # equal flowlets per flow
    n_bursts = round(n_pkts / per_burst)
    flowlet = ideal / np.maximum(_greedy_makespan(rates / per_burst, n_bursts), ideal)

    # oblivious round-robin: path j gets every E-th packet, injected at `ld` per unit time
    n_j = np.full(e, n_pkts // e) + (np.arange(e) < n_pkts % e)
    speed = np.minimum(rates, ld)                                     # a path delivers this fast
    rr = ideal / np.maximum((n_j[None, :] / speed).max(axis=1), ideal)
    queue = (n_j[None, :] * np.clip(1.0 - rates / ld, 0.0, None)).max(axis=1)
    # in-order delivery waits for the slowest path: at each path's finish time t, the paths
    # have delivered min(speed t, n_j), in order only E x the least of them
    t_end = n_j[None, :] / speed                                      # (T, E) breakpoints
    done = np.minimum(speed[:, None, :] * t_end[:, :, None], n_j[None, None, :])
    held = done.sum(axis=2) - e * done.min(axis=2)
    return LoadBalanceResult(
        n_flows=f, n_paths=e, load=ld, ecmp_utilisation=np.minimum(1.0, served / (ld * e)),
        ecmp_sync=sync, spray_utilisation=np.minimum(1.0, spray),
        max_path_load=(counts * rate / rates).max(axis=1),
        rr_utilisation=np.minimum(1.0, rr), flowlet_utilisation=np.minimum(1.0, flowlet),
        path_rates=rates, rr_queue_packets=queue, rr_reorder_packets=held.max(axis=1),
        message_packets=n_pkts, flowlet_packets=float(per_burst))


def ecmp_expected_utilisation(n_flows: int, n_paths: int) -> float:
    """Mean ECMP utilisation on identical paths at full load, in closed form.

    Each of ``F`` flows lands on a path uniformly at random, so a path carries
    ``m ~ Binomial(F, 1/E)`` flows and serves ``min(1, m·E/F)`` of its capacity (flows
    offer ``E/F`` each): the mean is ``Σ_m P(m) · min(1, m·E/F)``. With ``F = E`` it is
    ``1 − (1 − 1/E)^E``, the share of busy bins when E balls go into E bins, which tends
    to ``1 − 1/e ≈ 63 %``. :func:`simulate_load_balance` with ``path_slowdown=0`` and
    ``load=1`` converges to it.
    """
    f = check_int("n_flows", n_flows)
    e = check_int("n_paths", n_paths)
    check_work(f"the exact sum over n_flows={f:,}", f, "use fewer flows (the mean tends to "
               "1 - 1/e as flows and paths grow together)", limit=MAX_WORK // 100)
    if e == 1:
        return 1.0  # one path carries every flow, fully used
    m = np.arange(f + 1)
    # Binomial(F, 1/E) probabilities in logarithms: math.comb(F, m) overflows a float past F ~ 1000
    log_c = np.array([math.lgamma(f + 1) - math.lgamma(k + 1) - math.lgamma(f - k + 1)
                      for k in range(f + 1)])
    log_p = log_c + m * math.log(1.0 / e) + (f - m) * math.log1p(-1.0 / e)
    return float(np.sum(np.exp(log_p) * np.minimum(1.0, m * e / f)))


def load_balance_sweep(n_flows: Sequence[int], n_paths: Sequence[int], *, load: float = 1.0,
                       path_slowdown: float = 0.0, trials: int = 1000,
                       seed: int = 0, **kw) -> dict[str, np.ndarray]:
    """Mean utilisations over a grid: arrays of shape ``(len(n_paths), len(n_flows))``.

    Keys ``ecmp``, ``ecmp_sync``, ``spray``, ``rr`` and ``flowlet``. Each cell is one call of
    :func:`simulate_load_balance` with the same seed; ``kw`` (``slow_paths``,
    ``slow_factor``, ``message_packets``, ``flowlet_packets``) is passed on.
    """
    flows = [check_int("n_flows", x) for x in n_flows]
    paths = [check_int("n_paths", x) for x in n_paths]
    n_trials = check_int("trials", trials)
    check_work(f"a sweep of {len(flows)} n_flows by {len(paths)} n_paths, trials={n_trials:,}",
               n_trials * sum(f + 2 * e + e * e for f in flows for e in paths),
               "use fewer trials, flows or paths")
    keys = {"ecmp": "ecmp_mean", "ecmp_sync": "ecmp_sync_mean", "spray": "spray_mean",
            "rr": "rr_mean", "flowlet": "flowlet_mean"}
    out = {key: np.zeros((len(paths), len(flows))) for key in keys}
    for i, e in enumerate(paths):
        for j, f in enumerate(flows):
            r = simulate_load_balance(f, e, load=load, path_slowdown=path_slowdown,
                                      trials=trials, seed=seed, **kw)
            for key, attr in keys.items():
                out[key][i, j] = getattr(r, attr)
    return out


@dataclass(frozen=True)
class ReorderResult:
    """What a receiver of a sprayed stream needed: its reorder buffer, and the bound."""

    buffer_bytes: float
    bound_bytes: float
    out_of_order_fraction: float
    delivery_utilisation: float


def reorder_buffer_bytes(rate_gbps: float, skew_s: float) -> float:
    """Bytes a receiver holds while waiting for the slowest path: ``rate × skew``.

    While the packet on the slowest path is in flight, the faster paths keep delivering
    at up to the stream's full rate; nothing can be handed on in order until it lands.
    """
    rate = check_positive("rate_gbps", rate_gbps)
    skew = check_positive("skew_s", skew_s, allow_zero=True)
    return units.gbps_to_gbytes_s(rate) * 1e9 * skew


def simulate_reordering(n_paths: int, *, rate_gbps: float = 800.0, packet_bytes: int = 4096,
                        n_packets: int = 20_000, skew_us: float = 2.0,
                        jitter_us: float = 0.5, seed: int = 0) -> ReorderResult:
    """One stream sprayed round-robin over ``n_paths``, reassembled in order (seeded).

    Packets leave back to back at ``rate_gbps`` in total, packet ``i`` on path
    ``i mod n_paths``. Each path has a fixed extra delay, uniform in ``[0, skew_us]``
    (different lengths and queues), and each packet a further uniform ``[0, jitter_us]``;
    a path delivers in order (first in, first out). The receiver hands packets on in
    sequence; a packet that arrives early waits in the reorder buffer. Returns the most
    bytes ever held, against the bound ``rate × (skew + jitter)`` of
    :func:`reorder_buffer_bytes`, the share of packets that had to wait, and the delivery
    utilisation (ideal time over actual time to hand on the whole stream).
    """
    e = check_int("n_paths", n_paths)
    rate = check_positive("rate_gbps", rate_gbps)
    size = check_int("packet_bytes", packet_bytes)
    m = check_int("n_packets", n_packets)
    if m < e:
        raise ValueError(f"n_packets={m} must be at least n_paths={e}: one packet per path")
    skew = check_positive("skew_us", skew_us, allow_zero=True) * 1e-6
    jitter = check_positive("jitter_us", jitter_us, allow_zero=True) * 1e-6
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    check_work(f"simulating n_packets={m:,}", 8 * m, "use fewer packets")
    t_pkt = size / (units.gbps_to_gbytes_s(rate) * 1e9)
    m -= m % e
    send = np.arange(m) * t_pkt
    path_delay = rng.uniform(0.0, skew, size=e)
    arrive = (send + np.tile(path_delay, m // e) + rng.uniform(0.0, jitter, size=m))
    arrive = np.maximum.accumulate(arrive.reshape(-1, e), axis=0).ravel()  # FIFO per path
    deliver = np.maximum.accumulate(arrive)
    start, end = np.sort(arrive), np.sort(deliver)
    held = np.arange(1, m + 1) - np.searchsorted(end, start, side="right")
    ideal = m * t_pkt
    actual = deliver[-1] - deliver[0] + t_pkt
    return ReorderResult(buffer_bytes=float(max(held.max(), 0) * size),
                         bound_bytes=reorder_buffer_bytes(rate, skew + jitter) + size,
                         out_of_order_fraction=float(np.mean(deliver > arrive)),
                         delivery_utilisation=float(min(1.0, ideal / actual)))
