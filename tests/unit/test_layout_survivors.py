"""scaleout.layout: the rules that say a framework lacks a layout feature (tensor, pipeline and
interleaved pipeline parallelism, recomputation modes) and the sentences they give, against the
framework presets' documented layouts (scaleout.plan.frameworks: PyTorch FSDP1 through Composer
runs no tensor or pipeline parallelism; DeepSpeed v0.3-0.4 no interleaved schedule, no
selective recomputation) and the rules' own wording. Written for the mutants of ``_offered``
and ``_recompute_name`` that the other layout tests left alive."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scaleout import catalog, layout
from scaleout.layout import Facts, Plan
from scaleout.plan import frameworks

#: Llama 3 8B (32 heads, 8 KV heads, 32 layers) on 8-GPU nodes: tp = 2 and pp = 2 divide
#: everything, so only the framework's own rules can reject them.
LLAMA = catalog.model("llama3-8b")


def _facts(name: str) -> Facts:
    return Facts.of(LLAMA, 8, framework=frameworks.framework(name))


def _one(**fields) -> dict[str, np.ndarray]:
    """Arrays of layouts (plan_arrays' form) from per-field values."""
    base = {"tp": 1, "pp": 1, "dp": 1, "micro_batch": 1, "interleave": 1, "zero_stage": 0,
            "sp": False, "recompute": "none", "cp": 1, "ep": 1, "global_batch": 2}
    base.update(fields)
    base.setdefault("zero_shard", base["dp"])
    return {k: np.asarray(v) for k, v in base.items()}


def _names(first: np.ndarray) -> list[str | None]:
    """The rule names behind failures' indices (None: the layout keeps every rule)."""
    return [None if i < 0 else layout.RULES[i].name for i in np.asarray(first).tolist()]


def _refused(plan: Plan, facts: Facts, sentence: str) -> None:
    """``layout.check`` refuses ``plan`` with exactly ``sentence``."""
    with pytest.raises(ValueError, match="^" + re.escape(sentence) + "$"):
        layout.check(plan, facts)


def test_fsdp_runs_no_tensor_or_pipeline_parallelism_and_says_so():
    """PyTorch FSDP1 (tensor_parallel = pipeline_parallel = False): tp = 2 and pp = 2 break
    its rules, tp = pp = 1 keeps them; the sentence names the framework, the size asked for and
    the only size allowed, 1."""
    fsdp = _facts("pytorch-fsdp")
    a = _one(tp=[1, 2, 1], pp=[1, 1, 2])
    assert _names(layout.failures(a, fsdp)) == [None, "tp_offered", "pp_offered"]
    _refused(Plan(tp=2), fsdp,
             "tp=2: pytorch-fsdp has no tensor parallelism; allowed: tp=1")
    _refused(Plan(pp=2), fsdp,
             "pp=2: pytorch-fsdp has no pipeline parallelism; allowed: pp=1")
    layout.check(Plan(), fsdp)  # tp = pp = 1: nothing to say


def test_a_framework_with_the_feature_keeps_any_size():
    """Megatron-Core (every layout) and Facts' defaults keep tp = 2, pp = 2 and v = 2
    (pp = 2, 2 micro-batches: a multiple of pp; 16 layers per stage, which v = 2 divides)."""
    a = _one(tp=[1, 2, 1, 1], pp=[1, 1, 2, 2], interleave=[1, 1, 1, 2])
    for facts in (_facts("megatron-core"), Facts()):
        assert _names(layout.failures(a, facts)) == [None] * 4


def test_deepspeed_runs_no_interleaved_schedule():
    """DeepSpeed v0.3-0.4 (interleaved_schedule = False) runs pp = 2 with one chunk per GPU,
    not v = 2 chunks."""
    ds = _facts("deepspeed-2021")
    a = _one(pp=2, interleave=[1, 2])
    assert _names(layout.failures(a, ds)) == [None, "interleave_offered"]
    _refused(Plan(pp=2, interleave=2, global_batch=2), ds,
             "interleave=2: deepspeed-2021 runs no interleaved pipeline schedule; "
             "allowed: interleave=1")


def test_an_unnamed_framework_is_this_framework():
    """Facts without a framework's name: the sentence says "this framework"."""
    facts = Facts(tensor_parallel=False, pipeline_parallel=False)
    _refused(Plan(tp=2), facts,
             "tp=2: this framework has no tensor parallelism; allowed: tp=1")
    _refused(Plan(pp=4), facts,
             "pp=4: this framework has no pipeline parallelism; allowed: pp=1")


def test_recompute_sentence_reads_a_search_row_code():
    """DeepSpeed v0.3-0.4 offers recomputation 'none' and 'full' only. A search's row carries
    the mode as its code rc (RECOMPUTE_MODES: 0 none, 1 selective, 2 full) and no name; a
    plan's row carries the name. Both give the same sentence for 'selective'."""
    ds = _facts("deepspeed-2021")
    rule = next(r for r in layout.RULES if r.name == "recompute_offered")
    expected = "recompute='selective': deepspeed-2021 offers 'none', 'full'"
    search_row = {"tp": 1, "pp": 1, "dp": 1, "micro_batch": 1, "interleave": 1,
                  "zero_stage": 0, "rc": 1, "global_batch": 1}
    assert rule.message(search_row, ds) == expected
    assert rule.message(search_row | {"rc": 2}, Facts(recompute_modes=("none",))) == (
        "recompute='full': this framework offers 'none'")
    _refused(Plan(recompute="selective"), ds, expected)
    codes = {k: v for k, v in _one(recompute=None).items() if k != "recompute"}
    codes["rc"] = np.array([0, 1, 2])
    assert _names(layout.failures(codes, ds)) == [None, "recompute_offered", None]


def test_a_rule_states_what_it_demands_of_a_whole_search():
    """The words a search's no-layout message uses for a rule are the rule's own
    (``Rule.demand``): the heads rule's and the frameworks' rules' format strings; a rule no
    search counts states none, and asking for its demand is an error."""
    assert layout.demand("tp_heads") == "tensor-parallel sizes must divide the {f.n_heads} heads"
    assert layout.demand("tp_offered") == "{name} has no tensor parallelism, so tp must be 1"
    assert layout.demand("interleave_offered") == "{name} runs no interleaved pipeline schedule"
    with pytest.raises(KeyError, match="'sp_needs_tp' states no demand for a search"):
        layout.demand("sp_needs_tp")
