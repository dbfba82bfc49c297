"""What a training run costs, seen two ways that are never added together.

* **Cloud** (:func:`cloud_cost`): GPUs rented by the hour. The price per GPU-hour already
  pays for the servers, the network, its optics, the energy and the building; the run costs
  GPU-hours × price and nothing else. Adding energy or optics to it counts them twice.
* **Owned** (:func:`owned_cost`): the cluster is bought. The run costs its share of the
  capital (GPUs with their servers, the fabric's switches, its optics), spread evenly over a
  stated lifetime (straight-line amortisation: the run's hours over the lifetime's), plus
  the energy the whole cluster draws at the facility (:mod:`scaleout.power`: servers,
  switches, optics, × PUE) at a price per kWh. Financing, staff, space, spares and
  software are not counted, and say so.

Prices are the user's inputs, never catalog figures: cloud and electricity prices vary by
an order of magnitude between providers and years, and neither GPUs, switches nor optical
modules have public price lists (``data/optics.toml`` gives only relative costs, 1.0 = one
800G DSP module).

:func:`run_cost` is the older single sum (GPU-hours at a price + energy of the GPUs and
optics + optics bought): it mixes the two views and is kept only for existing callers.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import units
from .checks import check_int, check_positive, check_range
from .power import ClusterPower

__all__ = ["CloudCost", "OwnedCost", "RunCost", "cloud_cost", "lifetime_hours", "owned_cost",
           "run_cost"]


# =========================================================================== cloud
@dataclass(frozen=True)
class CloudCost:
    """A run on rented GPUs: GPU-hours × price (:func:`cloud_cost`)."""

    gpu_hours: float
    price_per_gpu_hour: float

    @property
    def total(self) -> float:
        """The whole bill: the price covers servers, network, energy and building."""
        return self.gpu_hours * self.price_per_gpu_hour


def cloud_cost(n_gpus: int, wall_hours: float, price_per_gpu_hour: float) -> CloudCost:
    """GPU-hours (GPUs × wall-clock hours) at ``price_per_gpu_hour``; nothing is added."""
    n = check_int("n_gpus", n_gpus)
    hours = check_positive("wall_hours", wall_hours)
    price = check_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    return CloudCost(n * hours, price)


# =========================================================================== owned
def lifetime_hours(years: float) -> float:
    """Hours in ``years`` of 365.25 days."""
    y = check_positive("lifetime_years", years)
    return units.seconds_to_hours(units.days_to_seconds(y * units.DAYS_PER_YEAR))


@dataclass(frozen=True)
class OwnedCost:
    """A run on a bought cluster (:func:`owned_cost`): its share of the capital + energy."""

    #: capital by part: "GPUs and servers", "switches", "optics"
    capital: dict[str, float]
    lifetime_years: float
    wall_hours: float
    energy_kwh: float
    price_per_kwh: float

    @property
    def capital_total(self) -> float:
        """Everything bought."""
        return sum(self.capital.values())

    @property
    def run_share(self) -> float:
        """The run's share of the lifetime: its wall-clock hours over the lifetime's hours."""
        return self.wall_hours / lifetime_hours(self.lifetime_years)

    @property
    def amortised(self) -> dict[str, float]:
        """Capital charged to this run, by part: capital × :attr:`run_share`."""
        return {k: v * self.run_share for k, v in self.capital.items()}

    @property
    def energy_cost(self) -> float:
        """Facility energy × price per kWh."""
        return self.energy_kwh * self.price_per_kwh

    @property
    def total(self) -> float:
        """Amortised capital + energy."""
        return sum(self.amortised.values()) + self.energy_cost


def owned_cost(power: ClusterPower, wall_hours: float, *, price_per_gpu: float,
               price_per_switch: float, optics_relative_cost: float,
               reference_module_price: float, lifetime_years: float,
               price_per_kwh: float) -> OwnedCost:
    """The run's share of a bought cluster's capital, plus its energy.

    Parameters
    ----------
    power
        The cluster's power by part (:func:`scaleout.power.cluster_power`): its GPU and
        switch counts price the capital, its facility watts the energy.
    wall_hours
        The run's wall-clock hours (failures included).
    price_per_gpu
        Capital per GPU *with its share of the server* (CPUs, memory, NICs, chassis).
    price_per_switch
        Capital per switch box of the scale-out fabric, without optics.
    optics_relative_cost, reference_module_price
        :attr:`scaleout.optics.FabricBill.relative_cost` (in units of one 800G DSP module)
        and the price of that reference module.
    lifetime_years
        Years over which the capital is written off, straight-line (3 to 6 is usual for
        servers; a run of the whole lifetime pays all of it, a longer one more than once:
        the hardware would have to be bought again).
    price_per_kwh
        Electricity price.
    """
    hours = check_positive("wall_hours", wall_hours)
    life = check_range("lifetime_years", lifetime_years, 0.1, 50.0)
    capital = {
        "GPUs and servers": power.n_gpus * check_positive("price_per_gpu", price_per_gpu,
                                                          allow_zero=True),
        "switches": power.switches * check_positive("price_per_switch", price_per_switch,
                                                    allow_zero=True),
        "optics": check_positive("optics_relative_cost", optics_relative_cost, allow_zero=True)
        * check_positive("reference_module_price", reference_module_price, allow_zero=True),
    }
    kwh = power.energy_kwh(hours)
    return OwnedCost(capital, life, hours, kwh,
                     check_positive("price_per_kwh", price_per_kwh, allow_zero=True))


# =========================================================================== the old sum
@dataclass(frozen=True)
class RunCost:
    """The money side of one run (currency of the prices given), as :func:`run_cost` adds it."""

    gpu_hours: float
    gpu_cost: float
    energy_kwh: float
    energy_cost: float
    optics_cost: float

    @property
    def total(self) -> float:
        """GPU time + energy + optics bought: mixes the cloud and owned views (see
        :func:`cloud_cost` and :func:`owned_cost`)."""
        return self.gpu_cost + self.energy_cost + self.optics_cost


def run_cost(n_gpus: int, wall_hours: float, gpu_tdp_w: float, optics_power_w: float,
             optics_relative_cost: float, *, price_per_gpu_hour: float, price_per_kwh: float,
             reference_module_price: float, pue: float = 1.0) -> RunCost:
    """GPU-hours × price; (GPUs at TDP + optics) × hours × PUE in kWh × price; optics bought.

    Kept for existing callers. Its energy counts only the GPUs at TDP and the optics, about
    half of what the servers, switches and optics draw (:mod:`scaleout.power`: a DGX H100
    is rated at 10.2 kW for 5.6 kW of GPUs), and its ``total`` adds a rental price to energy
    and optics bought, which counts them twice under cloud pricing. Use :func:`cloud_cost`
    or :func:`owned_cost`.
    """
    n = check_int("n_gpus", n_gpus)
    hours = check_positive("wall_hours", wall_hours)
    check_positive("gpu_tdp_w", gpu_tdp_w)
    check_positive("optics_power_w", optics_power_w, allow_zero=True)
    check_positive("optics_relative_cost", optics_relative_cost, allow_zero=True)
    check_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    check_positive("price_per_kwh", price_per_kwh, allow_zero=True)
    check_positive("reference_module_price", reference_module_price, allow_zero=True)
    check_range("pue", pue, 1.0, 3.0)
    gpu_hours = n * hours
    kwh = (n * gpu_tdp_w + optics_power_w) * hours * pue / 1e3
    return RunCost(gpu_hours, gpu_hours * price_per_gpu_hour, kwh, kwh * price_per_kwh,
                   optics_relative_cost * reference_module_price)
