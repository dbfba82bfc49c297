"""The Megatron Bridge MoE runs' framework and the recipe settings each case states
(survivors of a mutation run of ``scaleout.plan.published``, batch b4: ``_bridge_framework``).

What is checked, each expected value typed from the data files or a property that must hold:

* the four sentences a Bridge MoE case adds to its assumptions (the token dispatcher, the
  CUDA graph scopes, the recompute modules with those the planner does not model, the
  all-to-all overlap recorded but not applied), worked out by hand from the recipe settings
  as data/published/megatron_bridge_perf_2511.toml records them (the recipes at Megatron
  Bridge 5776a6d9): the 25.09 DGX-H100 DeepSeek-V3 row (DeepEP, no CUDA graphs,
  ``recompute_modules = ["mla_up_proj", "mlp"]``, ``moe_a2a_overlap = true``), the GB200
  Qwen3-235B row (HybridEP, graphs of attn, moe_router and moe_preprocess, no recompute
  modules, no overlap) and the H100 gpt-oss-120b row (all-to-all, layernorm and moe_act);
* a made-up run with two modules the planner does not model, and one without recipe
  settings (a dense row: the preset's name);
* every Bridge MoE case's framework against Megatron-Core's preset with the run's own
  dispatcher, recompute kinds (the file header's mapping: layernorm as norms, moe_act as
  moe_swiglu, mla_up_proj as mla_up_projections) and CUDA graph scopes, its all-to-all
  overlap off ("the all-to-all overlap is recorded only", the file's header) as a bool, so
  that turning the switch off changes nothing, and a label that names the dispatcher and
  says nothing of an overlap;
* the labels of four rows written out by hand.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from scaleout import catalog
from scaleout.plan import published
from scaleout.plan.frameworks import Framework, framework

SOURCES = ("megatron_bridge_perf_2511", "megatron_bridge_perf_2602")
CORE_LABEL = "Megatron-Core (2024-25)"  # the megatron-core preset's label
#: the data files' header: the recompute modules the planner models, as its recompute kinds
KINDS = {"layernorm": "norms", "moe_act": "moe_swiglu", "mla_up_proj": "mla_up_projections"}


@pytest.fixture
def bridge():
    """The 25.11 table's cases by label (per test: mutmut credits calls to each test)."""
    return {c.label: c for c in published.cases()[0]
            if c.source == "megatron_bridge_perf_2511"}


def _said(case):
    """The four recipe sentences of a case: from the dispatcher's on, in order."""
    i = [k for k, a in enumerate(case.assumed) if a.endswith("token dispatcher (the recipe's)")]
    assert len(i) == 1, case.assumed
    return case.assumed[i[0]:i[0] + 4]


# --------------------------------------------------------------- the settings in words
def test_deepseek_v3_h100_row_states_deepep_two_modules_mlp_unmodelled_and_overlap_unapplied(
        bridge):
    """25.09 DGX-H100 DeepSeek-V3 row: dispatcher "deepep", no cuda_graph_scope,
    recompute_modules ["mla_up_proj", "mlp"] ("mlp" not among the modelled three),
    moe_a2a_overlap true (recorded, not applied)."""
    c = bridge["deepseek-v3 FP8-CS on 1024 × H100-SXM5-80GB"]
    assert _said(c) == (
        "the deepep token dispatcher (the recipe's)",
        "CUDA graphs of nothing (the recipe's)",
        "the recipe's recompute modules: mla_up_proj, mlp (mlp not modelled)",
        "no all-to-all overlap (the recipe sets moe_a2a_overlap; not applied)")


def test_qwen3_235b_gb200_row_states_three_graph_scopes_no_modules_and_no_overlap(bridge):
    """25.11 DGX-GB200 Qwen3-235B-A22B row: "hybridep", cuda_graph_scope ["attn",
    "moe_router", "moe_preprocess"], recompute_modules [] (none, nothing unmodelled),
    moe_a2a_overlap false (the recipe's own)."""
    c = bridge["qwen3-235b-a22b on 256 × GB200"]
    assert _said(c) == (
        "the hybridep token dispatcher (the recipe's)",
        "CUDA graphs of attn, moe_router, moe_preprocess (the recipe's)",
        "the recipe's recompute modules: none",
        "no all-to-all overlap (the recipe's)")


def test_gpt_oss_h100_row_states_alltoall_and_its_two_modelled_modules(bridge):
    """25.11 DGX-H100 gpt-oss-120b row: "alltoall", no CUDA graphs, recompute_modules
    ["layernorm", "moe_act"] (both modelled), moe_a2a_overlap false."""
    c = bridge["gpt-oss-120b on 64 × H100-SXM5-80GB"]
    assert _said(c) == (
        "the alltoall token dispatcher (the recipe's)",
        "CUDA graphs of nothing (the recipe's)",
        "the recipe's recompute modules: layernorm, moe_act",
        "no all-to-all overlap (the recipe's)")


def test_qwen3_235b_b200_row_says_the_overlap_it_sets_is_not_applied(bridge):
    """25.11 DGX-B200 Qwen3-235B-A22B FP8-MX row: moe_a2a_overlap true, nothing else set
    beyond the all-to-all dispatcher."""
    c = bridge["qwen3-235b-a22b FP8-MX on 64 × B200"]
    assert _said(c) == (
        "the alltoall token dispatcher (the recipe's)",
        "CUDA graphs of nothing (the recipe's)",
        "the recipe's recompute modules: none",
        "no all-to-all overlap (the recipe sets moe_a2a_overlap; not applied)")


def test_made_up_run_names_each_unmodelled_module():
    """Megatron-Core's recompute_modules also take "mlp" and "core_attn", neither of which
    the planner models: both named, comma-separated; only layernorm becomes a kind."""
    run = {"dispatcher": "alltoall", "recompute_modules": ["layernorm", "mlp", "core_attn"],
           "moe_a2a_overlap": False}
    fw, said = published._bridge_framework(run)
    assert said == ["the alltoall token dispatcher (the recipe's)",
                    "CUDA graphs of nothing (the recipe's)",
                    "the recipe's recompute modules: layernorm, mlp, core_attn "
                    "(mlp, core_attn not modelled)",
                    "no all-to-all overlap (the recipe's)"]
    assert isinstance(fw, Framework)
    assert fw.recompute_kinds == ("norms",)
    assert fw.a2a_overlap is False
    assert fw.label == f"{CORE_LABEL}, alltoall dispatcher, recomputing norms"


def test_a_run_without_recipe_settings_is_the_preset_by_name():
    """A dense row records no dispatcher: Megatron-Core's preset by name, nothing said."""
    assert published._bridge_framework({"model": "llama3-8b"}) == ("megatron-core", [])


# --------------------------------------------------------------- the framework itself
def _label(run, source, main_release):
    prec = "" if run["precision"] == "BF16" else " " + run["precision"]
    tail = f" ({run['release']})" if main_release and run["release"] != main_release else ""
    return f"{run['model']}{prec} on {run['gpus']} × {run['gpu']}{tail}"


@pytest.mark.parametrize("source", SOURCES)
def test_every_bridge_moe_case_is_megatron_core_with_its_recipes_settings(source):
    """Each MoE run with recipe settings: the megatron-core preset with the run's
    dispatcher, its modelled recompute modules as kinds and its CUDA graph scopes; the
    all-to-all overlap off as a bool (turning it off is then no change), the label the
    preset's with the dispatcher and no overlap."""
    raw = catalog.published(source)
    cases = {c.label: c for c in published.cases()[0] if c.source == source}
    runs = [r for r in raw["run"] if "dispatcher" in r and r["gpu"] in catalog.gpu_names()]
    assert len(runs) >= 10
    for run in runs:
        c = cases[_label(run, source, raw.get("release"))]
        fw = c.framework
        assert isinstance(fw, Framework), c.label
        kinds = tuple(KINDS[m] for m in run["recompute_modules"] if m in KINDS)
        graphs = tuple(run.get("cuda_graph_scope", ()))
        assert fw == replace(framework("megatron-core"), moe_dispatcher=run["dispatcher"],
                             recompute_kinds=kinds, cuda_graph_scopes=graphs,
                             a2a_overlap=False, label=fw.label), c.label
        assert fw.a2a_overlap is False
        assert fw.with_switches({"a2a_overlap": False}) == fw
        assert fw.label.startswith(f"{CORE_LABEL}, {run['dispatcher']} dispatcher")
        assert "overlap" not in fw.label


def test_four_labels_written_out(bridge):
    """The framework's label (the planner's results carry it) for four 25.11 rows."""
    want = {
        "deepseek-v3 FP8-CS on 1024 × H100-SXM5-80GB":
            f"{CORE_LABEL}, deepep dispatcher, recomputing mla_up_projections",
        "qwen3-235b-a22b on 256 × GB200":
            f"{CORE_LABEL}, hybridep dispatcher, CUDA graphs of attn, moe_router, "
            "moe_preprocess",
        "gpt-oss-120b on 64 × H100-SXM5-80GB":
            f"{CORE_LABEL}, alltoall dispatcher, recomputing norms, moe_swiglu",
        "qwen3-235b-a22b FP8-MX on 64 × B200": f"{CORE_LABEL}, alltoall dispatcher",
    }
    for label, fw_label in want.items():
        fw = bridge[label].framework
        assert isinstance(fw, Framework), label
        assert fw.label == fw_label
