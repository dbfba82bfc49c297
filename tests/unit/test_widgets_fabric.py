"""The fabric explorers without a browser: set controls, read numbers, break them, recover."""

import pytest
from scaleout import fabric
from scaleout.widgets.fabric import FabricExplorer, LoadBalanceExplorer


@pytest.fixture
def explorer():
    return FabricExplorer()


def test_initial_state_matches_the_library(explorer):
    d = explorer.result["design"]
    assert explorer.error is None
    assert (d.plane.radix, d.plane.tiers, d.endpoints, d.planes) == (64, 2, 2048, 1)
    assert d.switches == fabric.size_fabric(2048, 64, 400).switches == 96
    assert "2,048 / 2,048" in explorer.readout.value
    assert "409.6 Tb/s" in explorer.readout.value  # 1,024 x 400 Gb/s per direction
    assert explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")


def test_more_gpus_step_up_to_three_tiers(explorer):
    before = explorer.image.value
    explorer.controls["n_gpus"].value = 65_536
    d = explorer.result["design"].plane
    assert d.tiers == 3 and d.switches == 5 * 64 * 64 // 4
    assert explorer.image.value != before and "5 switch hops" in explorer.readout.value


def test_planes_multiply_the_bill(explorer):
    explorer.set_values(planes=4, port_gbps=200, radix=256, n_gpus=32_768)
    d = explorer.result["design"]
    assert d.plane.tiers == 2 and d.nic_gbps == 800 and d.switches == 4 * (256 + 128)
    assert "4 × 200G = 800 Gb/s" in explorer.readout.value


@pytest.mark.parametrize(("name", "bad", "says"), [
    ("radix", 63, "radix must be an even whole number"),
    ("radix", 1, "radix must be a whole number >= 2"),
    ("n_gpus", 1_000_000, "65,536"),
    ("n_gpus", 0, "n_endpoints must be a whole number >= 1"),
    ("oversubscription", 2.0, "whole ratios for radix 64"),
    ("tiers", 1, "1 tier of radix-64 switches serve (64"),
])
def test_bad_values_show_a_status_and_a_good_one_clears_it(explorer, name, bad, says):
    good = explorer.controls[name].value
    readout = explorer.readout.value
    explorer.controls[name].value = bad
    assert explorer.error is not None and says in explorer.error
    assert explorer.status.value.startswith('<div class="so-error">⚠')
    assert explorer.readout.value == readout  # the last good result stays on screen
    explorer.controls[name].value = good
    assert explorer.error is None and explorer.status.value == ""


def test_load_balance_explorer():
    e = LoadBalanceExplorer()
    assert e.error is None
    at = e.result["at"]
    assert at.spray_mean >= at.ecmp_mean >= at.ecmp_sync_mean
    before = e.readout.value
    e.controls["n_planes"].value = 1
    assert e.result["at"].ecmp_mean == pytest.approx(e.result["at"].spray_mean)
    assert e.readout.value != before
    e.controls["seed"].value = -1
    assert "seed must be a whole number >= 0" in e.error
    e.controls["seed"].value = 3
    assert e.error is None


def test_load_balance_explorer_varies_the_speed_assumption():
    """One of four planes at half speed: round-robin falls to 50 %, adaptive spraying keeps
    the pooled 87.5 % (up to the last packet), and the chart and readout follow."""
    e = LoadBalanceExplorer(path_slowdown=0.0, n_planes=4, n_flows=8)
    assert e.result["at"].rr_mean == e.result["at"].spray_mean == 1.0
    image = e.image.value
    e.controls["slow_paths"].value = 1
    at = e.result["at"]
    assert at.rr_mean == pytest.approx(0.5) and at.spray_mean == pytest.approx(0.875, abs=0.003)
    assert e.image.value != image and "50%" in e.readout.value
    assert e.result["at"].path_rates.shape == (e.TRIALS, 4)
    coarse = e.result["at"].flowlet_mean
    e.controls["flowlet_packets"].value = 8
    assert e.result["at"].flowlet_mean > coarse
    readout = e.readout.value
    e.controls["slow_paths"].value = 16  # more slow paths than planes
    assert "slow_paths must be a whole number from 0 to 4, got 16" in e.error
    assert e.readout.value == readout  # the last good result stays
    e.controls["slow_paths"].value = 4
    assert e.error is None and e.result["at"].rr_mean == pytest.approx(0.5)
