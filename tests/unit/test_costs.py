"""scaleout.costs: the cloud and the owned view of a run, never added together."""

import math

import pytest
from scaleout import costs, power


def _power(n=1024, switches=48, optics_w=20_000.0, pue=1.2):
    return power.cluster_power(n, "H100-SXM5-80GB", switches=switches, switch="Tomahawk 5",
                               optics_power_w=optics_w, pue=pue)


def test_cloud_is_gpu_hours_times_price_and_nothing_else():
    c = costs.cloud_cost(1024, 100.0, 2.5)
    assert c.gpu_hours == 102_400 and c.total == pytest.approx(256_000)
    assert costs.cloud_cost(8, 1.0, 0.0).total == 0


def test_owned_amortises_capital_over_the_lifetime_and_adds_energy():
    p = _power()
    life_h = 4 * 365.25 * 24
    assert costs.lifetime_hours(4) == pytest.approx(life_h)
    o = costs.owned_cost(p, 1000.0, price_per_gpu=30_000, price_per_switch=40_000,
                         optics_relative_cost=3000, reference_module_price=800,
                         lifetime_years=4, price_per_kwh=0.1)
    assert o.capital == {"GPUs and servers": 1024 * 30_000, "switches": 48 * 40_000,
                         "optics": 3000 * 800}
    assert o.run_share == pytest.approx(1000 / life_h)
    assert sum(o.amortised.values()) == pytest.approx(o.capital_total * 1000 / life_h)
    # energy: the whole facility (servers, switches, optics) x PUE, not the GPUs alone
    assert o.energy_kwh == pytest.approx(p.facility_w * 1000 / 1e3)
    assert o.energy_kwh > 1024 * 700 * 1000 / 1e3 * 1.2
    assert o.total == pytest.approx(sum(o.amortised.values()) + o.energy_kwh * 0.1)
    # a run as long as the lifetime pays all the capital
    whole = costs.owned_cost(p, life_h, price_per_gpu=1, price_per_switch=0,
                             optics_relative_cost=0, reference_module_price=0,
                             lifetime_years=4, price_per_kwh=0)
    assert math.isclose(whole.total, 1024)


def test_the_old_sum_still_adds_up():
    c = costs.run_cost(1000, 24.0, 700.0, 5000.0, 300.0, price_per_gpu_hour=2.0,
                       price_per_kwh=0.1, reference_module_price=1000.0, pue=1.2)
    assert c.total == pytest.approx(c.gpu_cost + c.energy_cost + c.optics_cost)


def test_bad_input():
    p = _power()
    kw = dict(price_per_gpu=1.0, price_per_switch=1.0, optics_relative_cost=1.0,
              reference_module_price=1.0, lifetime_years=4, price_per_kwh=0.1)
    with pytest.raises(ValueError, match=r"lifetime_years must be a number from 0\.1 to 50\.0"):
        costs.owned_cost(p, 10.0, **{**kw, "lifetime_years": 0})
    twice = costs.owned_cost(p, 2 * costs.lifetime_hours(4), **kw)
    assert twice.run_share == pytest.approx(2.0)  # a run of two lifetimes buys twice
    with pytest.raises(ValueError, match="price_per_gpu must be a finite number >= 0"):
        costs.owned_cost(p, 10.0, **{**kw, "price_per_gpu": -1})
    with pytest.raises(ValueError, match="price_per_gpu_hour"):
        costs.cloud_cost(8, 1.0, -2.0)
    with pytest.raises(ValueError, match="wall_hours"):
        costs.cloud_cost(8, 0.0, 2.0)
