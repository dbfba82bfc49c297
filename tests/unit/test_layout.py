"""scaleout.layout: a layout's derived sizes, the first rule a layout breaks, and the sentences
that name what would work, against hand calculations (the planner's own tests are
test_plan*.py; these guard what mutation testing found they leave open)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scaleout import catalog, layout
from scaleout.layout import Facts, Plan


def test_plan_defaults_by_hand():
    """The global batch defaults to one micro-batch per replica, dp × micro_batch = 4 × 2 = 8,
    so m = 1; whole-number floats become ints, as the label shows them."""
    p = Plan(dp=4, micro_batch=2)
    assert p.global_batch == 8 and p.micro_batches == 1
    q = Plan(tp=2.0, dp=2.0, zero_stage=1.0, global_batch=8.0)
    assert type(q.zero_stage) is int and type(q.global_batch) is int
    assert q.label == "TP2 PP1 DP2, b=1, ZeRO-1, recompute none"
    assert q.micro_batches == 4  # 8 / (2 × 1)


def test_facts_of_a_model_carry_its_name_and_shape():
    """Llama 3 8B (Llama Team 2024, Table 3): 32 layers, 32 heads, 8 KV heads, dense."""
    f = Facts.of(catalog.model("llama3-8b"), 8)
    assert (f.model, f.n_layers, f.n_heads, f.kv_heads, f.gpus_per_node, f.experts) == (
        "llama3-8b", 32, 32, 8, 8, 0)


def test_the_first_rule_broken_is_the_one_reported():
    """A layout that breaks the batch rule (7 sequences over dp = 2) and the heads rule
    (tp = 5 does not divide 96 heads) is reported under the batch rule, the first in the
    table; one that breaks only the heads rule under that rule; one that keeps both, -1."""
    facts = Facts(n_heads=96)
    arrays = {"tp": np.array([5, 5, 4]), "pp": 1, "dp": 2, "micro_batch": 1,
              "interleave": 1, "zero_stage": 0, "sp": False, "recompute": "none",
              "zero_shard": 2, "global_batch": np.array([7, 8, 8])}
    batch, heads = (i for i, r in enumerate(layout.RULES) if r.name in ("batch", "tp_heads"))
    assert batch == 0 and heads == 1  # the table's order, which the reports follow
    assert layout.failures(arrays, facts).tolist() == [0, 1, -1]
    assert layout.valid(arrays, facts).tolist() == [False, False, True]
    # breaking only the first rule is still invalid
    only_batch = dict(arrays, tp=np.array([4, 4, 4]))
    assert layout.valid(only_batch, facts).tolist() == [False, True, True]


@pytest.mark.parametrize(("kwargs", "message"), [
    # per = 3 × 2 = 6: 18 and 24 around 20; dp d must divide 20 / 2 = 10 and lie in [0, 6]
    (dict(dp=3, micro_batch=2, global_batch=20),
     "global_batch=20 must be a multiple of dp × micro_batch = 3 × 2 = 6: the nearest "
     "batches that are: 18 or 24; or dp in 1, 2, 5"),
    # below the first multiple: only 8 is offered (0 is no batch); divisors of 5 up to 16
    (dict(dp=8, global_batch=5),
     "global_batch=5 must be a multiple of dp × micro_batch = 8 × 1 = 8: the nearest batches "
     "that are: 8; or dp in 1, 5"),
    # 720 = 7 × 102 + 6: 714 or 721; ten divisors of 720 up to 14, the first eight shown
    (dict(dp=7, global_batch=720),
     "global_batch=720 must be a multiple of dp × micro_batch = 7 × 1 = 7: the nearest "
     "batches that are: 714 or 721; or dp in 1, 2, 3, 4, 5, 6, 8, 9"),
    # micro_batch = 3 does not divide 10: no dp can work, none is offered
    (dict(dp=2, micro_batch=3, global_batch=10),
     "global_batch=10 must be a multiple of dp × micro_batch = 2 × 3 = 6: the nearest "
     "batches that are: 6 or 12"),
])
def test_batch_rule_names_the_nearest_batches_and_dp_sizes(kwargs, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Plan(**kwargs)


def test_context_parallel_sentences_name_the_sizes_allowed():
    """Llama 3 8B at s = 8192 with 8 KV heads. Ring attention cuts 2 cp chunks: cp = 3 needs
    6 | 8192, and the sizes that work are the powers of two up to 4096. The all-to-all
    variant (DeepSpeed-Ulysses) splits the sequence cp ways and the KV heads too: cp = 16
    divides 8192 but not the 8 KV heads (1, 2, 4 or 8); cp = 3 divides neither."""
    def sentence(variant: str, cp: int) -> str:
        facts = Facts(model="llama3-8b", n_heads=32, kv_heads=8, seq_len=8192,
                      flash_attention=True, cp_variant=variant)
        with pytest.raises(ValueError) as e:
            layout.check(Plan(cp=cp), facts)
        return str(e.value)

    ring = sentence("ring", 3)
    assert ring.startswith("cp=3: 2 x cp = 6 ")
    assert ring.endswith("must divide seq_len=8192; allowed: "
                         "1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, ...")
    heads = sentence("all-to-all", 16)
    assert heads.startswith("cp=16 must divide key/value heads of llama3-8b")
    assert heads.endswith("=8; allowed: 1, 2, 4, 8")
    seq = sentence("all-to-all", 3)
    assert seq.startswith("cp=3 must divide seq_len=8192; allowed: 1, 2, 4, 8,")


def test_allowed_divisors_shows_twelve_at_most():
    """60 has exactly twelve divisors: all are shown. 4096 = 2¹² has thirteen and 720 thirty:
    the first eleven, an ellipsis, and the number itself."""
    assert layout.allowed_divisors(60) == "1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60"
    assert layout.allowed_divisors(4096) == ("1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, "
                                             "..., 4096")
    assert layout.allowed_divisors(720) == "1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 15, ..., 720"
    assert layout.allowed_divisors(720, limit=4) == "1, 2, 3, ..., 720"


def test_plan_arrays_hold_the_shard_group_and_the_batch():
    """Two layouts as the search holds them: the shard group is zero_shard where set, else
    dp (4 ranks in groups of 2; 8 ranks, all in one group); global batch 16 and 64."""
    a = layout.plan_arrays([Plan(dp=4, zero_stage=1, zero_shard=2, global_batch=16),
                            Plan(tp=2, dp=8, zero_stage=3, global_batch=64)])
    assert a["zero_shard"].tolist() == [2, 8]
    assert a["global_batch"].tolist() == [16, 64]
    assert a["tp"].tolist() == [1, 2] and a["zero_stage"].tolist() == [1, 3]
    assert layout.valid(a, Facts()).tolist() == [True, True]


def test_facts_of_take_the_framework_the_run_and_the_recipe():
    """Facts.of's defaults relax nothing and know no sequence, kernel or precision. A
    framework brings its own rules: DeepSeek's HAI-LLM (DeepSeek-V3 report Sec. 3.2 and
    3.2.1) offers ZeRO 0 and 1, no hybrid sharding, no context parallelism, DualPipe;
    torchtitan (FSDP2 + pipelining) every ZeRO stage with pp and ring attention. A mixture
    of experts brings its routed experts (DeepSeek-V3: 256; a dense model: 0). An FP8 recipe
    on an A100 (no FP8 tensor cores) is the precision problem; on an H100 it is none."""
    from scaleout.plan import frameworks

    llama = catalog.model("llama3-8b")
    f = Facts.of(llama, 8)
    assert (f.uneven_layers, f.allow_tp_across_nodes, f.relaxable) == (False, False, False)
    assert (f.seq_len, f.flash_attention, f.precision, f.experts) == (None, None, "", 0)
    assert (f.framework, f.pipeline_schedule) == ("", "1f1b")
    hai = Facts.of(catalog.model("deepseek-v3"), 8,
                   framework=frameworks.framework("deepseek-hai-llm"))
    assert hai.experts == 256
    assert (hai.framework, hai.zero_stages, hai.max_zero_with_pp, hai.hybrid_shard,
            hai.cp_variant, hai.expert_parallel, hai.pipeline_schedule) == (
        "deepseek-hai-llm", (0, 1), 1, False, "", True, "dualpipe")
    titan = Facts.of(llama, 8, framework=frameworks.framework("torchtitan"))
    assert (titan.zero_stages, titan.max_zero_with_pp, titan.hybrid_shard,
            titan.cp_variant) == ((0, 2, 3), 3, True, "ring")
    run = Facts.of(llama, 8, seq_len=4096, flash_attention=True, uneven_layers=True,
                   allow_tp_across_nodes=True, relaxable=True)
    assert (run.seq_len, run.flash_attention, run.uneven_layers, run.allow_tp_across_nodes,
            run.relaxable) == (4096, True, True, True, True)
    fp8 = Facts.of(llama, 8, recipe="fp8-deepseek", gpu="A100-SXM4-80GB")
    assert fp8.precision.startswith("recipe 'fp8-deepseek' multiplies in FP8")
    assert Facts.of(llama, 8, recipe="fp8-deepseek", gpu="H100-SXM5-80GB").precision == ""
    assert Facts.of(llama, 8, recipe="fp8-deepseek").precision == ""  # no GPU: not judged
    assert Facts.of(llama, 8, gpu="A100-SXM4-80GB").precision == ""  # no recipe: not judged


def _one(**fields) -> dict[str, np.ndarray]:
    """Arrays of layouts (plan_arrays' form) from per-field values."""
    base = {"tp": 1, "pp": 1, "dp": 1, "micro_batch": 1, "interleave": 1, "zero_stage": 0,
            "sp": False, "recompute": "none", "cp": 1, "ep": 1}
    base.update(fields)
    base.setdefault("zero_shard", base["dp"])
    base.setdefault("global_batch", np.asarray(base["dp"]) * np.asarray(base["micro_batch"]))
    return {k: np.asarray(v) for k, v in base.items()}


def _rule(name: str) -> int:
    return next(i for i, r in enumerate(layout.RULES) if r.name == name)


def test_hybrid_shard_groups_by_hand():
    """dp = 8 with ZeRO-1: groups of 8 (0 in the search's arrays means the whole dp), 2 or 1
    divide 8 and are kept; 3 does not; a framework without hybrid sharding keeps only the
    whole group; without ZeRO nothing may be sharded in groups."""
    a = _one(dp=8, zero_stage=1, zero_shard=[0, 8, 2, 1, 3])
    assert layout.failures(a, Facts()).tolist() == [-1, -1, -1, -1, _rule("zero_shard_divides")]
    off = _rule("zero_shard_offered")
    assert layout.failures(a, Facts(hybrid_shard=False)).tolist() == [
        -1, -1, off, off, _rule("zero_shard_divides")]
    with pytest.raises(ValueError, match=r"zero_shard=3 must divide dp=8; allowed: 1, 2, 4, 8"):
        Plan(dp=8, zero_stage=1, zero_shard=3)
    with pytest.raises(ValueError, match=r"zero_shard=2 shards model state, but zero_stage=0"):
        Plan(dp=8, zero_shard=2)
    assert Plan(dp=8, zero_stage=1, zero_shard=8).zero_shard is None  # plain ZeRO
    assert Plan(dp=8, zero_stage=1, zero_shard=2).shard_group == 2


def test_ring_and_all_to_all_split_different_sizes():
    """Ring attention needs 2 cp | s; the all-to-all needs cp | s and cp | KV heads. s = 8192
    with 8 KV heads: cp = 16 suits the ring only. s = 9 with 3 KV heads: cp = 3 suits the
    all-to-all only (6 does not divide 9)."""
    def ok(variant, seq_len, kv_heads, cp):
        facts = Facts(kv_heads=kv_heads, seq_len=seq_len, flash_attention=True,
                      cp_variant=variant)
        return bool(layout.valid(_one(cp=cp), facts)[()])

    assert ok("ring", 8192, 8, 16) and not ok("all-to-all", 8192, 8, 16)
    assert ok("all-to-all", 9, 3, 3) and not ok("ring", 9, 3, 3)


def test_rules_without_cp_or_ep_in_the_arrays_read_them_as_one():
    """Arrays from before cp and ep existed: both count as 1, so every cp and ep rule holds."""
    a = {k: v for k, v in _one(dp=2).items() if k not in ("cp", "ep")}
    assert layout.failures(a, Facts(framework="deepspeed-2021", cp_variant="",
                                    expert_parallel=False, experts=0)).tolist() == -1


def test_interleaving_counts_the_busiest_stage_and_dualpipe_the_micro_batches():
    """96 layers over pp = 5 with uneven stages: the busiest holds ceil(96/5) = 20, which v = 2
    divides and v = 3 does not. DualPipe needs an even count of micro-batches:
    6 / (1 × 2) = 3 is odd, 4 / (1 × 2) = 2 is even."""
    facts = Facts(n_layers=96, uneven_layers=True)
    a = _one(pp=5, interleave=[2, 3], global_batch=5)
    assert layout.failures(a, facts).tolist() == [-1, _rule("interleave_layers")]
    with pytest.raises(ValueError, match="must divide the 20 layers per stage"):
        layout.check(Plan(pp=5, interleave=3, global_batch=5), facts)
    dual = Facts(pipeline_schedule="dualpipe")
    b = _one(pp=2, micro_batch=2, global_batch=[6, 4])
    assert layout.failures(b, dual).tolist() == [_rule("dualpipe_shape"), -1]


def test_valid_judges_only_the_rules_named():
    """tp = 5 breaks the heads rule for 96 heads (5 does not divide 96) but keeps the batch
    rule: invalid under every rule, valid when only the batch rule is asked about."""
    a = _one(tp=5)
    facts = Facts(n_heads=96)
    assert not layout.valid(a, facts)[()]
    assert layout.valid(a, facts, only=("batch",))[()]
    assert layout.failures(a, facts, only=("batch",)).tolist() == -1
