"""The optics explorer without a browser: set controls, read numbers and the chart."""

import pytest
from scaleout import fabric, optics
from scaleout.widgets.optics import OpticsExplorer, cluster_groups


def is_svg(explorer) -> bool:
    return explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")


@pytest.fixture
def explorer():
    return OpticsExplorer(technology="lpo", speed_gbps=800, lane_gbps=112, n_gpus=8192,
                          switch="Tomahawk 6", endpoint_leaf_m=3.0, leaf_spine_m=30.0,
                          spine_core_m=500.0, copper=True)


def test_initial_state_matches_library(explorer):
    assert explorer.error is None and is_svg(explorer)
    r = explorer.result
    radix = fabric.switch_chip("Tomahawk 6").radix(800)
    design = fabric.size_fabric(8192, radix, 800)
    assert r["design"] == design and design.tiers == 2  # 128²/2 = 8,192: two tiers exactly
    want = optics.fabric_bill(design.link_groups(3.0, 30.0, 500.0), "lpo", lane_gbps=112)
    assert r["bill"] == want
    assert set(r["bills"]) == set(optics.CHOICES)
    # copper in the rack, LPO on the 30 m leaf-spine links: 2 x 8,192 module ends of 6 W
    assert want.cables == 8192 and want.transceivers == 2 * 8192
    assert want.power_w == pytest.approx(2 * 8192 * 6)
    assert "8,192 GPUs" in explorer.readout.value and "800G LPO DR8" in explorer.readout.value


def test_controls_change_numbers_and_chart(explorer):
    before_img, before_w = explorer.image.value, explorer.result["bill"].power_w
    explorer.controls["technology"].value = "dsp"
    assert explorer.result["bill"].power_w > before_w
    assert explorer.image.value != before_img
    assert "★ DSP" in explorer.readout.value
    explorer.controls["n_gpus"].value = 16384  # beyond two tiers of radix 128
    assert explorer.result["design"].tiers == 3
    assert "spine-core" in {g.name for g in explorer.result["bill"].groups}
    explorer.controls["speed_gbps"].value = 1600
    explorer.controls["lane_gbps"].value = 224
    assert explorer.result["bill"].group("leaf-spine").module.name == "1.6T DSP DR8"
    # at 224G lanes passive copper reaches 1 m, active 2 m: the 3 m rack links need optics
    assert explorer.result["bill"].group("endpoint-leaf").module.is_optical


def test_the_sweep_agrees_with_one_bill(explorer):
    r = explorer.result
    i = list(r["sweep"]["gpus"]).index(8192)
    for c in optics.OPTICAL:
        assert r["sweep"][c].power_w[i] == pytest.approx(r["bills"][c].power_w)
        assert r["sweep"][c].fibres[i] == r["bills"][c].fibres


def test_224g_lanes_at_800g_split_16t_modules(explorer):
    explorer.controls["lane_gbps"].value = 224  # no 800G module has 224G lanes
    g = explorer.result["bill"].group("leaf-spine")
    assert explorer.error is None
    assert g.module.name == "1.6T LPO DR8" and g.transceivers == g.count  # half a module per end
    assert g.fibres == 8 * g.count  # 4 lanes of 200G: a fibre each way


@pytest.mark.parametrize(
    ("control", "value", "pattern"),
    [
        ("n_gpus", 0, "must be a whole number >= 1, got 0"),
        ("n_gpus", 10_000_000, "is more than 3 tiers of radix-128 switches serve"),
        ("leaf_spine_m", -1.0, "length of leaf-spine links"),
        ("spine_core_m", 50_000.0, "beyond the reach of every module at 800 Gb/s"),
    ],
)
def test_bad_values_show_a_message_and_a_good_one_clears_it(explorer, control, value, pattern):
    good_image = explorer.image.value
    explorer.controls[control].value = value
    if control == "spine_core_m":  # only a three-tier fabric has spine-core links
        explorer.controls["n_gpus"].value = 16384
    assert explorer.error is not None and pattern in explorer.error
    assert "⚠" in explorer.status.value
    assert explorer.image.value == good_image  # the last good chart stays
    explorer.set_values(n_gpus=8192, leaf_spine_m=30.0, spine_core_m=500.0)
    assert explorer.error is None and explorer.status.value == ""


def test_cluster_groups_helper():
    design, groups = cluster_groups(1000, 800, "Tomahawk 5", 2.0, 40.0, 400.0)
    assert design.radix == 64 and design.tiers == 2
    assert [g.name for g in groups] == ["endpoint-leaf", "leaf-spine"]
    assert groups[0].count == 1000 and groups[1].length_m == 40.0
