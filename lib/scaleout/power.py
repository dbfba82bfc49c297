"""Power: what a GPU draws as deployed, and what the network adds to it.

A GPU's TDP (``data/gpus.toml``) is only part of what its share of a cluster draws. The
whole system it sits in (``data/systems.toml``, ``power_w``: the maker's maximum system
power) adds the host CPUs, memory, the NICs and NVSwitches inside the server, storage, fans
and power conversion: a DGX H100 is rated at up to 10.2 kW for 8 × 700 W = 5.6 kW of GPUs,
1,275 W per GPU as deployed. Outside the servers the scale-out **fabric** adds its switch
chips (``data/switches.toml``, ``power_w``) in their boxes and its **optics**
(:func:`scaleout.optics.fabric_bill`). The facility multiplies the whole IT load by its
**PUE** (power usage effectiveness, total facility power over IT power; The Green Grid,
White Paper 49, 2012) for cooling and power distribution.

Per GPU, then::

    facility W per GPU = PUE × (system W / GPUs in the system            # GPU + its server
                                + switches × switch W / GPUs             # the fabric
                                + optics W / GPUs)                       # its modules

The maker's figures are maxima: a training job runs close to them, but not at every instant,
so energy from them is an estimate from above of *these parts*, not an upper bound of the
site's consumption (storage systems, front-end networks and offices are not counted).

Assumptions, labelled: a switch *box* draws :data:`SWITCH_BOX_FACTOR` times its chip (fans,
control CPU, power supplies); a chip without a published figure is estimated at the energy
per bit of the catalog's chips that have one; a GPU whose system has no published power is
estimated at the median ratio (system per GPU over TDP) of the catalog's systems.

Taught in ``notebooks/10_optical_modules.ipynb`` (the optics' share of the whole) and used
by the cluster-plan report.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from . import catalog, fabric
from .catalog import GPU
from .checks import check_int, check_positive, check_range

__all__ = [
    "PARTS",
    "SWITCH_BOX_FACTOR",
    "ClusterPower",
    "ServerPower",
    "SwitchPower",
    "cluster_power",
    "server_power",
    "switch_power",
]

#: A switch box's power over its chip's: fans, the control CPU and power-supply losses. An
#: ASSUMPTION (makers publish box figures with optics, or none): pass your own.
SWITCH_BOX_FACTOR = 1.5
#: The parts of :class:`ClusterPower`, in the order they are drawn.
PARTS = ("GPUs (TDP)", "rest of the servers", "switches", "optics", "facility (PUE)")


@dataclass(frozen=True)
class ServerPower:
    """One GPU's share of its system's power (:func:`server_power`)."""

    gpu: str
    tdp_w: float
    per_gpu_w: float
    #: the system the figure comes from, or "estimated: ..." when the GPU's has none
    basis: str

    @property
    def rest_w(self) -> float:
        """What the server adds per GPU beyond its TDP: CPUs, memory, NICs, fans, conversion."""
        return self.per_gpu_w - self.tdp_w

    @property
    def estimated(self) -> bool:
        """True when no system of this GPU publishes its power."""
        return self.basis.startswith("estimated")


def _gpu(spec: str | GPU) -> GPU:
    return catalog.gpu(spec)


def _system_ratios() -> dict[str, float]:
    """System power per GPU over the GPU's TDP, for every catalog system that publishes it."""
    return {s.name: s.power_per_gpu_w / catalog.gpu(s.gpu).tdp_w
            for s in catalog.systems() if s.power_per_gpu_w is not None}


def server_power(gpu: str | GPU) -> ServerPower:
    """Power per GPU as deployed in its server, from the system's published maximum.

    The catalog system of this GPU with a published ``power_w`` (``data/systems.toml``)
    divided by its GPUs: DGX H100, 10.2 kW / 8 = 1,275 W per 700 W GPU. A GPU with no such
    system (or a user-defined one) is estimated at its TDP times the median of the catalog's
    ratios, and says so in ``basis``.
    """
    g = _gpu(gpu)
    for s in catalog.systems():
        if s.gpu == g.name and s.power_per_gpu_w is not None:
            return ServerPower(g.name, g.tdp_w, s.power_per_gpu_w, s.name)
    ratios = _system_ratios()
    ratio = statistics.median(ratios.values())
    return ServerPower(g.name, g.tdp_w, g.tdp_w * ratio,
                       f"estimated: TDP × {ratio:.2f}, the median system-to-TDP ratio of "
                       f"{', '.join(ratios)}")


@dataclass(frozen=True)
class SwitchPower:
    """One switch box's power (:func:`switch_power`)."""

    switch: str
    chip_w: float
    box_w: float
    #: True when the chip's figure is estimated from the energy per bit of other chips
    chip_estimated: bool


def switch_power(switch: str | fabric.SwitchChip,
                 box_factor: float = SWITCH_BOX_FACTOR) -> SwitchPower:
    """A switch box's power, watts: its chip's (``data/switches.toml``) × ``box_factor``.

    A chip without a published ``power_w`` is estimated at its capacity times the mean
    watts per Gb/s of the chips that have one (today one analyst's estimate for Tomahawk 5,
    500 W for 51.2 Tb/s: about 9.8 W per Tb/s; newer processes do better, so the estimate
    errs high).
    """
    chip = fabric.switch_chip(switch)
    factor = check_range("box_factor", box_factor, 1.0, 10.0)
    if chip.power_w is not None:
        return SwitchPower(chip.name, chip.power_w, chip.power_w * factor, False)
    known = [c.power_w / c.capacity_gbps for c in fabric.switch_chips() if c.power_w is not None]
    if not known:
        raise ValueError("no switch chip in data/switches.toml has a power_w to estimate from")
    chip_w = statistics.fmean(known) * chip.capacity_gbps
    return SwitchPower(chip.name, chip_w, chip_w * factor, True)


@dataclass(frozen=True)
class ClusterPower:
    """A cluster's power by part, watts (:func:`cluster_power`). IT power is every part
    but the facility's; ``facility_w`` is IT × PUE."""

    n_gpus: int
    server: ServerPower
    switches: int
    switch: SwitchPower
    optics_w: float
    pue: float

    @property
    def gpus_w(self) -> float:
        """The GPUs at their TDP."""
        return self.n_gpus * self.server.tdp_w

    @property
    def servers_rest_w(self) -> float:
        """The rest of the servers: CPUs, memory, NICs, NVSwitches, fans, conversion."""
        return self.n_gpus * self.server.rest_w

    @property
    def switches_w(self) -> float:
        """The scale-out fabric's switch boxes (without optics)."""
        return self.switches * self.switch.box_w

    @property
    def it_w(self) -> float:
        """Everything the IT equipment draws."""
        return self.gpus_w + self.servers_rest_w + self.switches_w + self.optics_w

    @property
    def facility_w(self) -> float:
        """IT power × PUE: what the site draws for this cluster."""
        return self.it_w * self.pue

    @property
    def per_gpu_w(self) -> float:
        """Facility power per GPU."""
        return self.facility_w / self.n_gpus

    def parts_w(self) -> dict[str, float]:
        """Watts by part (:data:`PARTS`), adding up to :attr:`facility_w`."""
        return dict(zip(PARTS, (self.gpus_w, self.servers_rest_w, self.switches_w,
                                self.optics_w, self.it_w * (self.pue - 1.0)), strict=True))

    def shares(self) -> dict[str, float]:
        """Each part's share of the facility power."""
        total = self.facility_w
        return {k: v / total for k, v in self.parts_w().items()}

    @property
    def optics_share(self) -> float:
        """The optics' share of the facility power (what LPO or CPO can save is part of it)."""
        return self.optics_w / self.facility_w

    def energy_kwh(self, hours: float) -> float:
        """Facility energy over ``hours``, kWh."""
        return self.facility_w * check_positive("hours", hours, allow_zero=True) / 1e3


def cluster_power(n_gpus: int, gpu: str | GPU, *, switches: int,
                  switch: str | fabric.SwitchChip, optics_power_w: float, pue: float = 1.2,
                  box_factor: float = SWITCH_BOX_FACTOR) -> ClusterPower:
    """A cluster's power by part: servers (:func:`server_power`), switch boxes
    (:func:`switch_power`), optics (``optics_power_w``, e.g.
    :attr:`scaleout.optics.FabricBill.power_w`), times ``pue`` (1.0 to 3.0).

    ``switches`` are the scale-out fabric's switch chips (every plane's,
    :attr:`scaleout.fabric.MultiPlaneDesign.switches`), one per box.
    """
    n = check_int("n_gpus", n_gpus)
    count = check_int("switches", switches, minimum=0)
    optics_w = check_positive("optics_power_w", optics_power_w, allow_zero=True)
    p = check_range("pue", pue, 1.0, 3.0)
    return ClusterPower(n, server_power(gpu), count, switch_power(switch, box_factor),
                        optics_w, p)
