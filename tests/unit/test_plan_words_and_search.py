"""The planner's words and search results, checked against hand-written expectations.

What is checked: the sentences of :func:`scaleout.plan.bound` and :func:`scaleout.plan.explain`
(on a search result whose five plans and step parts are written out here, so every line is
known word for word: the shares kept from half a percent on, each runner-up's parts that grew
by more than a thousandth of the step, the layout sentence with context and expert
parallelism); the message of a search where no layout is valid (every rule's count, the
biggest first, and when context and expert parallelism were tried); the search result's
defaults (``plan``, ``result``, ``top``, ``share_where``) against a plain loop over its arrays,
and ``result`` re-evaluating a plan with every setting of its search; the α-β pricing of a
measured network (``CollectiveModel.time``, ``linear_cost``, ``by_value``) against the
textbook ring, tree and hierarchical formulas written out here; NVIDIA's NVLS all-reduce
inside an H100 node; the presets table's words for a framework without NCCL.

Written to kill the planner's surviving mutants (``tests/MUTATION.md``): each expected value
comes from the hand arithmetic or the plain loop in the test, not from the code under test.
"""

from dataclasses import replace

import numpy as np
import pytest
from scaleout import catalog, plan
from scaleout.collectives import AlphaBeta, NodeNetwork
from scaleout.plan import frameworks
from scaleout.plan.network import by_value, collective_model, derated_links, linear_cost

GIB = 2**30
#: named links, so the sentences can say which one a part crosses
NAMED = NodeNetwork(intra="NVLink 3", inter="InfiniBand HDR", gpus_per_node=8)


def _step(**parts: float) -> dict[str, float]:
    return dict.fromkeys(plan.STEP_PARTS, 0.0) | parts


# ------------------------------------------------------------------------------------ bound
@pytest.mark.parametrize(("part", "layout", "crosses"), [
    # t c d = 2 · 2 · 2 = 8 GPUs fill a node: the next stage sits on another node
    ("p2p", {"tp": 2, "cp": 2, "dp": 2, "pp": 2}, "InfiniBand HDR pipeline sends"),
    ("p2p", {"tp": 2, "cp": 1, "dp": 2, "pp": 2}, "NVLink 3 pipeline sends"),
    # t c d = 2 · 4 · 2 = 16 GPUs: the data-parallel group spans two nodes
    ("dp_comm", {"tp": 2, "cp": 4, "dp": 2}, "InfiniBand HDR data-parallel collectives"),
    ("dp_comm", {"tp": 2, "cp": 2, "dp": 2}, "NVLink 3 data-parallel collectives"),
])
def test_bound_counts_context_parallel_gpus_in_a_stage(part, layout, crosses):
    """A stage holds t · c · d GPUs (context parallelism multiplies them like the others): a
    part of 10 s beside 3 s of compute is 10/13 = 77 % of the step."""
    sentence = plan.bound(_step(forward=1.0, backward=2.0, **{part: 10.0}),
                          plan.Plan(global_batch=64, **layout), NAMED)[2]
    assert sentence == f"bound by the {crosses} (77% of the step), not by compute (23%)"


def test_bound_counts_recomputation_once_as_compute():
    """1 s forward, 2 s backward and 1 s recomputation are 4 s of compute; with 10 s of
    tensor-parallel all-reduces the step's parts add up to 14 s: 10/14 = 71 %, 4/14 = 29 %
    (recomputation counted a second time would make it 15 s: 67 % and 27 %)."""
    name, share, sentence = plan.bound(
        _step(forward=1.0, backward=2.0, recompute=1.0, tp_comm=10.0),
        plan.Plan(global_batch=64, tp=8), NAMED)
    assert name == "tp_comm" and share == pytest.approx(10 / 14, rel=1e-12)
    assert sentence == ("bound by the NVLink 3 tensor-parallel all-reduces (71% of the step), "
                        "not by compute (29%)")
    # recomputation alone the biggest part still counts as compute: 1 + 2 + 12 of 16 s
    name, share, sentence = plan.bound(
        _step(forward=1.0, backward=2.0, recompute=12.0, tp_comm=1.0),
        plan.Plan(global_batch=64, tp=8), NAMED)
    assert (name, sentence) == ("compute", "bound by compute (94% of the step in compute)")
    assert share == pytest.approx(15 / 16, rel=1e-12)


# ---------------------------------------------------------------------------------- explain
#: five plans written out (field: one value per plan); the first is the fastest
_FIELDS = {
    "tp": [2, 2, 2, 2, 2], "cp": [2, 2, 2, 2, 2], "pp": [2, 2, 2, 2, 2], "dp": [2, 2, 2, 2, 2],
    "ep": [2, 2, 2, 2, 2], "micro_batch": [1, 1, 1, 1, 2], "interleave": [1, 1, 1, 1, 1],
    "zero_stage": [1, 0, 1, 1, 1], "zero_shard": [2, 2, 2, 2, 2],
    "sp": [True, True, True, False, True],
    "recompute": ["selective", "selective", "full", "selective", "selective"],
    "flash": [True] * 5,
}
_LABELS = ["TP2 CP2 PP2 DP2 EP2, b=1, ZeRO-1, SP, recompute selective",
           "TP2 CP2 PP2 DP2 EP2, b=1, SP, recompute selective",
           "TP2 CP2 PP2 DP2 EP2, b=1, ZeRO-1, SP, recompute full",
           "TP2 CP2 PP2 DP2 EP2, b=1, ZeRO-1, recompute selective",
           "TP2 CP2 PP2 DP2 EP2, b=2, ZeRO-1, SP, recompute selective"]
#: the best plan's step parts, seconds: 199.8 s of parts in a 200 s step
_BEST = {"forward": 60.2, "backward": 90.0, "recompute": 20.0, "tp_comm": 12.0,
         "cp_comm": 8.0, "ep_comm": 5.2, "bubble": 2.8, "p2p": 0.8, "dp_comm": 1.0,
         "optimizer": 0.0}
#: each plan's parts that differ from the best one's, and its step
_OTHERS = [({}, 200.0),
           ({"tp_comm": 15.0, "optimizer": 0.2}, 203.2),           # +3 s, and +0.2 s = 0.1 %
           ({"backward": 94.0, "ep_comm": 7.2, "bubble": 3.8}, 207.0),  # three parts grew
           ({}, 200.0),                                               # a tie in time
           ({"forward": 70.2}, 210.0)]


def _hand_result() -> plan.SearchResult:
    arrays = {k: np.array(v) for k, v in _FIELDS.items()}
    for p in plan.STEP_PARTS:
        arrays[f"{p}_s"] = np.array([changed.get(p, _BEST[p]) for changed, _ in _OTHERS])
    arrays["step_s"] = np.array([s for _, s in _OTHERS])
    arrays["mfu"] = np.array([0.413, 0.41, 0.4, 0.413, 0.39])
    arrays["memory_bytes"] = np.array([60.0, 62.0, 50.0, 70.0, 66.0]) * GIB
    arrays["capacity_bytes"] = np.full(5, 80.0 * GIB)
    return plan.SearchResult(
        "megatron-7.5b", "A100", 32, 64, 4096, NAMED, plan.Calibration(), "mixed-adam", arrays,
        np.arange(5))


def test_explain_says_everything_about_a_written_out_result_word_for_word():
    """The shares: every part of at least 0.5 % of the 200 s step, the biggest first (the
    data-parallel 1.0 s is exactly 0.5 % and stays, the sends' 0.8 s go). The winner splits
    sequences (CP 2) and spreads the experts (EP 2 of t c d = 8 GPUs: one node, 4 copies each).
    Each runner-up names at most the two parts that grew most, each by more than 0.2 s (a
    thousandth of the step: the optimizer's +0.2 s is not more), and its gap: 203.2/200 - 1
    = 1.6 %, 207/200 - 1 = 3.5 %, and 0 % for the tie, which names nothing. Three runners-up
    by default: the fifth plan is left out."""
    assert plan.explain(_hand_result()).splitlines() == [
        f"Best: {_LABELS[0]} — 200 s per iteration, MFU 41.3%, 60.0 of 80 GiB per GPU.",
        "Its time goes to: backward compute 45%, forward compute 30%, recomputation 10%, "
        "tensor-parallel all-reduces 6%, ring-attention exchange 4%, expert all-to-alls 3%, "
        "pipeline bubble 1%, data-parallel/ZeRO communication 0%.",
        "It is bound by compute (85% of the step in compute).",   # 170.2 of 199.8 s
        "Tensor parallelism 2 stays inside the 8-GPU NVLink domain; 2 pipeline stage(s) split "
        "the layers; 2 data-parallel replica(s) split the batch; context parallelism 2 splits "
        "each sequence; expert parallelism 2 spreads the experts inside a node (4 copies of "
        "each).",
        f"#2 {_LABELS[1]}: 1.6% slower (+3 s tensor-parallel all-reduces).",
        f"#3 {_LABELS[2]}: 3.5% slower (+4 s backward compute, +2 s expert all-to-alls).",
        f"#4 {_LABELS[3]}: 0.0% slower.",
    ]


def test_explain_shows_k_runners_up():
    """k = 1 shows the second plan only; k = 4 (more than the three by default) the fifth too:
    210/200 - 1 = 5 %, its forward 10 s longer."""
    lines = plan.explain(_hand_result(), k=1).splitlines()
    assert len(lines) == 5 and lines[-1].startswith("#2 ")
    assert plan.explain(_hand_result(), k=4).splitlines()[-1] == (
        f"#5 {_LABELS[4]}: 5.0% slower (+10 s forward compute).")


@pytest.mark.parametrize(("cp", "ep", "tail"), [
    (2, 1, "; context parallelism 2 splits each sequence."),
    # t c d / e = 2 · 1 · 2 / 2 = 2 copies of each expert
    (1, 2, "; expert parallelism 2 spreads the experts inside a node (2 copies of each)."),
    (1, 1, "."),
])
def test_explain_adds_context_and_expert_parallelism_from_two_on(cp, ep, tail):
    r = _hand_result()
    arrays = dict(r.arrays, cp=np.full(5, cp), ep=np.full(5, ep))
    line = plan.explain(replace(r, arrays=arrays), k=0).splitlines()[3]
    assert line == ("Tensor parallelism 2 stays inside the 8-GPU NVLink domain; 2 pipeline "
                    "stage(s) split the layers; 2 data-parallel replica(s) split the batch"
                    + tail)


def test_a_result_where_no_plan_fits_says_so_and_has_no_rows():
    """A result whose ``order`` is empty (none of its plans fits) explains itself in one
    sentence, lists no rows and, asked for a plan, says which ranks there are (none)."""
    r = replace(_hand_result(), order=np.arange(0))
    assert r.n_fit == 0
    assert plan.explain(r) == "No plan fits."
    assert r.top() == [] and r.top(3) == []
