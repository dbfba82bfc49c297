"""The verdict of a cluster plan: what to build, how long, what it costs, the main risk.

One paragraph a manager can act on, composed from a :class:`scaleout.synthesis.ClusterPlan`
and its costs (:mod:`scaleout.costs`); every number comes from those objects (no formula
here), printed by :mod:`scaleout.formatting`. The main risk is chosen by fixed rules, in
this order:

1. **memory**: the plan fills more than :data:`HEADROOM_WARNING` of a GPU's HBM. The memory
   model leaves out the CUDA context, temporary buffers and allocator fragmentation (a few
   GiB in practice), so such a plan may not fit on the real hardware;
2. **failures**: goodput below :data:`GOODPUT_WARNING` (failures, checkpoint writes and
   restarts cost more than that share of the run);
3. **communication**: the pipeline bubble and the communication that is not hidden take
   more than :data:`COMMUNICATION_WARNING` of an iteration;
4. otherwise the failures the run must ride through (at this scale there are always some).

The thresholds are the project's choices, stated here so a reader can disagree with them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from . import formatting as fmt
from . import units
from .costs import CloudCost, OwnedCost
from .plan import PlanResult
from .synthesis import ClusterPlan

__all__ = ["COMMUNICATION_WARNING", "GOODPUT_WARNING", "HEADROOM_WARNING", "Headroom",
           "Verdict", "cluster_verdict", "headroom", "main_risk"]

#: Share of HBM above which a plan's memory is flagged (the model omits a few GiB of overhead).
HEADROOM_WARNING = 0.90
#: Goodput below which failures are the main risk.
GOODPUT_WARNING = 0.95
#: Share of an iteration (bubble + communication not hidden) above which the network is.
COMMUNICATION_WARNING = 0.25
#: Parts of an iteration that are waiting rather than computing (:data:`scaleout.plan.STEP_PARTS`).
_WAITING = ("tp_comm", "cp_comm", "ep_comm", "bubble", "p2p", "dp_comm")
_WAITING_WORDS = {"tp_comm": "tensor-parallel all-reduces",
                  "cp_comm": "ring attention's key/value exchange",
                  "ep_comm": "the experts' all-to-alls", "bubble": "the pipeline bubble",
                  "p2p": "pipeline sends", "dp_comm": "data-parallel communication"}


@dataclass(frozen=True)
class Headroom:
    """Memory per GPU of a plan against the GPU's HBM."""

    used_bytes: float
    capacity_bytes: float

    @property
    def fraction(self) -> float:
        """Share of HBM the plan uses."""
        return self.used_bytes / self.capacity_bytes

    @property
    def free_bytes(self) -> float:
        """HBM left over, bytes (negative when the plan does not fit)."""
        return self.capacity_bytes - self.used_bytes

    @property
    def warning(self) -> bool:
        """True above :data:`HEADROOM_WARNING` of HBM."""
        return self.fraction > HEADROOM_WARNING

    def sentence(self) -> str:
        """``"63.3 GiB of 80 GiB per GPU (79%), 16.7 GiB free"`` plus a warning when tight."""
        text = (f"{fmt.bytes_iec(self.used_bytes)} of {fmt.bytes_iec(self.capacity_bytes)} per "
                f"GPU ({fmt.percent(self.fraction, 2)}), {fmt.bytes_iec(self.free_bytes)} free")
        if self.warning:
            text += (f": above {fmt.percent(HEADROOM_WARNING)} of HBM, and the model leaves out "
                     "the CUDA context, temporary buffers and fragmentation (a few GiB), so "
                     "check it on the hardware or take a plan with more room")
        return text


def headroom(result: PlanResult) -> Headroom:
    """The memory headroom of a plan (:attr:`PlanResult.memory_bytes` against its capacity)."""
    return Headroom(float(result.memory_bytes), float(result.capacity_bytes))


def main_risk(cluster: ClusterPlan) -> tuple[str, str]:
    """``(kind, sentence)``: the plan's main risk by the rules of this module's docstring.

    ``kind`` is ``"memory"``, ``"failures"`` or ``"communication"``.
    """
    best = cluster.chosen.result
    room = headroom(best)
    rel = cluster.reliability
    every = fmt.duration(rel.mtbf_s)
    if room.warning:
        return "memory", (f"memory: the plan fills {fmt.percent(room.fraction, 2)} of each GPU's "
                          f"HBM ({fmt.bytes_iec(room.free_bytes)} free), and the model leaves out "
                          "a few GiB of runtime overhead; confirm it fits on the hardware before "
                          "committing, or take the next plan with more room")
    if rel.goodput < GOODPUT_WARNING:
        return "failures", (f"failures: about {fmt.sig(rel.failures_per_day)} a day (one every "
                            f"{every}) cost {fmt.percent(1 - rel.goodput)} of the run even with "
                            f"checkpoints every {fmt.duration(rel.interval_s)}; faster checkpoint "
                            "storage and quicker restarts pay off directly")
    step = best.step
    waiting = {p: step[p] for p in _WAITING}
    share = sum(waiting.values()) / best.step_s
    if share > COMMUNICATION_WARNING:
        worst = max(waiting, key=waiting.get)
        return "communication", (
            f"communication: {fmt.percent(share)} of each iteration is spent waiting, most of it "
            f"on {_WAITING_WORDS[worst]}; the network and the scale-up domain size set the pace, "
            "so check their measured bandwidth before relying on these days")
    total = rel.failures_per_day * cluster.wall_days
    return "failures", (f"failures: expect about {fmt.count(total)} interruptions over the run "
                        f"(one every {every}); the plan relies on checkpoints every "
                        f"{fmt.duration(rel.interval_s)} and restarts of "
                        f"{fmt.duration(rel.restart_s)}")


@dataclass(frozen=True)
class Verdict:
    """The four sentences of a verdict and the risk's kind."""

    build: str
    duration: str
    cost: str
    risk: str
    risk_kind: str

    def text(self) -> str:
        """The verdict as one plain-text paragraph."""
        said = " ".join(x for x in (self.build, self.duration, self.cost) if x)
        return f"{said} Main risk: {self.risk}."

    def html(self) -> str:
        """The verdict as an HTML paragraph (escaped), headed in bold."""
        said = " ".join(html.escape(x) for x in (self.build, self.duration, self.cost) if x)
        return (f'<p class="so-verdict"><b>Verdict.</b> {said} '
                f"<b>Main risk:</b> {html.escape(self.risk)}.</p>")


def cluster_verdict(cluster: ClusterPlan, cloud: CloudCost, owned: OwnedCost | None = None,
                    currency: str = "USD") -> Verdict:
    """What to build, how long it takes, what it costs and the main risk, in four sentences.

    The cost is said two ways that are never added (:mod:`scaleout.costs`): ``cloud``, the
    run's :func:`~scaleout.costs.cloud_cost` (left out at a price of 0), and ``owned``, its
    :func:`~scaleout.costs.owned_cost` (optional), both in ``currency`` (an ISO 4217 code, see
    :func:`scaleout.formatting.money`).
    """
    fab, rel, best = cluster.fabric, cluster.reliability, cluster.chosen.result
    n_domains = cluster.n_gpus // cluster.gpus_per_node
    design = fab.design
    build = (f"Build {fmt.count(cluster.n_gpus)} {cluster.gpu} GPUs in "
             f"{fmt.plural(n_domains, 'scale-up domain')} of {cluster.gpus_per_node}, joined by "
             f"a {design.plane.tiers}-tier Clos fabric of "
             f"{fmt.plural(fab.switches, f'{fab.switch} switch', f'{fab.switch} switches')} "
             f"({fmt.plural(design.planes, 'plane')} of "
             f"{fmt.bit_rate(design.plane.port_gbps * 1e9)} ports, "
             f"{fmt.count(fab.transceivers)} {fab.bill.choice.upper()} optical module ends), "
             f"and train {cluster.model} with {cluster.chosen.label}.")
    duration = (f"{fmt.tokens(cluster.tokens)} take about "
                f"{fmt.duration(units.days_to_seconds(cluster.wall_days))} of wall-clock time "
                f"({fmt.duration(units.days_to_seconds(cluster.compute_days))} of computing at "
                f"{fmt.percent(best.mfu)} MFU; goodput {fmt.percent(rel.goodput)}), "
                f"{fmt.large_count(cloud.gpu_hours)} GPU-hours.")
    views = []
    if cloud.price_per_gpu_hour > 0:
        views.append(f"rented, about {fmt.money(cloud.total, currency)} "
                     f"({fmt.money(cloud.price_per_gpu_hour, currency)} per GPU-hour)")
    if owned is not None:
        views.append(f"owned, about {fmt.money(owned.total, currency)} (its share of the "
                     f"capital over {fmt.sig(owned.lifetime_years)} years, plus "
                     f"{fmt.money(owned.energy_cost, currency)} of energy)")
    cost = ("It costs " + "; ".join(views) + (", two views never added." if len(views) > 1
                                              else ".")) if views else ""
    kind, risk = main_risk(cluster)
    return Verdict(build, duration, cost, risk, kind)
