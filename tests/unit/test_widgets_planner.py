"""The planner explorer without a browser: set controls, read the ranked plans and the charts."""

import pytest
from scaleout import plan
from scaleout.widgets.planner import CUSTOM, USUAL, PlannerExplorer


@pytest.fixture
def explorer():
    return PlannerExplorer(model="megatron-1t", gpu="A100-SXM4-80GB", n_gpus=3072,
                           global_batch=3072, seq_len=2048, tokens_b=450.0)


def test_initial_state_matches_library(explorer):
    assert explorer.error is None
    direct = plan.search("megatron-1t", "A100-SXM4-80GB", 3072, 3072, tokens=450e9)
    assert explorer.result.n_evaluated == direct.n_evaluated
    assert explorer.best.plan == direct.plan(0)
    assert explorer.best.step_s == pytest.approx(direct.result(0).step_s)
    assert explorer.best.training_days == pytest.approx(direct.result(0).training_days)
    assert explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")
    html = explorer.readout.value
    assert direct.plan(0).label in html and "days" in html and "Best:" in html


def test_controls_change_the_plans_and_the_chart(explorer):
    before_img, before = explorer.image.value, explorer.best
    explorer.controls["gpus_per_node"].value = 4
    assert explorer.error is None
    assert explorer.best.plan.tp <= 4  # tensor parallelism stays inside the smaller node
    assert explorer.image.value != before_img
    explorer.controls["gpus_per_node"].value = 8
    assert explorer.best.plan == before.plan
    explorer.controls["tokens_b"].value = 900.0
    assert explorer.best.training_days == pytest.approx(2 * before.training_days)


def test_network_choice_and_a_gpu_without_a_usual_port(explorer):
    explorer.controls["network"].value = "TCP/IP 100GbE"
    assert explorer.error is None
    assert explorer.result.network.inter.name == "TCP/IP 100GbE"
    explorer.controls["network"].value = USUAL
    explorer.controls["gpu"].value = "V100-SXM2-32GB"
    assert explorer.error is not None and "choose a network port" in explorer.error
    assert explorer.status.value.count("⚠") == 1
    explorer.controls["network"].value = "InfiniBand HDR"
    assert explorer.error is None and explorer.status.value == ""


def test_custom_model(explorer):
    explorer.set_values(model=CUSTOM, custom_layers=48, custom_hidden=6144, custom_heads=48,
                        n_gpus=64, global_batch=64)
    assert explorer.error is None
    assert explorer.result.model == "custom"
    explorer.controls["custom_heads"].value = 0
    assert explorer.error is not None and "n_heads" in explorer.error
    explorer.controls["custom_heads"].value = 48
    assert explorer.error is None


def test_bad_batch_and_impossible_model_show_a_message_and_recover(explorer):
    good = explorer.readout.value
    explorer.controls["global_batch"].value = 7
    assert "must divide global_batch=7" in explorer.error
    assert explorer.readout.value == good  # the last good result stays on screen
    explorer.set_values(global_batch=3072, n_gpus=8)
    assert "GiB short" in explorer.error
    explorer.controls["n_gpus"].value = 3072
    assert explorer.error is None
    explorer.controls["tokens_b"].value = 0.0
    assert "tokens (B) must be > 0" in explorer.error


def test_a_mixture_of_experts_is_planned_with_expert_parallelism(explorer):
    """The model menu offers the mixtures of experts too: the explorer searches EP with the
    rest and names it in the best plan and the explanation."""
    assert "deepseek-v3" in explorer.controls["model"].options
    explorer.set_values(model="mixtral-8x7b", gpu="H100-SXM5-80GB", n_gpus=64,
                        global_batch=256, seq_len=4096, flash_attention=True)
    assert explorer.error is None
    assert (explorer.result.arrays["ep"] > 1).any()
    assert explorer.best.plan.ep > 1 and f"EP{explorer.best.plan.ep}" in explorer.readout.value
    assert "bound by" in explorer.readout.value
    direct = plan.search("mixtral-8x7b", "H100-SXM5-80GB", 64, 256, seq_len=4096,
                         flash_attention=True, tokens=450e9)
    assert explorer.best.plan == direct.plan(0)
