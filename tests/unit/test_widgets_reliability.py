"""The checkpoint-interval explorer without a browser: set controls, read numbers and the chart."""

import pytest
from scaleout import reliability, units
from scaleout.widgets.reliability import (
    CUSTOM_SIZE,
    MTBF_SOURCES,
    CheckpointExplorer,
    duration_text,
)


@pytest.fixture
def explorer():
    return CheckpointExplorer()


def test_initial_state_matches_the_library(explorer):
    r = explorer.result
    assert explorer.error is None
    plan = reliability.checkpoint_plan("llama3-405b", 16384, storage_gbytes_s=2000)
    mtbf_s = reliability.mtbf_h(16384) * 3600
    assert r["delta_s"] == pytest.approx(plan.blocking_s)
    assert r["mtbf_s"] == pytest.approx(mtbf_s)
    assert r["goodput"] == pytest.approx(reliability.goodput(300, plan.blocking_s, mtbf_s, 600))
    assert r["daly_s"] == pytest.approx(reliability.daly_interval_s(plan.blocking_s, mtbf_s))
    assert f"{r['goodput']:.2%}" in explorer.readout.value
    assert "7.76 failures a day" in explorer.readout.value
    assert explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")
    assert explorer.controls["checkpoint_tb"].disabled and explorer.controls["mtbf_h"].disabled


def test_interval_moves_along_the_curve(explorer):
    before, image = explorer.result["goodput"], explorer.image.value
    explorer.controls["interval_min"].value = 60.0
    assert explorer.result["goodput"] < before
    assert explorer.result["goodput"] == pytest.approx(reliability.goodput(
        3600, explorer.result["delta_s"], explorer.result["mtbf_s"], 600))
    assert explorer.image.value != image and "τ = 1 h" in bytes(explorer.image.value).decode()


def test_more_gpus_fail_more_often_and_want_shorter_intervals(explorer):
    daly_16k = explorer.result["daly_s"]
    explorer.controls["n_gpus"].value = 131072
    assert explorer.result["mtbf_s"] == pytest.approx(reliability.mtbf_h(131072) * 3600)
    assert explorer.result["daly_s"] < daly_16k
    assert "62.1 failures a day" in explorer.readout.value
    explorer.controls["study"].value = "meta-rsc1"  # Kokolis et al.: 0.23 h at 131,072 GPUs
    assert explorer.result["mtbf_s"] == pytest.approx(reliability.mtbf_h(131072, "meta-rsc1")
                                                      * 3600)
    assert "13.5 min" in explorer.readout.value


def test_typed_mtbf_and_custom_checkpoint_size(explorer):
    explorer.set_values(interval_min=100.0, mtbf_from=MTBF_SOURCES[1], mtbf_h=24.0,
                        model=CUSTOM_SIZE, checkpoint_tb=3.0, storage_gbytes_s=10.0)
    r = explorer.result
    assert explorer.error is None and not explorer.controls["mtbf_h"].disabled
    assert explorer.controls["study"].disabled
    assert r["plan"].total_bytes == pytest.approx(3e12)
    assert r["delta_s"] == pytest.approx(300.0)  # 3 TB at 10 GB/s: Daly's delta of 5 min
    assert units.seconds_to_minutes(r["daly_s"]) == pytest.approx(116.69, abs=0.01)  # Fig. 3


def test_bad_values_show_a_status_and_a_valid_value_clears_it(explorer):
    explorer.controls["mtbf_from"].value = MTBF_SOURCES[1]
    good, image = explorer.result, explorer.image.value
    explorer.controls["mtbf_h"].value = 0.0
    assert explorer.error == "MTBF (hours) must be a finite number > 0, got 0.0"
    assert "⚠" in explorer.status.value
    explorer.controls["mtbf_h"].value = -2.0
    assert "got -2.0" in explorer.error
    assert explorer.result is good and explorer.image.value == image  # last valid chart stays
    explorer.controls["mtbf_h"].value = 3.0
    assert explorer.error is None and explorer.status.value == ""

    explorer.controls["n_gpus"].value = 0
    assert "an empty cluster" in explorer.error and "⚠" in explorer.status.value
    explorer.controls["n_gpus"].value = 1024
    assert explorer.error is None

    explorer.controls["storage_gbytes_s"].value = 1.0  # 5.7 TB at 1 GB/s: over 1.5 hours
    assert explorer.error.startswith("interval_s = 300 s is shorter than the checkpoint write")
    explorer.controls["interval_min"].value = 120.0
    assert explorer.error is None and explorer.status.value == ""


def test_duration_text_picks_a_unit():
    assert [duration_text(x) for x in (2.5, 90, 3 * 3600, 5 * 86400, float("inf"))] == \
        ["2.5 s", "1.5 min", "3 h", "5 days", "forever"]
