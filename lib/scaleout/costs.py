"""What a training run costs: GPU-hours at a price, energy at a price, optics bought.

Prices are the user's inputs, never catalog figures: cloud and electricity prices vary by
an order of magnitude between providers and years, and optical modules have no public price
list (``data/optics.toml`` gives only relative costs, 1.0 = one 800G DSP module).

Energy is an upper bound: every GPU at its maximum board power (``data/gpus.toml``,
``tdp_w``) for the whole wall-clock time, plus the fabric's modules and active cables, times
the facility's power usage effectiveness (PUE: total facility power over IT power, The
Green Grid, White Paper 49, 2012). CPUs, memory, NICs, switches and storage are not
counted, which is why PUE > 1 alone does not make it an overestimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import check_int, check_positive, check_range

__all__ = ["RunCost", "run_cost"]


@dataclass(frozen=True)
class RunCost:
    """The money side of one run (currency of the prices given)."""

    gpu_hours: float
    gpu_cost: float
    energy_kwh: float
    energy_cost: float
    optics_cost: float

    @property
    def total(self) -> float:
        """GPU time + energy + optics bought."""
        return self.gpu_cost + self.energy_cost + self.optics_cost


def run_cost(n_gpus: int, wall_hours: float, gpu_tdp_w: float, optics_power_w: float,
             optics_relative_cost: float, *, price_per_gpu_hour: float, price_per_kwh: float,
             reference_module_price: float, pue: float = 1.0) -> RunCost:
    """GPU-hours × price; (GPUs at TDP + optics) × hours × PUE in kWh × price; optics bought.

    ``optics_relative_cost`` is :attr:`scaleout.optics.FabricBill.relative_cost` (in units of
    one 800G DSP module), priced at ``reference_module_price`` each. Set a price to 0 to
    leave that part out (for instance GPU time when the cluster is owned).
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
