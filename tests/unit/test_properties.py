"""Property-based tests of the public API against hostile and extreme input (hypothesis).

For each function below, one parameter at a time gets a generated value (a valid one, an
edge, or a hostile one: negative, zero, NaN, inf, 10^30, 2^62, a string, a bool, None, a
near-miss name) while the others keep valid values. The call must then either

* return a result whose numbers are all finite (and in the function's documented range
  where one is stated), or
* raise ``ValueError`` (or ``TypeError``) whose message names that parameter,

and it must do so without hanging: a per-call alarm (``signal.setitimer``) turns a call
that runs past :data:`HANG_S` seconds into a failure. This is a guard against endless
loops, not a timing assertion; speed is measured by the benchmarks.

Examples are bounded and derandomised (the same cases on every run, so CI is
deterministic).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import support
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scaleout import (
    catalog,
    collectives,
    compute,
    costs,
    data_parallel,
    fabric,
    memory,
    optics,
    pipeline,
    plan,
    reliability,
    scaling,
    synthesis,
    tensor_parallel,
    units,
    zero,
)

#: Seconds one call may run before the guard calls it a hang.
HANG_S = 20.0
#: Examples per property (each property is one function).
EXAMPLES = 60

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


class Hang(Exception):
    """A call ran past the guard's time."""


def hang_guard(seconds: float = HANG_S):
    return support.hang_guard(seconds, Hang)


# --------------------------------------------------------------------------- value strategies
_EDGES = [0, -1, -0.5, 0.5, 1, 2, 3, 7, 8, 64, 1e6, 10**7 + 1, 10**10 + 1, 2**53 + 1, 2**62,
          1e21, 1e27, 10**30, 1e300, -1e300, float("nan"), float("inf"), -float("inf"),
          True, False, None, "8", "False", "", "1e3", [], [1], {}, np.float64(4.0), np.int64(16),
          np.bool_(True)]
#: Any number, an edge, or something that is not a number (plausible sizes included, so
#: that valid results are checked too).
ANY = st.one_of(st.sampled_from(_EDGES), st.integers(1, 4096), st.floats(1e-3, 1e6),
                st.integers(-(10**20), 10**20), st.floats(allow_nan=True, allow_infinity=True))
FLAG = st.sampled_from([True, False, "False", "True", 0, 1, None, np.bool_(False), "yes"])


def names(valid: list[str], misses: tuple[str, ...] = ()) -> st.SearchStrategy:
    """A catalog name, a near miss, or junk."""
    return st.one_of(st.sampled_from(valid),
                     st.sampled_from([*misses, "", " ", 1, None, 2.5, True, ["x"]]),
                     st.text(max_size=12))


MODELS = names([*catalog.model_names()[:12], "  GPT3-175B ", "Llama3-8B"],
               ("megatron-17b", "gpt2-15b", "megatron-761b", "gtp3-175b"))
GPUS = names(catalog.gpu_names(), ("H1OO", "h100 ", "A100-80", "b2OO"))
LINKS = names(catalog.link_names(), ("TCP/IP 4.00GbE", "NVLink4", "infiniband-ndr"))


@dataclasses.dataclass(frozen=True)
class Case:
    """A function, valid arguments, and what each argument may be replaced by."""

    name: str
    call: Callable[..., Any]
    valid: dict[str, Any]
    vary: dict[str, st.SearchStrategy]
    check: Callable[[Any], bool] | None = None  # the documented range of the result
    finite: bool = True
    examples: int = EXAMPLES
    #: Parameters a consistency rule may name instead (a valid model whose 25 heads tp=8
    #: does not divide: "tp=8 must divide n_heads=25" is the right message).
    related: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    #: Exceptions that are the function's documented answer, not bad input ("no plan fits").
    answers: tuple[type[Exception], ...] = ()


def _numbers(value, depth: int = 0):
    """Every number in a result (floats, ints, arrays, dataclasses, dicts, sequences)."""
    if depth > 4 or value is None or isinstance(value, str | bytes | bool | np.bool_):
        return
    if isinstance(value, int | float | np.integer | np.floating):
        yield float(value)
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "iuf":
            yield from value.astype(float).ravel()
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _numbers(getattr(value, f.name), depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _numbers(v, depth + 1)


def _mentions(message: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def run_case(case: Case, name: str, value: Any) -> None:
    kwargs = {**case.valid, name: value}
    try:
        with hang_guard():
            out = case.call(**kwargs)
    except case.answers:
        return
    except (ValueError, TypeError) as exc:
        message = str(exc)
        named = [name, *case.related.get(name, ())]
        assert any(_mentions(message, n) for n in named), (
            f"{case.name}({name}={value!r}) raised {type(exc).__name__} not naming "
            f"{name!r}: {message}")
        return
    if case.finite:
        bad = [x for x in _numbers(out) if not math.isfinite(x)]
        assert not bad, f"{case.name}({name}={value!r}) returned non-finite numbers: {bad[:3]}"
    if case.check is not None:
        assert case.check(out), f"{case.name}({name}={value!r}) out of range: {out!r}"


def _between(low: float, high: float) -> Callable[[Any], bool]:
    return lambda out: all(low - 1e-12 <= x <= high + 1e-12 for x in _numbers(out))


NONNEG = _between(0.0, math.inf)
FRACTION = _between(0.0, 1.0)

CASES = [
    # ---- units
    Case("units.pj_per_bit", units.pj_per_bit, {"power_w": 15.0, "gbps": 800.0},
         {"power_w": ANY, "gbps": ANY}, finite=False),
    Case("units.bytes_to_gib", units.bytes_to_gib, {"n_bytes": 2**30}, {"n_bytes": ANY},
         finite=False),
    Case("units.per_direction", units.per_direction, {"bidirectional": 900.0, "directions": 2},
         {"bidirectional": ANY, "directions": ANY}, finite=False),
    # ---- memory and compute
    Case("memory.model_state_bytes", memory.model_state_bytes,
         {"params": 7.5e9, "zero_stage": 1, "dp": 64},
         {"params": ANY, "zero_stage": ANY, "dp": ANY}, NONNEG),
    Case("memory.weights_bytes", memory.weights_bytes, {"params": 1e9, "bytes_per_param": 2},
         {"params": ANY, "bytes_per_param": ANY}, NONNEG),
    Case("memory.activation_bytes_per_layer", memory.activation_bytes_per_layer,
         {"model": "gpt3-175b", "micro_batch": 1, "seq_len": 2048, "tp": 8, "sp": True,
          "recompute": "selective", "flash_attention": False},
         {"model": MODELS, "micro_batch": ANY, "seq_len": ANY, "tp": ANY, "sp": FLAG,
          "flash_attention": FLAG, "recompute": st.sampled_from(["none", "Full", "", 2, None])},
         NONNEG, related={"model": ("tp",)}),
    Case("memory.training_memory", memory.training_memory,
         {"model": "gpt3-175b", "gpu": "A100", "tp": 8, "pp": 8, "dp": 16, "zero_stage": 1,
          "micro_batch": 1},
         {"model": MODELS, "gpu": GPUS, "tp": ANY, "pp": ANY, "dp": ANY, "zero_stage": ANY,
          "micro_batch": ANY}, related={"model": ("tp", "pp")}),
    Case("compute.forward_flops", compute.forward_flops,
         {"tokens": 2048, "params": 1e9, "n_layers": 24, "hidden": 2048, "seq_len": 2048},
         {"tokens": ANY, "params": ANY, "n_layers": ANY, "hidden": ANY, "seq_len": ANY}, NONNEG),
    Case("compute.utilisation", compute.utilisation,
         {"flops": 1e18, "seconds": 10.0, "n_gpus": 8, "peak_flops_per_gpu": 312e12},
         {"flops": ANY, "seconds": ANY, "n_gpus": ANY, "peak_flops_per_gpu": ANY}, NONNEG),
    Case("compute.flops_per_token", compute.flops_per_token,
         {"model": "gpt3-175b", "seq_len": 2048, "recompute": False},
         {"model": MODELS, "seq_len": ANY, "recompute": FLAG}, NONNEG),
    Case("compute.training_days", compute.training_days,
         {"params": 175e9, "tokens": 300e9, "n_gpus": 1024, "tflops_per_gpu": 140.0},
         {"params": ANY, "tokens": ANY, "n_gpus": ANY, "tflops_per_gpu": ANY, "recompute": FLAG},
         NONNEG),
    Case("compute.mfu", compute.mfu,
         {"tokens_per_s": 1e5, "model": "gpt3-175b", "n_gpus": 1024, "peak_tflops_per_gpu": 312},
         {"tokens_per_s": ANY, "model": MODELS, "n_gpus": ANY, "peak_tflops_per_gpu": ANY},
         NONNEG),
    Case("scaling.gpus_to_hold", scaling.gpus_to_hold,
         {"n_bytes": 350e9, "gpu": "A100", "usable_fraction": 0.9},
         {"n_bytes": ANY, "gpu": GPUS, "usable_fraction": ANY}, _between(1, 1e12)),
    # ---- collectives and data parallelism
    Case("collectives.collective_time", collectives.collective_time,
         {"op": "all_reduce", "size_bytes": 1e9, "n": 64, "link": "InfiniBand NDR",
          "algorithm": "ring"},
         {"op": st.sampled_from(["all_reduce", "allreduce", "", None]), "size_bytes": ANY,
          "n": ANY, "link": LINKS,
          "algorithm": st.sampled_from(["ring", "tree", "Ring", "sharp", 1])}, NONNEG),
    Case("collectives.algbw", collectives.algbw, {"size_bytes": 1e9, "time_s": 0.01},
         {"size_bytes": ANY, "time_s": ANY}, NONNEG),
    Case("collectives.busbw", collectives.busbw,
         {"size_bytes": 1e9, "time_s": 0.01, "op": "all_reduce", "n": 8},
         {"size_bytes": ANY, "time_s": ANY, "n": ANY}, NONNEG),
    Case("collectives.hierarchical_all_reduce_time", collectives.hierarchical_all_reduce_time,
         {"size_bytes": 1e9, "n_nodes": 16, "gpus_per_node": 8, "intra": "NVLink 4",
          "inter": "InfiniBand NDR"},
         {"size_bytes": ANY, "n_nodes": ANY, "gpus_per_node": ANY, "intra": LINKS,
          "inter": LINKS}, NONNEG),
    Case("data_parallel.gradient_all_reduce_time", data_parallel.gradient_all_reduce_time,
         {"grad_bytes": 350e9, "n_gpus": 64}, {"grad_bytes": ANY, "n_gpus": ANY}, NONNEG),
    Case("data_parallel.exposed_comm_time", data_parallel.exposed_comm_time,
         {"grad_bytes": 3e9, "bucket_bytes": 25e6, "backward_s": 0.2, "n_gpus": 64},
         {"grad_bytes": ANY, "bucket_bytes": ANY, "backward_s": ANY, "n_gpus": ANY,
          "overlap": FLAG}, NONNEG),
    Case("data_parallel.bucket_timeline", data_parallel.bucket_timeline,
         {"grad_bytes": 3e9, "bucket_bytes": 25e6, "backward_s": 0.2, "n_gpus": 64},
         {"grad_bytes": ANY, "bucket_bytes": ANY, "backward_s": ANY, "n_gpus": ANY,
          "overlap": FLAG}),
    Case("data_parallel.dp_step", data_parallel.dp_step,
         {"model": "gpt2-1.5b", "n_gpus": 64},
         {"model": MODELS, "n_gpus": ANY, "batch_per_gpu": ANY, "seq_len": ANY,
          "achieved_tflops": ANY, "bucket_bytes": ANY, "overlap": FLAG, "tp": ANY}),
    Case("data_parallel.weak_scaling", data_parallel.weak_scaling,
         {"model": "gpt2-1.5b", "n_gpus": [8, 64]},
         {"n_gpus": st.one_of(st.sampled_from([[], [0], [8, "64"], "8", 8, None, [2**62]]),
                              st.lists(st.sampled_from([1, 8, 16, 64, 1024, 4096]), min_size=1,
                                       max_size=3),
                              st.lists(ANY, max_size=3))},
         examples=30),
    Case("tensor_parallel.tp_layer", tensor_parallel.tp_layer,
         {"model": "gpt3-175b", "t": 8},
         {"model": MODELS, "t": ANY, "micro_batch": ANY, "seq_len": ANY, "sp": FLAG,
          "achieved_tflops": ANY, "bytes_per_element": ANY}),
    Case("zero.zero_comm", zero.zero_comm, {"params": 7.5e9, "zero_stage": 3, "dp": 64},
         {"params": ANY, "zero_stage": ANY, "dp": ANY}),
    # ---- pipeline
    Case("pipeline.simulate", pipeline.simulate,
         {"schedule": "1f1b", "p": 4, "m": 8, "v": 1},
         {"schedule": st.sampled_from(["gpipe", "1f1b", "zb-h1", "interleaved", "1F1B", ""]),
          "p": ANY, "m": ANY, "v": ANY, "forward_s": ANY, "transfer_s": ANY,
          "weight_grad_share": ANY, "n_layers": ANY}),
    Case("pipeline.bubble_fraction", pipeline.bubble_fraction,
         {"schedule": "1f1b", "p": 8, "m": 32}, {"p": ANY, "m": ANY, "v": ANY}, NONNEG),
    # ---- the planner
    Case("plan.search", plan.search,
         {"model": "gpt2-1.5b", "gpu": "A100", "n_gpus": 64, "global_batch": 512,
          "max_micro_batch": 4, "max_interleave": 2},
         {"model": MODELS, "gpu": GPUS, "n_gpus": ANY, "global_batch": ANY, "seq_len": ANY,
          "tokens": ANY, "max_micro_batch": ANY, "flash_attention": FLAG,
          "uneven_layers": FLAG}, examples=40, answers=(plan.NoPlanError,)),
    Case("plan.Plan", plan.Plan, {"tp": 8, "pp": 4, "dp": 2, "micro_batch": 1},
         {"tp": ANY, "pp": ANY, "dp": ANY, "micro_batch": ANY, "global_batch": ANY, "sp": FLAG,
          "zero_stage": ANY, "interleave": ANY, "flash_attention": FLAG}),
    # ---- fabric and optics
    Case("fabric.size_fabric", fabric.size_fabric,
         {"n_endpoints": 4096, "radix": 64, "port_gbps": 400.0},
         {"n_endpoints": ANY, "radix": ANY, "port_gbps": ANY, "oversubscription": ANY,
          "tiers": ANY}),
    Case("fabric.fabric_sweep", fabric.fabric_sweep,
         {"n_endpoints": [1024, 8192], "radix": 64, "planes": 2},
         {"n_endpoints": st.one_of(ANY, st.lists(ANY, max_size=3)), "radix": ANY,
          "port_gbps": ANY, "planes": ANY}, NONNEG),
    Case("fabric.size_multiplane", fabric.size_multiplane,
         {"n_endpoints": 32768, "nic_gbps": 800.0, "planes": 4, "switch_gbps": 102400.0},
         {"n_endpoints": ANY, "nic_gbps": ANY, "planes": ANY, "switch_gbps": ANY},
         related=dict.fromkeys(("nic_gbps", "planes", "switch_gbps"), ("n_endpoints",))),
    Case("fabric.simulate_load_balance", fabric.simulate_load_balance,
         {"n_flows": 16, "n_paths": 8, "trials": 200},
         {"n_flows": ANY, "n_paths": ANY, "load": ANY, "path_slowdown": ANY, "trials": ANY,
          "seed": ANY}),
    Case("fabric.ecmp_expected_utilisation", fabric.ecmp_expected_utilisation,
         {"n_flows": 8, "n_paths": 8}, {"n_flows": ANY, "n_paths": ANY}, FRACTION),
    Case("fabric.simulate_reordering", fabric.simulate_reordering,
         {"n_paths": 4, "n_packets": 2000},
         {"n_paths": ANY, "rate_gbps": ANY, "packet_bytes": ANY, "n_packets": ANY,
          "skew_us": ANY, "jitter_us": ANY}),
    Case("optics.lanes_needed", optics.lanes_needed, {"gbps": 1600.0, "lane_gbps": 112},
         {"gbps": ANY, "lane_gbps": st.sampled_from([112, 224, 100, "112", 112.0, True])},
         _between(1, 1e12)),
    Case("optics.choose", optics.choose, {"length_m": 30.0, "gbps": 800.0, "choice": "auto"},
         {"length_m": ANY, "gbps": ANY, "copper": FLAG,
          "choice": st.sampled_from(["auto", "dsp", "LPO", "xyz", None])}),
    # ---- reliability
    Case("reliability.goodput", reliability.goodput,
         {"interval_s": 3600.0, "delta_s": 60.0, "mtbf_s": 10800.0, "restart_s": 600.0},
         {"interval_s": ANY, "delta_s": ANY, "mtbf_s": ANY, "restart_s": ANY}, FRACTION),
    Case("reliability.goodput_first_order", reliability.goodput_first_order,
         {"interval_s": 3600.0, "delta_s": 60.0, "mtbf_s": 10800.0},
         {"interval_s": ANY, "delta_s": ANY, "mtbf_s": ANY, "restart_s": ANY}, FRACTION),
    Case("reliability.daly_interval_s", reliability.daly_interval_s,
         {"delta_s": 300.0, "mtbf_s": 86400.0}, {"delta_s": ANY, "mtbf_s": ANY}, NONNEG),
    Case("reliability.simulate", reliability.simulate,
         {"horizon_s": 30 * 86400.0, "interval_s": 3600.0, "delta_s": 60.0, "mtbf_s": 10800.0,
          "reps": 50},
         {"horizon_s": ANY, "interval_s": ANY, "delta_s": ANY, "mtbf_s": ANY,
          "restart_s": ANY, "reps": ANY, "seed": ANY}, examples=40),
    Case("reliability.mtbf_h", reliability.mtbf_h, {"n_gpus": 16384},
         {"n_gpus": ANY, "study_name": st.sampled_from(["llama3-405b", "llama3", "", None])},
         NONNEG),
    Case("reliability.spares_needed", reliability.spares_needed,
         {"node_failures_per_h": 0.5, "repair_s": 7200.0},
         {"node_failures_per_h": ANY, "repair_s": ANY, "risk": ANY}, NONNEG),
    Case("reliability.straggler_step_time_s", reliability.straggler_step_time_s,
         {"n_gpus": 1024, "base_s": 1.0, "jitter": 0.05},
         {"n_gpus": ANY, "base_s": ANY, "jitter": ANY}, NONNEG),
    Case("reliability.checkpoint_plan", reliability.checkpoint_plan,
         {"model_or_params": "gpt3-175b", "n_gpus": 1024, "storage_gbytes_s": 100.0},
         {"model_or_params": st.one_of(ANY, MODELS), "n_gpus": ANY, "storage_gbytes_s": ANY,
          "tp": ANY, "pp": ANY, "asynchronous": FLAG}),
    # ---- synthesis and costs
    Case("synthesis.transfer_time_s", synthesis.transfer_time_s,
         {"link": "NVLink 5", "size_bytes": 1e6}, {"link": LINKS, "size_bytes": ANY}, NONNEG),
    Case("synthesis.cluster_plan", synthesis.cluster_plan,
         {"model": "llama3-70b", "gpu": "H100", "n_gpus": 1024, "global_batch": 1024,
          "tokens": 15e12},
         {"model": MODELS, "gpu": GPUS, "n_gpus": ANY, "global_batch": ANY, "tokens": ANY,
          "planes": ANY, "oversubscription": ANY, "storage_gbytes_s": ANY,
          "gpus_per_server": ANY, "gpus_per_node": st.one_of(ANY, st.sampled_from(
              ["NVL72", "GB200 NVL72", "NVL72x", 72])),
          "optics_choice": st.sampled_from(["dsp", "LPO", "dspx", None, 3]),
          "study": st.sampled_from(["llama3-405b", "llama3", None]),
          "switch": st.sampled_from(["Tomahawk 5", "Tomahawk6x", 1]),
          "lengths_m": st.sampled_from([{"leaf-spine": 50.0}, {"leaf-spine": -1}, {"x": 1},
                                        {"spine-core": float("nan")}])},
         examples=40, answers=(plan.NoPlanError,),
         related={"model": ("n_gpus", "global_batch"), "gpu": ("n_gpus", "gpus_per_node"),
                  "planes": ("n_endpoints",), "oversubscription": ("n_endpoints",)}),
    Case("synthesis.reliability_at", synthesis.reliability_at,
         {"model": "llama3-70b", "n_gpus": 1024},
         {"model": st.one_of(MODELS, ANY), "n_gpus": ANY, "storage_gbytes_s": ANY, "tp": ANY,
          "pp": ANY, "study": st.sampled_from(["llama3-405b", "llama3", None, 1]),
          "gpus_per_server": ANY, "detect_s": ANY, "init_s": ANY}),
    Case("synthesis.fibre_delay_s", synthesis.fibre_delay_s,
         {"distance_m": 1e4}, {"distance_m": ANY, "ns_per_m": ANY}, NONNEG),
    Case("costs.run_cost", costs.run_cost,
         {"n_gpus": 1024, "wall_hours": 720.0, "gpu_tdp_w": 700.0, "optics_power_w": 5e4,
          "optics_relative_cost": 1000.0, "price_per_gpu_hour": 2.0, "price_per_kwh": 0.1,
          "reference_module_price": 1000.0},
         {"n_gpus": ANY, "wall_hours": ANY, "gpu_tdp_w": ANY, "optics_power_w": ANY,
          "price_per_gpu_hour": ANY, "pue": ANY}, NONNEG),
    # ---- catalog lookups
    Case("catalog.model", catalog.model, {"spec": "gpt3-175b"}, {"spec": MODELS}),
    Case("catalog.gpu", catalog.gpu, {"spec": "H100"}, {"spec": GPUS}),
    Case("catalog.link", catalog.link, {"spec": "NVLink 4"}, {"spec": LINKS}),
]

# Lookups name what they look up rather than their one positional argument.
_LOOKUP_KIND = {"catalog.model": "model", "catalog.gpu": "gpu", "catalog.link": "link"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_result_is_finite_in_range_or_a_clear_error(case: Case):
    @settings(SETTINGS, max_examples=case.examples)
    @given(data=st.data())
    def prop(data):
        name = data.draw(st.sampled_from(sorted(case.vary)), label="parameter")
        value = data.draw(case.vary[name], label=name)
        if case.name in _LOOKUP_KIND:
            try:
                with hang_guard():
                    case.call(value)
            except ValueError as exc:
                assert _mentions(str(exc), _LOOKUP_KIND[case.name]), str(exc)
            return
        run_case(case, name, value)

    prop()


def test_the_suite_covers_many_functions():
    assert len(CASES) >= 50
    assert len({c.name.split(".")[0] for c in CASES}) >= 14
