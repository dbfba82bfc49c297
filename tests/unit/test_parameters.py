"""Every notebook's parameter rules (scaleout.parameters): they cover exactly the notebook's
parameters cell, accept its defaults and every listed parameter set, and answer any value, of
any type, with either acceptance or one clear line, quickly."""

from __future__ import annotations

import signal
import sys
import tomllib
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scaleout import parameters, report

sys.path.insert(0, str(Path(__file__).parents[1] / "notebooks"))
import param_gen

NOTEBOOKS = sorted(parameters.SPECS)
SETS = tomllib.loads((report.NOTEBOOKS_DIR / "parameter_sets.toml").read_text())


def _defaults(key: str) -> dict:
    return report.notebook_parameters(report.NOTEBOOKS_DIR / f"{key}.ipynb")


@contextmanager
def hang_guard(seconds: int):
    """Fail (rather than hang the suite) if the block runs longer than ``seconds``."""
    def stop(*_):
        raise TimeoutError(f"no answer within {seconds} s")
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_every_notebook_with_a_parameters_cell_has_rules():
    stems = {p.relative_to(report.NOTEBOOKS_DIR).with_suffix("").as_posix()
             for p in report.NOTEBOOKS_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts}
    assert stems == set(parameters.SPECS)


@pytest.mark.parametrize("key", NOTEBOOKS)
def test_rules_name_exactly_the_parameters_cell(key):
    assert set(parameters.spec(key).rules) == set(_defaults(key))


@pytest.mark.parametrize("key", NOTEBOOKS)
def test_defaults_and_every_listed_set_pass(key):
    """As papermill runs them (files named from the notebook's folder, its kernel's)."""
    for changes in [{}, *SETS.get(key, [])]:
        parameters.check(key, {**_defaults(key), **changes})


def test_an_unknown_notebook_suggests_close_names():
    with pytest.raises(ValueError, match="did you mean '02_gpu_memory_math'"):
        parameters.spec("02_gpu_memory_mat")


@pytest.mark.parametrize(("key", "changes", "message"), [
    ("00_start_here", {"search_term": "zzzqqq"}, "matches no glossary term"),
    ("02_gpu_memory_math", {"tp": 5}, "tp=5 must divide"),
    ("02_gpu_memory_math", {"sp": "False"}, "sp must be true or false"),
    ("02_gpu_memory_math", {"model_name": "megatron-17b"}, "not in the catalog"),
    ("04_tensor_parallelism", {"tp": 64}, "tp=64 must divide the heads of gpt3-175b=96"),
    ("05_pipeline_parallelism", {"m": 12}, "m=12 must be a multiple of p=8"),
    ("07_all_reduce_cost", {"gpus_per_node": 3}, "gpus_per_node=3 must divide n_gpus=1000"),
    ("07_all_reduce_cost", {"tcp_link_name": "InfiniBand NDR"},
     "is an RDMA network port; choose a kernel-TCP scale-out link"),
    ("08_3d_parallelism_planner", {"n_gpus": 10**30}, "n_gpus must be a whole number from 1"),
    ("09_clos_fabrics", {"radix": 63}, "radix must be a multiple of 2"),
    ("09_clos_fabrics", {"rdma_link_names": ["TCP/IP 100GbE"]}, "is a kernel-TCP"),
    ("11_fault_tolerance", {"tp": 3}, "tp x pp=48 must divide n_gpus=16384"),
    ("12_scale_up_vs_scale_out", {"design_domain": 4}, "design_domain=4 must be one of"),
    ("12_scale_up_vs_scale_out", {"site_distances_km": [1, float("nan")]},
     r"site_distances_km\[1\]"),
    ("15_measure_it_yourself", {"plan_gpus": 1},
     r"plan_gpus=1 x plan_gpu='H100-SXM5-80GB' with plan_batch=512: llama3-70b fits on none"),
    ("15_measure_it_yourself", {"plan_gpu": "V100-SXM2-32GB"},
     "plan_gpu='V100-SXM2-32GB'.*has no usual network port"),
    ("reports/cluster_plan", {"network_name": "NVLink 4"}, "is a scale-up link"),
])
def test_bad_values_are_refused_in_one_line_naming_the_parameter(key, changes, message):
    with pytest.raises(ValueError, match=message) as e:
        parameters.check(key, {**_defaults(key), **changes})
    assert "\n" not in str(e.value)


ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(-10**40, 10**40),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["", "custom", "H100", "llama3-70b", "NVLink 4", "InfiniBand NDR", "1e12"]),
    st.lists(st.one_of(st.integers(-5, 10**6), st.floats(-1e3, 1e6), st.text(max_size=8)),
             max_size=10),
)


@pytest.mark.parametrize("key", NOTEBOOKS)
@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_value_of_any_type_gets_an_answer_not_a_crash(key, data):
    defaults = _defaults(key)
    name = data.draw(st.sampled_from(sorted(defaults)))
    value = data.draw(ANY_VALUE)
    with hang_guard(20):
        try:
            out = parameters.check(key, {**defaults, name: value})
        except ValueError as exc:
            assert "\n" not in str(exc)
            return
    assert set(out) == set(defaults)


@pytest.mark.parametrize("key", NOTEBOOKS)
def test_values_drawn_inside_the_rules_are_answered(key):
    """Sets drawn from the rules themselves (as the notebook runs in tests/notebooks do)."""
    import numpy as np

    rng = np.random.default_rng(7)
    accepted = 0
    with hang_guard(60):
        for _ in range(30):
            values = param_gen.draw_set(key, rng)
            try:
                parameters.check(key, values)
                accepted += 1
            except ValueError as exc:
                assert "\n" not in str(exc)
    varied = param_gen.varied_sets(key, _defaults(key), seed=7, n=3)
    assert varied, "no varied set is accepted: the rules or the generator are too narrow"
