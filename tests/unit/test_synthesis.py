"""scaleout.synthesis: domain designs, memory vs message semantics, the plan per domain size,
the fabric, reliability and the whole cluster plan, each against the module it composes."""

import math
import textwrap

import pytest
from scaleout import catalog, fabric, optics, plan, reliability, units
from scaleout import synthesis as S

# --------------------------------------------------------------------------- domain designs


def test_every_domain_loads_with_a_source_and_catalogued_names():
    domains = S.scaleup_domains()
    assert len(domains) >= 6
    for d in domains:
        assert d.source.strip(), d.name
        assert d.gpu is None or d.gpu in catalog.gpu_names(), d.name
        assert d.link is None or d.link in catalog.link_names(), d.name
    kinds = {d.kind for d in domains}
    assert {"board", "rack", "super-node", "specification"} <= kinds


def test_domains_agree_with_the_gpu_system_and_link_catalogs():
    for d in S.scaleup_domains():
        if d.gpu is not None and d.link_gbytes_s is not None:
            assert d.link_gbytes_s == catalog.gpu(d.gpu).scaleup_gbytes_s, d.name
        if d.link is not None and d.link_gbytes_s is not None:
            assert d.link_gbytes_s == catalog.link(d.link).gbytes_s, d.name
    nvl72 = S.scaleup_domain("NVL72")
    assert nvl72.accelerators == catalog.system("GB200 NVL72").gpus == 72
    assert nvl72.accelerators == catalog.gpu("GB200").scaleup_domain_gpus


def test_published_domain_figures():
    # GB200 NVL72: 72 GPUs at 1.8 TB/s both directions, copper inside the rack, one switch tier
    nvl72 = S.scaleup_domain("GB200 NVL72")
    assert units.both_directions(nvl72.link_gbytes_s) == 1800
    assert (nvl72.outer_medium, nvl72.switch_tiers, nvl72.lane_gbps) == ("electrical", 1, 224)
    # CloudMatrix384 (arXiv 2506.12708): 384 NPUs in 48 nodes of 8, two tiers, optical between
    cm = S.scaleup_domain("CloudMatrix384")
    assert (cm.accelerators, cm.chassis, cm.accelerators // cm.chassis) == (384, 48, 8)
    assert cm.switch_tiers == 2 and cm.optical_between_chassis and cm.link_gbytes_s == 392
    # UALink 1.0: 200G lanes (the 224G class), up to 1,024 accelerators, an open standard
    ua = S.scaleup_domain("UALink")
    assert (ua.accelerators, ua.lane_gbps, ua.openness) == (1024, 224, "open standard")
    # the MI300X platform is a direct mesh: no switch
    assert S.scaleup_domain("MI300X Platform").switch_tiers == 0


def test_lanes_per_accelerator_follow_the_published_link_counts():
    # NVLink 4 and 5: 18 links of two lanes each way -> 36 lanes per GPU and direction
    for name in ("HGX H100 8-GPU", "HGX B200 8-GPU", "GB200 NVL72"):
        d = S.scaleup_domain(name)
        assert d.lanes_per_accelerator == 18 * 2, name
    # at 112G lanes the same bandwidth needs twice the lanes and fibres of 224G
    for d in S.scaleup_domains():
        lo, hi = S.domain_lanes(d, 112), S.domain_lanes(d, 224)
        if d.link_gbytes_s is None:
            assert lo == hi == {"lanes": None, "fibres": None}
            continue
        assert lo["lanes"] == math.ceil(units.gbytes_s_to_gbps(d.link_gbytes_s) / 100 - 1e-9)
        assert lo["lanes"] == 2 * hi["lanes"] or lo["lanes"] == 2 * hi["lanes"] - 1
        assert lo["fibres"] == 2 * lo["lanes"] and hi["fibres"] == 2 * hi["lanes"]
    assert S.scaleup_domain("CloudMatrix384").lanes_per_accelerator is None  # lane rate unstated


def test_domain_lookup_by_alias_and_close_matches():
    assert S.scaleup_domain("cm384").name == "CloudMatrix384"
    with pytest.raises(ValueError, match="did you mean 'GB200 NVL72'"):
        S.scaleup_domain("GB200 NVL7")
    with pytest.raises(ValueError, match="lane_gbps must be one of 112, 224"):
        S.domain_lanes("NVL72", 100)


GOOD = textwrap.dedent("""\
    [[domain]]
    name = "Test rack"
    vendor = "Nobody"
    kind = "rack"
    accelerators = 16
    link_gbytes_s = 400
    lane_gbps = 224
    inner_medium = "electrical"
    outer_medium = "optical"
    chassis = 4
    switch_tiers = 2
    openness = "proprietary"
    year = 2025
    gpu = "H100-SXM5-80GB"
    link = "NVLink 4"
    source = "a test"
    """)


def write(tmp_path, text, name="domains.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_loads(tmp_path):
    found = S.load_domains(write(tmp_path, GOOD))
    assert found["Test rack"].optical_between_chassis


@pytest.mark.parametrize(("old", "new", "message"), [
    ('kind = "rack"', 'kind = "shelf"', r"field 'kind' must be one of .*got 'shelf'"),
    ('outer_medium = "optical"', 'outer_medium = "laser"', r"field 'outer_medium' must be one"),
    ('lane_gbps = 224', 'lane_gbps = 100', r"field 'lane_gbps' must be one of 112, 224"),
    ('switch_tiers = 2', 'switch_tiers = 3', r"field 'switch_tiers' must be 0, 1 or 2"),
    ('switch_tiers = 2', 'switch_tiers = -1', r"field 'switch_tiers' must be a finite number >= 0"),
    ('accelerators = 16', 'accelerators = 0', r"field 'accelerators' must be a finite number > 0"),
    ('accelerators = 16', 'accelerators = "16"', r"field 'accelerators' must be int"),
    ('chassis = 4', 'chassis = 32', r"field 'chassis' \(32\) exceeds the 16 accelerators"),
    ('outer_medium = "optical"\n', '', r"field 'outer_medium' is missing: 4 chassis"),
    ('gpu = "H100-SXM5-80GB"', 'gpu = "H1000"', r"field 'gpu' is 'H1000', not a GPU"),
    ('link = "NVLink 4"', 'link = "NVLink 9"', r"field 'link' is 'NVLink 9', not a link"),
    ('openness = "proprietary"', 'openness = "secret"', r"field 'openness' must be one of"),
    ('lane_gbps', 'lane_gpbs', r"unknown field 'lane_gpbs' \(did you mean 'lane_gbps'\?\)"),
    ('source = "a test"\n', '', r"missing field 'source'"),
])
def test_bad_fields_name_file_entry_and_field(tmp_path, old, new, message):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(ValueError, match=message) as err:
        S.load_domains(path)
    assert "domains.toml" in str(err.value) and "'Test rack'" in str(err.value)


def test_duplicate_names_missing_file_and_no_entries(tmp_path):
    with pytest.raises(ValueError, match="duplicate name 'Test rack'"):
        S.load_domains(write(tmp_path, GOOD + "\n" + GOOD))
    with pytest.raises(ValueError, match=r"nowhere\.toml: catalog file not found"):
        S.load_domains(tmp_path / "nowhere.toml")
    with pytest.raises(ValueError, match=r"expected one or more \[\[domain\]\] entries"):
        S.load_domains(write(tmp_path, "[[dom]]\nname = 'x'\n"))


# --------------------------------------------------------------------------- memory vs message
def test_semantics_of_each_kind_of_link():
    assert S.semantics_of("NVLink 5") == "memory (load/store)"
    assert S.semantics_of("PCIe Gen5 x16") == "memory (load/store)"
    assert S.semantics_of("InfiniBand NDR") == S.semantics_of("RoCE v2 400GbE") == \
        "message (RDMA)"
    assert S.semantics_of("TCP/IP 100GbE") == "message (kernel TCP)"


def test_semantics_table_orders_nvlink_rdma_tcp():
    rows = S.semantics_table(n_gpus=72)
    names = [r.link for r in rows]
    assert names == ["NVLink 5", "InfiniBand NDR", "RoCE v2 400GbE", "TCP/IP 400GbE"]
    lat = [r.latency_us for r in rows]
    assert lat == sorted(lat) and lat[0] < 1 < lat[-1]  # sub-microsecond vs microseconds
    assert [r.semantics for r in rows] == ["memory (load/store)", "message (RDMA)",
                                           "message (RDMA)", "message (kernel TCP)"]
    # only kernel TCP keeps host cores busy
    assert [r.host_cores > 0 for r in rows] == [False, False, False, True]
    for r in rows:
        link = catalog.link(r.link)
        # one transfer: alpha + S/B; a ring all-reduce's latency term: 2(n-1) alpha
        assert r.transfer_us == pytest.approx(link.latency_us + 256 / link.bandwidth_bytes_s * 1e6)
        assert r.alpha_term_us == pytest.approx(2 * 71 * link.latency_us)
        assert r.collective_us == pytest.approx(
            r.alpha_term_us + 2 * 71 / 72 * 256 / link.bandwidth_bytes_s * 1e6)
        # the ring's crossover size is n alpha B (collectives.crossover_bytes)
        assert r.crossover_bytes == pytest.approx(72 * link.latency_s * link.bandwidth_bytes_s)
        assert 0.99 < r.alpha_share <= 1.0  # 256 bytes: all latency


def test_transfer_time_is_alpha_plus_size_over_bandwidth_and_takes_arrays():
    sizes = [0.0, 1e3, 1e6, 1e9]
    for name in ("NVLink 4", "InfiniBand NDR", "TCP/IP 100GbE"):
        link = catalog.link(name)
        got = S.transfer_time_s(name, sizes)
        assert got == pytest.approx([link.latency_s + s / link.bandwidth_bytes_s for s in sizes])
    # large messages are bandwidth-bound: NVLink 4 beats NDR by the bandwidth ratio, 9x
    ratio = S.transfer_time_s("InfiniBand NDR", 1e10) / S.transfer_time_s("NVLink 4", 1e10)
    assert ratio == pytest.approx(450 / 50, rel=1e-3)


def test_semantics_table_bad_input():
    with pytest.raises(ValueError, match="link 'NVLink 7' is not in the catalog"):
        S.semantics_table(["NVLink 7"])
    with pytest.raises(ValueError, match="message_bytes must be a finite number >= 0"):
        S.semantics_table(message_bytes=-1)
    with pytest.raises(ValueError, match="n_gpus must be a whole number >= 2"):
        S.semantics_table(n_gpus=1)
    with pytest.raises(ValueError, match="at least one link"):
        S.semantics_table([])


# --------------------------------------------------------------------------- domain size vs plan
@pytest.mark.parametrize(("model", "gpu", "n", "batch"), [
    ("gpt3-175b", "GB200", 1152, 1536),
    ("llama3-70b", "GB200", 576, 1152),
    ("llama3-70b", "H100-SXM5-80GB", 576, 1152),
])
def test_compare_domains_is_plan_search_per_domain_size(model, gpu, n, batch):
    cmp = S.compare_domains(model, gpu, n, batch, (8, 72), tokens=1e12, nested=False)
    assert cmp.sizes == (8, 72) and not cmp.skipped
    for option in cmp.options:
        assert option.placed_as == option.domain_gpus
        direct = plan.search(model, gpu, n, batch, gpus_per_node=option.domain_gpus,
                             tokens=1e12)
        assert option.plan == direct.plan(0)
        assert option.step_s == pytest.approx(float(direct.arrays["step_s"][direct.order[0]]))
        assert option.training_days == pytest.approx(direct.result(0).training_days)
        assert (option.n_evaluated, option.n_fit) == (direct.n_evaluated, direct.n_fit)
        assert option.tp_within_domain
    # a 72-GPU domain (a multiple of 8) offers every layout of an 8-GPU one, with more of the
    # data-parallel traffic on NVLink: never slower here
    assert cmp.option(72).step_s <= cmp.option(8).step_s
    assert cmp.speedup(72, 8) >= 1.0
    assert cmp.fastest.step_s == min(o.step_s for o in cmp.options)


def test_nested_domains_keep_the_faster_of_their_own_and_a_divisors_layout():
    # Llama 3 70B on 576 H100 at TP4 x DP36: the planner splits the data-parallel group into
    # whole per-domain parts (the largest divisor of 36 that fits), so every size's own layout
    # is already at least as fast as a divisor's and nesting keeps it
    own = S.compare_domains("llama3-70b", "H100", 576, 1152, (8, 16, 32), nested=False)
    assert own.option(32).step_s <= own.option(16).step_s <= own.option(8).step_s
    nested = S.compare_domains("llama3-70b", "H100", 576, 1152, (8, 16, 32))
    for o in nested.options:
        assert o.step_s <= own.option(o.domain_gpus).step_s
    o32 = nested.option(32)
    assert o32.placed_as == 32 and o32.plan == own.option(32).plan
    # every plan is plan.search's own at the size it is placed as; none is slower than a divisor
    for o in nested.options:
        direct = plan.search("llama3-70b", "H100", 576, 1152, gpus_per_node=o.placed_as)
        assert o.plan == direct.plan(0) and o.domain_gpus % o.placed_as == 0
        assert all(o.step_s <= p.step_s for p in nested.options
                   if o.domain_gpus % p.domain_gpus == 0)


def test_the_gap_between_domains_adds_up_and_names_the_schedule():
    """GPT-3 on 1,152 GB200s, batch 1,536 (notebook 12's defaults): 1,152 = 2^7 x 3^2 and
    1,536 = 2^9 x 3, so 8-GPU domains (TP in 1, 2, 4, 8) put a factor 3 into the pipeline and
    m = 1536 / dp is no multiple of it: no interleaving. A 72-GPU domain's tensor-parallel group
    absorbs the factor (TP3 or TP6), and its pipeline, if any, can interleave or goes away."""
    cmp = S.compare_domains("gpt3-175b", "GB200", 1152, 1536, (8, 72))
    small, large = cmp.option(8), cmp.option(72)
    gap = cmp.gap(72, 8)
    assert set(gap) == set(plan.STEP_PARTS)
    assert sum(gap.values()) == pytest.approx(small.step_s - large.step_s)
    assert small.plan.pp % 3 == 0 and small.plan.micro_batches % small.plan.pp
    assert "multiple of pp" in small.interleaving_blocker()
    assert large.plan.tp % 3 == 0
    assert large.plan.pp == 1 or large.plan.micro_batches % large.plan.pp == 0
    # the bubble is a large part of the gap, not only NVLink traffic
    assert 0.3 < gap["bubble"] / sum(gap.values()) < 0.7
    assert gap["dp_comm"] > 0


def test_compare_domains_names_skipped_sizes_and_accepts_domain_names():
    cmp = S.compare_domains("llama3-70b", "GB200", 576, 1152, (8, "GB200 NVL72", 100))
    assert cmp.sizes == (8, 72)
    assert "576 GPUs do not fill whole 100-GPU domains" in cmp.skipped[100]
    assert "Best:" in cmp.option(72).explain(1)


def test_compare_domains_bad_input():
    with pytest.raises(ValueError, match="n_gpus must be a whole number >= 1, got 0"):
        S.compare_domains("llama3-70b", "GB200", 0, 1152)
    with pytest.raises(ValueError, match="model 'llama4-70b' is not in the catalog"):
        S.compare_domains("llama4-70b", "GB200", 576, 1152)
    with pytest.raises(ValueError, match="gpu 'GB300' is not in the catalog"):
        S.compare_domains("llama3-70b", "GB300", 576, 1152)
    with pytest.raises(ValueError, match="at least one scale-up domain size"):
        S.compare_domains("llama3-70b", "GB200", 576, 1152, ())
    with pytest.raises(ValueError, match="domain_sizes must be a whole number >= 1"):
        S.compare_domains("llama3-70b", "GB200", 576, 1152, (0,))
    with pytest.raises(plan.NoPlanError, match=r"no domain size gives a plan .* 100-GPU"):
        S.compare_domains("llama3-70b", "GB200", 576, 1152, (100,))


# --------------------------------------------------------------------------- fabric and optics
def test_scaleout_fabric_is_fabric_sizing_plus_the_optics_bill():
    f = S.scaleout_fabric(576, "InfiniBand NDR")
    chip = fabric.switch_chip(f.switch)
    assert chip.family == "InfiniBand" and 400 in chip.port_gbps  # Quantum-2 NDR
    k = chip.radix(400)
    direct = fabric.size_multiplane(576, 400, 1, radix=k)
    assert f.design == direct
    groups = direct.link_groups()
    assert f.bill == optics.fabric_bill(groups, "dsp")
    # non-blocking two tiers of radix k: n / (k/2) leaves, as many uplinks as GPUs
    assert f.tiers == 2 and direct.plane.leaves == 576 // (k // 2)
    assert direct.plane.links_leaf_spine == 576
    # copper reaches the 3 m GPU-leaf links; every 30 m leaf-spine link has two DSP module ends
    module = f.bill.group("leaf-spine").module
    assert f.transceivers == 2 * 576 and module.technology == "dsp"
    assert f.optics_power_w == pytest.approx(2 * 576 * module.power_w)
    assert f.alpha_us == pytest.approx(fabric.fabric_alpha("InfiniBand NDR", direct).latency_s
                                       * 1e6)


def test_default_switch_matches_the_port_family():
    assert S.default_switch("InfiniBand NDR").family == "InfiniBand"
    assert S.default_switch("RoCE v2 400GbE").family == "Ethernet"
    assert S.default_switch("InfiniBand XDR").name == "Quantum-X800 XDR"
    planes = S.scaleout_fabric(4096, "RoCE v2 800GbE", planes=4)
    assert planes.design.planes == 4 and planes.design.plane.port_gbps == 200
    assert planes.design.plane.radix == fabric.switch_chip(planes.switch).radix(200)


def test_scaleout_fabric_bad_input():
    with pytest.raises(ValueError, match="'NVLink 5' is a scale-up link"):
        S.scaleout_fabric(576, "NVLink 5")
    with pytest.raises(ValueError, match="n_gpus must be a whole number >= 1"):
        S.scaleout_fabric(0, "InfiniBand NDR")
    with pytest.raises(ValueError, match="choice must be one of"):
        S.scaleout_fabric(576, "InfiniBand NDR", optics_choice="laser")
    with pytest.raises(ValueError, match="lengths_m key must be one of"):
        S.scaleout_fabric(576, "InfiniBand NDR", lengths_m={"leaf-core": 10})


# --------------------------------------------------------------------------- reliability
def test_reliability_at_composes_the_reliability_module():
    r = S.reliability_at("llama3-405b", 16384)
    assert r.failures_per_day == pytest.approx(float(reliability.failures_per_day(16384)))
    # Llama 3's 2 TB/s on its own 16,384 GPUs
    assert r.storage_gbytes_s == pytest.approx(2000)
    assert r.checkpoint.total_bytes == pytest.approx(reliability.checkpoint_bytes("llama3-405b"))
    delta, mtbf = r.checkpoint.blocking_s, r.mtbf_s
    assert r.interval_s == pytest.approx(reliability.exact_optimal_interval_s(delta, mtbf))
    assert r.young_interval_s == pytest.approx(math.sqrt(2 * delta * mtbf))
    # restart with a hot spare: detect (MegaScale, 600 s) + restore + init (30 s)
    assert r.restart_s == pytest.approx(600 + r.checkpoint.restore_s + 30)
    assert r.goodput == pytest.approx(reliability.goodput(r.interval_s, delta, mtbf, r.restart_s))
    # the optimum is the best interval
    for other in (0.5 * r.interval_s, 2 * r.interval_s):
        assert reliability.goodput(other, delta, mtbf, r.restart_s) < r.goodput
    assert r.wall_time_s(1e6) == pytest.approx(1e6 / r.goodput)


def test_default_storage_scales_llama3_per_gpu():
    assert S.default_storage_gbytes_s(16384) == pytest.approx(2000)
    assert S.default_storage_gbytes_s(1024) == pytest.approx(125)
    with pytest.raises(ValueError, match="n_gpus must be a whole number >= 1"):
        S.default_storage_gbytes_s(0)


# --------------------------------------------------------------------------- the cluster plan
def test_cluster_plan_ties_the_parts_together():
    cp = S.cluster_plan("gpt3-175b", "GB200", 1152, 1536, 300e9, domain_sizes=(8,))
    assert cp.gpus_per_node == 72 == catalog.gpu("GB200").scaleup_domain_gpus
    assert cp.domains.sizes == (8, 72) and cp.chosen is cp.domains.option(72)
    assert cp.compute_days == pytest.approx(cp.chosen.training_days)
    # GPT-3's 300B tokens at the plan's throughput
    assert cp.compute_days == pytest.approx(300e9 / cp.chosen.tokens_per_s / 86400)
    # wall time = work / goodput in Daly's model
    assert cp.wall_days == pytest.approx(cp.compute_days / cp.goodput)
    assert cp.wall_days_of(8) == pytest.approx(cp.domains.option(8).training_days / cp.goodput)
    assert cp.gpu_hours == pytest.approx(cp.wall_days * 24 * 1152)
    assert cp.fabric == S.scaleout_fabric(1152, "InfiniBand NDR")
    assert cp.reliability == S.reliability_at("gpt3-175b", 1152, tp=cp.chosen.plan.tp,
                                              pp=cp.chosen.plan.pp)
    text = dict(cp.rows())
    assert cp.chosen.label == text["best plan"] and "16 domains" in text["cluster"]


def test_cluster_plan_defaults_to_the_gpus_usual_domain_and_port():
    cp = S.cluster_plan("llama3-70b", "H100", 576, 1152, 1e12)
    assert cp.gpus_per_node == 8 and cp.domains.sizes == (8,)
    assert cp.fabric.link == "InfiniBand NDR"
    roce = S.cluster_plan("llama3-70b", "H100", 576, 1152, 1e12, inter="RoCE v2 400GbE")
    assert roce.fabric.link == "RoCE v2 400GbE" and roce.chosen.step_s > cp.chosen.step_s


def test_cluster_plan_bad_input():
    with pytest.raises(ValueError, match="tokens must be a finite number > 0"):
        S.cluster_plan("llama3-70b", "GB200", 576, 1152, 0)
    with pytest.raises(plan.NoPlanError, match="1,000 GPUs do not fill whole 72-GPU domains"):
        S.cluster_plan("llama3-70b", "GB200", 1000, 1000, 1e12)
    with pytest.raises(ValueError, match="n_gpus must be a whole number >= 1"):
        S.cluster_plan("llama3-70b", "GB200", 0, 1152, 1e12)
    with pytest.raises(ValueError, match="storage_gbytes_s must be a finite number > 0"):
        S.cluster_plan("llama3-70b", "GB200", 576, 1152, 1e12, storage_gbytes_s=0)


def test_design_cluster_picks_the_smallest_count_within_the_deadline():
    counts = (576, 1152, 2304, 4608)
    plans = {n: S.cluster_plan("llama3-70b", "GB200", n, 2304, 2e12) for n in counts}
    deadline = 0.5 * (plans[1152].wall_days + plans[2304].wall_days)
    got = S.design_cluster("llama3-70b", "GB200", 2e12, deadline, 2304, counts)
    assert got.n_gpus == 2304 and got.wall_days <= deadline < plans[1152].wall_days
    with pytest.raises(ValueError, match=r"fastest, 4,608 GPUs, takes .* days"):
        S.design_cluster("llama3-70b", "GB200", 2e12, 0.1, 2304, counts)
    with pytest.raises(ValueError, match="none of gpu_counts"):
        S.design_cluster("llama3-70b", "GB200", 2e12, 30, 2304, (100, 1000))
    with pytest.raises(ValueError, match="deadline_days must be a finite number > 0"):
        S.design_cluster("llama3-70b", "GB200", 2e12, 0, 2304, counts)



# --------------------------------------------------------------------------- optics of super-nodes
def test_scaleup_optics_prices_the_chassis_to_l2_tier():
    d = S.scaleup_domain("DGX GH200")
    lpo = S.scaleup_optics(d, "lpo")
    # 256 GPUs x 3,600 Gb/s leave their chassis once: 1,152 links of 800G, two ends each
    assert lpo.links == 256 * 3600 // 800 == 1152 and lpo.transceivers == 2 * 1152
    assert lpo.cables == 0 and lpo.groups[0].module.technology == "lpo"
    assert lpo.power_w == pytest.approx(2 * 1152 * optics.module("800G LPO DR8").power_w)
    # LPO's ~6 W against DSP's ~15 W per 800G module: the scale-up case for linear optics
    assert S.scaleup_optics(d, "dsp").power_w / lpo.power_w == pytest.approx(
        optics.module("800G DSP SR8").power_w / optics.module("800G LPO DR8").power_w)
    cm = S.scaleup_optics("CloudMatrix384", link_gbps=1600)
    assert cm.links == math.ceil(384 * 392 * 8 / 1600)


def test_scaleup_optics_bad_input():
    with pytest.raises(ValueError, match="'GB200 NVL72' joins its chassis with electrical links"):
        S.scaleup_optics("GB200 NVL72")
    with pytest.raises(ValueError, match="'HGX H100 8-GPU' joins its chassis with no links"):
        S.scaleup_optics("HGX H100 8-GPU")
    with pytest.raises(ValueError, match="link_gbps must be a finite number > 0"):
        S.scaleup_optics("DGX GH200", link_gbps=0)


# --------------------------------------------------------------------------- scale-across
def test_fibre_delay_and_the_alpha_between_sites():
    # light in glass: about 4.9 ns per metre, so 10 km is 49 us one way
    assert S.fibre_delay_s(10_000) == pytest.approx(10_000 * fabric.FIBRE_NS_PER_M * 1e-9)
    assert S.fibre_delay_s([0, 1000]) == pytest.approx([0, 4.9e-6])
    ab = S.scale_across_alpha("InfiniBand NDR", 10_000)
    link = catalog.link("InfiniBand NDR")
    assert ab.latency_s == pytest.approx(link.latency_s + 49e-6, rel=1e-3)
    assert ab.bandwidth_bytes_s == link.bandwidth_bytes_s
    with pytest.raises(ValueError, match="distance_m must be a finite number >= 0"):
        S.fibre_delay_s(-1)
