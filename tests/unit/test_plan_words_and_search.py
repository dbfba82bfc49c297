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
    """A result whose ``order`` is empty (none of its plans fits; :func:`plan.search` raises
    instead, so only a result built by hand has one) explains itself in one sentence and
    lists no rows."""
    r = replace(_hand_result(), order=np.arange(0))
    assert r.n_fit == 0
    assert plan.explain(r) == "No plan fits."
    assert r.top() == [] and r.top(3) == []
    with pytest.raises(ValueError, match=r"^rank=0: no plan of this search fits, so none is "
                                         r"ranked; allow more GPUs"):
        r.plan(0)


# ------------------------------------------------------------------- no valid layout, in words
_TRY = ("Try a GPU count with more small factors (a multiple of 8) or a global batch divisible "
        "by it.")


def _no_layout(*args, **kw) -> str:
    with pytest.raises(plan.NoPlanError) as err:
        plan.search(*args, uneven_layers=False, **kw)
    assert err.value.closest is None
    return str(err.value)


def test_no_valid_layout_lists_the_rules_that_removed_most_splits_first():
    """15 = 3 × 5 GPUs split 9 ways into TP × PP × DP (each prime goes to one of the three).
    Megatron 7.5B (32 heads, 36 layers) at a batch of 48: the 3 ways with 5 in DP break the
    batch; of the other 6, the 4 with 3 or 5 in TP break the heads; the last 2 put 5 or 15
    stages on 36 layers. The biggest count comes first: 4, 3, 2."""
    assert _no_layout("megatron-7.5b", "A100", 15, 48) == (
        "no layout of n_gpus=15 is valid for megatron-7.5b with global_batch=48: of the 9 ways "
        "to split 15 GPUs into TP × PP × DP, tensor-parallel sizes must divide the 32 heads "
        "(4 of 9); the data-parallel size n/(tp·pp) must divide global_batch=48 (3 of 9); "
        "pipeline sizes must divide the 36 layers (2 of 9). " + _TRY)


def test_no_valid_layout_of_a_mixture_of_experts_counts_its_expert_parallel_sizes():
    """Qwen3-30B-A3B's 128 experts split 8 ways (1, 2, ..., 128 per expert-parallel rank),
    so each of the 3 splits of 7 GPUs is counted 8 times: 24 ways, "with CP and EP"; 7-way
    DP breaks the batch of 64, 7-way TP the 32 heads, 7 stages the 48 layers."""
    assert _no_layout("qwen3-30b-a3b", "H100", 7, 64) == (
        "no layout of n_gpus=7 is valid for qwen3-30b-a3b with global_batch=64: of the 24 ways "
        "to split 7 GPUs into TP × PP × DP (with CP and EP), the data-parallel size n/(tp·pp) "
        "must divide global_batch=64 (8 of 24); tensor-parallel sizes must divide the 32 heads "
        "(8 of 24); pipeline sizes must divide the 48 layers (8 of 24). " + _TRY)


@pytest.mark.parametrize(("seq_len", "with_cp"), [(32767, ""), (32768, " (with CP and EP)")])
def test_no_valid_layout_of_a_long_sequence_says_context_parallelism_was_tried(seq_len,
                                                                              with_cp):
    """From 32,768 tokens on (the search's long sequences) the message says the ways include
    context and expert parallelism, one token shorter it does not: 7 GPUs, 3 ways."""
    assert _no_layout("megatron-7.5b", "A100", 7, 64, seq_len=seq_len) == (
        "no layout of n_gpus=7 is valid for megatron-7.5b with global_batch=64: of the 3 ways "
        f"to split 7 GPUs into TP × PP × DP{with_cp}, the data-parallel size n/(tp·pp) must "
        "divide global_batch=64 (1 of 3); tensor-parallel sizes must divide the 32 heads "
        "(1 of 3); pipeline sizes must divide the 36 layers (1 of 3). " + _TRY)


# --------------------------------------------------------------------- the search's results
#: a made-up measured network: NVLink-like inside a node, a slower port between nodes
NET = NodeNetwork(intra=AlphaBeta(2e-6, 300e9), inter=AlphaBeta(5e-6, 25e9), gpus_per_node=8)
CAL = plan.Calibration(collective_efficiency=0.5)


@pytest.fixture(scope="module")
def small_search():
    """Megatron 7.5B on 32 A100s (4 nodes of 8) under Megatron-LM 2021: a few hundred plans."""
    return plan.search("megatron-7.5b", "A100", 32, 64, NET, calibration=CAL,
                       framework="megatron-lm-2021", max_micro_batch=2, max_interleave=2)


def _plain_ranking(r: plan.SearchResult) -> list[int]:
    """The fitting plans' indices, fastest first (less memory first among equal times)."""
    a = r.arrays
    fitting = [i for i in range(a["step_s"].size) if a["memory_bytes"][i] <= a["capacity_bytes"][i]]
    return sorted(fitting, key=lambda i: (a["step_s"][i], a["memory_bytes"][i]))


def test_the_defaults_give_the_fastest_plan_and_ten_rows(small_search):
    """Without arguments ``plan`` and ``result`` give the fastest fitting plan, ``top`` the
    ten fastest as rows and ``share_where`` the shares among those ten, as a plain loop over
    the search's arrays finds them."""
    r, a = small_search, small_search.arrays
    ranking = _plain_ranking(r)
    assert len(ranking) > 11
    fields = ("tp", "pp", "dp", "micro_batch", "interleave", "zero_stage", "sp", "recompute")

    def fields_of(i):
        return tuple(a[f][i].item() for f in fields)

    assert tuple(getattr(r.plan(), f) for f in fields) == fields_of(ranking[0])
    best = r.result()
    assert tuple(getattr(best.plan, f) for f in fields) == fields_of(ranking[0])
    assert best.step_s == pytest.approx(a["step_s"][ranking[0]], rel=1e-9)
    rows = r.top()
    assert [tuple(row[f] for f in fields) for row in rows] == [fields_of(i) for i in ranking[:10]]
    ten = ranking[:10]
    expected = {"tp_within_node": sum(a["tp"][i] <= 8 for i in ten) / 10,
                "pp_over_1": sum(a["pp"][i] > 1 for i in ten) / 10,
                "dp_over_1": sum(a["dp"][i] > 1 for i in ten) / 10}
    assert r.share_where() == pytest.approx(expected, abs=1e-12)
    assert set(expected.values()) - {0.0, 1.0}  # a share the eleventh plan would change


def test_a_row_gives_each_plans_zero_shard_group():
    """Hybrid sharding in groups of 4 of Megatron 7.5B on 32 GPUs: each row's ``zero_shard``
    is the data-parallel ranks sharing one copy of the model state, ``dp`` for plain ZeRO (or
    none) and 4 for the hybrid plans, as their labels say."""
    r = plan.search("megatron-7.5b", "A100", 32, 64, NET, calibration=CAL,
                    framework="megatron-core", zero_shards=(4,), max_micro_batch=1,
                    max_interleave=1, recompute=("selective",), sequence_parallel=(True,))
    rows = r.top(r.n_fit)
    hybrid = [row for row in rows if "(hybrid)" in row["plan"]]
    assert hybrid and len(hybrid) < len(rows)
    for row in rows:
        group = 4 if "in groups of 4 (hybrid)" in row["plan"] else row["dp"]
        assert row["zero_shard"] == group


def test_a_ranked_plan_is_evaluated_with_every_setting_of_its_search():
    """``result(rank)`` evaluates the plan again, one at a time: with the search's recipe
    (Megatron's bf16 weights and fp32 gradients: 18 bytes a parameter), framework switches
    (gradient reduction not overlapped), even stages only and tensor parallelism across nodes
    allowed, so it finds the memory and step the search found for that plan; with tensor
    parallelism over 16 GPUs (two nodes) too."""
    r = plan.search("megatron-7.5b", "A100", 32, 64, NET, calibration=CAL,
                    framework="megatron-core", recipe="megatron-bf16",
                    switches={"grad_overlap": False}, uneven_layers=False,
                    allow_tp_across_nodes=True, max_micro_batch=1, max_interleave=1,
                    zero_stages=(0,), recompute=("selective",), sequence_parallel=(True,))
    a = r.arrays
    assert r.rank_where(tp=16) is not None and r.rank_where(dp=16) is not None
    for rank in range(r.n_fit):  # 12 plans
        i = r.order[rank]
        got = r.result(rank)
        assert (got.plan.tp, got.plan.pp, got.plan.dp) == (a["tp"][i], a["pp"][i], a["dp"][i])
        assert got.memory_bytes == pytest.approx(a["memory_bytes"][i], rel=1e-9)
        assert got.step_s == pytest.approx(a["step_s"][i], rel=1e-9)
        assert got.step["dp_comm"] == pytest.approx(a["dp_comm_s"][i], rel=1e-9)


# ----------------------------------------------------------- collectives on a measured network
A_IN, B_IN, A_OUT, B_OUT = 2e-6, 300e9, 5e-6, 25e9
EFF = 0.5  # the share of line rate the planner derates both links to
S = 1e9    # bytes


def ring(op: str, n: int, size: float, alpha: float, bw: float) -> float:
    """Patarasuk and Yuan's ring: all-reduce 2(n-1) steps and 2(n-1)/n of the data,
    reduce-scatter or all-gather half of that."""
    k = 2 if op == "all_reduce" else 1
    return k * (n - 1) * alpha + k * (n - 1) / n * size / bw


def tree_all_reduce(n: int, size: float, alpha: float, bw: float) -> float:
    """A double binary tree: 2 log2(n) steps (n a power of two), twice the data sent."""
    return 2 * int(np.log2(n)) * alpha + 2 * size / bw


def _measured(**kw):
    """The planner's model of a network given as measured α-β pairs (priced as measured)."""
    net = NodeNetwork(intra=AlphaBeta(A_IN, B_IN), inter=AlphaBeta(A_OUT, B_OUT),
                      gpus_per_node=8, **kw)
    links = derated_links(net, EFF)
    cm = collective_model(net, links, catalog.gpu("A100"), True)
    assert not cm.nccl
    return cm, links


def test_two_gpus_a_node_run_the_hierarchical_collectives():
    """8 GPUs, 2 in each of 4 nodes: the all-reduce reduce-scatters inside each node (2 GPUs),
    all-reduces the half each GPU holds over the 4 nodes, and all-gathers inside the node; the
    reduce-scatter is the node's then the network's on half the data."""
    cm, _ = _measured()
    b_in, b_out = B_IN * EFF, B_OUT * EFF
    assert cm.time("all_reduce", np.array([S]), 8, 2)[0] == pytest.approx(
        ring("reduce_scatter", 2, S, A_IN, b_in) + ring("all_reduce", 4, S / 2, A_OUT, b_out)
        + ring("all_gather", 2, S, A_IN, b_in), rel=1e-12)
    assert cm.time("reduce_scatter", np.array([S]), 8, 2)[0] == pytest.approx(
        ring("reduce_scatter", 2, S, A_IN, b_in)
        + ring("reduce_scatter", 4, S / 2, A_OUT, b_out), rel=1e-12)


def test_a_node_share_that_does_not_split_the_group_evenly_is_one_flat_ring():
    """12 GPUs, 8 of them on one node: no whole per-node parts, so one flat ring over all 12,
    paced by the network: 22 α + 22/12 S/B."""
    cm, _ = _measured()
    assert cm.time("all_reduce", np.array([S]), 12, 8)[0] == pytest.approx(
        ring("all_reduce", 12, S, A_OUT, B_OUT * EFF), rel=1e-12)


def test_the_network_crosses_nodes_with_its_own_algorithm():
    """A network whose collectives cross nodes as trees: 32 GPUs, 8 a node, all-reduce their
    eighth of the data over 4 nodes in 2 log2 4 = 4 steps, sending it twice; 4 GPUs, one a
    node, run one tree over all 4."""
    cm, _ = _measured(inter_algorithm="tree")
    b_in, b_out = B_IN * EFF, B_OUT * EFF
    assert cm.time("all_reduce", np.array([S]), 32, 8)[0] == pytest.approx(
        ring("reduce_scatter", 8, S, A_IN, b_in) + tree_all_reduce(4, S / 8, A_OUT, b_out)
        + ring("all_gather", 8, S, A_IN, b_in), rel=1e-12)
    assert cm.time("all_reduce", np.array([S]), 4, 1)[0] == pytest.approx(
        tree_all_reduce(4, S, A_OUT, b_out), rel=1e-12)


def test_a_collective_over_one_gpu_costs_nothing_in_float_seconds():
    """One GPU sends nothing: 0 s at any size (a float array even for integer byte counts),
    and the cached linear cost of such a group is (0 s, 0 s per byte)."""
    cm, links = _measured()
    out = cm.time("all_reduce", np.array([1000, 10**9]), 1, 1)
    assert out.dtype == np.float64 and out.tolist() == [0.0, 0.0]
    assert linear_cost(links, "all_gather", 1, 1) == (0.0, 0.0)


def test_by_value_calls_the_function_once_per_key_with_that_key():
    """``by_value`` hands each distinct key to the function with the entries that carry it."""
    calls = []

    def times_key(key, x):
        calls.append(int(key))
        return key * x

    out = by_value(np.array([3, 1, 3, 2]), times_key, np.array([1.0, 2.0, 3.0, 4.0]))
    assert out.tolist() == [3.0, 2.0, 9.0, 8.0]
    assert sorted(calls) == [1, 2, 3]


def test_nvls_reduces_an_h100_nodes_all_reduce_in_the_switch():
    """NCCL's NVLS on an H100 node (NVLink 4, 450 GB/s, derated to 90 %): each GPU sends its
    4 GB once and receives the result once, at NCCL's nvlsEfficiency of 0.85 for Hopper:
    S / (0.85 B) plus NCCL's fixed latency of some µs, faster than a ring can be
    (2(n-1)/n S / B)."""
    from scaleout.plan.network import default_network

    net = default_network("H100")
    links = derated_links(net, 0.9)
    cm = collective_model(net, links, catalog.gpu("H100"), True)
    assert cm.nccl and cm.nvls
    bw = 450e9 * 0.9
    t = float(cm.time("all_reduce", np.array([4e9]), 8, 8)[0])
    assert 4e9 / (0.85 * bw) < t < 4e9 / (0.85 * bw) + 50e-6
    assert t < 2 * 7 / 8 * 4e9 / bw


# ------------------------------------------------------------------------- presets in words
def test_a_preset_without_nccl_is_called_textbook_hierarchical(monkeypatch):
    """A preset whose collectives are the α-β model's hierarchical ones (not NCCL's) says so
    in the presets table; the NCCL presets keep their words."""
    textbook = replace(frameworks.FRAMEWORKS["megatron-lm-2021"], name="textbook",
                       collectives="hierarchical")
    monkeypatch.setitem(frameworks.FRAMEWORKS, "textbook", textbook)
    rows = {r["preset"]: r for r in frameworks.preset_rows()}
    assert rows["textbook"]["collectives"] == "textbook hierarchical α-β"
    assert rows["megatron-lm-2021"]["collectives"] == "NCCL, topology-aware"
    assert rows["deepspeed-2021"]["collectives"] == "NCCL, flat rings across nodes"
