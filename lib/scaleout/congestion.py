"""Congestion: what keeps a lossless network from stalling, and what happens when it does not.

A collective sends many large messages at once, and several often converge on one port:
an **incast** (a reduce-scatter step, an all-to-all whose experts are unbalanced, a hot
receiver). The port's queue grows at (senders − 1) × line rate. What happens next is the
network's other half, which the topology (:mod:`scaleout.fabric`) does not show:

* **Lossy Ethernet** drops the excess. RDMA NICs of the RoCE generation retransmit with
  **go-back-N**: one lost packet costs everything sent after it (:func:`go_back_n_goodput`),
  which is why RoCE v2 has been run over a *lossless* network.
* **PFC** (priority flow control, IEEE 802.1Qbb) makes Ethernet lossless: when a queue
  passes a threshold (XOFF) the switch sends a **pause frame** upstream for that traffic
  class, and the sender stops until the queue falls below XON. The bytes already on the wire
  must fit in reserved **headroom** (:func:`pfc_headroom_bytes`). A pause stops *every* flow
  of that class on the paused link, including flows to idle destinations: **head-of-line
  blocking**. Pauses can propagate hop by hop (congestion spreading), and a NIC that keeps
  pausing (a **PFC storm**) or a cycle of paused buffers (a PFC deadlock) can stall a whole
  fabric (Guo et al., "RDMA over Commodity Ethernet at Scale", SIGCOMM 2016).
* **ECN and DCQCN** (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
  SIGCOMM 2015) slow the senders before the queue reaches XOFF. The switch marks packets
  with a probability that rises from 0 at ``K_min`` to ``P_max`` at ``K_max``
  (:func:`ecn_mark_probability`, RED-style); the receiver returns a congestion
  notification packet (CNP) at most once per interval; the sender cuts its rate,
  ``R_T = R_C``, ``R_C = R_C (1 − α/2)``, ``α = (1 − g) α + g`` (:func:`dcqcn_cut`), and
  between CNPs lets α decay and climbs back through fast recovery, additive and hyper
  increase (:func:`dcqcn_raise`). :func:`simulate_incast` integrates the authors' fluid
  model of these rules.
* **InfiniBand** is lossless by design: a link sends only as many bytes as the receiver
  has buffer credits for (credit-based link-level flow control, per virtual lane), which
  behaves like PFC without the pause frames' reaction time, and can spread congestion the
  same way; its switches add **adaptive routing** (a packet's output port chosen by queue
  depth) and its own congestion control (FECN/BECN marks) on top.
* **Receiver-driven credits** (the receiver grants senders what its port can take: Ultra
  Ethernet's receiver credit-based congestion control, and Homa/pHost before it) never
  build the queue at all.

:func:`simulate_incast` puts these side by side on one incast plus one innocent **victim**
flow that shares the paused links but goes to an idle host: a collective step ends when
both are done. The mechanisms and the products that combine them (Spectrum-X, Ultra
Ethernet's transport) are described, with sources, in ``data/congestion.toml``.

Bandwidths are per direction; rates in the simulation are in bytes per second.
Taught in ``notebooks/09_clos_fabrics.ipynb`` and ``notebooks/07_all_reduce_cost.ipynb``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import units
from .catalog import Entry, cached_entries, entries_where, field_of, lookup
from .checks import check_choice, check_int, check_positive, check_range, check_work

__all__ = [
    "FIBRE_NS_PER_M",
    "MECHANISMS",
    "DcqcnParams",
    "IncastResult",
    "Mechanism",
    "dcqcn_cut",
    "dcqcn_raise",
    "ecn_mark_probability",
    "go_back_n_goodput",
    "mechanism",
    "mechanisms",
    "pfc_headroom_bytes",
    "selective_repeat_goodput",
    "simulate_incast",
]

#: What :func:`simulate_incast` can put in front of an incast.
MECHANISMS = ("pfc", "dcqcn", "credits")
#: Propagation in fibre, ns per metre (as :data:`scaleout.fabric.FIBRE_NS_PER_M`).
FIBRE_NS_PER_M = 4.9


# =========================================================================== loss, retransmission
def go_back_n_goodput(loss_rate, window_packets):
    """Goodput share of a go-back-N sender, ``(1 − p) / (1 − p + p W)``.

    Every lost packet (probability ``p``) makes the sender resend its whole window of ``W``
    packets (about one bandwidth-delay product), the classical efficiency of go-back-N ARQ
    (Bertsekas & Gallager, *Data Networks*, 2nd ed., Sec. 2.4): at a loss rate of 10⁻³ and a
    window of 1,000 packets, half the link. RoCE NICs of the go-back-N generation are why
    RoCE v2 has been run lossless; Mittal et al. ("Revisiting Network Support for RDMA",
    SIGCOMM 2018) show that selective retransmission (:func:`selective_repeat_goodput`) in
    the NIC removes most of the need for PFC. Array-friendly.
    """
    p = np.asarray(loss_rate, dtype=float)
    w = np.asarray(window_packets, dtype=float)
    if np.any((p < 0) | (p >= 1)) or not np.all(np.isfinite(p)):
        raise ValueError(f"loss_rate must be in [0, 1), got {loss_rate!r}")
    if np.any(w < 1) or not np.all(np.isfinite(w)):
        raise ValueError(f"window_packets must be >= 1, got {window_packets!r}")
    out = (1 - p) / (1 - p + p * w)
    return float(out) if out.ndim == 0 else out


def selective_repeat_goodput(loss_rate):
    """Goodput share when only lost packets are resent: ``1 − p`` (the same reference)."""
    p = np.asarray(loss_rate, dtype=float)
    if np.any((p < 0) | (p >= 1)) or not np.all(np.isfinite(p)):
        raise ValueError(f"loss_rate must be in [0, 1), got {loss_rate!r}")
    out = 1 - p
    return float(out) if out.ndim == 0 else out


# =========================================================================== PFC
def pfc_headroom_bytes(link_gbps: float, cable_m: float, *, mtu_bytes: int = 4096,
                       response_ns: float = 1000.0) -> float:
    """Buffer one lossless port needs above XOFF, per traffic class, bytes.

    After a queue passes XOFF, data keeps arriving until the pause takes effect: the packet
    being received when the switch decides (one MTU), the pause frame's trip to the sender
    and the data already on the wire coming back (twice the cable's delay at line rate),
    the sender's reaction time at line rate, and the packet it is in the middle of sending
    (one MTU)::

        headroom = rate × (2 × cable delay + response time) + 2 × MTU

    (IEEE 802.1Qbb; Guo et al. 2016, Sec. 3, size PFC headroom the same way). At 400 Gb/s
    over 100 m that is about 0.1 MB per port and class, which is why switches offer few
    lossless classes.
    """
    rate = units.gbps_to_gbytes_s(check_positive("link_gbps", link_gbps)) * 1e9
    delay = check_positive("cable_m", cable_m, allow_zero=True) * FIBRE_NS_PER_M * 1e-9
    mtu = check_int("mtu_bytes", mtu_bytes, minimum=64)
    response = check_positive("response_ns", response_ns, allow_zero=True) * 1e-9
    return rate * (2 * delay + response) + 2 * mtu


# =========================================================================== ECN and DCQCN
@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN's knobs (Zhu et al. 2015). The timers, ``g``, ``F`` and the byte counter are
    of the order the paper used at 40 Gb/s; the increase steps are given as shares of the
    line rate (40 Mb/s at 40 Gb/s is 1/1000) so that they scale with it, an ASSUMPTION of
    this workbook. ``K_min``, ``K_max`` and ``P_max`` are the switch's marking profile."""

    kmin_bytes: float = 5e3
    kmax_bytes: float = 200e3
    pmax: float = 0.01
    g: float = 1 / 256
    cnp_interval_s: float = 50e-6
    timer_s: float = 55e-6
    byte_counter_bytes: float = 10e6
    fast_recovery_steps: int = 5
    rai_share: float = 1e-3
    rhai_share: float = 5e-3

    def __post_init__(self) -> None:
        check_positive("kmin_bytes", self.kmin_bytes, allow_zero=True)
        if not self.kmax_bytes > self.kmin_bytes:
            raise ValueError(f"kmax_bytes must be > kmin_bytes ({self.kmin_bytes:g}), got "
                             f"{self.kmax_bytes!r}")
        check_range("pmax", self.pmax, 1e-6, 1.0)
        check_range("g", self.g, 1e-6, 1.0)
        for name in ("cnp_interval_s", "timer_s", "byte_counter_bytes", "rai_share",
                     "rhai_share"):
            check_positive(name, getattr(self, name))
        check_int("fast_recovery_steps", self.fast_recovery_steps, minimum=0)


def ecn_mark_probability(queue_bytes, kmin_bytes: float = 5e3, kmax_bytes: float = 200e3,
                         pmax: float = 0.01):
    """The switch's marking probability for a queue: 0 up to ``K_min``, rising linearly to
    ``P_max`` at ``K_max``, 1 above it (RED-style marking as DCQCN configures it, Zhu et al.
    2015; ECN itself is RFC 3168). Array-friendly."""
    q = np.asarray(queue_bytes, dtype=float)
    if not kmax_bytes > kmin_bytes >= 0:
        raise ValueError(f"kmin_bytes and kmax_bytes must satisfy 0 <= kmin < kmax, got "
                         f"{kmin_bytes!r} and {kmax_bytes!r}")
    check_range("pmax", pmax, 0.0, 1.0)
    ramp = np.clip((q - kmin_bytes) / (kmax_bytes - kmin_bytes), 0.0, 1.0) * pmax
    out = np.where(q > kmax_bytes, 1.0, ramp)
    return float(out) if out.ndim == 0 else out


def dcqcn_cut(rate_current: float, rate_target: float, alpha: float,
              g: float = 1 / 256) -> tuple[float, float, float]:
    """A sender's reaction to one CNP: ``(R_C, R_T, α)`` after it.

    ``R_T ← R_C``; ``R_C ← R_C (1 − α/2)``; ``α ← (1 − g) α + g`` (Zhu et al. 2015, the
    reaction point's algorithm). ``rate_target`` is replaced, as the paper does.
    """
    del rate_target
    a = check_range("alpha", alpha, 0.0, 1.0)
    rc = check_positive("rate_current", rate_current, allow_zero=True)
    return rc * (1 - a / 2), rc, (1 - g) * a + g


def dcqcn_raise(rate_current: float, rate_target: float, step: int, *, line_rate: float,
                params: DcqcnParams | None = None) -> tuple[float, float]:
    """A sender's rate after its ``step``-th increase event since the last CNP (counting
    from 1): ``(R_C, R_T)``.

    Fast recovery for the first ``F`` events: ``R_C ← (R_T + R_C)/2``. Then additive
    increase, ``R_T ← R_T + R_AI``, and after ``F`` more, hyper increase,
    ``R_T ← R_T + R_HAI``, each followed by ``R_C ← (R_T + R_C)/2``; never above the line
    rate (Zhu et al. 2015).
    """
    p = params or DcqcnParams()
    n = check_int("step", step)
    rc, rt = float(rate_current), float(rate_target)
    if n > p.fast_recovery_steps:
        big = n > 2 * p.fast_recovery_steps
        rt += line_rate * (p.rhai_share if big else p.rai_share)
    rt = min(rt, line_rate)
    return min((rt + rc) / 2, line_rate), rt


def _events_rate(p: float, rate_pkts: float, window: float) -> float:
    """Expected rate of "``window`` packets (or seconds) without a mark" events:
    ``R p / ((1 − p)^(−window) − 1)``, tending to ``R / window`` as ``p → 0``."""
    if p <= 0.0:
        return rate_pkts / window
    if p >= 1.0:
        return 0.0
    denom = math.expm1(-window * math.log1p(-p))
    return rate_pkts * p / denom if denom > 0 else 0.0


# =========================================================================== the incast
@dataclass(frozen=True)
class IncastResult:
    """One simulated incast and its victim flow (:func:`simulate_incast`); arrays over time."""

    mechanism: str
    senders: int
    link_gbps: float
    t_s: np.ndarray
    queue_bytes: np.ndarray
    #: one incast sender's sending rate (all are alike), Gb/s
    sender_gbps: np.ndarray
    #: the victim's rate, Gb/s
    victim_gbps: np.ndarray
    paused: np.ndarray
    incast_s: float
    victim_s: float
    ideal_incast_s: float
    ideal_victim_s: float
    pauses: int
    xoff_bytes: float
    message_bytes: float = 0.0
    victim_bytes: float = 0.0

    @property
    def collective_s(self) -> float:
        """The step ends when both the incast and the victim are done."""
        return max(self.incast_s, self.victim_s)

    @property
    def ideal_s(self) -> float:
        """The step with no congestion effects: the receiver's port busy all along."""
        return max(self.ideal_incast_s, self.ideal_victim_s)

    @property
    def slowdown(self) -> float:
        """Step time over its ideal."""
        return self.collective_s / self.ideal_s

    @property
    def victim_slowdown(self) -> float:
        """The victim's time over what its own idle path allows."""
        return self.victim_s / self.ideal_victim_s

    @property
    def victim_delivered_bytes(self) -> np.ndarray:
        """The victim's bytes delivered by the end of each step (its progress over time)."""
        dt = self.t_s[1] - self.t_s[0] if self.t_s.size > 1 else 0.0
        return np.cumsum(self.victim_gbps) * dt * 1e9 / 8

    @property
    def pause_fraction(self) -> float:
        """Share of the time the shared links were paused."""
        return float(self.paused.mean()) if self.paused.size else 0.0

    @property
    def max_queue_bytes(self) -> float:
        """The deepest the receiver's queue got."""
        return float(self.queue_bytes.max()) if self.queue_bytes.size else 0.0


def simulate_incast(senders: int, mechanism: str = "dcqcn", *, link_gbps: float = 400.0,
                    message_bytes: float = 2e6, victim_bytes: float = 2e6,
                    xoff_bytes: float = 1e6, xon_bytes: float | None = None,
                    feedback_us: float = 2.0, dt_us: float | None = None,
                    params: DcqcnParams | None = None, mtu_bytes: int = 4096) -> IncastResult:
    """``senders`` hosts each send ``message_bytes`` to one receiver at once, while a victim
    flow of ``victim_bytes`` crosses the same switch links towards an idle host.

    A fluid model in steps of ``dt_us`` (default: 1 µs, coarser for long runs so that about
    1,500 steps cover the ideal times, at most 25 µs, half of DCQCN's CNP interval;
    symmetric senders, so one sender's state stands for all). The receiver's port drains
    its queue at ``link_gbps``. Every mechanism keeps PFC as its last line of defence:
    when the queue reaches ``xoff_bytes`` the links that feed it are paused after
    ``feedback_us`` (the bytes in flight land in the headroom) until it falls to
    ``xon_bytes`` (default ``xoff − 2 MTU``); a pause stops the victim too, which is
    head-of-line blocking (the links' spare capacity is otherwise assumed, a non-blocking
    fabric).

    ``mechanism``:

    * ``"pfc"``: no end-to-end congestion control; senders send at line rate when not
      paused (InfiniBand's credit-based link-level flow control behaves alike in this
      model: hop-by-hop back-pressure).
    * ``"dcqcn"``: ECN marking at the receiver's queue and DCQCN at the senders, integrated
      from the fluid model of Zhu et al. 2015: ``dq/dt = N R_C − C``;
      ``dα/dt = (g/τ') (1 − (1 − p)^(τ' R_C) − α)``; ``dR_T/dt`` and ``dR_C/dt`` with the
      cut term ``−(R_C α / 2τ') (1 − (1 − p)^(τ' R_C))`` and the byte-counter and timer
      increase terms (:func:`_events_rate`), ``p`` and ``R_C`` delayed by ``feedback_us``.
    * ``"credits"``: the receiver grants each sender ``1/N`` of its port (receiver-driven
      credits, as in Ultra Ethernet's RCCC): no queue builds.

    Raises
    ------
    ValueError
        Bad input, or a run longer than the workbook simulates at once.
    """
    n = check_int("senders", senders, maximum=4096)
    mech = check_choice("mechanism", mechanism, MECHANISMS)
    rate = units.gbps_to_gbytes_s(check_positive("link_gbps", link_gbps)) * 1e9   # bytes/s
    msg = check_positive("message_bytes", message_bytes)
    vic = check_positive("victim_bytes", victim_bytes, allow_zero=True)
    xoff = check_positive("xoff_bytes", xoff_bytes)
    mtu = check_int("mtu_bytes", mtu_bytes, minimum=64)
    xon = max(0.0, xoff - 2 * mtu) if xon_bytes is None else check_positive(
        "xon_bytes", xon_bytes, allow_zero=True)
    if xon >= xoff:
        raise ValueError(f"xon_bytes must be < xoff_bytes ({xoff:g}), got {xon:g}")
    p = params or DcqcnParams()
    ideal_incast = n * msg / rate
    ideal_victim = vic / rate
    if dt_us is None:
        dt = min(25e-6, max(1e-6, (ideal_incast + ideal_victim) / 1500))
    else:
        dt = check_positive("dt_us", dt_us) * 1e-6
    delay_steps = round(check_positive("feedback_us", feedback_us, allow_zero=True) * 1e-6 / dt)
    # a pause never lasts beyond the incast, so the victim ends by the incast's end plus its
    # own time; DCQCN's undershoot costs a fraction more
    horizon = 3 * (ideal_incast + ideal_victim) + 2e-3
    steps = math.ceil(horizon / dt)
    check_work(f"simulating {steps:,} steps of {dt * 1e6:g} µs", steps,
               "use a larger dt_us or smaller messages", limit=2_000_000)

    pkt = float(mtu)
    rc = rt = rate                      # DCQCN state, bytes/s (starts at line rate)
    alpha = 1.0
    q = 0.0
    sent = 0.0                          # bytes sent by each incast sender
    delivered = 0.0                     # incast bytes delivered at the receiver
    vsent = 0.0
    paused = False
    pause_start = -1                    # step at which the pause request takes effect
    pauses = 0
    ring = delay_steps + 1              # feedback delay line of (mark probability, R_C)
    hist_p = [0.0] * ring
    hist_rc = [rc] * ring
    span = p.kmax_bytes - p.kmin_bytes
    incast_done = victim_done = None
    ts, qs, ss, vs, ps = [], [], [], [], []
    pause_request = False
    k = 0
    for k in range(steps):
        t = k * dt
        # PFC: the request follows the queue; the links stop delivery_steps later
        if not pause_request and q >= xoff:
            pause_request, pause_start = True, k + delay_steps
            pauses += 1
        elif pause_request and q <= xon:
            pause_request = False
        paused = pause_request and k >= pause_start
        # what each sender would send now
        left = msg - sent
        if mech == "credits":
            want = min(rate / n, rate)
        elif mech == "pfc":
            want = rate
        else:
            want = rc
        send = 0.0 if (paused or left <= 0) else min(want, left / dt)
        sent += send * dt
        arrive = n * send * dt
        # the receiver's port
        q += arrive
        out = min(q, rate * dt)
        q -= out
        delivered += out
        # the victim, blocked whenever the shared links are paused
        vrate = 0.0 if (paused or vsent >= vic) else min(rate, (vic - vsent) / dt)
        vsent += vrate * dt
        # DCQCN, from the fluid model, with delayed feedback
        if mech == "dcqcn":
            # ecn_mark_probability, inlined for speed
            mark = (1.0 if q > p.kmax_bytes else
                    max(0.0, (q - p.kmin_bytes) / span) * p.pmax)
            slot = k % ring
            pd, rcd = hist_p[slot], hist_rc[slot]
            hist_p[slot], hist_rc[slot] = mark, rc
            rpk = rcd / pkt                                      # packets per second
            tau = p.cnp_interval_s
            cnp = -math.expm1(tau * rpk * math.log1p(-pd)) if pd < 1 else 1.0
            byte_ev = _events_rate(pd, rpk, p.byte_counter_bytes / pkt)
            timer_ev = _events_rate(pd, 1.0 / p.timer_s, 1.0) if pd < 1 else 0.0
            inc = byte_ev + timer_ev
            d_alpha = p.g / tau * (cnp - alpha)
            d_rt = (-(rt - rc) / tau * cnp + p.rai_share * rate * inc)
            d_rc = (-rc * alpha / (2 * tau) * cnp + (rt - rc) / 2 * inc)
            alpha = min(1.0, max(0.0, alpha + d_alpha * dt))
            rt = min(rate, max(rate * 1e-4, rt + d_rt * dt))
            rc = min(rt, max(rate * 1e-4, rc + d_rc * dt))
        ts.append(t)
        qs.append(q)
        ss.append(send)
        vs.append(vrate)
        ps.append(paused)
        if incast_done is None and delivered >= n * msg * (1 - 1e-12):
            incast_done = t + dt
        if victim_done is None and vsent >= vic * (1 - 1e-12):
            victim_done = t + dt if vic > 0 else 0.0
        if incast_done is not None and victim_done is not None:
            break
    if incast_done is None or victim_done is None:
        raise ValueError(f"the incast did not finish within {horizon * 1e3:,.1f} ms; "
                         "raise xoff_bytes or lower the number of senders")
    to_gbps = 8 / 1e9
    return IncastResult(
        mech, n, float(link_gbps), np.asarray(ts), np.asarray(qs),
        np.asarray(ss) * to_gbps, np.asarray(vs) * to_gbps, np.asarray(ps, dtype=bool),
        incast_done, victim_done, ideal_incast, ideal_victim, pauses, xoff, msg, vic)


# =========================================================================== the mechanisms as data
@dataclass(frozen=True)
class Mechanism(Entry):
    """A congestion or flow-control mechanism, or a product that combines several
    (``data/congestion.toml``)."""

    name: str = field_of("", "catalog name")
    kind: str = field_of("", "'link', 'switch', 'transport' or 'product'",
                         choices=("link", "switch", "transport", "product"))
    network: str = field_of("", "'Ethernet', 'InfiniBand' or 'both'",
                            choices=("Ethernet", "InfiniBand", "both"))
    addresses: str = field_of("", "the problem it addresses: loss, incast, hot spots, ...")
    how: str = field_of("", "how it works, in one or two sentences")
    limits: str = field_of("", "what it does not solve, or costs")
    year: int = field_of("year", "year of the standard, paper or product")
    source: str = field_of("", "where this is described")


_mechanisms = cached_entries("congestion.toml", "mechanism", Mechanism)


def mechanism(name: str) -> Mechanism:
    """One entry of ``data/congestion.toml`` by name or alias (``"DCQCN"``, ``"PFC"``)."""
    return lookup("mechanism", _mechanisms(), name)


def mechanisms(kind: str | None = None) -> list[Mechanism]:
    """Every entry of ``data/congestion.toml``, optionally of one ``kind``, in file order."""
    return entries_where(_mechanisms(), "kind", kind)
