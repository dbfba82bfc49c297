"""The planner explorer without a browser: set controls, read the ranked plans and the charts."""

import datetime
import json
import math
import re
from pathlib import Path

import pytest
from scaleout import plan
from scaleout.widgets.planner import CONFIG_PREFIX, CUSTOM, USUAL, PlannerExplorer


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


# =========================================================================== load a config
CONFIGS = Path(__file__).resolve().parents[2] / "data" / "configs"
#: published parameter counts (data/configs/SOURCES.md: the model cards), in billions, and
#: the step they are printed to; the cards print some truncated and some rounded
PUBLISHED_B = {"Llama-3.1-8B": (8.03, 0.01), "Qwen2.5-7B": (7.61, 0.01), "Qwen3-8B": (8.2, 0.1),
               "Qwen3-30B-A3B": (30.5, 0.1)}


def _printed_as(value_b: float, printed: float, step: float) -> bool:
    """``value_b`` printed to ``step`` (rounded or truncated) reads ``printed``."""
    return any(math.isclose(f(value_b / step + 1e-9) * step, printed, rel_tol=1e-9)
               for f in (round, math.floor))


def _readout_params_b(html: str) -> float:
    """The parameter count the readout's config note shows, in billions."""
    found = re.search(r"Model from a config\.json:.*?, ([\d.,]+) (billion|B) parameters", html)
    assert found, html[:400]
    return float(found.group(1).replace(",", ""))


@pytest.fixture
def small():
    """An explorer on a small cluster, where an 8B model fits and plans fast."""
    return PlannerExplorer(model="llama3-8b", gpu="H100-SXM5-80GB", n_gpus=64,
                           global_batch=256, seq_len=8192, tokens_b=1000.0,
                           flash_attention=True)


@pytest.mark.parametrize("name", sorted(PUBLISHED_B))
def test_loading_a_shipped_config_plans_that_model(small, name):
    text = (CONFIGS / f"{name}.config.json").read_text()
    small.config_text.value = text
    small.load_button.click()
    assert small.error is None, small.error
    label = small.controls["model"].value
    assert label.startswith(CONFIG_PREFIX) and label in small.controls["model"].options
    assert "loaded" in small.status.value
    assert small.result.model == small.configs[label][0].name
    published_b, step = PUBLISHED_B[name]
    # the model planned has the model card's count, to the digits the card prints ...
    total = small.configs[label][1].params_total
    assert _printed_as(total / 1e9, published_b, step), (total, published_b)
    # ... and the readout shows it to three figures (the card may truncate where it rounds)
    shown_b = _readout_params_b(small.readout.value)
    assert abs(shown_b - total / 1e9) <= 0.005 * total / 1e9
    assert abs(shown_b - published_b) <= step + 1e-9
    # planned at the sequence chosen in the menu, not at an assumed one
    assert small.configs[label][0].seq_len == 8192
    # the explorer still works with the loaded model, and back with a catalog model
    small.controls["n_gpus"].value = 128
    assert small.error is None and small.result.n_gpus == 128
    small.controls["model"].value = "llama3-8b"
    assert small.error is None and "Model from a config.json" not in small.readout.value


def test_an_uploaded_file_is_loaded_under_its_name(small):
    content = (CONFIGS / "Qwen2.5-7B.config.json").read_bytes()
    small.config_upload.value = ({"name": "Qwen2.5-7B.config.json", "type": "application/json",
                                  "size": len(content), "content": memoryview(content),
                                  "last_modified": datetime.datetime(2026, 1, 1)},)
    assert small.error is None, small.error
    assert small.controls["model"].value == CONFIG_PREFIX + "Qwen2.5-7B"
    assert small.config_text.value == content.decode()
    # Qwen2's query/key/value biases are counted but not modelled: the readout says so
    assert "not taken over" in small.readout.value.lower()


def test_assumed_values_are_shown(small):
    """A Llama config without ``num_key_value_heads``: one key/value head per query head is
    assumed, and the readout says so."""
    raw = json.loads((CONFIGS / "Llama-3.1-8B.config.json").read_text())
    del raw["num_key_value_heads"]
    small.load_config(json.dumps(raw))
    assert small.error is None, small.error
    assert "Assumed" in small.readout.value and "num_key_value_heads = 32" in small.readout.value
    assert small.configs[small.controls["model"].value][0].kv_heads == 32


@pytest.mark.parametrize("text, message", [
    ('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,', "JSON"),
    ('{"architectures": ["NotAModelForCausalLM"], "hidden_size": 8}', "not supported"),
    ("llama3-8b", "paste the text of a Hugging Face config.json"),
])
def test_a_bad_config_shows_a_message_and_keeps_the_last_state(small, text, message):
    before = (small.controls["model"].value, small.controls["model"].options,
              small.readout.value, small.best.plan)
    small.load_config(text)
    assert small.error is not None and message in small.error
    assert "config not loaded" in small.status.value and "⚠" in small.status.value
    assert (small.controls["model"].value, small.controls["model"].options,
            small.readout.value, small.best.plan) == before
    small.controls["n_gpus"].value = 128  # still works
    assert small.error is None and small.status.value == ""


def test_a_config_the_planner_cannot_plan_yet_is_refused_with_its_count(small):
    """A Mistral whose sliding window (4,096) is shorter than the sequence chosen (8,192): the
    planner would attend over the whole sequence, so the library refuses to plan it, naming
    the key and the count (Llama-3.1-8B's shape: its released 8,030,261,248 weights)."""
    raw = json.loads((CONFIGS / "Llama-3.1-8B.config.json").read_text())
    raw.update(architectures=["MistralForCausalLM"], model_type="mistral", sliding_window=4096)
    del raw["rope_scaling"]
    before = small.best.plan
    small.load_config(json.dumps(raw))
    assert small.error is not None and "does not model it yet" in small.error
    assert "sliding_window=4096" in small.error and "8,030,261,248 in total" in small.error
    assert not any(o.startswith(CONFIG_PREFIX) for o in small.controls["model"].options)
    assert small.best.plan == before


# =========================================================================== copy as
def _readout_plan(html: str) -> dict[str, int]:
    """The best plan's degrees as the readout shows them ("Best: <b>TP8 PP4 DP2 ...</b>")."""
    best = re.search(r"Best: <b>(.*?)</b>", html).group(1)
    return {k: int(n) for k, n in re.findall(r"\b(TP|PP|DP|CP|EP)(\d+)", best)}


def test_copy_as_megatron_shows_the_plans_flags(explorer):
    shown = _readout_plan(explorer.readout.value)
    assert {"TP", "PP", "DP"} <= shown.keys()
    text = explorer.export_text
    assert f"--tensor-model-parallel-size {shown['TP']}\n" in text
    assert f"--pipeline-model-parallel-size {shown['PP']}\n" in text
    # Megatron-LM takes the data-parallel degree from the world size: TP × PP × DP GPUs
    assert f"{shown['TP'] * shown['PP'] * shown['DP']:,}" in text or \
        str(shown["TP"] * shown["PP"] * shown["DP"]) in text
    assert "--global-batch-size 3072" in text
    assert "readonly" in explorer.export_box.value and "so-export-text" in explorer.export_box.value


def test_copy_as_follows_the_menu_and_every_redraw(explorer):
    explorer.export_choice.value = "torchtitan"
    # torchtitan's attention kernels never store the score matrix: it cannot run a plan
    # without flash attention, and says so
    assert explorer.export_text.startswith("torchtitan cannot run flash_attention=False")
    # planned for torchtitan (its preset: FSDP2, no optimizer-only sharding), it can
    explorer.set_values(flash_attention=True, framework="torchtitan")
    assert explorer.error is None
    shown = _readout_plan(explorer.readout.value)
    assert f"tensor_parallel_degree = {shown['TP']}" in explorer.export_text
    assert f"pipeline_parallel_degree = {shown['PP']}" in explorer.export_text
    explorer.controls["gpus_per_node"].value = 4  # a redraw: the box follows the new plan
    shown = _readout_plan(explorer.readout.value)
    assert shown["TP"] <= 4
    assert f"tensor_parallel_degree = {shown['TP']}" in explorer.export_text


def test_copy_as_a_framework_that_cannot_run_the_plan_says_so(explorer):
    """DeepSpeed has no tensor or pipeline parallelism of its own: a TP8 plan is refused in
    one sentence naming the framework, instead of settings that would not run it."""
    assert explorer.best.plan.tp > 1
    explorer.export_choice.value = "deepspeed"
    assert explorer.export_text.startswith("DeepSpeed cannot run")
    assert explorer.export_text.count(". ") == 0 and explorer.export_text.endswith(".")
    assert "No DeepSpeed settings for the best plan" in explorer.export_box.value
    assert explorer.error is None
