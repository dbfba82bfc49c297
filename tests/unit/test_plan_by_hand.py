"""The planner's step model on a measured α-β network, checked term by term by hand.

The layout is Narayanan et al. 2021's GPT-3 175B row of Table 1 (t = 8, p = 16, 1,536 A100s,
batch 1,536, micro-batch 1) under Megatron-LM as published (nothing overlapped, full
recomputation, no sequence parallelism). The network is given as measured α-β pairs, so
every collective is priced by the textbook ring formulas, which the tests write out:
a ring all-reduce over ``n`` GPUs takes ``2(n-1) α + 2(n-1)/n · S/B`` (Patarasuk and Yuan
2009), reduce-scatter and all-gather half of that. Every expected value below is computed
here from the model's shape (GPT-3: 96 layers, h = 12,288, 96 heads, s = 2,048,
V = 50,257, tied embeddings), the A100's datasheet (312 TFLOP/s BF16, 2,039 GB/s) and the
calibration's formulas (``η(x) = η_max x/(x + x_half)``), never from the planner's output.
Further down: ZeRO's stages under Megatron-Core with its overlaps off, HAI-LLM's recomputed
norms, a multi-token-prediction module given to GPT-3, Qwen3-30B-A3B's experts (its model
card's 30.5 billion parameters, 128 SwiGLU experts of 768 per layer), and the search's rows,
messages and presets table. Written to kill the planner's surviving mutants
(``tests/MUTATION.md``).
"""

import importlib

import numpy as np
import pytest
from scaleout import plan
from scaleout.collectives import AlphaBeta, NodeNetwork

L, H, HEADS, S, V = 96, 12288, 96, 2048, 50257
LAYER_PARAMS = 12 * H * H + 13 * H  # GPT-3's layer: QKV, projection, 4h MLP, biases, norms
PEAK, HBM = 312e12, 2039e9          # A100 SXM4 80GB datasheet: BF16 dense, HBM2e
#: a made-up measured network: NVLink-like inside a node, a slower port between nodes
A_IN, B_IN, A_OUT, B_OUT = 2e-6, 300e9, 5e-6, 25e9
NET = NodeNetwork(intra=AlphaBeta(A_IN, B_IN), inter=AlphaBeta(A_OUT, B_OUT), gpus_per_node=8)
EFF = 0.5  # the calibration's share of line rate, chosen so a wrong share shows
CAL = plan.Calibration(collective_efficiency=EFF)


def ring_all_reduce(n: int, size: float, alpha: float, bw: float) -> float:
    """Patarasuk and Yuan's bandwidth-optimal ring: 2(n-1) steps, 2(n-1)/n of the data."""
    return 0.0 if n == 1 else 2 * (n - 1) * alpha + 2 * (n - 1) / n * size / bw


def ring_half(n: int, size: float, alpha: float, bw: float) -> float:
    """Reduce-scatter or all-gather on a ring: n-1 steps, (n-1)/n of the data."""
    return 0.0 if n == 1 else (n - 1) * alpha + (n - 1) / n * size / bw


def _evaluate(tp=8, pp=16, dp=12, b=1, v=1, recompute="full", batch=1536, **kw):
    return plan.evaluate("gpt3-175b", "A100", plan.Plan(
        tp=tp, pp=pp, dp=dp, micro_batch=b, global_batch=batch, interleave=v, sp=False,
        recompute=recompute), NET, calibration=CAL, framework="megatron-lm-2021", **kw)


def _layer_forward_s(tp: int, b: int) -> float:
    """One layer's forward on one GPU for one micro-batch: its matrices (2 FLOPs per parameter
    and token) and attention's two products (4 s h per token) at η(min(h/t, b s)) × peak,
    plus the memory-bound work, κ = 8 times the 16-bit activations Korthikanti et al. Table 2
    stores without sequence parallelism, sbh (10 + 24/t + 5as/(ht)), over a third of the
    forward-and-backward traffic."""
    tokens = b * S
    x = min(H / tp, tokens)
    rate = 0.74 * x / (x + 50.0) * PEAK
    matrices = 2 * tokens * LAYER_PARAMS / tp / rate
    attention = tokens * 4 * S * H / tp / rate
    stored = S * b * H * (10 + 24 / tp + 5 * HEADS * S / (H * tp))
    return matrices + attention + 8.0 * stored / HBM / 3


def _head_s(tp: int, b: int) -> float:
    """The output layer's forward and backward (2 + 4 FLOPs per weight and token)."""
    tokens = b * S
    x = min(H / tp, tokens)
    return 3 * 2 * tokens * V * H / tp / (0.74 * x / (x + 50.0) * PEAK)


@pytest.mark.parametrize(("recompute", "calls"), [("full", 6), ("selective", 4), ("none", 4)])
def test_tensor_parallel_all_reduces_are_rings_of_2bsh_bytes(recompute, calls):
    """Four all-reduces of 2bsh bytes per layer and micro-batch (six with full recomputation),
    over the 8 GPUs of a node, for the busiest stage's 6 layers and the 128 micro-batches."""
    result = _evaluate(recompute=recompute)
    one = ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)
    assert result.step["tp_comm"] == pytest.approx(128 * 6 * calls * one, rel=1e-12)


@pytest.mark.parametrize(("tp", "pp", "dp", "v", "alpha", "bw"), [
    (8, 16, 12, 1, A_OUT, B_OUT),   # a stage fills whole nodes: its neighbour is on another
    (8, 16, 12, 2, A_OUT, B_OUT),   # two chunks per GPU: twice the sends
    (2, 4, 2, 1, A_IN, B_IN),       # tp × dp = 4 GPUs: consecutive stages share a node
])
def test_pipeline_sends_are_2bsh_over_t_twice_per_micro_batch_and_chunk(tp, pp, dp, v, alpha,
                                                                        bw):
    """Scatter/gather sends (Narayanan Sec. 4.1): 2bsh/t bytes, a forward and a backward one
    per micro-batch and model chunk, all on the critical path in Megatron-LM 2021."""
    m = 1536 // dp
    result = _evaluate(tp=tp, pp=pp, dp=dp, v=v)
    hand = 2 * v * m * (alpha + 2 * S * H / tp / (bw * EFF))
    assert result.step["p2p"] == pytest.approx(hand, rel=1e-12)


def test_without_pipelining_nothing_is_sent():
    result = plan.evaluate("megatron-7.5b", "A100", plan.Plan(tp=8, pp=1, dp=2, micro_batch=1,
                                                              global_batch=32), NET,
                           calibration=CAL, framework="megatron-lm-2021")
    assert result.step["p2p"] == 0.0 and result.step["bubble"] == 0.0


def test_gradient_all_reduce_is_a_flat_ring_when_tensor_parallelism_fills_the_node():
    """t = 8 fills each node, so the 12 data-parallel ranks of a stage sit on 12 nodes: one ring
    over the network of the first stage's gradients (2 bytes each: its 6 layers, the word and
    position embeddings, over t), after the last backward pass."""
    params = (6 * LAYER_PARAMS + V * H + S * H) / 8
    result = _evaluate()
    assert result.step["dp_comm"] == pytest.approx(
        ring_all_reduce(12, 2 * params, A_OUT, B_OUT * EFF), rel=1e-12)


def test_gradient_all_reduce_is_hierarchical_over_the_ranks_a_node_holds():
    """t = 2 leaves room for 4 data-parallel ranks per node: reduce-scatter among them, an
    all-reduce of a quarter across the 12 nodes (48 / 4), all-gather (Thakur et al. 2005)."""
    params = (6 * LAYER_PARAMS + V * H + S * H) / 2
    grads = 2 * params
    hand = (ring_half(4, grads, A_IN, B_IN * EFF)
            + ring_all_reduce(12, grads / 4, A_OUT, B_OUT * EFF)
            + ring_half(4, grads, A_IN, B_IN * EFF))
    result = _evaluate(tp=2, pp=16, dp=48)
    assert result.step["dp_comm"] == pytest.approx(hand, rel=1e-12)


def test_compute_recompute_and_bubble_by_hand():
    """The last stage (6 layers and the output layer) is the busiest: per micro-batch a
    forward, a backward of twice its FLOPs, a full recomputation of the layers' forward;
    the bubble is (p - 1) of an average stage's micro-batch time (Narayanan Sec. 2.2)."""
    result = _evaluate()
    fwd, head = _layer_forward_s(8, 1), _head_s(8, 1)
    m = 128
    assert result.step["forward"] == pytest.approx(m * (6 * fwd + head / 3), rel=1e-9)
    assert result.step["backward"] == pytest.approx(m * (12 * fwd + 2 * head / 3), rel=1e-9)
    assert result.step["recompute"] == pytest.approx(m * 6 * fwd, rel=1e-9)
    tp_layer = 6 * ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)
    average = (L * (3 * fwd + fwd + tp_layer) + head) / 16
    assert result.step["bubble"] == pytest.approx(15 * average, rel=1e-9)
    interleaved = _evaluate(v=2)
    assert interleaved.step["bubble"] == pytest.approx(15 / 2 * average, rel=1e-9)


def test_selective_recomputation_repeats_attention_and_its_score_bytes():
    """Korthikanti et al. Sec. 5: selective recomputation repeats attention's two products
    (4 b s² h FLOPs) and the memory-bound work on its 5 a s² b stored bytes."""
    result = _evaluate(recompute="selective")
    x = min(H / 8, S)
    rate = 0.74 * x / (x + 50.0) * PEAK
    per_layer = S * 4 * S * H / 8 / rate + 8.0 * 5 * HEADS * S * S / 8 / HBM / 3
    assert result.step["recompute"] == pytest.approx(128 * 6 * per_layer, rel=1e-9)
    assert _evaluate(recompute="none").step["recompute"] == 0.0


def test_stage_memory_by_hand():
    """ZeRO-less mixed precision: 2 + 2 + 12 bytes per parameter; full recomputation keeps each
    layer's 2sbh-byte input for every micro-batch in flight (p - i on stage i under 1F1B);
    the first stage holds the embeddings, the last a copy of the tied output layer, the final
    norm and the loss's fp32 logits (2 × 4 × b s V/t); every GPU 1.75 GiB besides and 5% of
    what it holds."""
    result = _evaluate()
    first = (6 * LAYER_PARAMS + V * H + S * H) / 8
    last = (6 * LAYER_PARAMS + V * H + H + H) / 8
    gib = 2**30
    for stage in result.stages:
        params = first if stage.stage == 0 else last if stage.stage == 15 else (
            6 * LAYER_PARAMS / 8)
        assert stage.layers == 6
        assert stage.params == pytest.approx(params, rel=1e-12)
        assert (stage.weights_bytes, stage.grads_bytes, stage.optimizer_bytes) == \
            pytest.approx((2 * params, 2 * params, 12 * params), rel=1e-12)
        assert stage.in_flight == 16 - stage.stage
        assert stage.activations_bytes == pytest.approx(2 * S * H * 6 * (16 - stage.stage),
                                                        rel=1e-12)
        held = 16 * params + stage.activations_bytes
        logits = 8 * S * V / 8 if stage.stage == 15 else 0.0
        assert stage.reserve_bytes == pytest.approx(1.75 * gib + 0.05 * held + logits,
                                                    rel=1e-12)
        assert (stage.embedding, stage.output) == (stage.stage == 0, stage.stage == 15)
    assert result.memory == result.stages[0].parts()
    assert result.stage_memory_bytes["first"] == pytest.approx(result.stages[0].total_bytes,
                                                               rel=1e-12)
    assert result.stage_memory_bytes["last"] == pytest.approx(result.stages[15].total_bytes,
                                                              rel=1e-12)


#: Megatron-Core with every overlap turned off: its collectives in buckets, nothing hidden
MCORE_PLAIN = {"framework": "megatron-core",
               "switches": {"grad_overlap": False, "param_gather_overlap": False,
                            "tp_overlap": False, "p2p_overlap": False}}
BUCKET = 40e6 * 4  # Megatron-Core's bucket: 40 million fp32 gradients


def test_zero1_reduce_scatters_and_gathers_in_buckets_each_paying_its_latency():
    """The distributed optimizer (ZeRO-1): the first stage's gradients reduce-scattered and its
    updated weights all-gathered over the 12 data-parallel ranks, a flat ring across nodes,
    in ceil(bytes / bucket) calls, each paying the ring's 11 latencies; the optimizer state
    (12 bytes a parameter) sharded 12 ways."""
    params = (6 * LAYER_PARAMS + V * H + S * H) / 8
    k = -(-2 * params // BUCKET)  # ceil
    assert k == 18  # 2.88 GB in 160 MB buckets
    one_way = k * 11 * A_OUT + 11 / 12 * 2 * params / (B_OUT * EFF)
    result = plan.evaluate("gpt3-175b", "A100", plan.Plan(
        tp=8, pp=16, dp=12, micro_batch=1, global_batch=1536, sp=False, recompute="full",
        zero_stage=1), NET, calibration=CAL, **MCORE_PLAIN)
    assert result.step["dp_comm"] == pytest.approx(2 * one_way, rel=1e-12)
    first = result.stages[0]
    assert (first.weights_bytes, first.grads_bytes, first.optimizer_bytes) == pytest.approx(
        (2 * params, 2 * params, 12 * params / 12), rel=1e-12)


def test_zero3_gathers_every_layer_for_forward_and_backward_one_ahead():
    """ZeRO-3 without pipelining (FSDP-style, one unit per layer, the next one prefetched):
    per micro-batch each of the 96 layers' weights are all-gathered before its forward and
    again before its backward, its gradients reduce-scattered after it; a gather hides behind
    the previous unit's compute where it is shorter, so a pass over U units takes
    ``c + (U - 1) max(compute, comm) + compute``; the embeddings and final norm are one more
    gather and reduce-scatter. Every GPU also keeps two layers gathered whole."""
    dp, m = 192, 8
    result = plan.evaluate("gpt3-175b", "A100", plan.Plan(
        tp=8, pp=1, dp=dp, micro_batch=1, global_batch=1536, sp=False, recompute="full",
        zero_stage=3), NET, calibration=CAL, **MCORE_PLAIN)
    layer = LAYER_PARAMS / 8
    rest = (V * H + S * H + 2 * H) / 8
    gather = ring_half(dp, 2 * layer, A_OUT, B_OUT * EFF)
    scatter = ring_half(dp, 2 * layer, A_OUT, B_OUT * EFF)
    fwd = _layer_forward_s(8, 1)
    per_layer = 3 * fwd + fwd + 6 * ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)
    c_f, c_b = per_layer / 3, 2 * per_layer / 3
    forward = gather + 95 * max(c_f, gather) + c_f
    backward = (gather + scatter) + 95 * max(c_b, gather + scatter) + c_b
    rest_s = 2 * ring_half(dp, 2 * rest, A_OUT, B_OUT * EFF)
    hand = m * (forward + backward - 96 * (c_f + c_b) + rest_s)
    assert result.step["dp_comm"] == pytest.approx(hand, rel=1e-9)
    params = 96 * layer + rest
    only = result.stages[0]
    assert (only.weights_bytes, only.grads_bytes, only.optimizer_bytes) == pytest.approx(
        (2 * params / dp, 2 * params / dp, 12 * params / dp), rel=1e-12)
    held = 16 * params / dp + only.activations_bytes
    logits = 8 * S * V / 8
    assert only.reserve_bytes == pytest.approx(
        1.75 * 2**30 + 0.05 * held + logits + 2 * 2 * layer, rel=1e-12)
    assert result.step["optimizer"] == pytest.approx(params * 28 / dp / HBM, rel=1e-12)


def test_zero2_shards_gradients_and_optimizer_but_not_weights():
    """ZeRO-2 (PyTorch FSDP's SHARD_GRAD_OP, no pipelining): 2Ψ + 14Ψ/N_d (ZeRO Sec. 5.2)."""
    result = plan.evaluate("megatron-7.5b", "A100", plan.Plan(
        tp=1, pp=1, dp=4, micro_batch=1, global_batch=32, zero_stage=2), NET,
        calibration=CAL, framework="pytorch-fsdp")
    w = result.memory["weights"]
    assert result.memory["grads"] == pytest.approx(w / 4, rel=1e-12)
    assert result.memory["optimizer"] == pytest.approx(6 * w / 4, rel=1e-12)


@pytest.mark.parametrize("pp", [5, 7, 9])
def test_uneven_split_is_the_fastest_whole_layer_split_of_a_plain_search(pp):
    """96 layers on a pp that does not divide them: the last stage takes L layers and the
    output layer, the others ceil((96 - L)/(pp - 1)) each at most, earlier stages full. The
    planner's split must be as fast as the best a plain loop over every L finds (the busiest
    stage's micro-batch time; several L may tie), with the earlier stages full; the bubble is
    still (pp - 1) of an average stage."""
    result = _evaluate(tp=8, pp=pp, dp=1, batch=64, recompute="full")
    fwd, head = _layer_forward_s(8, 1), _head_s(8, 1)
    per_layer = 4 * fwd + 6 * ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)

    def busiest(last):
        return max(-(-(L - last) // (pp - 1)) * per_layer, last * per_layer + head)

    best = min(busiest(last) for last in range(L - (pp - 1) + 1))
    counts = [stage.layers for stage in result.stages]
    last = counts[-1]
    assert busiest(last) == pytest.approx(best, rel=1e-12)
    k, rest = -(-(L - last) // (pp - 1)), L - last
    full = rest - (pp - 1) * (k - 1)  # stages with k layers, the others k - 1
    assert counts == [k] * full + [k - 1] * (pp - 1 - full) + [last]
    m = 64
    busy_layers, busy_head = (last, 1.0) if last * per_layer + head >= k * per_layer else (k, 0.0)
    assert result.step["forward"] == pytest.approx(
        m * (busy_layers * fwd + busy_head * head / 3), rel=1e-9)
    assert result.step["bubble"] == pytest.approx((pp - 1) * (L * per_layer + head) / pp,
                                                  rel=1e-9)


@pytest.mark.parametrize(("recompute", "extra"), [("none", 0), ("selective", 1), ("full", 2)])
def test_throughput_mfu_hfu_and_megatron_flops_by_hand(recompute, extra):
    """Tokens/s is B s over the step; model FLOPs 6N + 12 l h s per token (PaLM App. B, N
    every parameter, embeddings once); hardware FLOPs add attention's forward products again
    under selective recomputation and a whole forward pass under full; Megatron's Eq. 3
    counts 96 B s l h² (1 + s/6h + V/16lh) per iteration whatever the recomputation; a
    training budget in tokens gives days and GPU-hours."""
    result = _evaluate(recompute=recompute, tokens=300e9)
    n, step = 1536, result.step_s
    params = L * LAYER_PARAMS + V * H + S * H + 2 * H
    assert step == pytest.approx(sum(result.step.values()), rel=1e-12)
    assert result.tokens_per_s == pytest.approx(1536 * S / step, rel=1e-12)
    model = 1536 * S * (6 * params + 12 * L * H * S)
    hardware = model + {0: 0.0, 1: 1536 * S * 4 * L * H * S,
                        2: 1536 * S * (2 * params + 4 * L * H * S)}[extra]
    assert result.mfu == pytest.approx(model / (step * n * PEAK), rel=1e-12)
    assert result.hfu == pytest.approx(hardware / (step * n * PEAK), rel=1e-12)
    assert result.model_tflops_per_gpu == pytest.approx(model / (step * n) / 1e12, rel=1e-12)
    assert result.hardware_tflops_per_gpu == pytest.approx(hardware / (step * n) / 1e12,
                                                           rel=1e-12)
    megatron = 96 * 1536 * S * L * H * H * (1 + S / (6 * H) + V / (16 * L * H))
    assert result.megatron_tflops_per_gpu == pytest.approx(megatron / (step * n) / 1e12,
                                                           rel=1e-12)
    seconds = 300e9 / (1536 * S / step)
    assert result.training_days == pytest.approx(seconds / 86400, rel=1e-12)
    assert result.gpu_hours == pytest.approx(seconds * n / 3600, rel=1e-12)


def test_fit_headroom_shortfall_and_tight_by_hand():
    """The first stage holds the most: below 80 GiB it fits, with the rest as headroom; the
    same layout on 16 stages fits where it would not on 4 (four times the layers per GPU)."""
    gib = 2**30
    fits = _evaluate()
    total = sum(fits.memory.values())
    assert fits.memory_bytes == pytest.approx(total, rel=1e-12)
    assert fits.capacity_bytes == 80 * gib
    assert fits.fits and fits.shortfall_gib == 0.0
    assert fits.headroom_gib == pytest.approx((80 * gib - total) / gib, rel=1e-12)
    assert total < 0.9 * 80 * gib and not fits.tight
    assert fits.largest_stage == fits.stages[0]
    shown = fits.memory_gib()
    assert shown["total"] == pytest.approx(total / gib, rel=1e-12)
    assert shown["capacity"] == 80.0
    assert shown["weights"] == pytest.approx(fits.memory["weights"] / gib, rel=1e-12)
    over = _evaluate(pp=4, dp=48)
    o_total = sum(over.memory.values())
    assert o_total > 80 * gib and not over.fits and over.tight
    assert over.shortfall_gib == pytest.approx((o_total - 80 * gib) / gib, rel=1e-12)
    assert over.headroom_gib == pytest.approx(-over.shortfall_gib, rel=1e-12)


def test_data_parallel_ranks_per_node_are_the_largest_divisor_that_fits():
    """A plain loop: the most ranks of a data-parallel group of ``dp`` one node can hold
    (``room``) that still split the group into whole per-node parts."""
    from scaleout.plan.network import dp_ranks_per_node

    dps = [1, 2, 3, 4, 6, 7, 8, 12, 16, 18, 48, 96, 100, 1024]
    rooms = [1, 2, 3, 4, 8, 9, 72]
    grid = [(d, r) for d in dps for r in rooms]
    got = dp_ranks_per_node([d for d, _ in grid], [r for _, r in grid])
    for (d, r), k in zip(grid, got.tolist(), strict=True):
        best = 1
        for c in range(1, d + 1):
            if d % c == 0 and c <= r:
                best = c
        assert k == best, (d, r)
    assert dp_ranks_per_node([[12, 18], [48, 7]], 4).tolist() == [[4, 3], [4, 1]]


def test_collectives_of_a_group_within_one_node_use_the_node_link_alone():
    """tp = 2, dp = 4, pp = 1 on one 8-GPU node: the gradient all-reduce is one ring over
    the 4 data-parallel ranks on the node's link (no network), and it runs even with one
    micro-batch per replica."""
    result = plan.evaluate("megatron-7.5b", "A100", plan.Plan(tp=2, pp=1, dp=4, micro_batch=1,
                                                              global_batch=4, sp=False), NET,
                           calibration=CAL, framework="megatron-lm-2021")
    params = result.memory["weights"] / 2
    assert result.step["dp_comm"] == pytest.approx(
        ring_all_reduce(4, 2 * params, A_IN, B_IN * EFF), rel=1e-12)
    alone = plan.evaluate("megatron-7.5b", "A100", plan.Plan(tp=8, pp=1, dp=1, micro_batch=1,
                                                             global_batch=4, sp=False), NET,
                          calibration=CAL, framework="megatron-lm-2021")
    assert alone.step["dp_comm"] == 0.0


def test_preset_rows_say_each_presets_switches_in_words():
    """The table of presets (notebook 08), read against the presets' documented switches."""
    from scaleout.plan.frameworks import preset_rows

    rows = {r["preset"]: r for r in preset_rows()}
    assert rows["megatron-lm-2021"] == {
        "preset": "megatron-lm-2021", "framework": "Megatron-LM as published in 2021-22",
        "layouts": "TP, SP, PP, interleaved", "recompute": "none, selective, full",
        "collectives": "NCCL, topology-aware", "gradients": "one call", "overlapped": "nothing",
        "ZeRO-3 gathers": "—", "ZeRO stages": "0", "with pipelining": "no ZeRO",
        "hybrid sharding": "no", "context parallel": "no", "expert parallel": "no",
        "schedule": "1F1B"}
    ds = rows["deepspeed-2021"]  # buckets of 5e8 two-byte gradients: 1e9 B = 954 MiB
    assert (ds["collectives"], ds["gradients"], ds["overlapped"], ds["ZeRO-3 gathers"],
            ds["ZeRO stages"], ds["with pipelining"]) == (
        "NCCL, flat rings across nodes", "buckets of 954 MiB", "gradient reduction",
        "per tensor, 1 ahead, the host waiting at each",  # v0.3.16's synchronize per fetch
        "0, 1, 2, 3", "up to ZeRO-1")
    mc = rows["megatron-core"]  # 40 million fp32 gradients: 160e6 B = 153 MiB
    assert (mc["gradients"], mc["overlapped"], mc["ZeRO-3 gathers"], mc["hybrid sharding"],
            mc["context parallel"], mc["expert parallel"]) == (
        "buckets of 153 MiB",
        "gradient reduction, ZeRO-1/2 weight gather, tensor-parallel, pipeline sends",
        "per layer, 1 ahead", "yes", "ring", "yes")
    hai = rows["deepseek-hai-llm"]
    assert (hai["overlapped"], hai["schedule"], hai["ZeRO-3 gathers"]) == (
        "pipeline sends, MoE all-to-all", "DualPipe", "—")
    assert rows["torchtitan"]["with pipelining"] == "up to ZeRO-3, synced once a step"
    # DeepSpeed of 2021: one 1F1B schedule, whole-layer checkpoints, no sequence parallelism;
    # Composer's FSDP of 2022-23: data parallelism alone
    assert (ds["layouts"], ds["recompute"]) == ("TP, PP", "none, full")
    assert (rows["pytorch-fsdp"]["layouts"], rows["pytorch-fsdp"]["recompute"]) == (
        "data parallel only", "none, full")


@pytest.mark.parametrize("intra_hw", ["nvlink", "pci"])
@pytest.mark.parametrize(("op", "n", "per_node"), [
    ("all_reduce", 64, 8), ("reduce_scatter", 16, 4), ("all_gather", 8, 8), ("all_reduce", 4, 1)])
def test_one_collective_costs_what_the_array_form_gives(intra_hw, op, n, per_node):
    """``CollectiveModel.time`` (one group) and ``.seconds`` (many plans at once) are two ways
    to ask NCCL's model the same question: they agree for each op, group, node share and
    intra-node hardware, with the default node aggregation and without."""
    from dataclasses import replace

    from scaleout import catalog
    from scaleout.plan.network import collective_model, derated_links

    net = NodeNetwork("NVLink 3", "InfiniBand HDR", 8)
    cm = replace(collective_model(net, derated_links(net, 0.9), catalog.gpu("A100"), True),
                 intra_hw=intra_hw)
    assert cm.nccl
    sizes = np.array([1e3, 1e6, 1e9])
    ones = np.ones(3, dtype=np.int64)
    for aggregate in (True, False):
        many = cm.seconds(op, sizes, n * ones, per_node * ones, node_aggregate=aggregate)
        assert cm.time(op, sizes, n, per_node, node_aggregate=aggregate) == pytest.approx(
            many, rel=1e-12)
    assert cm.time(op, sizes, n, per_node) == pytest.approx(
        cm.seconds(op, sizes, n * ones, per_node * ones), rel=1e-12)
    assert cm.time(op, sizes, 1, 1).tolist() == [0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def small_search():
    """Megatron 7.5B on 32 A100s (4 nodes of 8) under Megatron-LM 2021: a few hundred plans."""
    return plan.search("megatron-7.5b", "A100", 32, 64, NET, calibration=CAL,
                       framework="megatron-lm-2021", max_micro_batch=2, max_interleave=2)


def test_search_rows_are_the_evaluated_plans_and_shares_count_them(small_search):
    """Each of the top rows is its plan evaluated in full (memory in GiB, recomputation,
    step, the gap to the fastest in percent), and ``share_where`` counts, among the top
    plans, those with TP inside a node and with PP and DP above one, as a plain loop does."""
    rows = small_search.top(12)
    assert [r["rank"] for r in rows] == list(range(1, 13))
    for r in rows:
        result = small_search.result(r["rank"] - 1)
        p = result.plan
        assert (r["tp"], r["pp"], r["dp"], r["micro_batch"], r["interleave"], r["zero_stage"],
                r["sp"], r["recompute"], r["cp"], r["ep"]) == (
            p.tp, p.pp, p.dp, p.micro_batch, p.interleave, p.zero_stage, p.sp, p.recompute,
            p.cp, p.ep)
        assert r["plan"] == p.label
        assert r["memory_gib"] == pytest.approx(result.memory_bytes / 2**30, rel=1e-9)
        assert r["step_s"] == pytest.approx(result.step_s, rel=1e-9)
        assert r["tokens_per_s"] == pytest.approx(result.tokens_per_s, rel=1e-9)
        assert r["mfu_pct"] == pytest.approx(100 * result.mfu, rel=1e-9)
        assert r["slower_pct"] == pytest.approx(100 * (r["step_s"] / rows[0]["step_s"] - 1),
                                                rel=1e-9, abs=1e-9)
    every = small_search.top(small_search.n_fit)
    assert len({r["recompute"] for r in every}) > 1
    assert {r["tp"] for r in every} >= {1, 8} and {r["dp"] for r in every} >= {1, 2}
    for k in (1, 5, 12, small_search.n_fit):
        top = every[:k]
        shares = small_search.share_where(k)
        assert shares == {
            "tp_within_node": sum(r["tp"] <= 8 for r in top) / k,
            "pp_over_1": sum(r["pp"] > 1 for r in top) / k,
            "dp_over_1": sum(r["dp"] > 1 for r in top) / k}
    pp_shares = {small_search.share_where(k)["pp_over_1"] for k in range(1, 13)}
    dp_shares = {small_search.share_where(k)["dp_over_1"] for k in range(1, 13)}
    assert pp_shares - {0.0, 1.0} or dp_shares - {0.0, 1.0}  # the shares are not all trivial


def test_no_valid_layout_names_each_rule_and_the_splits_it_removed():
    """7 GPUs split three ways: 7-way DP breaks the batch of 64, 7-way TP the 32 heads, 7-way
    PP the 36 layers (uneven stages refused); the message counts one of three for each and
    says what to try."""
    with pytest.raises(plan.NoPlanError) as err:
        plan.search("megatron-7.5b", "A100", 7, 64, uneven_layers=False)
    assert str(err.value) == (
        "no layout of n_gpus=7 is valid for megatron-7.5b with global_batch=64: of the 3 ways "
        "to split 7 GPUs into TP × PP × DP, the data-parallel size n/(tp·pp) must divide "
        "global_batch=64 (1 of 3); tensor-parallel sizes must divide the 32 heads (1 of 3); "
        "pipeline sizes must divide the 36 layers (1 of 3). Try a GPU count with more small "
        "factors (a multiple of 8) or a global batch divisible by it.")
    assert err.value.closest is None


@pytest.mark.parametrize(("sp", "recipe", "stored"), [
    (False, "mixed-adam", 2), (True, "mixed-adam", 2), (True, "fp32-adam", 4)])
def test_recomputed_norms_free_their_outputs_and_cost_their_traffic(sp, recipe, stored):
    """DeepSeek's HAI-LLM recomputes the normalisations (DeepSeek-V3 Sec. 3.2.3); on a dense
    model that is all its recompute kinds change: the two norm outputs, 2sbh values each
    (split over t under sequence parallelism, Korthikanti Sec. 4.2.2) stored at the Linear
    inputs' bytes (2, or 4 in fp32), leave every stored layer, and their forward traffic
    (κ = 8 times their 16-bit bytes over three) joins the recomputation.
    DualPipe on 2 stages: each GPU keeps pp + 1 = 3 micro-batches of the 48 layers its two
    stages hold on average, and runs 48 layers per micro-batch."""
    from dataclasses import replace

    hai = plan.framework("deepseek-hai-llm")
    layout = plan.Plan(tp=8, pp=2, dp=1, micro_batch=1, global_batch=16, sp=sp,
                       recompute="selective")
    runs = [plan.evaluate("gpt3-175b", "A100", layout, NET, calibration=CAL, framework=f,
                          recipe=recipe) for f in (hai, replace(hai, recompute_kinds=()))]
    norms = 4 * S * H / (8 if sp else 1)
    assert runs[1].memory["activations"] - runs[0].memory["activations"] == pytest.approx(
        norms * stored / 2 * 48 * 3, rel=1e-9)
    assert runs[0].step["recompute"] - runs[1].step["recompute"] == pytest.approx(
        16 * 48 * 8.0 * norms / HBM / 3, rel=1e-9)


def test_a_plan_from_arrays_without_cp_ep_or_shards_keeps_them_at_their_defaults():
    """Arrays that never varied context or expert parallelism, nor hybrid sharding (as a
    search before those existed kept them), give plans with cp = ep = 1 and ZeRO over all
    of dp."""
    a = {"tp": [8, 2], "pp": [2, 1], "dp": [4, 16], "micro_batch": [1, 2],
         "zero_stage": [1, 0], "sp": [True, False], "recompute": ["selective", "full"],
         "interleave": [1, 1], "flash": [False, True]}
    p = plan.plan_from_arrays(a, 0, global_batch=64)
    assert (p.tp, p.pp, p.dp, p.micro_batch, p.zero_stage, p.sp, p.recompute, p.cp, p.ep,
            p.shard_group) == (8, 2, 4, 1, 1, True, "selective", 1, 1, 4)
    q = plan.plan_from_arrays(a, 1, global_batch=64, seq_len=4096)
    assert (q.tp, q.dp, q.micro_batch, q.recompute, q.flash_attention, q.seq_len, q.cp,
            q.ep) == (2, 16, 2, "full", True, 4096, 1, 1)


def test_gradient_all_reduce_on_a_flat_network_is_one_ring_over_every_rank():
    """The same 4 ranks per node as above, on a network that does not run collectives
    hierarchically: one ring over all 48 ranks, paced by the network port."""
    flat = NodeNetwork(intra=AlphaBeta(A_IN, B_IN), inter=AlphaBeta(A_OUT, B_OUT),
                       gpus_per_node=8, hierarchical=False)
    params = (6 * LAYER_PARAMS + V * H + S * H) / 2
    result = plan.evaluate("gpt3-175b", "A100", plan.Plan(
        tp=2, pp=16, dp=48, micro_batch=1, global_batch=1536, sp=False, recompute="full"),
        flat, calibration=CAL, framework="megatron-lm-2021")
    assert result.step["dp_comm"] == pytest.approx(
        ring_all_reduce(48, 2 * params, A_OUT, B_OUT * EFF), rel=1e-12)


def test_an_unknown_framework_name_suggests_the_close_preset():
    with pytest.raises(ValueError, match=r"framework='megatron-cor' is not a preset \(did you "
                       r"mean 'megatron-core'( or [^)]*)?\?\); presets: megatron-lm-2021, "):
        plan.framework("megatron-cor")
    with pytest.raises(ValueError, match=r"framework='zzz' is not a preset; presets: "):
        plan.framework("zzz")


def test_a_multi_token_prediction_module_sits_on_the_last_stage():
    """GPT-3 given one MTP module (DeepSeek-V3 Sec. 2.2: a transformer layer, a 2h × h
    projection, one more pass through the shared output layer): the last stage holds
    (12h² + 13h + 2h²)/t parameters and one layer of activations more, the first stage
    nothing more; its forward runs the module's layer, the projection and the output layer
    again on every micro-batch."""
    from dataclasses import replace

    from scaleout import catalog

    layout = plan.Plan(tp=8, pp=16, dp=12, micro_batch=1, global_batch=1536, sp=False,
                       recompute="full")
    base, mtp = (plan.evaluate(m, "A100", layout, NET, calibration=CAL,
                               framework="megatron-lm-2021")
                 for m in (catalog.model("gpt3-175b"),
                           replace(catalog.model("gpt3-175b"), mtp_layers=1)))
    assert mtp.stages[-1].params - base.stages[-1].params == pytest.approx(
        (LAYER_PARAMS + 2 * H * H) / 8, rel=1e-12)
    assert (mtp.stages[-1].layers, base.stages[-1].layers) == (7, 6)
    assert mtp.stages[-1].activations_bytes - base.stages[-1].activations_bytes == \
        pytest.approx(2 * S * H, rel=1e-12)
    assert mtp.stages[0].params == base.stages[0].params
    fwd, head = _layer_forward_s(8, 1), _head_s(8, 1)
    x = min(H / 8, S)
    proj = 3 * 2 * S * 2 * H * H / 8 / (0.74 * x / (x + 50.0) * PEAK)
    per_layer = 4 * fwd + 6 * ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)
    head_mtp = 2 * head + proj + per_layer
    assert mtp.step["forward"] == pytest.approx(128 * (6 * fwd + head_mtp / 3), rel=1e-9)


@pytest.mark.parametrize("ep", [1, 8])
def test_one_stage_of_a_mixture_of_experts_holds_all_but_the_other_experts_shards(ep):
    """Qwen3-30B-A3B on one stage: every parameter (30.5 billion, the model card's total,
    given to 0.05 billion) less the routed experts other GPUs of the expert group hold:
    48 layers × 128 experts × 3 × 2048 × 768 (SwiGLU) routed parameters, 1/ep of them here."""
    routed = 48 * 128 * 3 * 2048 * 768
    result = plan.evaluate("qwen3-30b-a3b", "H100", plan.Plan(tp=1, pp=1, dp=8, ep=ep,
                                                              micro_batch=1, global_batch=8))
    assert result.stages[0].params == pytest.approx(30.5e9 - routed + routed / ep, abs=0.05e9)


def test_a_mixture_of_experts_reduces_expert_gradients_over_their_copies_only():
    """Qwen3-30B-A3B on 8 GPUs of one node, 4-way expert parallelism, plain data parallelism
    (Megatron-Core with its overlaps off): the non-expert gradients are all-reduced over all 8
    ranks, each expert's over the tp·dp/ep = 2 GPUs holding a copy of it, each in buckets of
    160 MB that pay the ring's latencies (2 bytes a gradient)."""
    routed = 48 * 128 * 3 * 2048 * 768 / 4  # the routed experts one GPU holds
    result = plan.evaluate("qwen3-30b-a3b", "H100", plan.Plan(
        tp=1, pp=1, dp=8, ep=4, micro_batch=1, global_batch=8), NET, calibration=CAL,
        **MCORE_PLAIN)
    dense = 2 * (result.stages[0].params - routed)
    experts = 2 * routed
    k_dense, k_experts = -(-dense // BUCKET), -(-experts // BUCKET)
    bw = B_IN * EFF
    hand = (k_dense * 14 * A_IN + 14 / 8 * dense / bw) + (k_experts * 2 * A_IN + experts / bw)
    assert result.step["dp_comm"] == pytest.approx(hand, rel=1e-12)


def test_zero3_of_a_mixture_of_experts_gathers_each_layers_experts_over_their_copies():
    """ZeRO-3 of Qwen3-30B-A3B on one node (4-way expert parallelism, 8-way data parallelism)
    on a network fast enough that every gather hides behind the unit before it: per
    micro-batch only the first gather of each pass shows, with each layer's non-expert weights
    gathered over the 8 ranks and its routed experts (1/48 of those a GPU holds) over their
    2 copies, the gradients reduce-scattered the same way, and the embeddings, output layer and
    final norm gathered and reduce-scattered once (2 bytes a value)."""
    fast = NodeNetwork(intra=AlphaBeta(1e-9, 1e15), inter=AlphaBeta(1e-9, 1e15), gpus_per_node=8)
    routed = 48 * 128 * 3 * 2048 * 768 / 4
    rest = 2 * 151936 * 2048 + 2048  # untied embedding and output layer, final norm
    result = plan.evaluate("qwen3-30b-a3b", "H100", plan.Plan(
        tp=1, pp=1, dp=8, ep=4, micro_batch=1, global_batch=8, zero_stage=3), fast,
        calibration=CAL, **MCORE_PLAIN)
    # ZeRO-3 shards the 2-byte weights over their copies: the non-expert ones 8 ways, the
    # routed experts over their 2 copies
    dense = 8 * (result.stages[0].weights_bytes / 2 - routed / 2)
    assert dense + 4 * routed == pytest.approx(30.5e9, abs=0.05e9)  # the model card's total
    layer = (dense - rest) / 48
    bw = 1e15 * EFF

    def one_way(n, values):
        return ring_half(n, 2 * values, 1e-9, bw)

    gather = one_way(8, layer) + one_way(2, routed / 48)
    scatter = one_way(8, layer) + one_way(2, routed / 48)
    rest_s = 2 * one_way(8, rest)
    assert result.step["dp_comm"] == pytest.approx(2 * gather + scatter + rest_s, rel=1e-9)


def _dualpipe(model, pp):
    """GPT-3 (or a variant) under Megatron-LM as published but with DualPipe's schedule, 64
    micro-batches of one sequence, t = 8, no data parallelism."""
    from dataclasses import replace

    layout = plan.Plan(tp=8, pp=pp, dp=1, micro_batch=1, global_batch=64, sp=False,
                       recompute="full")
    framework = replace(plan.framework("megatron-lm-2021"), pipeline_schedule="dualpipe")
    return plan.evaluate(model, "A100", layout, NET, calibration=CAL, framework=framework)


def _dualpipe_pace(n_layers, pp, last, per_layer, head):
    """DeepSeek-V3's DualPipe (Sec. 3.2.1): GPU 0 holds the first stage (k layers) and the
    last (``last`` layers and the output layer) and runs half the micro-batches through each;
    a middle GPU (from four stages on) two middle stages of k layers. The slower sets the
    pace; k = ceil((l - last)/(pp - 1))."""
    k = -(-(n_layers - last) // (pp - 1))
    return max(k * per_layer if pp >= 4 else 0.0, ((k + last) * per_layer + head) / 2)


def test_dualpipe_splits_uneven_stages_for_its_own_pace():
    """GPT-3's 96 layers on 10 DualPipe stages with a vocabulary made 5.5 layers heavy
    (1.55 million tokens): 1F1B's best split (the last stage's 3 layers and the output layer
    against 11 layers a stage) leaves DualPipe's GPU 0 and its middle GPUs at 11 layers' time;
    6 last layers and 10 a stage bring the middle GPUs to 10 and GPU 0 to (10 + 6 + 5.5)/2 =
    10.75. The planner's split must be the fastest a plain loop over every last-stage count
    finds for DualPipe's pace, and the forward time that of GPU 0: half its layers and half
    the output layer on every micro-batch."""
    from dataclasses import replace

    from scaleout import catalog

    fwd, head1 = _layer_forward_s(8, 1), _head_s(8, 1)
    per_layer = 4 * fwd + 6 * ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)
    vocab = round(V * 5.5 * per_layer / head1)
    head = head1 * vocab / V
    pp, lasts = 10, range(L - 9 + 1)
    paces = {last: _dualpipe_pace(L, pp, last, per_layer, head) for last in lasts}
    best = min(paces.values())
    one_f_one_b = {last: max(-(-(L - last) // (pp - 1)) * per_layer, last * per_layer + head)
                   for last in lasts}
    ties = [last for last, t in one_f_one_b.items() if t == min(one_f_one_b.values())]
    assert all(paces[last] > best * 1.02 for last in ties)  # the two schedules split apart
    result = _dualpipe(replace(catalog.model("gpt3-175b"), vocab=vocab), pp)
    per_gpu = [stage.layers for stage in result.stages]
    k = per_gpu[1] // 2
    last = per_gpu[0] - k
    assert per_gpu == [k + last] + [2 * k] * (pp - 2) + [k + last]
    assert (k, last) == (10, 6)
    assert paces[last] == pytest.approx(best, rel=1e-12)
    assert result.step["forward"] == pytest.approx(64 * ((k + last) / 2 * fwd + head / 6),
                                                   rel=1e-9)


def test_dualpipe_on_four_stages_is_paced_by_a_middle_gpu():
    """94 layers (GPT-3 with two fewer) on 4 DualPipe stages: the fastest splits give the
    first and middle stages 24 layers and the last 22 or 23 with the output layer (a fifth
    of a layer); GPU 0 then runs (24 + 22 + 0.18)/2 = 23.1 or 23.6 layers' time and the
    middle GPUs 24, so a middle GPU sets the pace: 24 layers, no output layer, on every
    micro-batch."""
    from dataclasses import replace

    from scaleout import catalog

    fwd, head = _layer_forward_s(8, 1), _head_s(8, 1)
    per_layer = 4 * fwd + 6 * ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)
    assert 0.17 < head / per_layer < 0.19
    paces = {last: _dualpipe_pace(94, 4, last, per_layer, head) for last in range(92)}
    result = _dualpipe(replace(catalog.model("gpt3-175b"), n_layers=94), 4)
    per_gpu = [stage.layers for stage in result.stages]
    assert [last for last, t in paces.items() if t == min(paces.values())] == [22, 23]
    last = per_gpu[0] - 24
    assert per_gpu == [24 + last, 48, 48, 24 + last] and last in (22, 23)
    assert result.step["forward"] == pytest.approx(64 * 24 * fwd, rel=1e-9)


@pytest.mark.parametrize(("n_layers", "moe_layers"), [(46, 15), (48, 16)])
def test_a_multi_token_prediction_layer_has_experts_where_the_last_layer_has(n_layers,
                                                                             moe_layers):
    """Qwen3-30B-A3B made to have experts in every third layer (layers 3, 6, ...) and one MTP
    module, on one node (t = 1, 8-way expert parallelism, Megatron-Core with its overlaps off).
    The MTP module's transformer layer is built like the model's last layer (DeepSeek-V3 Sec.
    2.2): with 46 layers the last (46th) is dense, so the forward pass pays no all-to-all and
    does not change when the node's link is ten times slower; with 48 it has experts, so the
    forward grows by a third of one MoE layer's dispatch and combine (charged with the output
    layer's passes, a third in the forward), one sixteenth of the 16 MoE layers' in ep_comm."""
    from dataclasses import replace

    from scaleout import catalog

    model = replace(catalog.model("qwen3-30b-a3b"), n_layers=n_layers, moe_layer_step=3,
                    mtp_layers=1)
    assert sum(model.layer_is_moe(i) for i in range(n_layers)) == moe_layers
    layout = plan.Plan(tp=1, pp=1, dp=8, ep=8, micro_batch=1, global_batch=8)
    fast, slow = (plan.evaluate(model, "H100", layout, NodeNetwork(
        intra=AlphaBeta(A_IN, bw), inter=AlphaBeta(A_OUT, B_OUT), gpus_per_node=8),
        calibration=CAL, **MCORE_PLAIN) for bw in (B_IN, B_IN / 10))
    ep_fast, ep_slow = fast.step["ep_comm"], slow.step["ep_comm"]
    assert ep_slow > 5 * ep_fast > 0
    grown = slow.step["forward"] - fast.step["forward"]
    if n_layers == 46:
        assert grown == 0.0
    else:
        assert grown == pytest.approx((ep_slow - ep_fast) / moe_layers / 3, rel=1e-9)


# ------------------------------------------------------------------ bound and explain in words
#: named links, so the sentences can say which one a part crosses
NAMED = NodeNetwork(intra="NVLink 3", inter="InfiniBand HDR", gpus_per_node=8)


@pytest.mark.parametrize(("part", "layout", "crosses"), [
    ("tp_comm", {"tp": 8}, "NVLink 3 tensor-parallel all-reduces"),      # t = 8 fills a node
    ("tp_comm", {"tp": 16}, "InfiniBand HDR tensor-parallel all-reduces"),
    ("cp_comm", {"tp": 2, "cp": 4}, "NVLink 3 ring-attention exchange"),  # t c = 8
    ("cp_comm", {"tp": 2, "cp": 8}, "InfiniBand HDR ring-attention exchange"),
    ("ep_comm", {"dp": 8, "ep": 8}, "NVLink 3 all-to-all"),
    ("ep_comm", {"dp": 16, "ep": 16}, "InfiniBand HDR all-to-all"),
    # a stage of t c d = 4 GPUs shares its node with the next stage; one of 8 fills it
    ("p2p", {"tp": 2, "dp": 2, "pp": 2}, "NVLink 3 pipeline sends"),
    ("p2p", {"tp": 2, "dp": 4, "pp": 2}, "InfiniBand HDR pipeline sends"),
    ("dp_comm", {"tp": 2, "dp": 4}, "NVLink 3 data-parallel collectives"),  # t c d = 8
    ("dp_comm", {"tp": 2, "dp": 8}, "InfiniBand HDR data-parallel collectives"),
])
def test_bound_names_the_link_a_part_crosses(part, layout, crosses):
    """A part of 10 s beside 1 s of forward and 2 s of backward compute is 10/13 = 77 % of the
    step and compute 3/13 = 23 %; the part is named by the link its GPUs reach each other over:
    a node's 8 GPUs over NVLink, more over the network."""
    step = dict.fromkeys(plan.STEP_PARTS, 0.0) | {"forward": 1.0, "backward": 2.0, part: 10.0}
    p = plan.Plan(global_batch=64, **layout)
    name, share, sentence = plan.bound(step, p, NAMED)
    assert (name, share) == (part, pytest.approx(10 / 13, rel=1e-12))
    assert sentence == f"bound by the {crosses} (77% of the step), not by compute (23%)"


@pytest.mark.parametrize(("part", "words"), [("bubble", "the pipeline bubble"),
                                             ("optimizer", "the optimizer's HBM traffic")])
def test_bound_names_the_parts_that_cross_no_link(part, words):
    step = dict.fromkeys(plan.STEP_PARTS, 0.0) | {"forward": 1.0, "backward": 2.0, part: 10.0}
    sentence = plan.bound(step, plan.Plan(global_batch=64, pp=2), NAMED)[2]
    assert sentence == f"bound by {words} (77% of the step), not by compute (23%)"


def test_bound_calls_a_measured_link_without_a_name_the_network():
    """``NET``'s links are bare α-β pairs: the sentence says "network" (16 GPUs cross nodes)."""
    step = dict.fromkeys(plan.STEP_PARTS, 0.0) | {"forward": 1.0, "backward": 2.0,
                                                  "tp_comm": 10.0}
    assert plan.bound(step, plan.Plan(global_batch=64, tp=16), NET)[2] == (
        "bound by the network tensor-parallel all-reduces (77% of the step), not by compute (23%)")


def test_explain_lists_the_parts_over_half_a_percent_and_the_runners_up_gap():
    """Megatron 7.5B on 32 A100s at a batch of 1,024: the optimizer's step, a fixed cost, is
    under half a percent of a 20-second step and is left out of the shares; each runner-up's
    gap is its step over the best one's, less one, in percent; the layout sentence ends the
    line when nothing else (cp, ep) is added."""
    r = plan.search("megatron-7.5b", "A100", 32, 1024, NET, calibration=CAL,
                    framework="megatron-lm-2021", max_micro_batch=1, max_interleave=1)
    best = r.result(0)
    step = best.step_s
    assert 0 < best.step["optimizer"] < 0.005 * step < 1.0
    lines = plan.explain(r, k=2).splitlines()
    # a plain loop: every part of at least half a percent, the biggest first
    kept = []
    for part in sorted(plan.STEP_PARTS, key=lambda q: -best.step[q]):
        if best.step[part] >= 0.005 * step:
            kept.append(f"{plan.PART_WORDS[part]} {100 * best.step[part] / step:.0f}%")
    assert lines[1] == "Its time goes to: " + ", ".join(kept) + "."
    assert "optimizer" not in lines[1]
    p = best.plan
    assert lines[3] == (f"Tensor parallelism {p.tp} stays inside the 8-GPU NVLink domain; "
                        f"{p.pp} pipeline stage(s) split the layers; {p.dp} data-parallel "
                        "replica(s) split the batch.")
    for rank in (1, 2):
        gap = 100 * (r.result(rank).step_s / step - 1)
        assert 0 < gap < 50
        assert lines[3 + rank].startswith(f"#{rank + 1} {r.plan(rank).label}: {gap:.1f}% slower")


@pytest.mark.parametrize(("ep", "where"), [(8, "inside a node"), (16, "over 2 nodes")])
def test_explain_says_where_the_experts_sit(ep, where):
    """Qwen3-30B-A3B's 128 experts on 32 GPUs of 8 a node: expert parallelism 8 keeps them in
    one node, 16 spreads them over 16 / 8 = 2 nodes; each expert has t c d / e copies (the
    winner's tensor, context and data-parallel GPUs over the expert-parallel ones)."""
    r = plan.search("qwen3-30b-a3b", "H100", 32, 64, NET, calibration=CAL, max_micro_batch=1,
                    max_interleave=1, ep_sizes=(ep,), sequence_parallel=(True,))
    p = r.plan(0)
    copies = p.tp * p.cp * p.dp // ep
    assert p.ep == ep and copies >= 1
    cop = "copy" if copies == 1 else "copies"
    assert (f"; expert parallelism {ep} spreads the experts {where} ({copies} {cop} of each).\n"
            in plan.explain(r, k=1))


def test_a_long_sequence_tries_every_ring_size_up_to_32_that_halves_evenly():
    """Load-balanced ring attention cuts each sequence into 2c chunks, so c > 1 must divide
    s / 2. At 131,072 = 2^17 tokens that leaves the powers of two, up to the search's cap of 32;
    at 98,304 = 3 · 2^15 also 3, 6, 12 and 24. Below 32,768 tokens only 1."""
    from scaleout import catalog
    from scaleout.plan import frameworks
    search = importlib.import_module("scaleout.plan.search")  # the module, not plan.search
    m, fw = catalog.model("llama3-405b"), frameworks.framework("megatron-core")
    assert search.default_cp_sizes(m, 131072, fw) == (1, 2, 4, 8, 16, 32)
    assert search.default_cp_sizes(m, 98304, fw) == (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
    assert search.default_cp_sizes(m, 16384, fw) == (1,)


@pytest.mark.parametrize("empty", ["zero_stages", "recompute", "sequence_parallel"])
def test_a_search_needs_at_least_one_option_of_each_kind(empty):
    with pytest.raises(ValueError, match="must each offer at least one option"):
        plan.search("megatron-7.5b", "A100", 32, 64, NET, **{empty: ()})


def test_without_flash_attention_a_long_sequence_tries_no_context_parallelism():
    """Ring attention runs attention block by block, which needs flash attention. 14 GPUs
    (2 × 7) split 3 × 3 = 9 ways into TP × PP × DP (each prime goes to one of the three);
    at 65,536 tokens with flash attention context parallelism 2 adds the 3 splits of the
    other 7 GPUs: 12 ways; without it only cp = 1 is tried: 9. None is valid for Megatron
    7.5B at a batch of 64, so the message counts them."""
    for flash, ways in ((False, 9), (True, 12)):
        with pytest.raises(plan.NoPlanError) as err:
            plan.search("megatron-7.5b", "A100", 14, 64, uneven_layers=False, seq_len=65536,
                        flash_attention=flash)
        assert f"of the {ways} ways to split 14 GPUs" in str(err.value)


def test_the_closest_plan_of_a_search_that_fits_nowhere_keeps_the_reserve_it_was_given():
    """Llama 3 405B on 8 A100s of 40 GiB fits nowhere; a reserve of 3 GiB instead of 1 makes
    the closest plan need 2 GiB more and be 2 GiB further short."""
    short = {}
    for reserve in (1.0, 3.0):
        with pytest.raises(plan.NoPlanError) as err:
            plan.search("llama3-405b", "A100-SXM4-40GB", 8, 8, reserve_gib=reserve)
        closest = err.value.closest
        short[reserve] = (closest.plan.label, closest.memory_bytes / 2**30, closest.shortfall_gib)
        assert f"{closest.shortfall_gib:.1f} GiB short" in str(err.value)
    assert short[1.0][0] == short[3.0][0]
    assert short[3.0][1] - short[1.0][1] == pytest.approx(2.0, rel=1e-9)
    assert short[3.0][2] - short[1.0][2] == pytest.approx(2.0, rel=1e-9)


def test_a_search_records_whether_attention_was_flash():
    """The command line reports the search's flash-attention setting from its result."""
    for flash in (True, False):
        r = plan.search("megatron-7.5b", "A100", 8, 16, NET, calibration=CAL,
                        flash_attention=flash, max_micro_batch=1, max_interleave=1)
        assert r.flash_attention is flash
        assert r.plan(0).flash_attention is flash


@pytest.mark.parametrize("bucket", [BUCKET, 1e15])
def test_zero1_of_a_mixture_of_experts_shards_expert_state_over_their_copies(bucket):
    """ZeRO-1 of Qwen3-30B-A3B on one node (4-way expert, 8-way data parallelism, overlaps
    off): the non-expert gradients reduce-scattered and weights all-gathered over the 8 ranks,
    the routed experts' over their tp·dp/ep = 2 copies, 2 bytes a value both ways, in
    ceil(bytes / bucket) calls each paying the ring's latencies: 160 MB buckets, or one call
    each when a bucket holds everything."""
    from dataclasses import replace

    routed = 48 * 128 * 3 * 2048 * 768 / 4  # the routed experts one GPU holds
    fw = replace(plan.framework("megatron-core"), grad_bucket_bytes=bucket)
    result = plan.evaluate("qwen3-30b-a3b", "H100", plan.Plan(
        tp=1, pp=1, dp=8, ep=4, micro_batch=1, global_batch=8, zero_stage=1), NET,
        calibration=CAL, framework=fw, switches=MCORE_PLAIN["switches"])
    dense, experts = 2 * (result.stages[0].params - routed), 2 * routed
    k_dense, k_experts = max(-(-dense // bucket), 1), max(-(-experts // bucket), 1)
    # about 3.0 GB and 14.5 GB: 19 or 20 and 91 buckets of 160 MB, or one call each
    assert (min(k_dense, k_experts) > 10) if bucket == BUCKET else (k_dense, k_experts) == (1, 1)
    bw = B_IN * EFF
    one_way = (k_dense * 7 * A_IN + 7 / 8 * dense / bw) + (k_experts * A_IN + experts / 2 / bw)
    assert result.step["dp_comm"] == pytest.approx(2 * one_way, rel=1e-12)


def test_overlapping_the_buckets_with_compute_can_only_hide_time():
    """With Megatron-Core's gradient and weight-gather overlap on, the same buckets run while
    the backward pass (and the next forward) compute: what shows is at most what shows without
    overlap, and at least one bucket's call (Li et al. 2020, Sec. 3.2.3)."""
    layout = plan.Plan(tp=1, pp=1, dp=8, ep=4, micro_batch=1, global_batch=8, zero_stage=1)
    slow = NodeNetwork(intra=AlphaBeta(A_IN, 2e9), inter=AlphaBeta(A_OUT, 2e9), gpus_per_node=8)
    plain = plan.evaluate("qwen3-30b-a3b", "H100", layout, slow, calibration=CAL, **MCORE_PLAIN)
    overlap = plan.evaluate("qwen3-30b-a3b", "H100", layout, slow, calibration=CAL,
                            framework="megatron-core")
    one_bucket = 7 * A_IN + 7 / 8 * BUCKET / (2e9 * EFF)  # a full bucket over the 8 ranks
    assert one_bucket < overlap.step["dp_comm"] < plain.step["dp_comm"]


def test_a_result_names_its_model_and_gpu():
    result = _evaluate()
    assert (result.model, result.gpu) == ("gpt3-175b", "A100-SXM4-80GB")


def test_a_gpu_whose_scale_up_fabric_is_not_in_the_catalog_gets_its_datasheet_figure():
    """A GPU spec naming a scale-up fabric the catalog lacks is priced from its own figure:
    123 GB/s per direction and the 0.5 µs step latency of the catalog's NVLink entries."""
    from dataclasses import replace

    from scaleout import catalog

    g = replace(catalog.gpu("A100"), scaleup_link="a made-up fabric", scaleup_gbytes_s=123.0)
    assert plan.default_network(g).intra == AlphaBeta(0.5e-6, 123e9)


def test_a_last_stage_heavier_than_the_others_sets_the_pace_with_fewer_layers():
    """GPT-3 on 7 stages (1F1B) with a vocabulary that makes the output layer 2.1 layers'
    time: a plain loop over every last-stage count finds 12 last layers and 14 on each other
    stage (84 / 6), the last at 12 + 2.1 = 14.1 layers' time against 14 (11 last layers would
    leave 15 a stage; 13 would make the last 15.1). The last stage is the busiest with fewer
    layers than the others: its 12 layers' tensor-parallel all-reduces and forward show."""
    from dataclasses import replace

    from scaleout import catalog

    fwd, head1 = _layer_forward_s(8, 1), _head_s(8, 1)
    tp_layer = 6 * ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)
    per_layer = 4 * fwd + tp_layer
    vocab = round(V * 2.1 * per_layer / head1)
    head = head1 * vocab / V
    pp = 7
    paces = {last: max(-(-(L - last) // (pp - 1)) * per_layer, last * per_layer + head)
             for last in range(L - pp + 2)}
    assert min(paces, key=paces.get) == 12
    result = plan.evaluate(replace(catalog.model("gpt3-175b"), vocab=vocab), "A100", plan.Plan(
        tp=8, pp=pp, dp=1, micro_batch=1, global_batch=64, sp=False, recompute="full"), NET,
        calibration=CAL, framework="megatron-lm-2021")
    assert [s.layers for s in result.stages] == [14] * 6 + [12]
    assert result.step["tp_comm"] == pytest.approx(64 * 12 * tp_layer, rel=1e-12)
    assert result.step["forward"] == pytest.approx(64 * (12 * fwd + head / 3), rel=1e-9)


@pytest.mark.parametrize("zero_stage", [0, 1])
def test_the_optimizer_step_of_a_mixture_of_experts_reads_every_state_it_holds(zero_stage):
    """An Adam step moves 28 bytes a parameter through HBM (fp32 master, momentum, variance
    and the 16-bit gradient read, the states and the 16-bit weight written): for Qwen3-30B-A3B
    on 8 H100s (3,350 GB/s) with 4-way expert parallelism, every parameter one GPU holds, or
    under ZeRO-1 the non-expert ones' eighth and the routed experts' half (their 2 copies)."""
    routed = 48 * 128 * 3 * 2048 * 768 / 4
    result = plan.evaluate("qwen3-30b-a3b", "H100", plan.Plan(
        tp=1, pp=1, dp=8, ep=4, micro_batch=1, global_batch=8, zero_stage=zero_stage), NET,
        calibration=CAL, **MCORE_PLAIN)
    dense = result.stages[0].params - routed
    held = dense + routed if zero_stage == 0 else dense / 8 + routed / 2
    assert result.step["optimizer"] == pytest.approx(28 * held / 3350e9, rel=1e-12)


@pytest.mark.parametrize(("intra", "hw"), [("PCIe Gen4 x16", "pci"), ("NVLink 3", "nvlink")])
def test_a_server_without_nvlink_is_priced_as_pcie_by_nccls_model(intra, hw):
    """A node joined by PCIe (a host link in the catalog) runs NCCL's PCIe algorithms and
    latencies, one joined by NVLink its NVLink ones."""
    from scaleout import catalog

    network = importlib.import_module("scaleout.plan.network")
    net = NodeNetwork(intra=intra, inter="InfiniBand HDR", gpus_per_node=8)
    model = network.collective_model(net, network.derated_links(net, 1.0), catalog.gpu("A100"),
                                     True)
    assert model.intra_hw == hw


@pytest.mark.parametrize(("intra_gbytes_s", "moe_layers"), [
    (300, 15),  # the last stage: its 15 MoE layers and the output layer
    (30, 16)])  # the middle stage: 16 MoE layers
def test_on_three_stages_a_middle_stage_with_more_experts_can_set_the_pace(intra_gbytes_s,
                                                                            moe_layers):
    """Qwen3-30B-A3B cut to 47 layers whose first 6 are dense (as DeepSeek-V3's first 3 are),
    on 3 stages of one node's 8-way expert parallelism each: the split is 16, 16 and 15 layers
    (the last with the output layer), so the first stage holds 10 MoE layers, the middle 16
    and the last 15. With the node's link at 300 GB/s the last stage's output layer outweighs
    one more MoE layer; at 30 GB/s the all-to-alls dominate and the middle stage, with the
    most MoE layers, sets the pace. Each MoE layer's dispatch and combine cost the same on
    every stage (same tokens, same 8 GPUs), so the busiest stage's all-to-all time is its
    MoE layers' share of the one-stage plan's 41."""
    from dataclasses import replace

    from scaleout import catalog

    model = replace(catalog.model("qwen3-30b-a3b"), n_layers=47, first_dense_layers=6)
    assert model.moe_layers == 41
    net = NodeNetwork(intra=AlphaBeta(A_IN, intra_gbytes_s * 1e9),
                      inter=AlphaBeta(A_OUT, B_OUT), gpus_per_node=8)
    one, three = (plan.evaluate(model, "H100", plan.Plan(
        tp=1, pp=pp, dp=8, ep=8, micro_batch=1, global_batch=64), net, calibration=CAL,
        uneven_layers=True, **MCORE_PLAIN) for pp in (1, 3))
    assert [(s.layers, s.moe_layers) for s in three.stages] == [(16, 10), (16, 16), (15, 15)]
    assert three.step["ep_comm"] == pytest.approx(
        one.step["ep_comm"] * moe_layers / 41, rel=1e-9)


@pytest.mark.parametrize("flat_rings", [True, False])
def test_hybrid_sharding_copies_all_reduce_over_the_ports_the_framework_rings_use(flat_rings):
    """Sharding in groups of 4 on 32 A100s (hybrid sharding: 8 copies, each group inside one
    node, two groups a node), ZeRO-2 with nothing overlapped and no buckets: the 2-byte
    gradients reduce-scattered in the group of 4, each GPU's quarter then all-reduced over
    the 8 copies (2 a node, over 4 nodes), the 2-byte weights all-gathered in the group.
    Every call is what NCCL's model gives for it with the links at the calibration's 90 %.
    Across nodes, a framework whose data-parallel collectives are flat rings (each GPU's
    traffic crossing its own port, as DeepSpeed's ZeRO-3 of 2021 did) gets one port per GPU
    (``node_aggregate=False``); NCCL's topology-aware rings pool the node's ports, here the
    two GPUs' of each copy group."""
    from scaleout import nccl
    from scaleout.plan.frameworks import Framework

    fw = Framework("hsdp", "hybrid sharding", flat_dp_rings=flat_rings, hybrid_shard=True,
                   zero_stages=(0, 1, 2, 3))
    net = NodeNetwork("NVLink 3", "InfiniBand HDR", 8)
    result = plan.evaluate("megatron-1.7b", "A100", plan.Plan(
        tp=1, pp=1, dp=32, zero_shard=4, micro_batch=1, global_batch=32, zero_stage=2), net,
        framework=fw)
    params = result.stages[0].params

    def call(op, size, n, per_node, pooled):
        return float(nccl.collective_time(
            op, size, n, per_node, intra_gbytes_s=0.9 * 300, inter_gbytes_s=0.9 * 25,
            architecture="Ampere", node_aggregate=pooled, net_latency_us=1.0).seconds)

    pooled = not flat_rings
    hand = (call("reduce_scatter", 2 * params, 4, 4, pooled)
            + call("all_reduce", 2 * params / 4, 8, 2, pooled)
            + call("all_gather", 2 * params, 4, 4, pooled))
    assert result.step["dp_comm"] == pytest.approx(hand, rel=1e-9)
    # pooling the two ports of a node changes the copies' all-reduce by more than 10 %
    assert call("all_reduce", 2 * params / 4, 8, 2, True) < 0.9 * call(
        "all_reduce", 2 * params / 4, 8, 2, False)


# =========================================================================== ZeRO-3 unit by unit
# DeepSpeed 2021's tensor-by-tensor chain (``_dp_tensor_chain``, ``tensor_fetch_chain_s``),
# ZeRO-3 without prefetch and per tensor (``_dp_full``, ``_prefetched``), a one-layer mixture of
# experts' expert gathers, framework recomputation under context parallelism
# (``_recomputed_kinds``), an MoE layer's permutation bytes (``permutation_parts``) and the
# per-operator selective checkpoint's matmuls (``every_other_matmul_params``).
H2 = H * H
#: GPT-3's layer tensor by tensor, in the order a forward pass uses them (LayerNorm weight and
#: bias, fused QKV and bias, projection and bias, LayerNorm, MLP up and bias, MLP down and bias)
GPT3_TENSORS = [H, H, 3 * H2, 3 * H, H2, H, H, H, 4 * H2, 4 * H, 4 * H2, H]
DS = plan.framework("deepspeed-2021")


def _blocking_timeline(layers, comp, gather, after=None):
    """DeepSpeed v0.3.16's blocking fetch as a plain event loop over every unit of every layer:
    on entering a unit the host waits for all communication in flight, issues the next unit's
    gather (none after the very last unit), runs the unit's computation; the unit's gradient
    reduce-scatter then queues on the same communicator behind that gather."""
    k = len(comp)
    after = after if after is not None else [0.0] * k
    order = [i for _ in range(layers) for i in range(k)]
    now, comm_free = 0.0, gather[order[0]]  # the first gather waited for in full
    for j, i in enumerate(order):
        now = max(now, comm_free)
        if j + 1 < len(order):
            comm_free = now + gather[order[j + 1]]
        done = now + comp[i]
        comm_free = max(comm_free, done) + after[i]
        now = done
    return max(now, comm_free)


def _ds_zero3_by_hand(recompute, fw, dp, m):
    """GPT-3 with t = 8, p = 1 and ZeRO-3 over ``dp`` ranks (one per node: flat rings across
    the network) under DeepSpeed 2021, by hand: every micro-batch runs a forward chain over the
    96 layers' gathered tensors (those of at least ``zero3_persistence_threshold`` elements;
    a tensor whose shard n/t is under it is a unit that gathers nothing), a recomputing chain
    under full recomputation, a backward chain in reverse that gathers again every tensor not
    kept (kept: under full recomputation, where twice the elements of the layer's later
    tensors over t are within ``zero3_max_reuse_distance``) and reduce-scatters each gathered
    tensor's gradient; the embeddings and final norm one more gather and reduce-scatter. A
    unit computes its share of the layer's weight FLOPs, the first (QKV) also the layer's
    other work; what shows is the chains less the layers' computation."""
    full = recompute == "full"
    x = min(H / 8, S)
    rate = 0.74 * x / (x + 50.0) * PEAK
    fwd = _layer_forward_s(8, 1)
    gemm = 2 * S * LAYER_PARAMS / 8 / rate
    tp_layer = (6 if full else 4) * ring_all_reduce(8, 2 * S * H, A_IN, B_IN * EFF)
    rec = {"full": fwd, "none": 0.0,
           "selective": S * 4 * S * H / 8 / rate + 8.0 * 5 * HEADS * S * S / 8 / HBM / 3}[recompute]
    per_layer = 3 * fwd + rec + tp_layer
    f_total = fwd + tp_layer / 3  # one layer's forward with its TP all-reduces
    thr, reuse = fw.zero3_persistence_threshold, fw.zero3_max_reuse_distance
    sizes = [n for n in GPT3_TENSORS if n >= thr]
    rest = (V * H + S * H + 2 * H) / 8
    rest_s = 2 * ring_half(dp, 2 * rest, A_OUT, B_OUT * EFF)
    if not sizes:
        return m * rest_s
    share = [(gemm * n / sum(sizes) + (fwd - gemm if i == 0 else 0.0)) / fwd
             for i, n in enumerate(sizes)]
    ag = [ring_half(dp, 2 * n / 8, A_OUT, B_OUT * EFF) if n / 8 >= thr else 0.0 for n in sizes]
    rs = list(ag)  # 2-byte gradients, the same ring as the 2-byte weights' gather
    kept = [full and reuse is not None and 2 * sum(sizes[i + 1:]) / 8 <= reuse
            for i in range(len(sizes))]
    again = [0.0 if keep else g for keep, g in zip(kept, ag, strict=True)]
    c_f = [f_total * sh for sh in share]
    c_b = [2 * f_total * sh + (0.0 if full else rec * sh) for sh in share]
    chains = (_blocking_timeline(96, c_f, ag)
              + _blocking_timeline(96, c_b[::-1], again[::-1], rs[::-1])
              + (_blocking_timeline(96, [rec * sh for sh in share], ag) if full else 0.0))
    return m * (chains - 96 * per_layer + rest_s)


@pytest.mark.parametrize(("recompute", "changes"), [
    ("full", {}),           # every tensor kept for the backward after the recomputation
    ("selective", {}),      # no recomputing chain: every tensor gathered again
    ("none", {}),
    ("full", {"zero3_persistence_threshold": 4 * H}),    # the MLP's bias a unit, its shard whole
    ("full", {"zero3_persistence_threshold": H2 // 8}),  # its shard exactly at the threshold
    ("full", {"zero3_persistence_threshold": 5 * H2}),   # nothing gathered in the layers
    ("full", {"zero3_max_reuse_distance": 2.25 * H2}),   # QKV's later tensors exactly at it
    ("full", {"zero3_max_reuse_distance": 2.0 * H2}),    # QKV gathered again, the rest kept
    ("full", {"zero3_max_reuse_distance": None}),        # every tensor gathered again
])
def test_deepspeed_2021_zero3_chain_of_gpt3_tensors_by_hand(recompute, changes):
    """DeepSpeed 2021's ZeRO-3 on 32 A100s (t = 8 fills each node, 4 data-parallel ranks,
    2 micro-batches of 1): its four weight matrices (3h², h², 4h², 4h²; the norms and biases
    under 10⁵ elements stay whole) gathered one by one, each behind the previous tensor's
    computation at most, timed by a plain event loop of the host's blocking fetch. DeepSpeed
    of 2021 recomputed whole layers only; the selective case asks the same chain of a
    framework that also offers selective recomputation (a plan's mode the chain must
    handle)."""
    from dataclasses import replace

    from scaleout.layout import RECOMPUTE_MODES

    fw = replace(DS, recompute_modes=RECOMPUTE_MODES, **changes)
    result = plan.evaluate("gpt3-175b", "A100", plan.Plan(
        tp=8, pp=1, dp=4, micro_batch=1, global_batch=8, sp=False, recompute=recompute,
        zero_stage=3), NET, calibration=CAL, framework=fw)
    assert result.step["dp_comm"] == pytest.approx(_ds_zero3_by_hand(recompute, fw, 4, 2),
                                                   rel=1e-9)


@pytest.mark.parametrize("unit", ["layer", "tensor"])
def test_zero3_without_prefetch_shows_every_gather_and_reduce_scatter(unit):
    """ZeRO-3 of GPT-3 (t = 8, 4 data-parallel ranks, one a node, 2 micro-batches) with nothing
    gathered ahead: each of the 96 layers waits for its weights before its forward and again
    before its backward, and for its gradients' reduce-scatter, so every collective shows in
    full whatever the computation: 96 (2 gathers + 1 reduce-scatter) per micro-batch, plus the
    embeddings' and final norm's. Gathered per layer, one call of the layer's 2-byte weights;
    per tensor, one call for each of its 12 tensors (every one pays the ring's latencies)."""
    from dataclasses import replace

    fw = replace(plan.framework("megatron-core", MCORE_PLAIN["switches"]), zero3_unit=unit,
                 zero3_prefetch=0)
    result = plan.evaluate("gpt3-175b", "A100", plan.Plan(
        tp=8, pp=1, dp=4, micro_batch=1, global_batch=8, sp=False, recompute="full",
        zero_stage=3), NET, calibration=CAL, framework=fw)
    layer = LAYER_PARAMS / 8
    if unit == "layer":
        gather = ring_half(4, 2 * layer, A_OUT, B_OUT * EFF)
    else:
        gather = sum(ring_half(4, 2 * n / 8, A_OUT, B_OUT * EFF) for n in GPT3_TENSORS)
        assert gather == pytest.approx(ring_half(4, 2 * layer, A_OUT, B_OUT * EFF)
                                       + 11 * 3 * A_OUT, rel=1e-12)
    scatter = ring_half(4, 2 * layer, A_OUT, B_OUT * EFF)
    rest = (V * H + S * H + 2 * H) / 8
    rest_s = 2 * ring_half(4, 2 * rest, A_OUT, B_OUT * EFF)
    assert result.step["dp_comm"] == pytest.approx(2 * (96 * (2 * gather + scatter) + rest_s),
                                                   rel=1e-9)


def test_zero3_gathers_all_the_experts_of_a_one_layer_stage():
    """Qwen3-30B-A3B cut to one layer, ZeRO-3 on one node of 8 H100s, nothing overlapped: with
    4-way expert parallelism each GPU holds 32 routed experts (3 matrices of 2048 x 768), kept
    in 2 copies, gathered before the layer's forward and backward and reduce-scattered after
    it, over those 2 GPUs. With 8-way expert parallelism they have one copy and nothing is sent
    for them; the rest of the step (the non-expert parameters over the 8 ranks, and one layer's
    compute, which a one-unit chain cannot hide anything behind) is the same."""
    from dataclasses import replace

    from scaleout import catalog

    model = replace(catalog.model("qwen3-30b-a3b"), n_layers=1)
    dp_comm = {ep: plan.evaluate(model, "H100", plan.Plan(
        tp=1, pp=1, dp=8, ep=ep, micro_batch=1, global_batch=8, zero_stage=3), NET,
        calibration=CAL, **MCORE_PLAIN).step["dp_comm"] for ep in (4, 8)}
    experts = 32 * 3 * 2048 * 768
    one = ring_half(2, 2 * experts, A_IN, B_IN * EFF)  # 2-byte weights or gradients
    assert dp_comm[4] - dp_comm[8] == pytest.approx(3 * one, rel=1e-9)


def test_framework_recomputation_runs_on_the_tokens_a_context_parallel_gpu_holds():
    """Recomputing the norms (DeepSeek-V3 Sec. 3.2.3's kind, given to Megatron-Core) with no
    other recomputation: each of a stage's layers writes its two LayerNorms' 16-bit outputs
    again, 2 × 2 s b h bytes, as memory-bound traffic (κ = 8 over three) on the s/c = 1,024
    tokens of GPT-3's 2,048 a GPU of a two-way context-parallel group holds; without sequence
    parallelism every tensor-parallel GPU runs them whole. 16 micro-batches on the last of 16
    stages (6 layers); those outputs leave memory: the first stage holds 16 micro-batches of
    its 6 layers."""
    from dataclasses import replace

    fw = replace(plan.framework("megatron-core", MCORE_PLAIN["switches"]),
                 recompute_kinds=("norms",))
    layout = dict(tp=8, pp=16, dp=1, cp=2, micro_batch=1, global_batch=16, sp=False,
                  recompute="none", flash_attention=True)
    result = plan.evaluate("gpt3-175b", "A100", plan.Plan(**layout), NET, calibration=CAL,
                           framework=fw)
    norms = 4 * (S / 2) * H
    assert result.step["recompute"] == pytest.approx(16 * 6 * 8.0 * norms / HBM / 3, rel=1e-12)
    plain = plan.evaluate("gpt3-175b", "A100", plan.Plan(**layout), NET, calibration=CAL,
                          framework=plan.framework("megatron-core", MCORE_PLAIN["switches"]))
    first, first_plain = result.stages[0], plain.stages[0]
    assert first.in_flight == 16
    assert first_plain.activations_bytes - first.activations_bytes == pytest.approx(
        norms * 6 * 16, rel=1e-12)


def test_permutations_of_an_moe_layer_move_each_tokens_copies_at_the_recipes_widths():
    """Qwen3-30B-A3B's token permutations under Megatron-Core's all-to-all dispatcher in fp32
    (dispatched and combined at 4 bytes a value, gradients at 2), t = 2 (each GPU routes
    4,096 / 2 = 2,048 tokens), 4-way expert parallelism (32 local experts, so the received
    copies are sorted and restored), a balanced router (ρ = 1): forward, the permute reads each
    token and writes its k = 8 copies, the sort and restore read and write the 8 copies, the
    unpermute reads the copies and writes their sum; backward, the same at 2 bytes."""
    from scaleout.plan import step

    ctx = step.context("qwen3-30b-a3b", "H100", NET, CAL, "fp32-adam", 4096, 8, "megatron-core")
    arrays = {k: np.array([v]) for k, v in dict(
        tp=2, pp=1, dp=4, ep=4, micro_batch=1, interleave=1, zero_stage=0, sp=True,
        rc=0, flash=True).items()}
    got = step.permutation_parts(ctx, step._shape(ctx, arrays), np.array([1.0]))
    t, h, k = 2048, 2048, 8
    own, copies = t * h, t * k * h
    forward = (own + copies) * 4 + 2 * copies * 4 + 2 * copies * 4 + (copies + own) * 4
    backward = (2 * (own + copies) + 4 * copies) * 2
    assert got["layer_permutation_bytes"][0] == pytest.approx(forward + backward, rel=1e-12)


def test_the_op_policy_recomputes_the_second_fourth_and_sixth_matmul_of_gpt3s_block():
    """GPT-3's block (no gating, as many key/value heads as heads): wq, wk, wv, wo, w1, w2,
    of which wk (h x h), wo (h x h) and w2 (4h x h) are recomputed: 6 h²."""
    from scaleout import catalog
    from scaleout.plan import step

    assert step.every_other_matmul_params(catalog.model("gpt3-175b")) == 6 * H2
