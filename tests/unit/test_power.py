"""scaleout.power: a GPU as deployed (its system's published power), switches, optics, PUE."""

import math
import statistics

import pytest
from scaleout import catalog, fabric, optics, power
from scaleout.catalog import System, load_entries


def test_dgx_h100_draws_far_more_than_its_gpus():
    """DGX H100 data sheet: up to 10.2 kW for eight 700 W GPUs (5.6 kW)."""
    s = power.server_power("H100-SXM5-80GB")
    assert s.basis == "DGX H100" and not s.estimated
    assert s.per_gpu_w == pytest.approx(10_200 / 8) and s.tdp_w == 700
    assert s.rest_w == pytest.approx(575)
    assert 8 * s.tdp_w == 5_600 and 8 * s.per_gpu_w == 10_200


def test_published_system_powers():
    want = {"DGX-1 V100": 3_500, "DGX A100": 6_500, "DGX H100": 10_200, "HGX H200": 10_200,
            "DGX B200": 14_300, "GB200 NVL72": 120_000}
    for name, watts in want.items():
        s = catalog.system(name)
        assert s.power_w == watts and "power_w" in s.sources
        assert s.power_per_gpu_w > catalog.gpu(s.gpu).tdp_w  # the rest of the system adds
    assert catalog.system("MI300X Platform").power_w is None


def test_a_gpu_without_a_published_system_is_estimated_and_says_so():
    s = power.server_power("MI300X")
    ratios = [x.power_per_gpu_w / catalog.gpu(x.gpu).tdp_w for x in catalog.systems()
              if x.power_w is not None]
    assert s.estimated and "estimated" in s.basis
    assert s.per_gpu_w == pytest.approx(750 * statistics.median(ratios))


def test_switch_power_from_the_chip_or_estimated_per_bit():
    th5 = power.switch_power("Tomahawk 5")
    assert (th5.chip_w, th5.box_w, th5.chip_estimated) == (500, 750, False)
    assert power.switch_power("Tomahawk 5", box_factor=1.0).box_w == 500
    th6 = power.switch_power("Tomahawk 6")  # no published figure: Tomahawk 5's W per Gb/s
    assert th6.chip_estimated and th6.chip_w == pytest.approx(500 * 102_400 / 51_200)
    q2 = power.switch_power("Quantum-2 NDR")
    assert q2.chip_w == pytest.approx(500 * 25_600 / 51_200)


def test_cluster_power_adds_up_and_the_optics_share_is_small():
    design = fabric.size_multiplane(32_768, 400, 1, switch_gbps=51_200)
    groups = design.link_groups()
    bill = optics.fabric_bill(groups, "dsp")
    p = power.cluster_power(32_768, "H100-SXM5-80GB", switches=design.switches,
                            switch="Tomahawk 5", optics_power_w=bill.power_w, pue=1.3)
    parts = p.parts_w()
    assert list(parts) == list(power.PARTS)
    assert math.isclose(sum(parts.values()), p.facility_w)
    assert math.isclose(p.facility_w, 1.3 * p.it_w)
    assert math.isclose(sum(p.shares().values()), 1.0)
    assert math.isclose(p.gpus_w, 32_768 * 700) and math.isclose(p.switches_w,
                                                                  design.switches * 750)
    # GPUs are about half of the facility's power; optics a few percent
    assert 0.4 < p.shares()["GPUs (TDP)"] < 0.6
    assert 0.005 < p.optics_share < 0.06
    assert p.energy_kwh(10) == pytest.approx(p.facility_w * 10 / 1e3)


def test_bad_input():
    with pytest.raises(ValueError, match=r"pue must be a number from 1\.0 to 3\.0"):
        power.cluster_power(8, "H100", switches=1, switch="Tomahawk 5", optics_power_w=0, pue=0.9)
    with pytest.raises(ValueError, match="switches must be a whole number >= 0"):
        power.cluster_power(8, "H100", switches=-1, switch="Tomahawk 5", optics_power_w=0)
    with pytest.raises(ValueError, match="box_factor"):
        power.switch_power("Tomahawk 5", box_factor=0.5)
    with pytest.raises(ValueError, match="did you mean"):
        power.switch_power("Tomahawk 9")
    with pytest.raises(ValueError, match="gpu"):
        power.server_power("H1OO-SXM")


def test_a_bad_system_power_names_file_entry_and_field(tmp_path):
    path = tmp_path / "systems.toml"
    path.write_text('[[system]]\nname = "X"\ngpu = "H100"\ngpus = 8\nyear = 2024\n'
                    'power_w = -5\nsource = "s"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"systems.toml: \[\[system\]\] entry 1 \('X'\).*power_w"):
        load_entries(path, "system", System)
