"""Surviving mutants of the planner's memory model and busiest GPU (``scaleout.plan.step``:
``memory_parts``, ``busiest_gpu``, ``_stage_params``, ``_extras``, ``_stored_activations``),
killed with expected values worked by hand or properties that must hold.

Mostly Qwen3-30B-A3B (48 layers, h = 2048, 32 query and 4 KV heads of 128 channels, 128
experts of width 768, no shared expert, vocabulary 151,936, untied embeddings; its Hugging
Face config) and variants of it with dense layers first, every third layer MoE or a
multi-token-prediction module. Its parameters by hand (``scaleout.memory.layer_params``'
formulas): attention ``2 h (a d) + 2 h (a_kv d)``, two RMSNorms ``2 h``, a router ``h E``,
an expert ``3 h f_e`` (SwiGLU), a dense MLP ``3 h f``.

- ``memory_parts``: which stages a GPU's bytes are taken from (1F1B's middle stage from
  three stages on, DualPipe's middle GPU from four), how many micro-batches each holds
  (Narayanan et al. 2021 Sec. 2.2.1: stage ``i`` of 1F1B ``min(p - i, m)``; DeepSeek-V3's
  DualPipe ``p + 1``, one stage one), and that the fullest of three stages is reported;
- ``_stage_params``: an MTP module's layer is MoE exactly when the model's last layer is;
  tensor parallelism splits the dense layers' MLPs; every part has one value per plan;
- ``_extras``: ZeRO-3's whole layers (the unit computed and the one prefetched) of an MoE
  model: its non-routed parameters over ``tp``, its routed ones over ``ep``;
- ``_stored_activations``: full recomputation keeps the layer input alone, ``2 s b h``;
- ``busiest_gpu``: the busiest GPU's layers, MoE layers and share of the output layer by
  hand, with made-up seconds.

See ``tests/MUTATION.md``.
"""

from dataclasses import replace

import numpy as np
import pytest
from scaleout import catalog, plan
from scaleout.plan import step
from scaleout.plan.evaluate import _arrays
from scaleout.units import GIB

H, V, S, E = 2048, 151_936, 4096, 128
ATTENTION = 2 * H * (32 * 128) + 2 * H * (4 * 128)  # 18,874,368
NORMS = 2 * H
ROUTER = H * E
ROUTED = E * 3 * H * 768  # one MoE layer's 128 experts: 603,979,776
DENSE_MLP = 3 * H * 6144
EMBEDDING = V * H  # and the untied output layer, as large
MOE_LAYER = ATTENTION + NORMS + ROUTER  # an MoE layer's non-routed parameters
DENSE_LAYER = ATTENTION + NORMS + DENSE_MLP
BYTES_PER_PARAM = 2 + 2 + 12  # ZeRO Sec. 3.1: bf16 weights and gradients, fp32 Adam state
FIXED = 0.75 * GIB + 1.0 * GIB  # CUDA context and NCCL buffers (plan.RESERVE)
LAYER_INPUT = 2 * S * 1 * H  # bytes a layer keeps under full recomputation (b = 1, tp = 1)
LOGITS = 8 * 1 * S * V  # fp32 logits and their gradient, b = 1, tp = 1


def _qwen(name="qwen3-30b-a3b", **changes):
    """Qwen3-30B-A3B, or a variant of it (other MoE layers, an MTP module)."""
    m = catalog.model("qwen3-30b-a3b")
    return replace(m, name=name, **changes) if changes else m


# layers 0 and 1 dense, 2..47 MoE: the first k layers hold k - 2 MoE layers
TWO_DENSE = _qwen("qwen3-two-dense", first_dense_layers=2)


def _memory(model, k, last, framework=None, global_batch=8, **layout):
    """``memory_parts`` of one plan with ``k`` layers on the first (and every middle) stage
    and ``last`` on the last, as one-value floats."""
    ctx = step.context(model, "H100", None, None, "mixed-adam", None, global_batch,
                       framework)
    x = step._shape(ctx, _arrays(plan.Plan(global_batch=global_batch, **layout)))
    st = {"first_layers": np.array([float(k)]), "last_layers": np.array([float(last)])}
    got = step.memory_parts(ctx, x, st)
    return {key: float(np.asarray(v).reshape(-1)[0]) for key, v in got.items()}


# ============================================================================ DualPipe, pp = 1
def test_dualpipe_framework_at_one_stage_holds_the_model_once():
    """HAI-LLM's framework (DualPipe) at pp = 1: no pipeline, so nothing to pair: the one GPU
    holds Qwen3-30B-A3B's non-routed parameters once, 48 (attention + norms + router) + the
    embedding, the output layer and the final norm = 1,541,081,088 (the model card's 30.5 B
    less the 48 x 603,979,776 routed ones), and 48/8 layers of routed experts (EP 8); one
    micro-batch in flight, whose 48 layers under full recomputation keep their input alone,
    2 s b h bytes each (Korthikanti et al. 2022 Sec. 5; HAI-LLM's own recomputed kinds free
    nothing more there)."""
    got = _memory("qwen3-30b-a3b", 48, 48, "deepseek-hai-llm", global_batch=8, tp=1, pp=1,
                  dp=8, ep=8, recompute="full")
    dense = 48 * MOE_LAYER + 2 * EMBEDDING + H
    assert dense == 1_541_081_088
    assert got["params_per_gpu"] == pytest.approx(dense, rel=1e-12)
    assert got["expert_params_per_gpu"] == pytest.approx(48 * ROUTED / 8, rel=1e-12)
    assert got["in_flight"] == 1.0
    assert got["activations_bytes"] == pytest.approx(48 * LAYER_INPUT, rel=1e-12)
    held = (dense + 48 * ROUTED / 8) * BYTES_PER_PARAM + 48 * LAYER_INPUT
    assert got["memory_bytes"] == pytest.approx(held * 1.05 + FIXED + LOGITS, rel=1e-12)


# ============================================================================ middle stages
def test_two_stages_have_no_middle_one():
    """1F1B, two stages of 25 and 23 layers (dense layers 0 and 1): the first holds MoE
    layers 2-24 (23), the last 25-47 (23). A 25-layer window elsewhere could hold 25 MoE
    layers, but with two stages there is no other stage: 23 layers of experts, over EP 8."""
    got = _memory(TWO_DENSE, 25, 23, tp=1, pp=2, dp=8, ep=8)
    assert got["expert_params_per_gpu"] == pytest.approx(23 * ROUTED / 8, rel=1e-12)


def test_three_stages_middle_holds_the_most_experts_and_pp_minus_one_micro_batches():
    """1F1B, three stages of 17, 17 and 14 layers: MoE layers 2-16 (15), 17-33 (17) and
    34-47 (14). EP 1, full recomputation, 8 micro-batches: the middle stage, with two MoE
    layers' experts more than the first (1.2 B parameters, more than the first's embedding,
    311 M), is the fullest, and keeps min(p - 1, m) = 2 micro-batches (the first 3, the last
    1) of 17 layer inputs."""
    got = _memory(TWO_DENSE, 17, 14, tp=1, pp=3, dp=1, ep=1, recompute="full")
    assert got["expert_params_per_gpu"] == pytest.approx(17 * ROUTED, rel=1e-12)
    assert got["in_flight"] == 2.0
    assert got["activations_bytes"] == pytest.approx(17 * 2 * LAYER_INPUT, rel=1e-12)
    middle = (17 * MOE_LAYER + 17 * ROUTED) * BYTES_PER_PARAM + 17 * 2 * LAYER_INPUT
    assert got["memory_bytes"] == pytest.approx(middle * 1.05 + FIXED, rel=1e-12)
    assert got["memory_bytes"] > max(got["first_stage_bytes"], got["last_stage_bytes"])


def test_fullest_of_three_stages_is_the_last():
    """1F1B, three stages of 16: MoE layers 2-15 (14), 16-31 (16), 32-47 (16). The middle
    stage holds more than the first (two MoE layers' experts, 1.2 B parameters, against the
    embedding, 311 M, and two dense MLPs), the last more than the middle (the output layer and
    the logits, against one micro-batch of 16 layer inputs): the last stage's bytes are the
    GPU's, with its one micro-batch in flight."""
    got = _memory(TWO_DENSE, 16, 16, tp=1, pp=3, dp=1, ep=1, recompute="full")
    last = (16 * MOE_LAYER + 16 * ROUTED + EMBEDDING + H) * BYTES_PER_PARAM + 16 * LAYER_INPUT
    assert got["last_stage_bytes"] == pytest.approx(last * 1.05 + FIXED + LOGITS, rel=1e-12)
    assert got["memory_bytes"] == pytest.approx(got["last_stage_bytes"], rel=1e-12)
    assert got["in_flight"] == 1.0
    assert got["activations_bytes"] == pytest.approx(16 * LAYER_INPUT, rel=1e-12)


def test_dualpipe_middle_gpu_holds_two_middle_stages_from_four_stages_on():
    """DualPipe, four stages of 12: GPU 0 holds stages 0 and 3 (MoE layers 2-11 and 36-47:
    10 + 12), a middle GPU stages 1 and 2 (12 + 12): 24 MoE layers of experts over EP 8."""
    got = _memory(TWO_DENSE, 12, 12, "deepseek-hai-llm", global_batch=64, tp=1, pp=4, dp=8,
                  ep=8)
    assert got["expert_params_per_gpu"] == pytest.approx(24 * ROUTED / 8, rel=1e-12)


# ============================================================================ _stage_params
@pytest.mark.parametrize(("step_", "first_dense", "moe", "want"), [
    # every third layer MoE (2, 5, ..., 47): the last stage holds 26-47 (8), and the MTP
    # module's layer is MoE like layer 47: 9 (the first stage 2-23: 8)
    (3, 0, [41, 44, 47], 9),
    # after one dense layer every second (2, 4, ..., 46): the last stage holds 24-46 (12); the
    # last layer, 47, is dense, so is the MTP module's: 12 (the first stage 2-22: 11)
    (2, 1, [42, 44, 46], 12),
])
def test_mtp_layer_on_the_last_stage_is_moe_as_the_last_layer_is(step_, first_dense, moe,
                                                                  want):
    """One MTP module, two stages of 24 layers: the MTP module's transformer layer is a
    layer like the model's last (DeepSeek-V3 Sec. 2.2) and runs on the last stage. The most
    MoE layers' experts a stage holds, over EP 8."""
    m = _qwen(f"qwen3-mtp-step{step_}", moe_layer_step=step_, first_dense_layers=first_dense,
              mtp_layers=1)
    assert [j for j in range(48) if m.layer_is_moe(j)][-3:] == moe
    got = _memory(m, 24, 24, tp=1, pp=2, dp=8, ep=8)
    assert got["expert_params_per_gpu"] == pytest.approx(want * ROUTED / 8, rel=1e-12)


def test_tensor_parallelism_halves_the_dense_layers_mlps():
    """Two stages of 24, TP 2: the first stage holds 24 layers' attention and norms, the
    dense MLPs of layers 0 and 1, the routers of the other 22 and the embedding; the last 24
    layers' attention, norms and routers, the final norm and the output layer. The first is
    the larger; TP 2 halves all of it: 422,756,352 parameters."""
    got = _memory(TWO_DENSE, 24, 24, tp=2, pp=2, dp=4, ep=8)
    first = 24 * (ATTENTION + NORMS) + 2 * DENSE_MLP + 22 * ROUTER + EMBEDDING
    last = 24 * MOE_LAYER + H + EMBEDDING
    assert first > last
    assert first / 2 == 422_756_352
    assert got["params_per_gpu"] == pytest.approx(first / 2, rel=1e-12)


def test_every_memory_part_has_one_value_per_plan():
    """A dense model's memory parts for three plans at once are three values each, the
    expert parameters (none) too."""
    small = catalog.custom_model(8, 1024, 16, vocab=51_200, seq_len=1024)
    ctx = step.context(small, "H100", None, None, "mixed-adam", None, 8, None)
    one = [_arrays(plan.Plan(tp=1, pp=p, dp=1, micro_batch=1, global_batch=8))
           for p in (1, 2, 4)]
    x = step._shape(ctx, {k: np.concatenate([a[k] for a in one]) for k in one[0]})
    st = {"first_layers": np.array([8.0, 4.0, 2.0]), "last_layers": np.array([8.0, 4.0, 2.0])}
    got = step.memory_parts(ctx, x, st)
    for key, value in got.items():
        assert np.shape(value) == (3,), key
    assert got["expert_params_per_gpu"].tolist() == [0.0, 0.0, 0.0]


# ============================================================================ _extras
def test_zero3_keeps_two_whole_moe_layers_non_routed_over_tp_routed_over_ep():
    """torchtitan (ZeRO-3, one unit prefetched), Qwen3-30B-A3B on one stage, TP 1, DP 8,
    EP 8 (so one copy of each expert: edp = 1), full recomputation. ZeRO-3 keeps the layer
    computed and the one prefetched whole: 2 x (19,140,608 non-routed + 603,979,776 / 8
    routed) parameters at 2 bytes. Model state: the non-routed parameters' 16 bytes over the
    8 data-parallel copies, the experts' whole. The reserve: the fixed part, 5 % of what is
    held, the logits and those whole layers."""
    got = _memory("qwen3-30b-a3b", 48, 48, "torchtitan", global_batch=8, tp=1, pp=1, dp=8,
                  ep=8, zero_stage=3, recompute="full")
    unit = MOE_LAYER + ROUTED / 8
    assert unit == 94_638_080
    dense = 48 * MOE_LAYER + 2 * EMBEDDING + H
    held = (dense * BYTES_PER_PARAM / 8 + 48 * ROUTED / 8 * BYTES_PER_PARAM
            + 48 * LAYER_INPUT)
    assert got["reserve_bytes"] == pytest.approx(FIXED + 0.05 * held + LOGITS + 2 * unit * 2,
                                                 rel=1e-12)


# ============================================================================ busiest_gpu
def _busiest(framework, pp, k, last, head_s, per_layer=1.0, ep_layer=0.5):
    """``busiest_gpu`` for TWO_DENSE with made-up seconds: ``per_layer`` a layer,
    ``ep_layer`` an MoE layer's all-to-alls, ``head_s`` the output layer."""
    ctx = step.context(TWO_DENSE, "H100", None, None, "mixed-adam", None, 64, framework)
    x = step._shape(ctx, _arrays(plan.Plan(pp=pp, dp=8, ep=8, global_batch=64)))
    st = {"first_layers": np.array([float(k)]), "last_layers": np.array([float(last)])}
    got = step.busiest_gpu(ctx, x, st, np.array([per_layer]), np.array([ep_layer]),
                           np.array([head_s]))
    return {key: float(np.asarray(v).reshape(-1)[0]) for key, v in got.items()}


def test_dualpipe_first_gpu_runs_the_mean_of_its_two_stages():
    """DualPipe, two stages of 24: GPU 0 runs stages 0 and 1 (MoE layers 2-23 and 24-47:
    22 and 24), half the micro-batches through each: 24 layers, 23 MoE layers and half the
    output layer a micro-batch: 24 + 23 x 0.5 + 0.5 x 3 = 37 s, the mean of 24 + 11 and
    24 + 12 + 3."""
    got = _busiest("deepseek-hai-llm", 2, 24, 24, head_s=3.0)
    assert (got["layers"], got["moe_layers"], got["head"]) == (24.0, 23.0, 0.5)
    assert got["busiest_s"] == pytest.approx(37.0, rel=1e-12)


def test_dualpipe_one_stage_runs_the_whole_output_layer():
    """DualPipe at pp = 1 (the split gives k = last = 48): the one GPU runs all 48 layers, the
    46 MoE ones and the whole output layer every micro-batch: 48 + 23 + 3 = 74 s."""
    got = _busiest("deepseek-hai-llm", 1, 48, 48, head_s=3.0)
    assert (got["layers"], got["moe_layers"], got["head"]) == (48.0, 46.0, 1.0)
    assert got["busiest_s"] == pytest.approx(74.0, rel=1e-12)


@pytest.mark.parametrize(("head_s", "want"), [
    # the last stage, 23 + 23 x 0.5 + 10 = 44.5 s, against the first's 25 + 23 x 0.5 = 36.5
    (10.0, (23.0, 23.0, 1.0, 44.5)),
    # the first stage, 36.5 s, against the last's 23 + 11.5 + 1 = 35.5
    (1.0, (25.0, 23.0, 0.0, 36.5)),
])
def test_one_f_one_b_busiest_stage_of_two(head_s, want):
    """1F1B, stages of 25 and 23 layers: MoE layers 2-24 (23) and 25-47 (23); a layer 1 s,
    an MoE layer's all-to-alls 0.5 s. The busiest stage's layers, MoE layers and share of the
    output layer."""
    got = _busiest("megatron-core", 2, 25, 23, head_s=head_s)
    assert (got["layers"], got["moe_layers"], got["head"]) == want[:3]
    assert got["busiest_s"] == pytest.approx(want[3], rel=1e-12)


def test_one_f_one_b_tie_goes_to_the_last_stage():
    """As above with an output layer of 2 s: both stages take 36.5 s. The split's own rule
    (``stage_split``'s ``last_is_busiest``, ``>=``) and the dense model's branch of
    ``busiest_gpu`` give a tie to the last stage; so does the MoE branch: its 23 layers, 23 MoE
    layers and the output layer, not the first stage's 25 layers."""
    got = _busiest("megatron-core", 2, 25, 23, head_s=2.0)
    assert (got["layers"], got["moe_layers"], got["head"]) == (23.0, 23.0, 1.0)
    assert got["busiest_s"] == pytest.approx(36.5, rel=1e-12)
    # the split's rule at a tie: two even stages of 24 layers of 1 s, an output layer of 0 s
    dense = step.context(catalog.custom_model(48, 1024, 16), "H100", None, None,
                         "mixed-adam", None, 64, None)
    x = step._shape(dense, _arrays(plan.Plan(pp=2, dp=8, global_batch=64)))
    st = step.stage_split(dense, x, np.array([1.0]), np.array([0.0]), uneven=False)
    assert st["last_is_busiest"].tolist() == [True]
