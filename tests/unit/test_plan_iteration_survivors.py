"""Surviving mutants of the planner's per-layer communication, stage split and busiest GPU
(``scaleout.plan.step``) and of its throughput (``plan.evaluate.throughput``), killed with
expected values worked by hand, plain loops, or properties that must hold.

- ``tensor_parallel_parts``: four (six) all-reduces of ``2 b s h / cp`` bytes a layer,
  priced by a made-up ring; overlapped with three GEMM passes inside an NVLink domain only;
- ``context_parallel_parts``: the ring's key/value sends (``2 b s/cp a_kv d`` bytes, split
  over ``tp``) at the recipe's bytes, over NVLink when ``tp × cp`` fills a node, with a
  kernel so fast that every send shows; a third more under full recomputation;
- ``expert_parallel_parts``: overlapped all-to-alls show what outlasts three forward passes;
- ``stage_split``: the busiest stage's time against a plain loop over every last-stage
  layer count, 1F1B and DualPipe, with whole layers placed and the earlier stages full;
- ``busiest_gpu``: MoE layers counted by hand per stage (the first stage's under 1F1B, a
  middle GPU's under DualPipe); a model whose stages hold no MoE layer is timed as a dense one;
- ``_colls``: no dense collective with a single copy, one with two;
- ``throughput``: PaLM's model and hardware FLOPs and Megatron-LM's Eq. 3 at the plan's
  sequence length, not the model's.

See ``tests/MUTATION.md``.
"""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from scaleout import catalog
from scaleout.plan import step
from scaleout.plan.evaluate import throughput

# The GPT-shaped model of test_plan_stages.py: 8 layers, h = 1024, a = 16 (16 key/value
# heads of 64), V = 51,200, s = 1024 in the catalog; tied embeddings, learned positions.
L, H, A, V, S = 8, 1024, 16, 51_200, 1024
SMALL = catalog.custom_model(L, H, A, vocab=V, seq_len=S)
# Megatron-LM Eq. 2's per-layer count with biases and LayerNorms, the embedding, the
# positions and the final norm
N_SMALL = L * (12 * H * H + 13 * H) + V * H + S * H + 2 * H
H100_BF16 = 989e12  # H100 SXM datasheet: dense BF16 tensor-core FLOP/s


# ============================================================================ tensor parallel
class _Ring:
    """A made-up all-reduce: a ring's ``2 (n - 1)/n × bytes`` over 1 GB/s."""

    def seconds(self, op, size, n, per_node):
        assert op == "all_reduce"
        n = np.asarray(n, dtype=float)
        return 2 * (n - 1) / n * np.asarray(size, dtype=float) / 1e9


def _tp_ctx(overlap):
    return SimpleNamespace(recipe=SimpleNamespace(activation_comm_bytes=2.0),
                           model=SimpleNamespace(hidden=500),
                           network=SimpleNamespace(gpus_per_node=8), collectives=_Ring(),
                           framework=SimpleNamespace(tp_overlap=overlap))


def test_tensor_parallel_all_reduces_hidden_behind_three_gemm_passes_inside_a_node():
    """1,000 tokens of h = 500 at 2 bytes: 10^6 bytes an all-reduce, 1 ms over 2 GPUs,
    1.5 ms over 4, 1.875 ms over 16. Four a layer (six with full recomputation): 4, 9 and
    7.5 ms, none over one GPU. Overlapped with the layer's GEMMs (forward and backward twice,
    three passes of 0.5 ms and 1 ms): 4 - 1.5 = 2.5 ms and 9 - 3 = 6 ms show; 16 GPUs span
    two nodes, beyond userbuffers' NVLink domain: all 7.5 ms show."""
    x = SimpleNamespace(tp=np.array([1, 2, 4, 16]), tokens=np.full(4, 1000.0),
                        rc=np.array([0, 0, 2, 0]))
    c = {"layer_gemm_s": np.array([1e-3, 0.5e-3, 1e-3, 1e-3])}
    got = step.tensor_parallel_parts(_tp_ctx(False), x, c)["layer_tp_comm_s"]
    np.testing.assert_allclose(got, [0.0, 4e-3, 9e-3, 7.5e-3], rtol=1e-12)
    got = step.tensor_parallel_parts(_tp_ctx(True), x, c)["layer_tp_comm_s"]
    np.testing.assert_allclose(got, [0.0, 2.5e-3, 6e-3, 7.5e-3], rtol=1e-12)


# ============================================================================ context parallel
def _exposed(cp, tp, b, link, rate, s=4096, bytes_per=4):
    """Liu et al.'s ring attention, one layer: a step's causal block is ``2 b s^2 a (d_qk +
    d_v) / 2`` FLOPs over ``cp^2`` (load-balanced), ``1/tp`` of it per GPU; a key/value block
    ``2 b (s/cp) a_kv d`` values, ``1/tp`` of the 16 key/value heads per GPU, sent over
    ``link`` (α + size/B). Each of the ``cp - 1`` steps shows what the send outlasts of the
    block forward, and twice that backward (the gradients travel with it)."""
    block = b * s * s * 16 * 128 / cp**2 / tp / rate
    send = link.latency_s + 2 * b * (s / cp) * 16 * 64 * bytes_per / tp / link.bandwidth_bytes_s
    return 3 * (cp - 1) * max(0.0, send - block)


def test_ring_attention_exposed_sends_by_hand():
    """SMALL at s = 4096 under the fp32 recipe (4 bytes a value), H100 nodes of 8 GPUs, the
    attention kernel at a made-up 1,000 times the BF16 peak (9.89 * 10^17 FLOP/s, less the
    SMs the framework keeps for communication), so most of each send shows. cp 2 × tp 4
    fills a node: NVLink; cp 4 × tp 4 spans two: the network. b = 2 doubles the block; full
    recomputation runs the forward ring once more (4/3); cp 1 has no ring."""
    ctx = step.context(SMALL, "H100", None, None, "fp32-adam", 4096, 8, None)
    assert ctx.recipe.activation_comm_bytes == 4
    flat = SimpleNamespace(matmul_efficiency=lambda dim: np.ones(np.shape(dim)))
    ctx = replace(ctx, calibration=flat, bf16_achievable=1000.0)
    rate = H100_BF16 * 1000.0 * (1 - ctx.framework.comm_sm_share)
    links = ctx.collectives.links
    cp, tp, b = np.array([2, 2, 4, 1]), np.array([4, 1, 4, 8]), np.array([2, 1, 1, 1])
    x = SimpleNamespace(cp=cp, tp=tp, b=b, rc=np.array([2, 0, 1, 2]),
                        tokens=b * 4096.0 / cp)
    want = [_exposed(2, 4, 2, links.intra, rate) * 4 / 3, _exposed(2, 1, 1, links.intra, rate),
            _exposed(4, 4, 1, links.inter, rate), 0.0]
    got = step.context_parallel_parts(ctx, x)["layer_cp_comm_s"]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert min(want[:3]) > 0


# ============================================================================ expert parallel
def test_overlapped_all_to_alls_show_what_outlasts_three_forward_passes():
    """With ``a2a_overlap`` the dispatch and combine of a 2 ms forward layer hide behind
    forward and backward (3 × 2 ms): 10 ms show 4 ms, 5 ms none; EP 1 has no all-to-all;
    without overlap everything shows."""
    x = SimpleNamespace(ep=np.array([1, 2, 8, 8]))
    c = {"layer_ep_total_s": np.array([0.0, 10.0, 10.0, 5.0]),
         "layer_forward_s": np.full(4, 2.0)}
    on = SimpleNamespace(framework=SimpleNamespace(a2a_overlap=True))
    off = SimpleNamespace(framework=SimpleNamespace(a2a_overlap=False))
    np.testing.assert_allclose(step.expert_parallel_parts(on, x, c)["layer_ep_comm_s"],
                               [0.0, 4.0, 4.0, 0.0], rtol=1e-12)
    np.testing.assert_allclose(step.expert_parallel_parts(off, x, c)["layer_ep_comm_s"],
                               [0.0, 10.0, 10.0, 5.0], rtol=1e-12)


# ============================================================================ stage_split
def _pace(dual, pp, k, last, r):
    """The pace of a split in layer times: 1F1B's busiest stage, or under DualPipe the
    slower of GPU 0 (first and last stage, half the micro-batches each) and a middle GPU
    (two middle stages, from four stages on)."""
    if dual:
        return max(k if pp >= 4 else 0.0, (k + last + r) / 2)
    return max(k, last + r)


@pytest.mark.parametrize(("dual", "l", "pp", "r"), [
    (False, 7, 2, 0.5), (False, 7, 2, 2.5), (False, 3, 2, 0.5), (False, 11, 3, 1.5),
    (True, 7, 4, 0.25), (True, 10, 4, 1.75), (True, 23, 6, 0.5)])
@pytest.mark.parametrize("unit_s", [1.0, 2e-5])
def test_stage_split_as_fast_as_a_loop_over_every_last_stage(dual, l, pp, r, unit_s):
    """A plain loop over every last-stage count ``L`` (the others at most
    ``k = ceil((l - L)/(pp - 1))``, the output layer ``r`` layers' time): the planner's
    split paces as the best, in whole layers, every layer placed, the earlier stages full.
    Also with a layer of 20 µs per micro-batch (a small model): the tie tolerance is relative
    to the stage time, so a split one layer faster still wins."""
    best = min(_pace(dual, pp, -(-(l - last) // (pp - 1)), last, r)
               for last in range(l - pp + 2))
    ctx = SimpleNamespace(model=SimpleNamespace(n_layers=l), framework=SimpleNamespace(
        pipeline_schedule="dualpipe" if dual else "1f1b"))
    st = step.stage_split(ctx, SimpleNamespace(pp=np.array([pp])), np.array([unit_s]),
                          np.array([r * unit_s]), True)
    k, last = float(st["first_layers"][0]), float(st["last_layers"][0])
    assert k == int(k) and last == int(last)
    assert (k - 1) * (pp - 1) < l - last <= k * (pp - 1)
    assert _pace(dual, pp, k, last, r) == pytest.approx(best, rel=1e-12)
    if not dual:
        assert st["busiest_s"][0] == pytest.approx(best * unit_s, rel=1e-12)


@pytest.mark.parametrize(("l", "pp", "r", "expected"), [
    (61, 2, 0.7, (34, 27)), (11, 2, 3.3, (11, 0)), (9, 2, 0.1, (8, 1)), (61, 16, 0.3, (4, 1))])
def test_equally_fast_splits_are_reported_the_same_at_any_time_scale(l, pp, r, expected):
    """DualPipe on two stages: GPU 0 runs both, so every split ``k + L = l`` paces alike at
    ``(l + r)/2`` layer times; on 16 stages a middle GPU's ``k = 4`` sets the pace for
    ``L`` of 1 or 2 alike. Of equally fast splits the one with the fewest layers on the
    last stage among those tried (``L`` from three below the balance point ``(l - r)/2``
    on two stages) is reported, whatever the unit of time: rounding does not choose."""
    ctx = SimpleNamespace(model=SimpleNamespace(n_layers=l), framework=SimpleNamespace(
        pipeline_schedule="dualpipe"))
    for unit in (1.0, 0.1, 0.3, 1 / 3, 7.7e-3, 123.456):
        st = step.stage_split(ctx, SimpleNamespace(pp=np.array([pp])), np.array([unit]),
                              np.array([r * unit]), True)
        k, last = float(st["first_layers"][0]), float(st["last_layers"][0])
        assert (k, last) == expected
        assert _pace(True, pp, k, last, r) == pytest.approx(
            min(_pace(True, pp, -(-(l - L) // (pp - 1)), L, r) for L in range(l - pp + 2)),
            rel=1e-12)


# ============================================================================ busiest_gpu
def _experts(moe):
    """MoE counts of an 8-layer model whose layers ``moe`` have experts: in the first k
    layers, in the last k, and the most in any k consecutive ones (k = 0..8)."""
    flags = [j in moe for j in range(8)]
    first = [sum(flags[:k]) for k in range(9)]
    last = [sum(flags[8 - k:]) for k in range(9)]
    window = [max(sum(flags[i:i + k]) for i in range(9 - k)) for k in range(9)]
    return SimpleNamespace(moe_first=np.array(first, dtype=float),
                           moe_last=np.array(last, dtype=float),
                           moe_window=np.array(window, dtype=float))


def _busiest(experts, schedule, pp, k, last, ep_layer, head, busy=None):
    ctx = SimpleNamespace(experts=experts, model=SimpleNamespace(n_layers=8),
                          framework=SimpleNamespace(pipeline_schedule=schedule))
    st = {"first_layers": np.array([float(k)]), "last_layers": np.array([float(last)]),
          "busiest_s": np.array([0.0]), "last_is_busiest": np.array([False])}
    st.update(busy or {})
    got = step.busiest_gpu(ctx, SimpleNamespace(pp=np.array([pp])), st, np.array([1.0]),
                           np.array([ep_layer]), np.array([head]))
    return {key: float(np.ravel(v)[0]) for key, v in got.items()}


def test_first_stage_with_the_moe_layers_is_the_busiest():
    """8 layers on 2 stages of 4, experts in layers 0-3 only; a layer 1 s, its all-to-alls
    1 s more, the output layer 0.5 s. 1F1B: the first stage 4 + 4 = 8 s, the last
    4 + 0 + 0.5 = 4.5 s: the first sets the pace with its 4 MoE layers."""
    got = _busiest(_experts(range(4)), "1f1b", 2, 4, 4, 1.0, 0.5)
    assert (got["layers"], got["moe_layers"], got["head"]) == (4.0, 4.0, 0.0)
    assert got["busiest_s"] == pytest.approx(8.0, rel=1e-12)


def test_dualpipe_middle_gpu_with_the_moe_layers_is_the_busiest():
    """DualPipe (DeepSeek-V3 Sec. 3.2.1), 8 layers on 4 stages of 2, experts in layers 2-5:
    GPU 0 runs stages 0 and 3 (no MoE layer): (2 + 2 + 0.5)/2 = 2.25 s; a middle GPU two
    middle stages of 2 layers, 2 of them MoE in the worst window: 2 + 2 = 4 s sets the pace."""
    got = _busiest(_experts(range(2, 6)), "dualpipe", 4, 2, 2, 1.0, 0.5)
    assert (got["layers"], got["moe_layers"], got["head"]) == (2.0, 2.0, 0.0)
    assert got["busiest_s"] == pytest.approx(4.0, rel=1e-12)


def test_stages_without_moe_layers_are_timed_as_a_dense_models():
    """3 layers of 1 s on 2 stages, the output layer 1 s: the loop's best split is 2 + 1
    (both stages 2 s, a tie). A mixture of experts none of whose layers has experts must be
    timed as the dense model: the same layers, output layer and seconds on the GPU named
    busiest."""
    ctx = SimpleNamespace(model=SimpleNamespace(n_layers=3),
                          framework=SimpleNamespace(pipeline_schedule="1f1b"))
    st = step.stage_split(ctx, SimpleNamespace(pp=np.array([2])), np.array([1.0]),
                          np.array([1.0]), True)
    assert (st["first_layers"][0], st["last_layers"][0], st["busiest_s"][0]) == (2, 1, 2.0)
    busy = {key: st[key] for key in ("busiest_s", "last_is_busiest")}
    dense = _busiest(None, "1f1b", 2, 2, 1, 0.0, 1.0, busy)
    no_moe = _busiest(_experts(()), "1f1b", 2, 2, 1, 0.5, 1.0, busy)
    assert dense == no_moe
    assert dense["busiest_s"] == 2.0


# ============================================================================ _colls
class _FakeCollectives:
    """A made-up collective model: ``size (n - 1)/n`` seconds a byte for a reduce-scatter
    or all-gather over ``n`` GPUs, twice that for an all-reduce; node-aggregated 8 times
    faster than a flat ring."""

    def seconds(self, op, size, n, per_node, *, node_aggregate=True):
        n = np.asarray(n, dtype=float)
        t = {"all_reduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0}[op]
        return t * np.asarray(size, dtype=float) * (n - 1) / n / (8.0 if node_aggregate
                                                                   else 1.0)


def test_dense_part_of_a_moe_reduced_from_two_copies_not_from_one():
    """A mixture of experts over dp = 1, 2 and 16 (2 replicas of shard groups of 8): the
    dense gradients' all-reduce of 1,600 B costs nothing with one copy, 2 × 1,600 × 1/2 / 8 =
    200 with two and 2 × 1,600 × 15/16 / 8 = 375 with 16; the sharded reduce-scatter
    1,600 × 1/2 / 8 = 100 over 2 and (1,400 + 200)/8 = 200 over the hybrid 16."""
    a = {"dp": np.array([1, 2, 16]), "per_node_dp": np.array([1, 2, 8]),
         "shard": np.array([1, 2, 8]), "per_node_shard": np.array([1, 2, 8]),
         "replicas": np.array([1, 1, 2]), "per_node_replica": np.array([1, 1, 1]),
         "edp": np.array([1, 1, 4]), "per_node_edp": np.array([1, 1, 4])}
    ctx = SimpleNamespace(framework=SimpleNamespace(flat_dp_rings=False),
                          collectives=_FakeCollectives())
    coll, sharded, _ = step._colls(ctx, a)
    np.testing.assert_allclose(coll("all_reduce", np.full(3, 1600.0)), [0.0, 200.0, 375.0],
                               rtol=1e-12)
    np.testing.assert_allclose(sharded("reduce_scatter", np.full(3, 1600.0)),
                               [0.0, 100.0, 200.0], rtol=1e-12)


# ============================================================================ throughput
def test_throughput_at_the_plans_sequence_length():
    """SMALL run at s = 2048 (1,024 in the catalog), 8 sequences a step of 2 s on one H100.
    PaLM App. B: model FLOPs (6N + 12 l h s) B s, full recomputation's hardware FLOPs
    (8N + 16 l h s) B s, selective's the model's plus attention's forward 4 l h s B s again;
    MFU over 989 TFLOP/s; TFLOP/s a GPU are FLOPs over 10^12 per second. Megatron-LM Eq. 3
    (full recomputation): 96 B s l h^2 (1 + s/6h + V/16lh)."""
    s, B, seconds = 2048, 8, 2.0
    ctx = step.context(SMALL, "H100", None, None, "mixed-adam", s, B, None)
    got = throughput(ctx, 1, np.full(3, seconds), np.array([0, 1, 2]))
    model = (6 * N_SMALL + 12 * L * H * s) * B * s
    hardware = [model, model + 4 * L * H * s * B * s, (8 * N_SMALL + 16 * L * H * s) * B * s]
    megatron = 96 * B * s * L * H**2 * (1 + s / (6 * H) + V / (16 * L * H))
    np.testing.assert_allclose(got["tokens_per_s"], B * s / seconds, rtol=1e-12)
    np.testing.assert_allclose(got["mfu"], model / seconds / H100_BF16, rtol=1e-12)
    np.testing.assert_allclose(got["hfu"], np.array(hardware) / seconds / H100_BF16,
                               rtol=1e-12)
    # FLOP/s over 10^12 exactly: a few roundings, far below a 10^-12 relative error
    np.testing.assert_allclose(got["model_tflops"], model / seconds / 1e12, rtol=1e-14)
    np.testing.assert_allclose(got["hardware_tflops"], np.array(hardware) / seconds / 1e12,
                               rtol=1e-12)
    np.testing.assert_allclose(np.ravel(got["megatron_tflops"]), megatron / seconds / 1e12,
                               rtol=1e-12)
