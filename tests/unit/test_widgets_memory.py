"""The memory explorer without a browser: set controls, read numbers and the chart."""

import pytest
from scaleout import memory
from scaleout.widgets.memory import CUSTOM, MemoryExplorer


@pytest.fixture
def explorer():
    return MemoryExplorer(model="gpt3-175b", gpu="A100-SXM4-80GB", tp=8, pp=8, dp=16,
                          zero_stage=1, recompute="selective", sp=True, micro_batch=1)


def test_initial_state_matches_library(explorer):
    want = memory.training_memory("gpt3-175b", "A100-SXM4-80GB", tp=8, pp=8, dp=16, zero_stage=1,
                                  recompute="selective", sp=True, micro_batch=1, seq_len=2048)
    assert explorer.error is None
    assert explorer.result["chosen"] == want
    assert explorer.result["n_gpus"] == 1024
    assert "fits" in explorer.readout.value
    assert explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")


def test_controls_change_numbers_and_chart(explorer):
    before_total = explorer.result["chosen"].total
    before_img = explorer.image.value
    explorer.controls["micro_batch"].value = 4
    assert explorer.result["chosen"].activations == pytest.approx(
        4 * memory.training_memory("gpt3-175b", "A100", tp=8, pp=8, dp=16, zero_stage=1,
                                   recompute="selective", sp=True).activations)
    assert explorer.result["chosen"].total > before_total
    assert explorer.image.value != before_img
    explorer.controls["zero_stage"].value = 3
    assert explorer.result["chosen"] == explorer.result["by_stage"][3]
    assert "ZeRO-3" in explorer.readout.value


def test_zero_stages_shrink_model_state(explorer):
    totals = [explorer.result["by_stage"][z].total for z in range(4)]
    assert totals == sorted(totals, reverse=True)


def test_bad_input_shows_message_and_recovers(explorer):
    good = explorer.result
    explorer.controls["tp"].value = 5
    assert explorer.error == "tp=5 must divide n_heads=96; allowed: 1, 2, 3, 4, 6, 8, 12, 16, " \
        "24, 32, 48, 96"
    assert "⚠" in explorer.status.value and "tp=5" in explorer.status.value
    assert explorer.result is good  # the last valid result stays on screen
    explorer.controls["tp"].value = 4
    assert explorer.error is None and explorer.status.value == ""
    assert explorer.result["chosen"].params_per_gpu == memory.stage_params("gpt3-175b", 4, 8)


def test_zero_sizes_are_rejected_in_the_ui(explorer):
    explorer.controls["dp"].value = 0
    assert explorer.error.startswith("dp must be a whole number >= 1, got 0")
    explorer.controls["dp"].value = 1
    assert explorer.error is None


def test_preset_fills_dimensions_and_editing_switches_to_custom(explorer):
    explorer.controls["model"].value = "llama3-8b"
    assert explorer.controls["hidden"].value == 4096 and explorer.controls["n_heads"].value == 32
    assert explorer.result["model"].name == "llama3-8b"
    explorer.controls["pp"].value = 8
    explorer.controls["n_layers"].value = 16
    assert explorer.controls["model"].value == CUSTOM
    assert explorer.result["model"].n_layers == 16
    assert explorer.result["model"].kv_heads == 8  # the rest of the preset is kept
    explorer.controls["hidden"].value = 4100  # not a multiple of 32 heads
    assert "hidden=4100 must be a multiple of n_heads=32" in explorer.error


def test_unknown_control_is_a_clear_error():
    with pytest.raises(ValueError, match="no control 'tpp'"):
        MemoryExplorer(tpp=2)


def test_custom_model_is_a_function_of_the_controls_not_of_history():
    # start on llama3-70b, edit a dimension (custom from llama3-70b), pick gpt3-175b, then custom
    used = MemoryExplorer(model="llama3-70b", tp=8, pp=8, dp=16)
    used.controls["hidden"].value = 8192 + 64  # any edit switches to custom
    used.controls["model"].value = "gpt3-175b"
    used.controls["model"].value = CUSTOM
    fresh = MemoryExplorer(model="llama3-70b", tp=8, pp=8, dp=16)
    fresh.set_values(**used.values())
    assert used.values() == fresh.values()
    assert used.error is None and fresh.error is None
    assert used.result["params"] == fresh.result["params"]
    assert used.result["chosen"] == fresh.result["chosen"]
    # gpt3-175b's dimensions on gpt3-175b's other fields: 174.6 billion, as the preset
    assert used.result["params"] / 1e9 == pytest.approx(174.6, abs=0.05)
