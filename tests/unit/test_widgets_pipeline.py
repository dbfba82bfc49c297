"""The pipeline explorer without a browser: set controls, read numbers and the chart."""

import re

import pytest
from scaleout import pipeline, plotting
from scaleout.widgets.pipeline import MAX_M, MAX_P, MAX_V, PipelineExplorer


@pytest.fixture
def explorer():
    return PipelineExplorer()


def test_initial_state_matches_library(explorer):
    want = pipeline.simulate("1f1b", 4, 8, forward_s=1e-3)
    t = explorer.result
    assert explorer.error is None
    assert (t.schedule, t.p, t.m, t.v) == ("1f1b", 4, 8, 1)
    assert t.makespan_s == pytest.approx(want.makespan_s) == pytest.approx(33e-3)
    assert t.bubble_fraction == pytest.approx(3 / 8)
    assert "37.5%" in explorer.readout.value and ">33 ms<" in explorer.readout.value
    assert explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")
    assert explorer.controls["v"].disabled  # chunks only mean something when interleaving


def test_controls_change_numbers_and_chart(explorer):
    before = explorer.image.value
    explorer.controls["m"].value = 16
    assert explorer.result.bubble_fraction == pytest.approx(3 / 16)
    assert explorer.image.value != before
    explorer.set_values(schedule="interleaved", v=2)
    assert not explorer.controls["v"].disabled
    assert explorer.result.v == 2 and explorer.result.bubble_fraction == pytest.approx(3 / 32)
    assert ">9.38%<" in explorer.readout.value
    explorer.controls["schedule"].value = "gpipe"
    assert explorer.result.v == 1 and list(explorer.result.peak_in_flight) == [16] * 4
    assert "16 micro-batches" in explorer.readout.value


def test_send_time_grows_the_simulated_bubble_only(explorer):
    explorer.controls["p2p_ms"].value = 0.5
    t = explorer.result
    assert t.bubble_fraction > t.bubble_closed_form == pytest.approx(3 / 8)
    assert t.makespan_s == pytest.approx(
        pipeline.simulate("1f1b", 4, 8, forward_s=1e-3, transfer_s=0.5e-3).makespan_s)
    assert "formula assumes they are free" in explorer.readout.value


def test_bad_input_shows_message_and_recovers(explorer):
    explorer.set_values(schedule="interleaved", v=2)
    good = explorer.result
    image = explorer.image.value
    explorer.controls["m"].value = 6
    assert explorer.error == ("m=6 must be a multiple of p=4 for the interleaved schedule "
                              "(as in Megatron-LM); try m=4 or m=8")
    assert "⚠" in explorer.status.value and "m=6" in explorer.status.value
    assert explorer.result is good and explorer.image.value == image  # last valid chart stays
    explorer.controls["m"].value = 12
    assert explorer.error is None and explorer.status.value == ""
    assert explorer.result.m == 12 and explorer.result.bubble_fraction == pytest.approx(3 / 24)


def test_largest_schedule_the_sliders_allow(explorer):
    explorer.set_values(schedule="interleaved", p=MAX_P, m=MAX_M, v=MAX_V)
    assert explorer.error is None
    assert explorer.result.n_tasks == 2 * MAX_P * MAX_M * MAX_V
    assert explorer.result.bubble_fraction == pytest.approx((MAX_P - 1) / (MAX_V * MAX_M))


def test_zero_bubble_is_offered(explorer):
    explorer.controls["schedule"].value = "zb-h1"
    assert explorer.error is None
    assert explorer.result.bubble_fraction == pytest.approx(3 / (3 * 8))
    assert b"weight gradient" in bytes(explorer.image.value)


def test_unknown_control_is_a_clear_error():
    with pytest.raises(ValueError, match="no control 'stages'"):
        PipelineExplorer(stages=4)


def test_gantt_svg_draws_every_pass_once():
    t = pipeline.simulate("interleaved", 4, 8, 2, forward_s=1e-3)
    svg = plotting.pipeline_gantt_svg(t, title="x").decode()
    paths = re.findall(r'<path fill="[^"]+" d="([^"]+)"/>', svg)
    assert sum(d.count("z") for d in paths) == t.n_tasks == 128
    assert svg.count("<text") > t.n_tasks // 2  # micro-batch numbers fit at this size
    assert "GPU 3" in svg and "ideal (no bubble)" in svg
    dense = plotting.pipeline_gantt_svg(pipeline.simulate("interleaved", 16, 64, 4), labels=False)
    assert b'stroke="white"' not in dense  # no white edges on bars a pixel wide


def test_stage_memory_explorer_draws_every_rank_and_survives_bad_input():
    """Llama 3 70B, TP 8 × PP 4 × DP 2, micro-batch 2: four ranks drawn, the first the
    fullest (p - i micro-batches in flight: 4, 3, 2, 1); a layout the planner refuses shows
    its sentence and the explorer keeps working."""
    from scaleout import plan
    from scaleout.widgets.pipeline import StageMemoryExplorer

    e = StageMemoryExplorer()
    r = e.result
    assert e.error is None and len(r.stages) == 4
    assert [s.in_flight for s in r.stages] == [4, 3, 2, 1]
    want = plan.evaluate("llama3-70b", "H100-SXM5-80GB", plan.Plan(
        tp=8, pp=4, dp=2, micro_batch=2, global_batch=64, zero_stage=1, sp=True,
        recompute="selective", flash_attention=True))
    assert r.memory_bytes == pytest.approx(want.memory_bytes)
    svg = bytes(e.image.value).decode()
    assert svg.startswith("<svg") and all(f"stage {i}" in svg for i in range(4))
    assert "fullest rank" in e.readout.value and ">0: " in e.readout.value
    e.controls["tp"].value = 1  # sequence parallelism needs tp > 1
    assert "sequence parallel" in e.status.value and e.error
    e.controls["sp"].value = False
    e.controls["pp"].value = 8
    assert e.error is None and len(e.result.stages) == 8
