"""scaleout.optics: catalog arithmetic, reach, lanes and fibres, the fabric bill, bad input."""

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest
from scaleout import optics as O
from scaleout import units
from support import write_toml


@dataclass(frozen=True)
class Group:
    """The shape of scaleout.fabric.LinkGroup: what fabric_bill reads."""

    name: str
    count: int
    length_m: float
    gbps: float


# --------------------------------------------------------------------------- the catalog
def test_every_entry_has_a_source_and_known_field_sources():
    for m in O.modules():
        assert m.source.strip(), m.name
        assert set(m.sources) <= {f.name for f in dataclasses.fields(m)}, m.name
    for t in O.technologies():
        assert t.source.strip() and t.pros and t.cons, t.name


def test_catalog_covers_speeds_technologies_reach_classes_and_lane_rates():
    assert O.speeds_gbps() == [400, 800, 1600]
    for speed in (800, 1600):
        assert {m.technology for m in O.modules(speed_gbps=speed)} == set(O.TECHNOLOGIES)
    assert {m.reach_class for m in O.modules()} == set(O.REACH_CLASSES)
    assert {m.lane_gbps for m in O.modules(speed_gbps=1600)} == {112, 224}
    assert {"OSFP", "QSFP-DD", "on-package"} <= {m.form_factor for m in O.modules()}


def test_lanes_times_lane_data_rate_is_the_speed():
    for m in O.modules():
        assert m.lanes * m.lane_data_gbps == m.speed_gbps, m.name


def test_headline_800g_lpo_about_6_w_against_15_w_dsp():
    lpo, dsp = O.module("800G LPO DR8"), O.module("800G DSP DR8")
    assert (lpo.power_w, dsp.power_w) == (6, 15)
    assert dsp.power_w / lpo.power_w == pytest.approx(2.5)
    # same reach class and fibres: only the DSP differs
    assert (lpo.reach_class, lpo.fibres, lpo.lanes) == (dsp.reach_class, dsp.fibres, dsp.lanes)
    assert dsp.latency_ns >= 10 and lpo.latency_ns == 0


def test_headline_16t_costs_12_to_14_times_800g_at_224g_lanes():
    for tech in O.OPTICAL:
        assert 1.2 <= O.generation_cost_ratio(tech) <= 1.4, tech
    assert 1.2 <= O.generation_cost_ratio("dsp", "FR") <= 1.4
    # per bit, 1.6T is cheaper: 1.3x the price for 2x the bits
    assert O.module("1.6T DSP DR8").relative_cost_per_tbps < O.module("800G DSP DR8") \
        .relative_cost_per_tbps


def test_the_cost_reference_is_800g_dsp_dr8():
    assert O.module("800G DSP DR8").relative_cost == 1.0
    assert "reference" in O.module("800G DSP DR8").sources["relative_cost"]


def test_relative_costs_are_labelled_as_assumptions():
    for m in O.modules():
        if m.name != "800G DSP DR8":
            text = m.sources.get("relative_cost", "") + m.notes
            assert "assumption" in text or "headline" in text, m.name


def test_112g_lanes_need_twice_the_lanes_and_fibres_of_224g():
    for gbps in (400, 800, 1600, 3200):
        assert O.lanes_needed(gbps, 112) == 2 * O.lanes_needed(gbps, 224)
        assert O.fibres_needed(gbps, 112) == 2 * O.fibres_needed(gbps, 224)
    assert O.lanes_needed(1600, 112) == 16 and O.lanes_needed(1600, 224) == 8
    assert O.fibres_needed(800, 112) == 16  # DR8: 8 lanes, a fibre each way
    assert O.fibres_needed(800, 112, wavelengths_per_fibre=4) == 4  # 2xFR4
    assert O.fibres_needed(1000, 224) == 10  # a partial lane still needs a whole lane
    arr = O.fibres_needed(np.array([800, 1600]), 224)
    assert arr.tolist() == [8, 16]


def test_catalog_modules_of_both_lane_rates_agree_with_the_formula():
    dr16, dr8 = O.module("1.6T DSP DR16 (112G lanes)"), O.module("1.6T DSP DR8")
    assert (dr16.lanes, dr16.fibres) == (2 * dr8.lanes, 2 * dr8.fibres)
    for m in O.modules(reach_class="DR"):
        assert m.fibres == O.fibres_needed(m.speed_gbps, m.lane_gbps), m.name
    for m in O.modules(reach_class="FR"):
        assert m.fibres == O.fibres_needed(m.speed_gbps, m.lane_gbps, wavelengths_per_fibre=4)


def test_pj_per_bit_from_watts_and_gbps():
    assert units.pj_per_bit(15, 800) == pytest.approx(18.75)
    assert O.pj_per_bit("800G DSP DR8") == pytest.approx(18.75)
    assert O.pj_per_bit("800G LPO") == pytest.approx(7.5)
    assert O.pj_per_bit("1.6T CPO") == pytest.approx(9 / 1600 * 1000)
    np.testing.assert_allclose(units.pj_per_bit(np.array([6.0, 30.0]), 1600.0), [3.75, 18.75])
    # CPO spends less per bit than any pluggable; 1.6T DSP less per bit than 800G DSP
    assert max(m.pj_per_bit for m in O.modules(technology="cpo")) < \
        min(m.pj_per_bit for m in O.modules(technology="dsp"))
    assert O.pj_per_bit("1.6T DSP DR8") < O.pj_per_bit("800G DSP DR8")


def test_lookup_by_alias_and_unknown_name_suggests():
    assert O.module("800G LPO") is O.module("800G LPO DR8")
    assert O.module("800gbase-dr8").name == "800G DSP DR8"
    with pytest.raises(ValueError, match=r"module '800G LOP' is not in the catalog; did you mean "
                                         r"'800G LPO'"):
        O.module("800G LOP")


def test_technology_tradeoffs_as_data():
    dsp, lpo, cpo = O.technology("dsp"), O.technology("lpo"), O.technology("cpo")
    assert dsp.interoperable and not lpo.interoperable and not cpo.interoperable
    assert dsp.field_replaceable and lpo.field_replaceable and not cpo.field_replaceable
    assert "IEEE 802.3" in dsp.standard and "LPO MSA" in lpo.standard
    assert "scale-out" in dsp.best_for and "scale-up" in lpo.best_for
    assert "pluggable" in cpo.cons and "yield" in cpo.cons
    with pytest.raises(ValueError, match="technology must be one of"):
        O.technology("xpo")


# --------------------------------------------------------------------------- reach
@pytest.mark.parametrize("length_m", [0.5, 1, 2.5, 3, 4, 30, 50, 51, 500, 501, 2000, 9000])
@pytest.mark.parametrize("gbps", [100, 200, 400, 800, 1600])
def test_never_offered_beyond_reach(length_m, gbps):
    offered = O.candidates(length_m, gbps)
    assert all(m.reach_m >= length_m for m in offered)
    # a unit carries whole links only: its speed a multiple of the link's
    assert all(m.speed_gbps % gbps == 0 for m in offered)
    # units of the link's own speed first; breakouts only after them
    own = [m.speed_gbps == gbps for m in offered]
    assert own == sorted(own, reverse=True)
    for choice in O.CHOICES:
        if offered:
            assert O.choose(length_m, gbps, choice)[0].reach_m >= length_m


# What serves one link, worked out by hand from data/optics.toml: each unit's speed, reach and
# breakout (a 400G DR4 splits into 4 x 100G, a 1.6T DR8 into 8 x 200G, an 800G 2xFR4 into
# 2 x 400G). A unit serves a link of g Gb/s when g divides its speed into whole links and is a
# whole number of its breakout lanes; it is offered up to its reach.
DSP_800_FROM_51M = {"800G DSP DR8", "800G DSP 2xFR4", "800G DSP 2xLR4", "800G LPO DR8",
                    "800G NPO", "800G CPO"}
HALF_16T_FROM_3M = {"1.6T DSP DR8", "1.6T DSP 2xFR4", "1.6T DSP DR16 (112G lanes)",
                    "1.6T LPO DR8", "1.6T NPO", "1.6T CPO"}
BY_HAND = {
    (3, 800): DSP_800_FROM_51M | {"800G DSP SR8", "800G DAC", "800G ACC"} | HALF_16T_FROM_3M,
    (4, 800): DSP_800_FROM_51M | {"800G DSP SR8", "800G ACC"} | HALF_16T_FROM_3M,
    (50, 800): DSP_800_FROM_51M | {"800G DSP SR8"} | HALF_16T_FROM_3M,
    (51, 800): DSP_800_FROM_51M | HALF_16T_FROM_3M,
    (500, 800): DSP_800_FROM_51M | HALF_16T_FROM_3M,
    (501, 800): {"800G DSP 2xFR4", "800G DSP 2xLR4", "1.6T DSP 2xFR4"},
    (2001, 800): {"800G DSP 2xLR4"},
    (10001, 800): set(),
    (1, 1600): HALF_16T_FROM_3M | {"1.6T DAC", "1.6T ACC"},
    (1.5, 1600): HALF_16T_FROM_3M | {"1.6T ACC"},
    (2.5, 1600): HALF_16T_FROM_3M,
    (501, 1600): {"1.6T DSP 2xFR4"},
    (2001, 1600): set(),
    (600, 400): {"400G DSP FR4", "800G DSP 2xFR4", "800G DSP 2xLR4"},
    (3000, 400): {"800G DSP 2xLR4"},
    (100, 200): {"400G DSP DR4", "800G DSP DR8", "800G LPO DR8", "800G NPO", "800G CPO",
                 "1.6T DSP DR8", "1.6T DSP DR16 (112G lanes)", "1.6T LPO DR8", "1.6T NPO",
                 "1.6T CPO"},
    (600, 200): set(),
    (40, 100): {"400G DSP SR4", "400G DSP DR4", "800G DSP SR8", "800G DSP DR8", "800G LPO DR8",
                "800G NPO", "800G CPO", "1.6T DSP DR16 (112G lanes)"},
}


@pytest.mark.parametrize(("length_m", "gbps"), list(BY_HAND), ids=str)
def test_candidates_are_the_units_worked_out_by_hand(length_m, gbps):
    assert {m.name for m in O.candidates(length_m, gbps)} == BY_HAND[length_m, gbps]


def test_candidates_ranked_by_link_cost_or_power():
    by_cost = O.candidates(100, 800)
    own = [m for m in by_cost if m.speed_gbps == 800]
    assert by_cost[:len(own)] == own  # 800G units first, then 1.6T ones broken out in two
    costs = [m.link_relative_cost for m in own]
    assert costs == sorted(costs) and by_cost[0].name == "800G LPO DR8"
    split = [m.units_for(800) * m.relative_cost for m in by_cost[len(own):]]
    assert split == sorted(split) and all(m.speed_gbps == 1600 for m in by_cost[len(own):])
    by_power = O.candidates(100, 800, prefer="power", technology="dsp")
    watts = [m.link_power_w for m in by_power if m.speed_gbps == 800]
    assert watts == sorted(watts)
    # multimode SR8 (50 m) is the cheapest DSP module, but 100 m needs single-mode DR8
    assert O.candidates(40, 800, technology="dsp")[0].name == "800G DSP SR8"
    assert O.candidates(100, 800, technology="dsp")[0].name == "800G DSP DR8"


def test_choose_copper_in_rack_then_the_chosen_optics():
    assert O.choose(2, 800)[0].technology == "dac"
    assert O.choose(4, 800)[0].technology == "acc"
    assert O.choose(4, 800, copper=False)[0].technology == "lpo"
    assert O.choose(1.5, 1600)[0].name == "1.6T ACC"  # 224G lanes: passive copper stops at 1 m
    assert O.choose(30, 800, "dsp") == (O.module("800G DSP SR8"), False)
    assert O.choose(300, 800, "dsp") == (O.module("800G DSP DR8"), False)
    assert O.choose(300, 800, "cpo") == (O.module("800G CPO"), False)
    assert O.choose(300, 1600, lane_gbps=112)[0].name == "1.6T DSP DR16 (112G lanes)"


def test_choice_is_case_insensitive():
    assert O.choose(300, 800, "LPO") == O.choose(300, 800, "lpo")


def test_choose_falls_back_when_the_technology_cannot_reach():
    m, fell_back = O.choose(1500, 800, "lpo")
    assert fell_back and m.technology == "dsp" and m.reach_m >= 1500
    assert O.choose(1500, 800, "auto") == (m, False)


def test_beyond_every_reach_is_a_clear_error():
    with pytest.raises(ValueError, match=r"length_m = 20000 m is beyond the reach of every "
                                         r"module at 800 Gb/s; the longest is '800G DSP 2xLR4'"):
        O.choose(20000, 800)
    with pytest.raises(ValueError, match=r"at 1600 Gb/s with 112G lanes; the longest"):
        O.choose(1000, 1600, lane_gbps=112)
    assert O.candidates(20000, 800) == []


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: O.candidates(0, 800), r"length_m must be a finite number > 0, got 0"),
        (lambda: O.candidates(-5, 800), r"length_m must be a finite number > 0, got -5"),
        (lambda: O.candidates(float("nan"), 800), r"length_m must be a finite number > 0"),
        (lambda: O.candidates(10, 300), r"gbps must be a link speed some module or cable serves "
                                        r"\(whole or as a breakout link\): 100, 200, 400, 800, "
                                        r"1600; got 300"),
        (lambda: O.candidates(10, 800, prefer="speed"), r"prefer must be one of 'cost', 'power'"),
        (lambda: O.candidates(10, 800, technology="lop"), r"did you mean 'lpo'"),
        (lambda: O.choose(10, 800, "lop"), r"choice must be one of 'auto', 'dsp', 'lpo', 'npo', "
                                           r"'cpo'; got 'lop' \(did you mean 'lpo'"),
        (lambda: O.lanes_needed(800, 100), r"lane_gbps must be one of 112, 224; got 100"),
        (lambda: O.lanes_needed(-800, 112), r"gbps must be a finite number > 0, got -800"),
        (lambda: O.fibres_needed(800, 112, wavelengths_per_fibre=0),
         r"wavelengths_per_fibre must be a whole number from 1 to 16, got 0"),
        (lambda: O.modules(reach_class="XR"), r"reach_class must be one of"),
        (lambda: O.generation_cost_ratio("dac", "DR"), r"no 800G 'dac' DR module"),
    ],
)
def test_bad_input_is_a_clear_value_error(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


# --------------------------------------------------------------------------- the bill
GROUPS = [Group("gpu-leaf", 1024, 3, 800), Group("leaf-spine", 1024, 120, 800),
          Group("spine-core", 512, 1200, 800)]


@pytest.mark.parametrize("choice", O.CHOICES)
def test_bill_totals_are_sums_over_groups(choice):
    bill = O.fabric_bill(GROUPS, choice)
    for field in ("transceivers", "cables", "fibres"):
        assert getattr(bill, field) == sum(getattr(g, field) for g in bill.groups)
    assert bill.power_w == pytest.approx(sum(g.power_w for g in bill.groups))
    assert bill.relative_cost == pytest.approx(sum(g.relative_cost for g in bill.groups))
    assert bill.links == 1024 + 1024 + 512
    assert bill.bandwidth_gbps == 2560 * 800


def test_bill_two_modules_per_optical_link_one_cable_per_copper_link():
    bill = O.fabric_bill(GROUPS, "dsp")
    rack, row, far = bill.groups
    assert (rack.module.technology, rack.cables, rack.transceivers, rack.fibres) == ("dac", 1024,
                                                                                     0, 0)
    assert row.module.name == "800G DSP DR8" and row.transceivers == 2 * 1024
    assert row.fibres == 16 * 1024 and row.power_w == 2 * 1024 * 15
    assert row.relative_cost == pytest.approx(2 * 1024 * 1.0)
    assert far.module.name == "800G DSP 2xFR4" and far.fibres == 4 * 512
    assert bill.transceivers == 2 * (1024 + 512) and bill.cables == 1024
    assert bill.power_w == pytest.approx(2 * 1024 * 15 + 2 * 512 * 16)
    assert bill.group("leaf-spine") is row


def test_bill_lpo_falls_back_to_dsp_beyond_its_reach_and_saves_power():
    dsp, lpo = O.fabric_bill(GROUPS, "dsp"), O.fabric_bill(GROUPS, "lpo")
    assert lpo.group("leaf-spine").module.technology == "lpo"
    assert lpo.group("spine-core").fell_back and lpo.group("spine-core").module.technology == "dsp"
    saved = dsp.power_w - lpo.power_w
    assert saved == pytest.approx(2 * 1024 * (15 - 6))
    # per link, the added latency: two DSPs against none
    assert dsp.group("leaf-spine").link_latency_ns == 100 and \
        lpo.group("leaf-spine").link_latency_ns == 0


def test_breakout_200g_links_from_800g_and_16t_modules():
    dr8 = O.module("800G DSP DR8")
    assert dr8.breakout_gbps == 100 and dr8.serves(200) and not dr8.serves(300)
    assert O.module("800G DSP 2xFR4").breakout_gbps == 400  # two multiplexed fibre pairs
    assert not O.module("800G DSP 2xFR4").serves(200)
    dr8_16 = O.module("1.6T DSP DR8")
    assert dr8_16.breakout_gbps == 200 and not dr8_16.serves(100)
    assert dr8.units_for(200) == pytest.approx(0.5)  # a quarter module at each end
    # a 4-plane 800G NIC: 200G ports. With 112G lanes the cheapest share per link is the
    # 16-lane 1.6T module (1.8 for 16 x 100G against 1.0 for the 800G's 8 x 100G)
    bill = O.fabric_bill([Group("plane", 1024, 200, 200)], "dsp", lane_gbps=112)
    g = bill.groups[0]
    assert g.module.name == "1.6T DSP DR16 (112G lanes)" and g.transceivers == 1024 * 2 // 8
    assert g.fibres == 1024 * 4 and g.power_w == pytest.approx(256 * 30)
    # 224G lanes: a 1.6T DR8 splits into 8 x 200G, one fibre pair each
    g224 = O.fabric_bill([Group("plane", 1024, 200, 200)], "dsp", lane_gbps=224).groups[0]
    assert g224.module.name == "1.6T DSP DR8" and g224.fibres == 1024 * 2
    assert g224.transceivers == 1024 * 2 // 8
    # whole modules at each end: 3 links of 200G on 1.6T modules (8 x 200G) still take one
    # module at each end, and 9 links take two
    assert O.fabric_bill([Group("few", 3, 200, 200)], "dsp", lane_gbps=112).transceivers == 2
    assert O.fabric_bill([Group("few", 9, 200, 200)], "dsp", lane_gbps=112).transceivers == 4


def test_bill_112g_lanes_double_the_fibres_of_224g():
    groups = [Group("leaf-spine", 4096, 200, 1600)]
    b112 = O.fabric_bill(groups, "dsp", lane_gbps=112)
    b224 = O.fabric_bill(groups, "dsp", lane_gbps=224)
    assert b112.fibres == 2 * b224.fibres == 2 * 4096 * 16
    assert b112.power_w > b224.power_w and b112.relative_cost > b224.relative_cost


def test_bill_accepts_any_iterable_and_empty_groups():
    bill = O.fabric_bill(iter(GROUPS[:1]), "auto")
    assert bill.links == 1024
    empty = O.fabric_bill([], "dsp")
    assert (empty.links, empty.power_w, empty.pj_per_bit) == (0, 0.0, 0.0)
    assert O.fabric_bill([Group("idle", 0, 100, 800)]).power_w == 0


def test_bill_pj_per_bit():
    bill = O.fabric_bill([Group("row", 10, 100, 800)], "dsp", copper=False)
    # two 15 W modules per 800 Gb/s link: 37.5 pJ per bit carried across a link
    assert bill.pj_per_bit == pytest.approx(37.5)


@pytest.mark.parametrize(
    ("groups", "pattern"),
    [
        ([Group("g", -1, 10, 800)], r"group 'g': count must be a whole number >= 0, got -1"),
        ([Group("g", 1.5, 10, 800)], r"group 'g': count must be a whole number >= 0, got 1.5"),
        ([Group("g", 4, -10, 800)], r"group 'g': length_m must be a finite number > 0, got -10"),
        ([Group("g", 4, 0, 800)], r"group 'g': length_m must be a finite number > 0, got 0"),
        ([Group("g", 4, 10, 0)], r"group 'g': gbps must be a finite number > 0, got 0"),
        ([Group("g", 4, 10, 300)], r"gbps must be a link speed some module or cable serves"),
        ([("g", 4, 10, 800)], r"groups\[0\] must have name, count, length_m and gbps"),
    ],
)
def test_bill_bad_groups(groups, pattern):
    with pytest.raises(ValueError, match=pattern):
        O.fabric_bill(groups)


def test_bill_bad_choice():
    with pytest.raises(ValueError, match=r"choice must be one of"):
        O.fabric_bill(GROUPS, "optical")


def test_sweep_equals_one_bill_per_size():
    sizes = np.array([512, 2048, 8192, 65536])
    counts = np.stack([sizes, sizes, sizes // 2], axis=1)
    for choice in ("dsp", "lpo", "auto"):
        sweep = O.sweep_bill(GROUPS, counts, choice)
        for i, n in enumerate(sizes):
            one = O.fabric_bill([dataclasses.replace(g, count=int(c))
                                 for g, c in zip(GROUPS, counts[i], strict=True)], choice)
            assert sweep.transceivers[i] == one.transceivers
            assert sweep.fibres[i] == one.fibres and sweep.cables[i] == one.cables
            assert sweep.power_w[i] == pytest.approx(one.power_w)
            assert sweep.relative_cost[i] == pytest.approx(one.relative_cost), n
        assert sweep.modules == tuple(g.module for g in one.groups)


def test_sweep_bad_counts():
    with pytest.raises(ValueError, match=r"counts must have shape \(n_sizes, 3\)"):
        O.sweep_bill(GROUPS, np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"counts must be a whole number >= 0, got -1.0"):
        O.sweep_bill(GROUPS, -np.ones((4, 3)))


# --------------------------------------------------------------------------- malformed files
GOOD = """
[[module]]
name = "M1"
speed_gbps = 800
technology = "dsp"
reach_class = "DR"
reach_m = 500
lane_gbps = 112
lanes = 8
fibres = 16
power_w = 15
relative_cost = 1.0
latency_ns = 50
form_factor = "OSFP"
year = 2023
source = "a datasheet"

[[technology]]
name = "dsp"
label = "DSP"
kind = "optical"
fec = "f"
standard = "s"
interoperable = true
field_replaceable = true
maturity = "m"
best_for = "b"
pros = "p"
cons = "c"
source = "a paper"
"""


def _write(tmp_path, text):
    return write_toml(tmp_path, "optics.toml", text)


def test_good_file_loads(tmp_path):
    cat = O.load_catalog(_write(tmp_path, GOOD))
    assert list(cat.modules) == ["M1"] and list(cat.technologies) == ["dsp"]


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda t: t.replace("power_w = 15\n", ""),
         r"optics.toml: \[\[module\]\] entry 1 \('M1'\): missing field 'power_w'"),
        (lambda t: t.replace("reach_m = 500", "reach = 500"),
         r"entry 1 \('M1'\): unknown field 'reach' \(did you mean 'reach_m'\?\)"),
        (lambda t: t.replace("reach_m = 500", "reach_m = -500"),
         r"entry 1 \('M1'\): field 'reach_m' must be a finite number > 0, got -500"),
        (lambda t: t.replace("power_w = 15", 'power_w = "15 W"'),
         r"entry 1 \('M1'\): field 'power_w' must be float or int, got '15 W'"),
        (lambda t: t.replace('technology = "dsp"', 'technology = "DSP"'),
         r"entry 1 \('M1'\): field 'technology' must be one of 'dsp', 'lpo'"),
        (lambda t: t.replace("lane_gbps = 112", "lane_gbps = 100"),
         r"entry 1 \('M1'\): field 'lane_gbps' must be one of 112, 224; got 100"),
        (lambda t: t.replace("lanes = 8", "lanes = 4"),
         r"entry 1 \('M1'\): field 'lanes' = 4 lanes x 100 Gb/s \(112G class\) = 400 Gb/s, "
         r"not speed_gbps = 800"),
        (lambda t: t.replace("fibres = 16", "fibres = 0"),
         r"entry 1 \('M1'\): field 'fibres' must be > 0 for an optical module"),
        (lambda t: t.replace('reach_class = "DR"', 'reach_class = "CR"'),
         r"entry 1 \('M1'\): field 'reach_class' must be 'CR' exactly when"),
        (lambda t: t.replace('form_factor = "OSFP"', 'form_factor = "SFP"'),
         r"entry 1 \('M1'\): field 'form_factor' must be one of"),
        (lambda t: t.replace('kind = "optical"', 'kind = "copper"'),
         r"\[\[technology\]\] entry 1 \('dsp'\): field 'kind' must be 'optical'"),
        (lambda t: t.replace("interoperable = true", 'interoperable = "yes"'),
         r"\[\[technology\]\] entry 1 \('dsp'\): field 'interoperable' must be bool"),
        (lambda t: t.replace('name = "dsp"', 'name = "lpo"'),
         r"\[\[module\]\] entry 1 \('M1'\): field 'technology' = 'dsp' has no \[\[technology\]\]"),
        (lambda t: t.replace('source = "a datasheet"', 'source = ""'),
         r"entry 1 \('M1'\): field 'source' must not be empty"),
        (lambda t: t.replace("[[technology]]", "[[tech]]"),
         r"expected one or more \[\[technology\]\] entries"),
    ],
)
def test_malformed_file_names_file_entry_field(tmp_path, mutate, pattern):
    with pytest.raises(ValueError, match=pattern):
        O.load_catalog(_write(tmp_path, mutate(GOOD)))


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="catalog file not found"):
        O.load_catalog(tmp_path / "nope.toml")


def test_sweep_link_groups_matches_by_name_and_fills_missing_tiers():
    small = [Group("endpoint-leaf", 100, 3, 800), Group("leaf-spine", 100, 30, 800)]
    big = [*small, Group("spine-core", 50, 500, 800)]
    sweep = O.sweep_link_groups([small, big], "dsp")
    assert sweep.group_names == ("endpoint-leaf", "leaf-spine", "spine-core")
    assert sweep.counts.tolist() == [[100, 100, 0], [100, 100, 50]]
    assert sweep.power_w[1] == pytest.approx(O.fabric_bill(big, "dsp").power_w)
    assert sweep.power_w[0] == pytest.approx(O.fabric_bill(small, "dsp").power_w)
    with pytest.raises(ValueError, match=r"group 'leaf-spine' has length_m 30 and gbps 800 in "
                                         r"one set but 60 and 800 in set 1"):
        O.sweep_link_groups([small, [Group("leaf-spine", 1, 60, 800)]])


def test_added_latency_two_modules_per_link():
    assert O.added_latency_ns("800G DSP DR8") == 2 * 50
    assert O.added_latency_ns("800G DSP DR8", links=4) == 4 * 2 * 50
    assert O.added_latency_ns("800G LPO DR8", links=4) == 0
    assert O.added_latency_ns("800G DAC", links=2) == 0
    with pytest.raises(ValueError, match="links must be a whole number >= 0, got -1"):
        O.added_latency_ns("800G DSP DR8", links=-1)


def test_the_bill_at_other_1_6t_to_800g_ratios():
    """A DR-only 1.6T bill at the catalog's ratio is the catalog's bill; it grows linearly with
    the ratio, and 800G or copper units keep their price."""
    from scaleout.widgets.optics import cluster_groups
    _, groups = cluster_groups(32768, 1600, "Tomahawk 6", 3.0, 30.0, 500.0)
    bill = O.fabric_bill(groups, "dsp", lane_gbps=224)
    assert {g.module.name for g in bill.groups} == {"1.6T DSP DR8"}
    ratio = O.generation_cost_ratio("dsp")
    assert O.relative_cost_at_ratio(bill, ratio) == pytest.approx(bill.relative_cost)
    r = np.array([1.0, 1.2, 1.4])
    got = O.relative_cost_at_ratio(bill, r)
    assert got == pytest.approx(bill.relative_cost / ratio * r)
    _, groups_800 = cluster_groups(32768, 800, "Tomahawk 6", 3.0, 30.0, 500.0)
    b8 = O.fabric_bill(groups_800, "dsp", lane_gbps=112)
    assert O.relative_cost_at_ratio(b8, 5.0) == pytest.approx(b8.relative_cost)
    with pytest.raises(ValueError, match="ratio must be a finite number > 0"):
        O.relative_cost_at_ratio(bill, 0)



def test_the_lpo_bill_at_a_ratio_prices_each_unit_against_the_800g_lpo_module():
    """1.6T LPO DR8 units priced at twice their counterpart, the 800G LPO DR8 (0.75 of an
    800G DSP DR8 in data/optics.toml; a 1.6T LPO DR8 is 1.0): the same number of units,
    each at 0.75 x 2 = 1.5, so the bill grows by 1.5 / 1.0. A number, not an array, for a
    number."""
    from scaleout.widgets.optics import cluster_groups
    _, groups = cluster_groups(32768, 1600, "Tomahawk 6", 3.0, 30.0, 500.0)
    bill = O.fabric_bill(groups, "lpo", lane_gbps=224)
    assert {g.module.name for g in bill.groups} == {"1.6T LPO DR8"}
    units = bill.relative_cost / 1.0
    got = O.relative_cost_at_ratio(bill, 2.0)
    assert type(got) is float
    assert got == pytest.approx(units * 0.75 * 2.0, rel=1e-12)

def test_sweep_passes_lane_class_and_copper_and_adds_groups_of_one_name():
    """Two sizes of a fabric of 2 m rack links and 300 m spine links at 1.6 Tb/s, on 112G
    lanes and without copper: the only such unit is the DR16 module (16 lanes, 32 fibres per
    link). Two spine groups at the second size add up (4 + 6 links). Per size by hand:
    transceivers 2 x (10 + 4) = 28 and 2 x (20 + 10) = 60, fibres 32 x 14 and 32 x 30."""
    sets = [[Group("rack", 10, 2.0, 1600), Group("spine", 4, 300.0, 1600)],
            [Group("rack", 20, 2.0, 1600), Group("spine", 4, 300.0, 1600),
             Group("spine", 6, 300.0, 1600)]]
    s = O.sweep_link_groups(sets, lane_gbps=112, copper=False)
    assert s.choice == "auto" and s.group_names == ("rack", "spine")
    assert [m.name for m in s.modules] == ["1.6T DSP DR16 (112G lanes)"] * 2
    assert s.fell_back == (False, False)
    assert s.counts.tolist() == [[10, 4], [20, 10]] and s.counts.dtype.kind == "i"
    assert s.transceivers.tolist() == [28, 60] and s.fibres.tolist() == [448, 960]
    assert {a.dtype.kind for a in (s.transceivers, s.cables, s.fibres)} == {"i"}
    # on any lanes, 2 m at 1.6T is a 2 m active copper cable unless copper is ruled out
    assert O.sweep_link_groups(sets).modules[0].name == "1.6T ACC"
    assert O.sweep_link_groups(sets, copper=False).modules[0].technology not in O.COPPER


def test_lanes_and_fibres_round_up_to_whole_ones():
    """800 Gb/s on 112G lanes: 8 lanes; three wavelengths per fibre carry them on
    ceil(8/3) = 3 fibres each way, 6 in all. Arrays come back as whole numbers."""
    assert O.fibres_needed(800, 112, wavelengths_per_fibre=3) == 6
    lanes = O.lanes_needed(np.array([800, 1600]), 112)
    assert lanes.tolist() == [8, 16] and lanes.dtype.kind == "i"
    assert O.generation_cost_ratio() == O.module("1.6T DSP DR8").relative_cost / \
        O.module("800G DSP DR8").relative_cost == pytest.approx(1.3)


def test_copper_choice_follows_the_lane_class_and_a_bill_its_copper_switch():
    """A 2 m link at 800G is a passive cable, chosen without falling back; at 1.6T on 112G
    lanes there is no such cable, so the 112G-lane optical module it is. A bill without
    copper puts a 1.6T rack link on optics: 2 transceivers and 16 fibres per link."""
    assert O.choose(2, 800) == (O.module("800G DAC"), False)
    assert O.choose(1.5, 1600, lane_gbps=112) == (O.module("1.6T DSP DR16 (112G lanes)"), False)
    bill = O.fabric_bill([Group("rack", 10, 2.0, 1600)], copper=False)
    rack = bill.groups[0]
    assert (rack.name, rack.count, rack.length_m, rack.gbps) == ("rack", 10, 2.0, 1600)
    assert rack.module.is_optical and (rack.transceivers, rack.fibres) == (20, 160)


def test_a_unit_built_in_code_is_checked_like_a_catalog_entry():
    """dataclasses.replace runs the same checks as the loader, naming the unit."""
    with pytest.raises(ValueError, match=r"^Module '800G LPO DR8': field 'technology' must be "
                                         r"one of 'dsp'"):
        dataclasses.replace(O.module("800G LPO DR8"), technology="xpo")
    with pytest.raises(ValueError, match=r"^Technology 'dac': field 'kind' must be 'copper', "
                                         r"got 'optical'"):
        dataclasses.replace(O.technology("dac"), kind="optical")
    assert dataclasses.replace(O.technology("dac"), kind="copper") == O.technology("dac")


def test_small_links_names_and_a_bill_s_choice():
    """100 Gb/s is one 112G lane; counts of whole lanes and fibres come back as ints. The
    catalog's names in file order; a bill says which choice made it; a group without the
    fields a link group has is named by its position."""
    assert O.lanes_needed(100, 112) == 1 and type(O.lanes_needed(800, 112)) is int
    assert type(O.fibres_needed(800, 112)) is int
    assert O.module_names() == [m.name for m in O.modules()]
    assert O.fabric_bill([Group("rack", 10, 2.0, 800)]).choice == "auto"
    with pytest.raises(ValueError, match=r"^groups\[1\] must have name, count, length_m"):
        O.fabric_bill([Group("rack", 10, 2.0, 800), object()])
    with pytest.raises(ValueError, match=r"^groups\[1\] must have name, count, length_m"):
        O.sweep_bill([Group("rack", 10, 2.0, 800), object()], [[1, 1]])
    with pytest.raises(ValueError, match=r"^groups\[1\] must have name, count, length_m"):
        O.sweep_link_groups([[Group("rack", 10, 2.0, 800), object()]])


def test_a_link_speed_no_unit_of_that_lane_class_serves_is_named():
    """No 224G-lane unit carries a 100 Gb/s link (their breakouts are 200 Gb/s and up)."""
    with pytest.raises(ValueError, match=r"module or cable for 100 Gb/s links with 224G "
                                         r"lanes is in the catalog$"):
        O.choose(100, 100, lane_gbps=224)
