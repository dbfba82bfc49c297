"""scaleout.memory by hand: defaults, arguments passed through, stages, gated MLPs, layout rules.

The published tables (ZeRO Table 1, Korthikanti Table 2, Megatron-LM Table 1) are checked in
test_memory_published.py; these are the cases mutation testing found unguarded.
"""

import math

import pytest
from scaleout import catalog, memory


def table2_none(s: int, b: int, h: int, a: int) -> float:
    """Korthikanti et al. Table 2, no parallelism: sbh(34 + 5as/h) bytes per layer."""
    return s * b * h * (34 + 5 * a * s / h)


GPT3 = catalog.model("gpt3-175b")  # s = 2048, h = 12288, a = 96, 96 layers
P = memory.param_count(GPT3)


def test_defaults_are_one_gpu_without_sharding_or_recomputation():
    """Without arguments: ZeRO's 16 bytes per parameter (2 + 2 + 12), one GPU, no tensor or
    sequence parallelism, no recomputation, no flash attention, one micro-batch in flight."""
    assert memory.model_state_bytes(1e9) == 16e9
    assert memory.model_state_breakdown(1e9).total == 16e9
    layer = table2_none(2048, 1, 12288, 96)
    assert memory.activation_bytes_per_layer(GPT3, 1) == pytest.approx(layer, rel=1e-12)
    assert memory.activation_bytes(GPT3, 1) == pytest.approx(96 * layer, rel=1e-12)
    mem = memory.training_memory(GPT3)
    assert (mem.weights, mem.grads, mem.optimizer) == (2 * P, 2 * P, 12 * P)
    assert mem.activations == pytest.approx(96 * layer, rel=1e-12)
    assert (mem.params_per_gpu, mem.in_flight, mem.capacity) == (P, 1, math.inf)


def test_sequence_length_recipe_and_flash_attention_are_passed_through():
    """s = 4096 instead of the model's 2048; SGD with momentum in fp32 holds 4 + 4 + 4 bytes
    per parameter; flash attention drops Table 2's 5as/h score term."""
    layer_4k = table2_none(4096, 1, 12288, 96)
    assert memory.activation_bytes(GPT3, 1, 4096) == pytest.approx(96 * layer_4k, rel=1e-12)
    mem = memory.training_memory(GPT3, seq_len=4096, recipe="fp32-sgd-momentum")
    # fp32 matmuls keep their Linear inputs in 4 bytes: the four GEMM inputs of Table 2's
    # 34sbh (2sbh QKV, 2sbh projection, 2sbh and 8sbh MLP) take 14sbh more
    assert mem.activations == pytest.approx(96 * (layer_4k + 14 * 4096 * 12288), rel=1e-12)
    assert memory.training_memory(GPT3, seq_len=4096).activations == \
        pytest.approx(96 * layer_4k, rel=1e-12)
    assert (mem.weights, mem.grads, mem.optimizer) == (4 * P, 4 * P, 4 * P)
    no_scores = 2048 * 12288 * 34
    assert memory.activation_bytes(GPT3, 1, flash_attention=True) == \
        pytest.approx(96 * no_scores, rel=1e-12)
    assert memory.training_memory(GPT3, flash_attention=True).activations == \
        pytest.approx(96 * no_scores, rel=1e-12)


def test_gated_mlp_and_grouped_query_attention_by_hand():
    """Llama 3 8B (h = 4096, 32 heads, 8 KV heads, SwiGLU with f = 14336): Q, K, V keep
    2sbh(1 + 2·8/32), the gated MLP 8sbf (two up-projections, the activation, the product),
    plus Korthikanti's 10sbh outside and 2sbh of attention-over-V input: 43 sbh + 5as²b
    with dropout; Llama 3 trains without it, so the two 1-byte sbh masks and, of the scores,
    the mask and the dropped-out copy go: 41 sbh + 2as²b."""
    m = catalog.model("llama3-8b")
    assert (m.hidden, m.n_heads, m.kv_heads, m.ffn, m.gated_mlp) == (4096, 32, 8, 14336, True)
    assert m.dropout is False
    s, h = 2048, 4096
    hand = s * h * (10 + 2 * (1 + 2 * 8 / 32) + 2 + 8 * 14336 / h) + 5 * 32 * s * s
    assert 10 + 3 + 2 + 28 == 43
    with_dropout = m.replace(dropout=True)
    assert memory.activation_bytes_per_layer(with_dropout, 1, s) == pytest.approx(hand, rel=1e-12)
    hand = s * h * (8 + 2 * (1 + 2 * 8 / 32) + 2 + 8 * 14336 / h) + 2 * 32 * s * s
    assert memory.activation_bytes_per_layer(m, 1, s) == pytest.approx(hand, rel=1e-12)


def test_busiest_stage_with_tied_and_untied_embeddings():
    """Megatron-LM keeps a second copy of a tied embedding on the last stage when pp > 1;
    an untied model's last stage holds its own output layer. Stage = max(first, last) / tp."""
    parts = memory.param_breakdown(GPT3)  # tied
    half = parts["layers"] / 2
    first = half + parts["embedding"] + parts["positions"]
    last = half + parts["final_norm"] + parts["embedding"]
    assert memory.stage_params(GPT3, tp=8, pp=2) == pytest.approx(max(first, last) / 8,
                                                                  rel=1e-15)
    assert memory.stage_params(GPT3) == parts["total"]
    # tied and without learned positions, the last stage is the busier one by the final norm
    rope = catalog.model("llama3-8b").replace(tied_embeddings=True)
    rp = memory.param_breakdown(rope)
    assert rp["positions"] == 0 and rp["output"] == 0
    last = rp["layers"] / 2 + rp["final_norm"] + rp["embedding"]
    assert memory.stage_params(rope, pp=2) == pytest.approx(last, rel=1e-15)
    assert memory.stage_params(rope, pp=1) == rp["total"]
    llama = catalog.model("llama3-70b")  # untied: 80 layers, 8,192 wide, 128,256 tokens
    lp = memory.param_breakdown(llama)
    assert lp["output"] == 8192 * 128256 and not llama.tied_embeddings
    quarter = lp["layers"] / 4
    want = max(quarter + lp["embedding"] + lp["positions"],
               quarter + lp["final_norm"] + lp["output"])
    assert memory.stage_params(llama, tp=4, pp=4) == pytest.approx(want / 4, rel=1e-15)
    assert memory.training_memory(llama, tp=4, pp=4).params_per_gpu == \
        pytest.approx(want / 4, rel=1e-15)


def test_training_memory_refuses_splits_the_model_does_not_have():
    """96 heads do not split over 5 GPUs, nor 96 layers over 5 stages."""
    with pytest.raises(ValueError, match=r"tp=5"):
        memory.training_memory(GPT3, tp=5)
    with pytest.raises(ValueError, match=r"pp=5"):
        memory.training_memory(GPT3, pp=5)


def test_tensor_parallel_without_sequence_parallelism_by_default():
    """tp = 8 alone: Table 2's second row, sbh(10 + 24/t + 5as/(ht)), the 10sbh outside the
    tensor-parallel region not split."""
    t, s, h, a = 8, 2048, 12288, 96
    row = s * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert memory.activation_bytes(GPT3, 1, tp=t) == pytest.approx(96 * row, rel=1e-12)
    assert memory.training_memory(GPT3, tp=t).activations == pytest.approx(96 * row, rel=1e-12)


def test_activation_modes_defaults_one_sequence_on_eight_gpus():
    """Notebook 02's table by default: one sequence, t = 8, at the length asked for."""
    s, h, a = 4096, 12288, 96
    rows = memory.activation_modes(GPT3, seq_len=s)
    assert rows["no parallelism"] == pytest.approx(table2_none(s, 1, h, a), rel=1e-12)
    assert rows["TP + SP + selective recompute"] == pytest.approx(s * h * 34 / 8, rel=1e-12)


def test_llama3_8b_parameters_by_hand():
    """No biases, RMSNorm (one weight per channel), GQA and SwiGLU: per layer 2h² (Q, O) +
    2h·h_kv (K, V; h_kv = 8 heads x 128) + 3hf (gate, up, down) + 2h (two norms); untied
    input and output embeddings V·h each, and a final norm: 8,030,261,248, the count of the
    released checkpoint."""
    h, h_kv, f, layers, vocab = 4096, 1024, 14336, 32, 128256
    per_layer = 2 * h * h + 2 * h * h_kv + 3 * h * f + 2 * h
    total = layers * per_layer + 2 * vocab * h + h
    assert total == 8_030_261_248
    assert memory.param_count("llama3-8b") == total


def test_full_recomputation_keeps_the_layer_input_split_by_sequence_parallelism():
    """Korthikanti Table 2's last row: 2sbh per layer, 2sbh/t with sequence parallelism."""
    sbh = 2048 * 12288
    full = memory.activation_bytes_per_layer(GPT3, 1, 2048, tp=8, recompute="full")
    assert full == pytest.approx(2 * sbh, rel=1e-15)
    with_sp = memory.activation_bytes_per_layer(GPT3, 1, 2048, tp=8, sp=True, recompute="full")
    assert with_sp == pytest.approx(2 * sbh / 8, rel=1e-15)
