"""The explorers of notebooks 03, 04 and 06 without a browser: set controls, read numbers."""

import math

import pytest
from scaleout import (
    catalog,
    collectives,
    data_parallel,
    memory,
    svgchart,
    tensor_parallel,
    units,
    zero,
)
from scaleout.widgets.parallel import DataParallelExplorer, TensorParallelExplorer, ZeroExplorer


def is_svg(explorer) -> bool:
    return explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")


# =========================================================================== 03
@pytest.fixture
def dp_explorer():
    return DataParallelExplorer(model="gpt2-1.5b", gpu="H100-SXM5-80GB", link="InfiniBand NDR",
                                n_gpus=1024, bucket_mib=25, overlap=True, batch_per_gpu=8)


def test_dp_initial_state_matches_library(dp_explorer):
    fabric = collectives.NodeNetwork(intra="NVLink 4", inter="InfiniBand NDR")
    want = data_parallel.dp_step("gpt2-1.5b", 1024, fabric=fabric, batch_per_gpu=8,
                                 bucket_bytes=25 * units.MIB, achieved_tflops=400)
    assert dp_explorer.error is None and is_svg(dp_explorer)
    assert dp_explorer.result["step"] == want
    assert "scaling efficiency" in dp_explorer.readout.value
    assert set(dp_explorer.result["curves"]) == {
        "InfiniBand NDR", "RoCE v2 400GbE", "TCP/IP 100GbE", "InfiniBand NDR, no overlap"}


def test_dp_slow_link_without_overlap_collapses(dp_explorer):
    fast = dp_explorer.result["step"].efficiency
    before = dp_explorer.image.value
    dp_explorer.set_values(link="TCP/IP 100GbE", overlap=False, hierarchical=False,
                           gpus_per_node=1, bucket_mib=1)
    step = dp_explorer.result["step"]
    assert step.efficiency < 0.05 < 0.9 < fast
    assert step.effective_gpus < 30  # a thousand GPUs deliver fewer than thirty
    assert step.exposed_comm_s == pytest.approx(step.comm_s)  # nothing hidden
    assert dp_explorer.image.value != before
    assert "TCP/IP 100GbE, with overlap" in dp_explorer.result["curves"]


def test_dp_memory_verdict(dp_explorer):
    assert dp_explorer.result["memory"].fits
    assert "fits" in dp_explorer.readout.value
    dp_explorer.controls["model"].value = "llama3-8b"
    mem = dp_explorer.result["memory"]
    assert not mem.fits and mem.optimizer == 12 * memory.param_count("llama3-8b")
    assert "does NOT fit" in dp_explorer.readout.value


def test_dp_every_node_size_and_gpu_count_on_the_menus_is_valid(dp_explorer):
    """The menus offer powers of two only, so every combination fills whole nodes."""
    for g in dp_explorer.controls["gpus_per_node"].options:
        for n in (1, 4, 16, 65536):
            dp_explorer.set_values(gpus_per_node=g, n_gpus=n)
            assert dp_explorer.error is None, (g, n, dp_explorer.error)
            assert 0 < dp_explorer.result["step"].efficiency <= 1


def test_dp_unknown_link_name_is_reported():
    explorer = DataParallelExplorer()
    explorer.controls["link"].options = [*explorer.controls["link"].options, "Carrier pigeon"]
    explorer.controls["link"].value = "Carrier pigeon"
    assert explorer.error.startswith("inter: link 'Carrier pigeon' is not in the catalog")
    assert "⚠" in explorer.status.value
    explorer.controls["link"].value = "InfiniBand NDR"
    assert explorer.error is None and explorer.status.value == ""


# =========================================================================== 04
@pytest.fixture
def tp_explorer():
    return TensorParallelExplorer(model="gpt3-175b", t=8, micro_batch=1, seq_len=2048)


def test_tp_initial_state_matches_library(tp_explorer):
    want = tensor_parallel.tp_layer("gpt3-175b", 8, micro_batch=1, seq_len=2048,
                                    fabric=collectives.NodeNetwork(), achieved_tflops=400)
    assert tp_explorer.error is None and is_svg(tp_explorer)
    assert tp_explorer.result["layer"] == want
    assert tp_explorer.result["layer"].traffic_bytes == 16 * 2048 * 12288 * 7 / 8
    assert "4 all-reduce" in tp_explorer.readout.value


def test_tp_beyond_the_node_crosses_the_network(tp_explorer):
    inside = tp_explorer.result["layer"].comm_fraction
    before = tp_explorer.image.value
    tp_explorer.controls["t"].value = 16
    layer = tp_explorer.result["layer"]
    assert layer.crosses_network and layer.comm_fraction > 2 * inside
    assert "crosses the network" in tp_explorer.readout.value
    assert tp_explorer.image.value != before
    tp_explorer.controls["gpus_per_node"].value = 72  # an NVL72-sized domain
    assert not tp_explorer.result["layer"].crosses_network


def test_tp_sequence_parallelism_same_time_less_memory(tp_explorer):
    comm = tp_explorer.result["layer"].comm_s
    act = tp_explorer.result["act"]
    assert act[True] < act[False]
    assert act[True] == memory.activation_bytes_per_layer("gpt3-175b", 1, 2048, 8, sp=True,
                                                          recompute="selective")
    tp_explorer.controls["sp"].value = True
    assert tp_explorer.result["layer"].comm_s == pytest.approx(comm)
    assert "reduce-scatter" in tp_explorer.readout.value


def test_tp_bad_input_shows_message_and_recovers(tp_explorer):
    good = tp_explorer.result
    tp_explorer.controls["t"].value = 64  # 64 does not divide GPT-3's 96 heads
    assert tp_explorer.error.startswith("tp=64 must divide n_heads=96")
    assert "⚠" in tp_explorer.status.value and tp_explorer.result is good
    tp_explorer.controls["t"].value = 32
    assert tp_explorer.error is None and tp_explorer.result["layer"].t == 32


# =========================================================================== 06
@pytest.fixture
def zero_explorer():
    return ZeroExplorer(model="gpt3-175b", gpu="H100-SXM5-80GB", zero_stage=3, dp=64,
                        recompute="full")


def test_zero_initial_state_matches_library(zero_explorer):
    r = zero_explorer.result
    assert zero_explorer.error is None and is_svg(zero_explorer)
    for z in range(4):
        assert r["memory"][z] == memory.training_memory("gpt3-175b", "H100", dp=64,
                                                        zero_stage=z, recompute="full")
    assert r["lowest"] == 3 and r["memory"][3].fits
    fabric = collectives.NodeNetwork(intra="NVLink 4", inter="InfiniBand NDR")
    assert r["comm"][3] == zero.zero_comm(memory.stage_params("gpt3-175b"), 3, 64, fabric)
    assert "3Ψ" in zero_explorer.readout.value


def test_zero_stage_3_costs_half_again_the_traffic(zero_explorer):
    comm = zero_explorer.result["comm"]
    assert math.isclose(comm[3].total_s, 1.5 * comm[0].total_s)
    assert math.isclose(comm[1].total_s, comm[0].total_s)
    before = zero_explorer.image.value
    zero_explorer.controls["zero_stage"].value = 1
    assert "2Ψ" in zero_explorer.readout.value and "does not fit" in zero_explorer.readout.value
    assert zero_explorer.image.value != before


def test_zero_more_gpus_less_memory(zero_explorer):
    m64 = zero_explorer.result["memory"][3].total
    zero_explorer.controls["dp"].value = 1024
    assert zero_explorer.result["memory"][3].total < m64
    zero_explorer.controls["dp"].value = 1
    assert zero_explorer.result["lowest"] is None
    assert "no stage fits" in zero_explorer.readout.value


def test_zero_bad_input_shows_message_and_recovers(zero_explorer):
    zero_explorer.set_values(gpus_per_node=16, dp=8)
    assert zero_explorer.error is None
    zero_explorer.controls["model"].options = [*catalog.model_names(), "gpt-9"]
    zero_explorer.controls["model"].value = "gpt-9"
    assert zero_explorer.error.startswith("model 'gpt-9' is not in the catalog")
    assert "⚠" in zero_explorer.status.value
    zero_explorer.controls["model"].value = "llama3-70b"
    assert zero_explorer.error is None


def test_unknown_control_is_a_clear_error():
    with pytest.raises(ValueError, match="no control 'stage'"):
        ZeroExplorer(stage=2)


# =========================================================================== svg helpers
def test_line_chart_and_vstack():
    svg = svgchart.line_chart({"a": ([1, 10, 100], [3, 2, 1]), "b": ([1, 100], [1, 5])},
                              {"a": "red", "b": "blue"}, logx=True, dashed=["b"],
                              marker_x=10, marker_label="ten", xlabel="x", ylabel="y",
                              points={"a": (10, 2)})
    text = svg.decode()
    assert text.startswith("<svg") and text.count("<polyline") == 2
    assert "stroke-dasharray" in text and ">ten<" in text and "<circle" in text
    both = svgchart.vstack([svg, svg]).decode()
    assert both.count("<svg") == 3 and 'height="680"' in both
