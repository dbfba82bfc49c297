"""The search's settings and refusals, checked against hand-written expectations.

What is checked: a node size given beside a network must agree with it (and may, when it
does); the closest plan of a search that fits nowhere and lets tensor parallelism span
nodes (a plan the default rules refuse) is evaluated under the search's own rules, and is
the smallest of a plain loop over every plan of two GPUs; the context-parallel sizes asked
for are checked only against the context-parallel rules (a framework that never leaves
activations in place still searches); a context-parallel size larger than any cluster is
refused as a size; the no-valid-layout message counts the splits a framework without
tensor or pipeline parallelism refuses (a count by hand).

Written to kill the planner's surviving mutants of ``scaleout/plan/search.py``
(``tests/MUTATION.md``): each expected value comes from hand arithmetic or a plain loop in
the test, not from the code under test.
"""

import itertools

import numpy as np
import pytest
from scaleout.layout import RECOMPUTE_MODES, Plan
from scaleout.plan import evaluate, search
from scaleout.plan.frameworks import Framework
from scaleout.plan.network import default_network
from scaleout.plan.search import NoPlanError

GIB = 2**30
SMALL = "megatron-1.7b"  # 24 heads, 24 layers
A100 = "A100-SXM4-80GB"


def test_a_node_size_beside_a_network_must_agree_with_it():
    net = default_network(A100, 8)
    with pytest.raises(ValueError, match=r"gpus_per_node=4 disagrees with the network's 8"):
        search(SMALL, A100, 8, 16, net, gpus_per_node=4)
    # the same size as the network's is accepted: the same search as without it
    same = search(SMALL, A100, 8, 16, net, gpus_per_node=8, max_interleave=1)
    plain = search(SMALL, A100, 8, 16, net, max_interleave=1)
    assert same.network.gpus_per_node == 8
    assert same.n_evaluated == plain.n_evaluated
    assert np.array_equal(same.arrays["step_s"], plain.arrays["step_s"])


def test_the_closest_plan_may_run_tensor_parallelism_across_nodes_when_the_search_does():
    gpu, model = "A100-SXM4-40GB", "megatron-7.5b"
    net = default_network(gpu, 1)  # one GPU a node: tp = 2 spans two nodes
    settings = {"recipe": "fp32-adam", "framework": "deepspeed-2021",
                "allow_tp_across_nodes": True}
    with pytest.raises(NoPlanError) as e:
        search(model, gpu, 2, 4, net, seq_len=1024, **settings)
    closest = e.value.closest
    assert closest is not None
    assert closest.plan.tp == 2 > net.gpus_per_node  # a plan only the relaxed rules allow
    again = evaluate(model, gpu, closest.plan, net, **settings)
    assert closest.memory_bytes == again.memory_bytes
    # a plain loop over every plan of 2 GPUs and a batch of 4 that evaluate accepts
    least = np.inf
    for tp, pp, mb, z, rc in itertools.product((1, 2), (1, 2), (1, 2, 4), range(4),
                                               RECOMPUTE_MODES):
        if tp * pp > 2:
            continue
        try:  # the plan and evaluate refuse what the layout rules do not allow
            p = Plan(tp=tp, pp=pp, dp=2 // (tp * pp), micro_batch=mb, global_batch=4,
                     zero_stage=z, recompute=rc, seq_len=1024)
            least = min(least, evaluate(model, gpu, p, net, **settings).memory_bytes)
        except ValueError:
            continue
    assert least > 40 * GIB
    assert closest.memory_bytes == least


def test_context_parallel_sizes_are_checked_only_against_the_context_parallel_rules():
    """A framework that offers only full recomputation and no ZeRO-0 (a custom preset) still
    searches with the sizes asked for: the probe of each size is not a whole plan."""
    fw = Framework("full-only", "Full recomputation, sharded always", cp_variant="ring",
                   recompute_modes=("full",), zero_stages=(1, 2, 3))
    r = search(SMALL, A100, 2, 8, framework=fw, cp_sizes=(1,), max_interleave=1)
    assert set(r.arrays["recompute"].tolist()) == {"full"}
    assert set(r.arrays["zero_stage"].tolist()) <= {1, 2, 3}
    assert set(r.arrays["cp"].tolist()) == {1}
    # with flash attention and a sequence of 4,096 tokens, cp = 2 is asked and kept (with
    # dp = 2 beside it on 4 GPUs: ZeRO needs data-parallel copies)
    r = search(SMALL, A100, 4, 8, framework=fw, cp_sizes=(1, 2), max_interleave=1,
               flash_attention=True, seq_len=4096)
    assert set(r.arrays["cp"].tolist()) == {1, 2}


def test_a_context_parallel_size_larger_than_any_cluster_is_refused_as_a_size():
    """2²⁴ GPUs is more than the 10⁷ any cluster may have (scaleout.checks.MAX_GPUS): the
    size itself is refused, naming it, not counted as a search with no layout."""
    big = 2**24
    with pytest.raises(ValueError, match=str(big)) as e:
        search(SMALL, A100, 2, 8, framework="megatron-core", flash_attention=True,
               seq_len=2 * big, cp_sizes=(big,))
    assert not isinstance(e.value, NoPlanError)


def test_the_no_layout_message_counts_splits_a_framework_cannot_run():
    """PyTorch FSDP (Composer, 2022-23) has neither tensor nor pipeline parallelism. 4 GPUs,
    a batch of 2: the 6 splits (tp, pp, dp) are (1,1,4): dp 4 does not divide 2 (batch);
    (1,2,2), (1,4,1): pipelines (2 of 6); (2,1,2), (2,2,1), (4,1,1): tensor parallelism
    (3 of 6). The first rule a split breaks is counted, in the rules' order (batch first)."""
    with pytest.raises(NoPlanError) as e:
        search(SMALL, A100, 4, 2, framework="pytorch-fsdp")
    msg = str(e.value)
    assert e.value.closest is None
    assert "of the 6 ways to split 4 GPUs" in msg
    assert "pytorch-fsdp has no tensor parallelism, so tp must be 1 (3 of 6)" in msg
    assert "pytorch-fsdp has no pipeline parallelism, so pp must be 1 (2 of 6)" in msg
    assert "must divide global_batch=2 (1 of 6)" in msg
    # the biggest count first
    assert msg.index("(3 of 6)") < msg.index("(2 of 6)") < msg.index("(1 of 6)")


def test_every_rule_that_counts_splits_has_a_sentence_in_the_no_layout_message():
    """The message names what each rule demands in words (the rule's own ``demand``, kept
    with the rule in ``scaleout.layout``), never a rule's bare name; a rule a search never
    counts states none, and asking for it is an error."""
    from scaleout import layout
    from scaleout.plan.search import _OUTER

    assert all(layout.demand(name) for name in _OUTER)
    assert {r.name for r in layout.RULES if r.demand} == set(_OUTER)
    with pytest.raises(KeyError, match="'sp_needs_tp' states no demand"):
        layout.demand("sp_needs_tp")


def test_context_parallel_sizes_that_divide_no_gpu_count_say_so():
    """3 GPUs and cp_sizes=(2,): no split exists at all (2 does not divide 3)."""
    with pytest.raises(NoPlanError, match=r"none of the context-parallel sizes cp_sizes=\(2,\) "
                                          r"divides 3 GPUs"):
        search(SMALL, A100, 3, 3, framework="megatron-core", flash_attention=True,
               seq_len=4096, cp_sizes=(2,))


def test_a_context_parallel_size_beyond_any_cluster_is_refused_by_its_own_name():
    with pytest.raises(ValueError,
                       match=r"cp_sizes must be a whole number from 1 to 10000000, got 16777216"):
        search(SMALL, A100, 2, 8, framework="megatron-core", flash_attention=True,
               seq_len=2**25, cp_sizes=(2**24,))


def test_a_search_under_a_custom_framework_evaluates_its_plans_under_it():
    """A framework object (not a preset) is kept by the result: result(k) prices plan k
    under it, as evaluate does when given the same object."""
    fw = Framework("full-only", "full recomputation only", recompute_modes=("full",))
    r = search(SMALL, A100, 8, 16, framework=fw)
    assert set(r.arrays["recompute"].tolist()) == {"full"}
    best = r.result(0)
    again = evaluate(SMALL, A100, r.plan(0), r.network, framework=fw)
    assert best.step_s == again.step_s
    assert best.plan.recompute == "full"
