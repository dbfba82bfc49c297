"""Regression tests for hostile and extreme input: each case once hung, exploded in memory,
overflowed, silently meant another thing, or named the wrong parameter.

Every call runs under a hang guard (an alarm, not a timing assertion): a case that loops
fails instead of stalling the suite.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import support
from scaleout import (
    catalog,
    checks,
    collectives,
    compute,
    data_parallel,
    fabric,
    memory,
    optics,
    pipeline,
    plan,
    reliability,
    scaling,
    synthesis,
    units,
    zero,
)

GUARD_S = 10.0


def hang_guard(seconds: float = GUARD_S):
    return support.hang_guard(seconds)


def refused(call, pattern: str) -> None:
    with hang_guard(), pytest.raises(ValueError, match=pattern):
        call()


# --------------------------------------------------------------------------- nothing hangs
@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: pipeline.simulate(p=2, m=4, n_layers=10**10 + 1),
     r"n_layers must be at most 100,000"),
    (lambda: scaling.gpus_to_hold(1e27, "A100"), r"n_bytes must be at most"),
    (lambda: scaling.gpus_to_hold(1e20, "A100", usable_fraction=1e-9),
     r"n_bytes=1e\+20 at usable_fraction=1e-09 would need .* GPUs, more than"),
    (lambda: zero.zero_comm(1e9, 1, dp=100_000_001), r"dp must be at most 10,000,000"),
    (lambda: pipeline.simulate(p=20000, m=20000),
     r"simulating 1f1b with p=20000, m=20000, v=1 would need about 8e\+08 elements, more "
     r"than the 2,000,000"),
    (lambda: reliability.simulate(30 * 86400.0, 1e-6, 0.0, 0.5),
     r"would need about .* elements, more than the 20,000,000 .*mtbf_s"),
    (lambda: fabric.fabric_sweep([1024], 64, planes=2**62), r"planes must be at most 64"),
    (lambda: optics.lanes_needed(1e21, 112), r"gbps must be at most"),
    (lambda: plan.search("gpt3-175b", "A100", 1024, 1536, seq_len=10**30),
     r"seq_len must be at most 100,000,000"),
    (lambda: plan.search("gpt2-1.5b", "A100", 64, 512, tokens=-1),
     r"tokens must be a finite number > 0, got -1"),
    (lambda: fabric.simulate_load_balance(10**6, 8), r"n_flows=1,000,000 .* more than"),
    (lambda: fabric.ecmp_expected_utilisation(10**9, 8), r"n_flows=1,000,000,000"),
    (lambda: data_parallel.bucket_timeline(1e15, 1.0, 1.0, 8), r"grad_bytes / bucket_bytes"),
    (lambda: reliability.straggler_step_mc(10**6, 1.0, 0.1, steps=10**6), r"steps=1,000,000"),
    (lambda: fabric.build_graph(fabric.size_fabric(10**6, 512)), r"wiring the design's"),
])
def test_huge_work_and_overflow_are_refused_at_once(call, pattern):
    refused(call, pattern)


def test_bounds_live_in_checks_and_are_the_documented_ones():
    assert checks.MAX_GPUS == 10**7
    assert checks.check_int("n_gpus", 10**7) == 10**7
    refused(lambda: checks.check_int("n_gpus", 10**7 + 1), r"n_gpus must be at most 10,000,000")
    assert checks.int_bound("tp") == checks.MAX_GPUS
    assert checks.real_bound("horizon_s") == checks.MAX_SECONDS
    assert checks.real_bound("forward_s[3]") == checks.MAX_SECONDS
    assert checks.real_bound("link_gbytes_s") == 1e9
    assert checks.real_bound("grad_bytes") == checks.MAX_BYTES
    # an explicit maximum wins over the named bound
    assert checks.check_int("n_gpus", 3, maximum=4) == 3


def test_divisors_are_found_in_o_sqrt_n():
    for n in range(1, 600):
        assert checks.divisors(n) == [d for d in range(1, n + 1) if n % d == 0]
    with hang_guard(2.0):
        big = checks.divisors(10**10 + 1)  # 101 x 3541 x 27961
    assert big[:4] == [1, 101, 3541, 27961] and big[-1] == 10**10 + 1
    with hang_guard(2.0), pytest.raises(ValueError, match=r"p=2 must divide n_layers=9999999999; "
                                                          r"allowed: 1, 3, 9, 11, 33, 41"):
        checks.check_divides("p", 2, "n_layers", 10**10 - 1)
    with hang_guard(2.0), pytest.raises(ValueError, match=r"must divide n=100000000000001$"):
        checks.check_divides("t", 2, "n", 10**14 + 1)  # too large to list: a shorter message


def test_gpus_to_hold_is_exact_at_whole_multiples_and_o1():
    cap = catalog.gpu("A100").hbm_bytes
    assert scaling.gpus_to_hold(5 * cap, "A100") == 5
    assert scaling.gpus_to_hold(5 * cap + 1, "A100") == 6
    with hang_guard(1.0):
        assert scaling.gpus_to_hold(1e17, "A100") == math.ceil(1e17 / cap)


def test_pipeline_limits_leave_the_workbook_sizes_alone():
    t = pipeline.simulate("interleaved", p=64, m=256, v=4)
    assert t.makespan_s > 0
    assert pipeline.bubble_fraction("1f1b", 20000, 20000) == pytest.approx(19999 / 20000)


def test_fabric_counts_stay_positive_at_the_bounds():
    sweep = fabric.fabric_sweep([checks.MAX_GPUS], 512, planes=checks.MAX_PLANES)
    assert np.all(sweep.switches > 0) and np.all(sweep.links > 0)
    assert np.all(sweep.transceivers >= 0)


# --------------------------------------------------------------------------- names
@pytest.mark.parametrize(("call", "near"), [
    (lambda: catalog.model("megatron-17b"), "megatron-1.7b"),
    (lambda: catalog.model("gpt2-15b"), "gpt2-1.5b"),
    (lambda: catalog.model("megatron-761b"), "megatron-76.1b"),
    (lambda: catalog.link("TCP/IP 4.00GbE"), "TCP/IP 400GbE"),
])
def test_a_near_miss_is_refused_with_the_close_name_suggested(call, near):
    with pytest.raises(ValueError, match="is not in the catalog; did you mean") as e:
        call()
    assert repr(near) in str(e.value)


def test_case_and_whitespace_are_all_a_lookup_forgives():
    assert catalog.model("  GPT3-175B ").name == "gpt3-175b"
    assert catalog.link("infiniband   ndr").name == "InfiniBand NDR"
    assert catalog.gpu("h100").name == catalog.gpu("H100").name


LOOKUPS = [
    ("gpu", catalog._gpus, catalog.gpu),
    ("model", catalog._models, catalog.model),
    ("link", catalog._links, catalog.link),
    ("system", catalog._systems, catalog.system),
    ("switch", fabric._switch_chips, fabric.switch_chip),
    ("module", lambda: optics._catalog().modules, optics.module),
    ("scale-up domain", synthesis._domains, synthesis.scaleup_domain),
]


@pytest.mark.parametrize(("kind", "table", "lookup"), LOOKUPS, ids=[k for k, *_ in LOOKUPS])
def test_every_lookup_finds_each_name_and_alias_and_no_stripped_variant(kind, table, lookup):
    entries = table()
    known = {catalog._norm(a) for obj in entries.values() for a in (obj.name, *obj.aliases)}
    for name, obj in entries.items():
        for alias in (name, *obj.aliases):
            assert lookup(alias).name == name
            assert lookup(f"  {alias.upper()} ").name == name
            stripped = "".join(ch for ch in alias if ch.isalnum() or ch == " ")
            if stripped != alias and catalog._norm(stripped) not in known:
                with pytest.raises(ValueError, match=f"{kind} .* is not in the catalog"):
                    lookup(stripped)
    with pytest.raises(ValueError, match="must be a catalog name"):
        lookup(42)


def _copy_data(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copy(catalog.DATA_DIR / name, target)
    return target


def test_an_alias_colliding_with_another_entry_is_a_load_error(tmp_path):
    path = _copy_data(tmp_path, "models.toml")
    text = path.read_text()
    path.write_text(text.replace('name = "megatron-3.6b"',
                                 'name = "megatron-3.6b"\naliases = ["Megatron-1.7B"]', 1))
    with pytest.raises(ValueError, match=r"models.toml: \[\[model\]\] entry \d+ "
                                         r"\('megatron-3.6b'\): field 'aliases': 'Megatron-1.7B' "
                                         r"is already a name or alias of entry 'megatron-1.7b'"):
        catalog.load_entries(path, "model", catalog.ModelSpec)


# --------------------------------------------------------------------------- data and specs
GPU_SPEC = {"name": "x", "vendor": "y", "year": 2024, "hbm_gib": 80.0, "hbm_gbytes_s": 1.0,
            "bf16_dense_tflops": 1.0, "scaleup_gbytes_s": 1.0, "scaleup_link": "z",
            "scaleup_domain_gpus": 8, "tdp_w": 1.0}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_fail_a_dict_spec(bad):
    with pytest.raises(ValueError, match=r"GPU 'x': field 'hbm_gib' must be a finite number > 0"):
        catalog.gpu({**GPU_SPEC, "hbm_gib": bad})


@pytest.mark.parametrize(("file", "table", "cls", "old", "new", "pattern"), [
    ("gpus.toml", "gpu", catalog.GPU, "hbm_gib = 80", "hbm_gib = nan",
     r"gpus.toml: \[\[gpu\]\] entry \d+ \('A100-SXM4-80GB'\): field 'hbm_gib' must be a finite "
     r"number > 0, got nan"),
    ("gpus.toml", "gpu", catalog.GPU, "hbm_gib = 80", "hbm_gib = inf",
     r"field 'hbm_gib' must be a finite number > 0, got inf"),
    ("gpus.toml", "gpu", catalog.GPU, 'aliases = ["V100"', 'aliases = [1, "V100"',
     r"gpus.toml: \[\[gpu\]\] entry 1 \('V100-SXM2-32GB'\): field 'aliases' must be a list of "
     r"non-empty strings, got \[1, "),
    ("switches.toml", "switch", fabric.SwitchChip, "ports = [40, 80]", "ports = [-40, 80]",
     r"switches.toml: \[\[switch\]\] entry 1 \('Quantum HDR'\): field 'ports' must be a finite "
     r"number > 0, got -40"),
    ("switches.toml", "switch", fabric.SwitchChip, "ports = [40, 80]", "ports = [40.5, 80]",
     r"field 'ports' must be a list of whole numbers"),
    ("transports.toml", "measurement", fabric.TransportMeasurement, 'unit = "us"',
     'unit = "furlongs"',
     r"transports.toml: \[\[measurement\]\] entry 1 \('ib_send_lat 32 B'\): field 'unit' must "
     r"be one of 'us', .*got 'furlongs'"),
])
def test_bad_figures_in_a_file_name_file_entry_and_field(tmp_path, file, table, cls, old, new,
                                                          pattern):
    path = _copy_data(tmp_path, file)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError, match=pattern):
        catalog.load_entries(path, table, cls)


def test_a_missing_scaleout_link_fails_at_load_naming_gpus_toml(tmp_path, monkeypatch):
    for name in ("gpus.toml", "links.toml"):
        _copy_data(tmp_path, name)
    gpus = tmp_path / "gpus.toml"
    text = gpus.read_text()
    first = text.index('scaleout_link = "')
    end = text.index('"', first + len('scaleout_link = "'))
    gpus.write_text(text[:first] + 'scaleout_link = "InfiniBand QDR+' + text[end:])
    monkeypatch.setattr(catalog, "DATA_DIR", tmp_path)
    catalog._gpus.cache_clear()
    catalog._links.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"gpus.toml: \[\[gpu\]\] entry \d+ \('.+'\): field "
                                             r"'scaleout_link' names 'InfiniBand QDR\+', which "
                                             r"is not in links.toml"):
            catalog.gpu("H100")
    finally:
        monkeypatch.undo()
        catalog._gpus.cache_clear()
        catalog._links.cache_clear()
    assert catalog.gpu("H100").scaleout_link in catalog.link_names()


# --------------------------------------------------------------------------- smaller API defects
@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: compute.utilisation(1e18, 0, 8, 312e12), r"seconds must be a finite number > 0"),
    (lambda: compute.forward_flops("2048", 1e9, 24, 2048, 2048), r"tokens must be"),
    (lambda: collectives.algbw(1e9, 0), r"time_s must be a finite number > 0, got 0"),
    (lambda: collectives.busbw(1e9, 0.0, "all_reduce", 8), r"time_s must be"),
    (lambda: collectives.collective_time("all_reduce", "1e9", 8, "NVLink 4"),
     r"size_bytes must be a finite number >= 0, got '1e9'"),
    (lambda: units.pj_per_bit(15, 0), r"gbps must be a finite number > 0, got 0"),
    (lambda: units.bytes_to_gb("5"), r"n_bytes must be a number"),
    (lambda: units.per_direction(900, 0), r"directions must be a finite number > 0"),
    (lambda: data_parallel.weak_scaling("gpt2-1.5b", []), r"n_gpus must be a non-empty list"),
    (lambda: data_parallel.gradient_all_reduce_time(-1, 8), r"^grad_bytes must be"),
    (lambda: data_parallel.gradient_all_reduce_time(1e9, 12), r"must divide n_gpus "),
    (lambda: memory.training_memory("gpt3-175b", "A100", tp=8, pp=8, dp=16, sp="False"),
     r"sp must be True or False, got 'False'"),
    (lambda: plan.Plan(tp=8, sp="False"), r"sp must be True or False"),
    (lambda: plan.search("gpt2-1.5b", "A100", 64, 512, flash_attention="no"),
     r"flash_attention must be True or False"),
    (lambda: compute.training_days(175e9, 300e9, 1024, 140, recompute=1),
     r"recompute must be True or False, got 1"),
    (lambda: reliability.goodput("3600", 60, 10800), r"interval_s must be a finite number > 0"),
    (lambda: fabric.fabric_sweep(["1024"], 64), r"n_endpoints must be"),
    (lambda: collectives.hierarchical_all_reduce_time(1e9, 4, 8, "NVLink 4", "Carrier pigeon"),
     r"^inter: link 'Carrier pigeon' is not in the catalog"),
    (lambda: reliability.mtbf_h(1024, "llama3"), r"study_name must be one of"),
    (lambda: reliability.checkpoint_plan(0, 1024, storage_gbytes_s=100.0),
     r"model_or_params must be"),
])
def test_smaller_api_defects_are_clear_errors(call, pattern):
    refused(call, pattern)


def test_first_order_goodput_is_clipped_at_zero_outside_its_range():
    assert reliability.goodput_first_order(1e6, 60, 10800) == 0.0
    sweep = np.geomspace(61, 1e7, 50)
    g = np.asarray(reliability.goodput_first_order(sweep, 60, 10800))
    assert np.all((g >= 0) & (g <= 1))
    assert g.max() == pytest.approx(reliability.goodput_first_order(
        reliability.young_interval_s(60, 10800), 60, 10800), rel=1e-3)


def test_real_bools_and_numpy_bools_still_work():
    a = memory.training_memory("gpt3-175b", "A100", tp=8, pp=8, dp=16, sp=True)
    b = memory.training_memory("gpt3-175b", "A100", tp=8, pp=8, dp=16, sp=np.bool_(True))
    assert a == b
