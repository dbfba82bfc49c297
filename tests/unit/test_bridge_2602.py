"""Megatron Bridge's 26.02 pre-training tables (data/published/megatron_bridge_perf_2602.toml):
a second held-out source from the publisher of the 25.11 table, with its 26.02.01 patch rows.

The file copies the page (docs/performance-summary.md at github.com/NVIDIA-NeMo/Megatron-Bridge
commit cfeddcd9); the numbers below are typed again from that page, independently of the file,
so that a slip in either shows."""

from __future__ import annotations

import numpy as np
import pytest
from scaleout import catalog, plan
from scaleout.plan import published
from scaleout.plan.frameworks import Framework

SOURCE = "megatron_bridge_perf_2602"


@pytest.fixture
def raw() -> dict:
    return catalog.published(SOURCE)


@pytest.fixture
def cases() -> dict[str, published.Case]:
    return {c.label: c for c in published.cases()[0] if c.source == SOURCE}


def _run(raw, release, model, gpu, precision):
    got = [r for r in raw["run"] if (r["release"], r["model"], r["gpu"], r["precision"])
           == (release, model, gpu, precision)]
    assert len(got) == 1, (release, model, gpu, precision)
    return got[0]


def test_the_file_loads_with_its_source_and_only_rows_the_catalog_can_represent(raw):
    assert "cfeddcd9" in raw["source"] and raw["release"] == "26.02"
    runs = raw["run"]
    assert len(runs) == 30
    assert sum(r["release"] == "26.02" for r in runs) == 16
    assert sum(r["release"] == "26.02.01" for r in runs) == 14
    for r in runs:
        assert r["gpu"] in catalog.gpu_names() and r["model"] in catalog.model_names()
        assert r["precision"] in ("BF16", "FP8", "MXFP8") and r["fsdp"] == 0
        assert r["dp"] * r["tp"] * r["pp"] * r["cp"] == r["gpus"]
        assert r["global_batch"] % (r["dp"] * r["micro_batch"]) == 0


# (release, model, GPU, precision): GPUs, GBS, MBS, TP, PP, CP, VP (None: "n/a"), EP (None:
# "n/a"), tokens/s/GPU, model TFLOP/s/GPU, as printed
PRINTED = {
    ("26.02", "llama3-70b", "GB200", "MXFP8"): (64, 256, 1, 2, 4, 1, 5, None, 3613, 1623),
    ("26.02", "llama3-405b", "H100-SXM5-80GB", "FP8"): (1024, 1536, 1, 8, 8, 2, 8, None,
                                                        311, 784),
    ("26.02", "gpt-oss-120b", "B200", "BF16"): (64, 1280, 4, 1, 1, 1, None, 64, 8047, 219),
    ("26.02", "qwen3-30b-a3b", "H100-SXM5-80GB", "FP8"): (16, 1024, 1, 1, 2, 1, 12, 8,
                                                          5113, 118),
    ("26.02.01", "gpt-oss-120b", "B200", "BF16"): (64, 1280, 4, 1, 1, 1, None, 8, 13722, 373),
    ("26.02.01", "qwen3-30b-a3b", "B200", "MXFP8"): (8, 512, 4, 1, 1, 1, None, 8, 26695, 614),
    ("26.02.01", "deepseek-v3", "GB200", "MXFP8"): (256, 4096, 1, 1, 4, 1, 4, 64, 4021, 1046),
}


@pytest.mark.parametrize("key", sorted(PRINTED))
def test_printed_rows_are_copied_exactly(raw, key):
    r = _run(raw, *key)
    gpus, gbs, mbs, tp, pp, cp, vp, ep, tokens, tflops = PRINTED[key]
    assert (r["gpus"], r["global_batch"], r["micro_batch"], r["tp"], r["pp"], r["cp"]) == (
        gpus, gbs, mbs, tp, pp, cp)
    assert r.get("vp") == vp and r.get("ep") == ep
    assert r["tokens_per_s_per_gpu"] == tokens and r["model_tflops_per_gpu"] == tflops


def test_every_kept_row_becomes_a_case_with_the_files_key(raw, cases):
    every, skipped = published.cases()
    assert len(cases) == len(raw["run"])  # labels are unique: 26.02.01 rows carry their release
    title = published.source_title(SOURCE)
    assert title == "Megatron Bridge 26.02 (dense, MoE, FP8, CP)"
    assert not [why for why in skipped if why.startswith(title)]
    assert sum(c.label.endswith("(26.02.01)") for c in cases.values()) == 14
    # the 25.11 table's cases keep their own key
    assert sum(c.source == "megatron_bridge_perf_2511" for c in every) == 19
    case = cases["gpt-oss-120b on 64 × B200 (26.02.01)"]
    assert case.published == 13722 and case.quantity == "tokens/s per GPU"
    assert case.plan.ep == 8 and case.plan.global_batch == 1280 and case.plan.micro_batch == 4
    assert cases["gpt-oss-120b on 64 × B200"].published == 8047


def test_the_source_is_held_out():
    assert SOURCE not in published.TRAINING
    roles = {(r["source"], r["role"]) for r in plan.cross_validation().table()}
    assert (published.source_title(SOURCE), "held out") in roles
    assert (published.source_title(SOURCE), "fitted") not in roles


def test_precisions_mtp_and_recipe_settings_reach_the_cases(cases):
    by = {label: c.recipe for label, c in cases.items()}
    assert by["llama3-70b FP8 on 64 × H100-SXM5-80GB"] == "fp8-te-cs"
    assert by["llama3-70b MXFP8 on 64 × GB200"] == "fp8-te-mx"
    assert by["gpt-oss-120b on 64 × H100-SXM5-80GB"] == "mixed-adam"
    # DeepSeek-V3 with the recipe's one MTP layer
    assert cases["deepseek-v3 MXFP8 on 256 × B200"].model.mtp_layers == 1
    assert cases["llama3-70b FP8 on 64 × H100-SXM5-80GB"].framework == "megatron-core"
    fw = cases["qwen3-30b-a3b FP8 on 16 × H100-SXM5-80GB"].framework
    assert isinstance(fw, Framework) and fw.moe_dispatcher == "deepep"  # v0.3.0's
    fw = cases["qwen3-30b-a3b FP8 on 16 × H100-SXM5-80GB (26.02.01)"].framework
    assert isinstance(fw, Framework) and fw.moe_dispatcher == "hybridep"  # v0.3.1's
    fw = cases["deepseek-v3 MXFP8 on 256 × GB200"].framework
    assert fw.moe_dispatcher == "hybridep"
    assert fw.cuda_graph_scopes == ("attn", "moe_router", "moe_preprocess")
    assert fw.recompute_kinds == ("mla_up_projections",)
    fw = cases["gpt-oss-120b on 64 × B200"].framework
    assert fw.moe_dispatcher == "alltoall" and fw.recompute_kinds == ("norms", "moe_swiglu")


def test_the_held_out_error_of_the_26_02_table_is_stated():
    """Predicted before anything was fitted to these rows (tokens/s per GPU): the 30 runs'
    mean |error| is about 44.9% (26.02: 50.8% over 16; 26.02.01: 38.2% over 14), the worst
    +169% (Qwen3-30B-A3B FP8 on 16 H100, 26.02), against the constant-MFU baseline's 50.8%.
    The nine dense Llama 3 runs (FP8, MXFP8) are within 25% (the worst +23.8%, 405B MXFP8 on
    256 GB200, 26.02.01); the planner is too fast on 19 of the 21 MoE runs (mean 57.8%). Stated
    here so that a change that widens the gap fails."""
    cv = plan.cross_validation()
    keep = [r.source == SOURCE for r in cv.held_out]
    rows = [r for r, k in zip(cv.held_out, keep, strict=True) if k]
    base = [r for r, k in zip(cv.baseline_held_out, keep, strict=True) if k]
    e = np.abs([r.error_pct for r in rows])
    assert len(rows) == 30
    assert e.mean() < 45.0 and e.max() < 170
    assert e.mean() < np.mean(np.abs([r.error_pct for r in base]))
    dense = [r for r in rows if "mixture of experts" not in r.mechanisms]
    assert len(dense) == 9 and max(abs(r.error_pct) for r in dense) < 25
    moe_rows = [r for r in rows if "mixture of experts" in r.mechanisms]
    assert len(moe_rows) == 21 and sum(r.error_pct > 0 for r in moe_rows) >= 19
