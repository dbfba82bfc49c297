"""Memory of every pipeline rank (scaleout.plan.stages) against hand calculations."""

from __future__ import annotations

import pytest
from scaleout import catalog, memory, plan
from scaleout.plan.evaluate import _arrays
from scaleout.plan.stages import layers_per_gpu
from scaleout.plan.step import context, iteration
from scaleout.units import GIB

# A GPT-shaped model small enough to count by hand: 8 layers, h = 1024, a = 16 heads,
# V = 51,200 (tied embeddings, learned positions, biases), s = 1024.
L, H, A, V, S = 8, 1024, 16, 51_200, 1024
SMALL = catalog.custom_model(L, H, A, vocab=V, seq_len=S)
PER_LAYER = 12 * H * H + 13 * H  # Megatron-LM Eq. 2's per-layer count, biases and LayerNorms
EMBEDDING = V * H
POSITIONS = S * H
FINAL_NORM = 2 * H
# Korthikanti et al. 2022 Table 2, no parallelism, no recomputation: s b h (34 + 5 a s / h)
ACT_PER_LAYER = S * 1 * H * (34 + 5 * A * S / H)
BYTES_PER_PARAM = 2 + 2 + 12  # ZeRO Sec. 3.1: fp16 weights and gradients, fp32 Adam state
FIXED = 0.75 * GIB + 1.0 * GIB  # CUDA context and NCCL buffers (plan.RESERVE)
LOGITS = 8 * 1 * S * V  # fp32 logits and their gradient on the last stage


def _hand(layers, in_flight, params):
    """Bytes of one GPU by hand: model state, activations, the reserve (5 % slack)."""
    held = params * BYTES_PER_PARAM + ACT_PER_LAYER * layers * in_flight
    return held * 1.05 + FIXED


def test_every_stage_of_1f1b_by_hand():
    """p = 4, two layers per stage, 8 micro-batches: stage i holds p - i micro-batches
    (Narayanan et al. 2021 Sec. 2.2.1), the first the embedding and positions, the last the
    final norm, a copy of the tied embedding as output layer, and the logits."""
    result = plan.evaluate(SMALL, "H100", plan.Plan(tp=1, pp=4, dp=1, micro_batch=1,
                                                    global_batch=8))
    params = [2 * PER_LAYER + EMBEDDING + POSITIONS, 2 * PER_LAYER, 2 * PER_LAYER,
              2 * PER_LAYER + FINAL_NORM + EMBEDDING]
    assert [s.layers for s in result.stages] == [2, 2, 2, 2]
    assert [s.in_flight for s in result.stages] == [4, 3, 2, 1]
    assert [s.embedding for s in result.stages] == [True, False, False, False]
    assert [s.output for s in result.stages] == [False, False, False, True]
    for s, p, flight in zip(result.stages, params, (4, 3, 2, 1), strict=True):
        total = _hand(2, flight, p)
        total += LOGITS if s.output else 0
        assert s.params == pytest.approx(p, rel=1e-12)
        assert s.weights_bytes == pytest.approx(2 * p, rel=1e-12)
        assert s.optimizer_bytes == pytest.approx(12 * p, rel=1e-12)
        assert s.activations_bytes == pytest.approx(ACT_PER_LAYER * 2 * flight, rel=1e-12)
        assert s.total_bytes == pytest.approx(total, rel=1e-12)
    # the first stage is the fullest: fits and memory use it
    assert result.memory_bytes == pytest.approx(result.stages[0].total_bytes, rel=1e-12)
    assert result.largest_stage.stage == 0


def test_interleaved_stages_by_hand():
    """v = 2 chunks of one layer per GPU: GPU d holds layers d and d + 4; stage i holds
    (2 (p - i - 1) + (v - 1) p + 1)/v micro-batches: 5.5 (Korthikanti Sec. 4.2.3's
    p + (p - 1)/v), 4.5, 3.5, 2.5; embedding on GPU 0, output layer on GPU 3."""
    result = plan.evaluate(SMALL, "H100", plan.Plan(tp=1, pp=4, dp=1, micro_batch=1,
                                                    global_batch=8, interleave=2))
    assert list(layers_per_gpu(L, 4, 2, 2, 2)) == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [s.in_flight for s in result.stages] == [5.5, 4.5, 3.5, 2.5]
    assert [s.embedding for s in result.stages] == [True, False, False, False]
    assert [s.output for s in result.stages] == [False, False, False, True]
    total = _hand(2, 5.5, 2 * PER_LAYER + EMBEDDING + POSITIONS)
    assert result.stages[0].total_bytes == pytest.approx(total, rel=1e-12)
    total = _hand(2, 2.5, 2 * PER_LAYER + FINAL_NORM + EMBEDDING)
    assert result.stages[3].total_bytes == pytest.approx(total + LOGITS, rel=1e-12)


def test_uneven_stages_hold_their_own_layers():
    """Llama 3 70B's 80 layers on 3 stages: 27, 27 and 26 (the last also runs the untied
    output layer); parameters by hand from param_breakdown, over tp = 8."""
    result = plan.evaluate("llama3-70b", "H100", plan.Plan(tp=8, pp=3, dp=2, micro_batch=1,
                                                           global_batch=64),
                           uneven_layers=True)
    parts = memory.param_breakdown("llama3-70b")
    per = parts["layers"] / 80
    assert [s.layers for s in result.stages] == [27, 27, 26]
    assert [s.in_flight for s in result.stages] == [3, 2, 1]
    expected = [27 * per + parts["embedding"], 27 * per,
                26 * per + parts["final_norm"] + parts["output"]]
    for s, p in zip(result.stages, expected, strict=True):
        assert s.params == pytest.approx(p / 8, rel=1e-12)
    assert layers_per_gpu(10, 4, 1, 3, 1).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]
    assert layers_per_gpu(10, 4, 1, 3, 2).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    with pytest.raises(ValueError, match="first_layers=2"):
        layers_per_gpu(10, 4, 1, 2, 1)


@pytest.mark.parametrize("name", ["llama3-8b", "qwen3-30b-a3b", "deepseek-v3"])
def test_parameters_over_the_stages_are_the_model(name):
    """Untied models (dense, all-MoE, DeepSeek-V3's 3 dense then 58 MoE layers) on 4 stages,
    tp = ep = 1: the stages' parameters add up to memory.param_breakdown's total."""
    m = catalog.model(name)
    pp = 4
    result = plan.evaluate(m, "H100", plan.Plan(tp=1, pp=pp, dp=1, micro_batch=1,
                                                global_batch=8), uneven_layers=True)
    assert not m.tied_embeddings
    total = sum(s.params for s in result.stages)
    if m.mtp_layers:
        # DeepSeek-V3's MTP module on the last stage: its model card counts 14B MTP weights
        # beside the 671B, including an embedding and an output head of 129,280 x 7,168 each
        # that the module shares with the main model (report Sec. 2.2); 14B is rounded
        shared = 2 * 129_280 * 7_168
        assert total - memory.param_breakdown(m)["total"] == pytest.approx(14e9 - shared,
                                                                          rel=0.06)
    else:
        assert total == pytest.approx(memory.param_breakdown(m)["total"], rel=1e-12)
    assert sum(s.layers for s in result.stages) == m.n_layers + m.mtp_layers
    assert sum(s.moe_layers for s in result.stages) == m.moe_layers + m.mtp_layers
    if name == "deepseek-v3":  # the first three layers are dense, on the first stage
        assert result.stages[0].moe_layers == result.stages[0].layers - 3


CASES = [
    ("gpt3-175b", "A100", dict(tp=8, pp=8, dp=2, global_batch=64, sp=True,
                               recompute="selective"), None),
    ("gpt3-175b", "A100", dict(tp=8, pp=8, dp=2, global_batch=64, sp=True,
                               recompute="selective", interleave=2), None),
    ("llama3-70b", "H100", dict(tp=8, pp=3, dp=2, global_batch=64), None),
    ("llama3-70b", "H100", dict(tp=8, pp=6, dp=2, global_batch=64, zero_stage=1), None),
    ("llama3-8b", "H100", dict(tp=1, pp=2, dp=4, global_batch=64, zero_stage=3), "torchtitan"),
    ("llama3-8b", "H100", dict(tp=1, pp=1, dp=8, global_batch=64, zero_stage=3), None),
    ("qwen3-30b-a3b", "H100", dict(tp=1, pp=4, dp=8, ep=8, global_batch=64), None),
    ("deepseek-v3", "H800", dict(tp=1, pp=16, dp=128, ep=64, global_batch=15360,
                                 seq_len=4096, zero_stage=1), None),
    ("deepseek-v3", "H800", dict(tp=1, pp=16, dp=128, ep=64, global_batch=15360,
                                 seq_len=4096, zero_stage=1), "deepseek-hai-llm"),
]


@pytest.mark.parametrize(("name", "gpu", "layout", "fw"), CASES)
def test_largest_stage_is_the_searchs_busiest_gpu(name, gpu, layout, fw):
    """The planner's vectorised memory (first, last and, for MoE or DualPipe, a middle stage
    with the most MoE layers any run of its length holds) equals the largest rank's: under
    1F1B a middle stage holds no more layers than the first and fewer micro-batches; the
    MoE window is exact for the catalog's models (their MoE layers are contiguous)."""
    p = plan.Plan(micro_batch=1, **layout)
    result = plan.evaluate(name, gpu, p, framework=fw, uneven_layers=True)
    ctx = context(name, gpu, None, None, "mixed-adam", p.seq_len, p.global_batch, fw)
    out = iteration(ctx, _arrays(p), uneven=True)
    assert len(result.stages) == p.pp
    assert result.memory_bytes == pytest.approx(float(out["memory_bytes"][0]), rel=1e-12)
    assert result.largest_stage.total_bytes == pytest.approx(result.memory_bytes, rel=1e-12)
    first, last = result.stages[0].total_bytes, result.stages[-1].total_bytes
    if fw != "deepseek-hai-llm" and p.pp > 1:
        assert first == pytest.approx(float(out["first_stage_bytes"][0]), rel=1e-12)
        assert last == pytest.approx(float(out["last_stage_bytes"][0]), rel=1e-12)
        if not catalog.model(name).is_moe:  # a middle stage never exceeds the first
            assert all(s.total_bytes <= first for s in result.stages[1:-1])


def test_dualpipe_pairs_stages():
    """DualPipe (DeepSeek-V3 Sec. 3.2.1): GPU i holds stages i and p - 1 - i, so GPUs i and
    p - 1 - i hold the same bytes; every GPU keeps p + 1 micro-batches (Table 2); GPU 0 holds
    the embedding and the output layer."""
    result = plan.evaluate("deepseek-v3", "H800", plan.Plan(
        tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=15360, seq_len=4096,
        zero_stage=1), framework="deepseek-hai-llm")
    st = result.stages
    assert all(s.in_flight == 17 for s in st)
    assert st[0].embedding and st[0].output and not st[1].embedding
    for i in range(16):
        assert st[i].total_bytes == pytest.approx(st[15 - i].total_bytes, rel=1e-12)
        assert st[i].layers == st[15 - i].layers
    assert sum(s.layers for s in st) == 2 * (61 + 1)  # the MTP module's layer on the last stage
