"""Report parameters are checked before anything runs; sweep files are read strictly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from scaleout import costs, report

CLUSTER = report.DEFAULT_REPORT


def test_the_cluster_plan_report_exists_with_a_parameters_cell():
    params = report.notebook_parameters(CLUSTER)
    for name in ("model_name", "gpu_name", "n_gpus", "gpus_per_node", "tokens", "network_name",
                 "planes", "optics_choice", "storage_gbytes_s", "price_per_gpu_hour",
                 "price_per_kwh", "summary_path"):
        assert name in params


def test_parameters_cells_may_hold_arithmetic():
    params = report.notebook_parameters(report.NOTEBOOKS_DIR / "07_all_reduce_cost.ipynb")
    assert params["message_bytes"] == 2**28


@pytest.mark.parametrize(("text", "value"), [
    ("8", 8), ("1.5e12", 1.5e12), ("1e12", 1e12), ("true", True), ("llama3-70b", "llama3-70b"),
    ("[8, 72]", [8, 72]), ("", ""),
])
def test_parse_value(text, value):
    assert report.parse_value(text) == value


def test_good_parameters_are_converted_to_the_defaults_types():
    out = report.check_parameters(CLUSTER, {"n_gpus": 1024.0, "tokens": 10**12, "planes": 2})
    assert out == {"n_gpus": 1024, "tokens": 1e12, "planes": 2}
    assert isinstance(out["n_gpus"], int) and isinstance(out["tokens"], float)


@pytest.mark.parametrize(("params", "message"), [
    ({"n_gpu": 8}, "has no parameter 'n_gpu'; did you mean 'n_gpus'"),
    ({"n_gpus": "many"}, "n_gpus='many' must be a whole number"),
    ({"n_gpus": 1.5}, "must be a whole number"),
    ({"flash_attention": 1}, "must be true/false"),
    ({"model_name": "llama3-7b"}, "did you mean 'llama3-70b'"),
    ({"gpu_name": "H200X"}, "gpu 'H200X' is not in the catalog"),
    ({"optics_choice": "lpo2"}, "optics_choice must be one of"),
    ({"network_name": "NVLink 4"}, "is a scale-up link"),
    ({"failure_study": "nope"}, "failure_study must be one of"),
    ({"pue": 5.0}, "pue must be a number from 1.0 to 3.0"),
    ({"model_name": "custom"}, "custom_layers must be a whole number >= 1, got 0"),
])
def test_bad_parameters_fail_fast_with_one_line(params, message):
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message) as e:
        report.check_parameters(CLUSTER, params)
    assert time.perf_counter() - start < 5  # generous: the check reads a JSON file
    assert "\n" not in str(e.value)


def test_missing_notebook_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        report.notebook_parameters(tmp_path / "nope.ipynb")


def test_sweep_files_list_and_mapping_forms(tmp_path: Path):
    listed = tmp_path / "a.yaml"
    listed.write_text("- name: small\n  n_gpus: 512\n- n_gpus: 1024\n")
    assert report.load_sweep(listed) == {"small": {"n_gpus": 512}, "set-2": {"n_gpus": 1024}}
    named = tmp_path / "b.yaml"
    named.write_text("sets:\n  big: {n_gpus: 4096}\n  rack: {gpus_per_node: 72}\n")
    assert list(report.load_sweep(named)) == ["big", "rack"]


@pytest.mark.parametrize(("text", "message"), [
    ("", "must hold a list"), ("- 3\n", "must be a mapping"), ("[]\n", "holds no parameter sets"),
    ("a: [\n", "not valid YAML"),
])
def test_bad_sweep_files(tmp_path: Path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        report.load_sweep(path)


def test_run_cost_adds_up():
    c = costs.run_cost(1000, 24.0, 700.0, 5000.0, 300.0, price_per_gpu_hour=2.0,
                       price_per_kwh=0.1, reference_module_price=1000.0, pue=1.2)
    assert c.gpu_hours == 24_000 and c.gpu_cost == 48_000
    assert c.energy_kwh == pytest.approx((1000 * 700 + 5000) * 24 * 1.2 / 1000)
    assert c.optics_cost == 300_000
    assert c.total == pytest.approx(c.gpu_cost + c.energy_cost + c.optics_cost)
    with pytest.raises(ValueError, match="pue"):
        costs.run_cost(1, 1.0, 1.0, 0.0, 0.0, price_per_gpu_hour=0, price_per_kwh=0,
                       reference_module_price=0, pue=0.5)
