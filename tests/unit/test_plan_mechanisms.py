"""The planner's GPU- and recipe-dependent mechanisms: each GPU's measured maximum achievable
matmul rate (MAMF) against the calibration GPU's, and an FP8 recipe's casts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scaleout import catalog, compute, memory, plan
from scaleout.layout import Plan
from scaleout.plan import step

DENSE, MOE, GPU = "llama3-8b", "qwen3-30b-a3b", "H100-SXM5-80GB"


def test_achievable_shares_are_the_mamf_table_over_the_datasheet_peaks():
    """stas00/ml-engineering's MAMF table: A100 SXM 271.2 of 312 BF16, H100 SXM 794.5 of 989
    BF16 and 1402.6 of 1979 FP8, GB200 3615.6 of 5000 FP8; nothing measured for V100."""
    assert catalog.gpu("A100-SXM4-80GB").achievable_share("bf16") == pytest.approx(271.2 / 312)
    h100 = catalog.gpu(GPU)
    assert h100.achievable_share("bf16") == pytest.approx(794.5 / 989)
    assert h100.achievable_share("fp8") == pytest.approx(1402.6 / 1979)
    assert catalog.gpu("GB200").achievable_share("fp8") == pytest.approx(3615.6 / 5000)
    assert catalog.gpu("V100-SXM2-32GB").achievable_share("bf16") is None
    assert catalog.gpu("A100-SXM4-80GB").achievable_share("fp8") is None
    with pytest.raises(ValueError, match="fmt must be 'bf16' or 'fp8'"):
        h100.achievable_share("fp16")


def test_the_calibration_gpu_keeps_its_efficiency_and_others_scale_by_their_share():
    cal = plan.DEFAULT_CALIBRATION
    assert cal.reference_gpu == "A100-SXM4-80GB"
    assert cal.achievable_ratio("A100-SXM4-80GB") == 1.0
    assert cal.achievable_ratio("A100-SXM4-40GB") == 1.0  # the same tensor cores
    assert cal.achievable_ratio(GPU) == pytest.approx((794.5 / 989) / (271.2 / 312))
    assert cal.achievable_ratio(GPU, "fp8") == pytest.approx((1402.6 / 1979) / (271.2 / 312))
    # no FP8 measurement: the GPU's BF16 share; no measurement at all: the reference's
    assert cal.achievable_ratio("MI300X", "fp8") == cal.achievable_ratio("MI300X", "bf16")
    assert cal.achievable_ratio("V100-SXM2-32GB") == 1.0
    # with the GPU itself as the reference nothing is scaled
    assert replace(cal, reference_gpu=GPU).achievable_ratio(GPU) == 1.0


def test_an_h100_multiplies_slower_than_the_a100_fitted_efficiency_says():
    """The same plan on an H100: forward time of a layer's GEMMs longer by the ratio of the
    A100's achievable share to the H100's (0.869 / 0.803), the A100's unchanged."""
    p = Plan(tp=2, dp=4, global_batch=8, sp=True, flash_attention=True)
    x_args = {k: np.array([v]) for k, v in dict(tp=2, pp=1, dp=4, micro_batch=1, interleave=1,
                                                 zero_stage=0, rc=0, sp=True,
                                                 flash=True).items()}

    def gemm(cal):
        ctx = step.context(DENSE, GPU, None, cal, "megatron-bf16", None, p.global_batch)
        return step.compute_parts(ctx, step._shape(ctx, x_args))["layer_gemm_s"][0]

    cal = plan.DEFAULT_CALIBRATION
    ratio = gemm(cal) / gemm(replace(cal, reference_gpu=GPU))
    assert ratio == pytest.approx((271.2 / 312) / (794.5 / 989), rel=1e-9)


def test_linear_inputs_and_outputs_counted_by_hand():
    """Llama 3 8B (h 4096, 32 heads of 128, 8 KV heads, SwiGLU 14336): inputs
    h + h + h + f = 26,624, outputs (h + 2·1024) + h + 2f + h = 43,008. Qwen3-30B-A3B (h 2048,
    32 heads of 128, 4 KV heads, 8 of 128 experts of 768, every layer MoE): inputs
    2048 + 4096 + 8 (2048 + 768) = 28,672; outputs 5120 + 2048 + 8 (1536 + 2048) = 35,840."""
    assert compute.linear_io_per_token(DENSE) == {"inputs": 26624, "outputs": 43008}
    assert compute.linear_io_per_token(MOE) == {"inputs": 28672, "outputs": 35840}
    mla = compute.linear_io_per_token("deepseek-v3")  # more Linears than Q, K, V and out
    assert mla["inputs"] > 2 * catalog.model("deepseek-v3").hidden


def test_fp8_cast_bytes_follow_the_scaling_scheme():
    """Delayed: read 2, write 1 + 1; current: an amax read of 2 more; MXFP8: a 1-byte scale
    per 32 values for each copy; DeepSeek-V3's tiles: 1x128 with an FP32 scale, the
    backward's copy read back and written again."""
    q = memory.FP8_QUANTIZE_BYTES
    assert (q["delayed"], q["current"]) == (4, 6)
    assert q["mxfp8"] == pytest.approx(4 + 2 / 32)
    assert q["tile"] == pytest.approx(2 + 3 * (1 + 4 / 128))
    r = memory.RECIPES
    assert r["fp8-te"].quantize_bytes == 4 and r["fp8-te-cs"].quantize_bytes == 6
    assert r["fp8-te-mx"].quantize_bytes == q["mxfp8"]
    assert r["fp8-deepseek"].quantize_bytes == q["tile"]
    assert all(x.quantize_bytes == 0 for x in r.values() if not x.fp8)
    with pytest.raises(ValueError, match=r"quantize_bytes=4\.0 in recipe .x."):
        memory.PrecisionRecipe("x", 2, 2, 12, "s", "d", quantize_bytes=4.0)


def test_current_scaling_costs_its_amax_pass_at_hbm_bandwidth():
    """fp8-te-cs against fp8-te on the same plan: one layer's forward time (a third of the
    forward and backward's memory-bound work) longer by the 2 extra bytes of every Linear
    input and output gradient, b s / tp tokens at the H100's 3.35 TB/s."""
    p = Plan(tp=2, dp=4, global_batch=8, sp=True, flash_attention=True)
    x_args = {k: np.array([v]) for k, v in dict(tp=2, pp=1, dp=4, micro_batch=1, interleave=1,
                                                 zero_stage=0, rc=0, sp=True,
                                                 flash=True).items()}

    def forward(recipe):
        ctx = step.context(DENSE, GPU, None, None, recipe, None, p.global_batch)
        return step.compute_parts(ctx, step._shape(ctx, x_args))["layer_forward_s"][0]

    tokens = catalog.model(DENSE).seq_len / 2
    extra = 2 * (26624 + 43008) * tokens / 3.35e12 / 3
    assert forward("fp8-te-cs") - forward("fp8-te") == pytest.approx(extra, rel=1e-9)
    assert forward("megatron-bf16") > forward("fp8-te-cs")  # FP8 still pays off here


def test_bridge_precisions_are_read_as_their_recipes():
    bridge = [c for c in plan.published.cases()[0] if c.source == "megatron_bridge_perf_2511"]
    by = {c.label: c.recipe for c in bridge}
    assert by["llama3-8b FP8-CS on 8 × B200"] == "fp8-te-cs"
    assert by["qwen3-30b-a3b FP8-MX on 8 × B200"] == "fp8-te-mx"
    assert by["deepseek-v3 on 256 × GB200"] == "mixed-adam"


def test_the_mtp_module_runs_on_the_last_stage_and_dualpipe_splits_around_it():
    """DeepSeek-V3 trains one MTP module (report Sec. 4.2): on its stated layout (PP16 under
    DualPipe, 61 layers) the last stage takes a transformer layer, a 2h x h projection and a
    second pass through the output layer more. The DualPipe-aware split keeps 4 layers on
    each of the first 15 stages and 1 on the last, whose pace (GPU 0 runs stages 0 and 15)
    is then the mean of the two. The 1F1B split weighs the last stage's output layer and MTP
    module against one layer: with the layers as long as the token permutations make them
    (moe.permutation_bytes) 4 + 1 wins there too, with or without HAI-LLM's wider
    recomputation (without both it put 5 layers on each middle stage and none on the last);
    a layer a quarter shorter tips it back to 5 + 0."""
    case = next(c for c in plan.published.cases()[0] if c.source == "deepseek_v3")
    m = case.model
    assert m.mtp_layers == 1
    without = replace(m, mtp_layers=0)
    p = case.plan

    a = {k: np.array([v]) for k, v in dict(
        tp=p.tp, pp=p.pp, dp=p.dp, micro_batch=1, interleave=1, zero_stage=1, rc=1,
        sp=False, flash=True, cp=1, ep=p.ep).items()}

    def run(model, framework=case.framework):
        ctx = step.context(model, case.gpu, case.network, None, case.recipe, p.seq_len,
                           p.global_batch, framework)
        x = step._shape(ctx, a)
        return step.iteration(ctx, a, True), step.compute_parts(ctx, x)

    (out, comp), (out0, comp0) = run(m), run(without)
    per_layer = 3 * comp["layer_forward_s"] + comp["layer_recompute_s"]
    h = m.hidden
    proj = 3 * compute.forward_flops(comp["head_s"] * 0 + 4096.0, 2.0 * h * h, 0, h, 4096)
    assert comp["head_s"] > 2 * comp0["head_s"]  # the output layer twice, and the projection
    assert comp["head_s"] - 2 * comp0["head_s"] == pytest.approx(
        proj / (3 * compute.forward_flops(4096.0, m.vocab * h, 0, h, 4096)) * comp0["head_s"],
        rel=1e-9)
    assert (out["first_layers"][0], out["last_layers"][0]) == (4, 1)
    assert (out0["first_layers"][0], out0["last_layers"][0]) == (4, 1)
    one_f1b = replace(plan.framework(case.framework), pipeline_schedule="1f1b")
    assert run(m, replace(one_f1b, recompute_kinds=()))[0]["first_layers"][0] == 4
    assert run(m, one_f1b)[0]["first_layers"][0] == 4
    # the split itself: a shorter layer against the same output layer and MTP module
    ctx = step.context(m, case.gpu, case.network, None, case.recipe, p.seq_len,
                       p.global_batch, one_f1b)
    x = step._shape(ctx, a)
    c1 = step.compute_parts(ctx, x)
    layer = 3 * c1["layer_forward_s"] + c1["layer_recompute_s"]
    head = c1["head_s"] + m.mtp_layers * layer  # the MTP module's layer on the last stage
    full = step.stage_split(ctx, x, layer, head, True)
    short = step.stage_split(ctx, x, 0.75 * layer, head, True)
    assert (full["first_layers"][0], short["first_layers"][0]) == (4, 5)
    # the pace: the mean of stage 0 (4 layers) and stage 15 (1 layer, the output layer,
    # the MTP module's layer and the rest of it), above a middle GPU's 4 layers
    pace = (4 * per_layer + per_layer + comp["head_s"] + per_layer) / 2
    steady = out["step_s"] - out["bubble_s"] - out["p2p_s"] - out["dp_comm_s"] - out[
        "optimizer_s"]
    assert steady == pytest.approx(out["micro_batches"] * pace, rel=1e-9)
    # a Bridge row "w/o MTP" is the model without it
    bridge = {c.label: c for c in plan.published.cases()[0]
              if c.source == "megatron_bridge_perf_2511"}
    assert bridge["deepseek-v3 on 256 × GB200"].model.mtp_layers == 0
    assert bridge["deepseek-v3 FP8-MX on 256 × B200"].model.mtp_layers == 1


# ------------------------------------------------------- a framework's wider recomputation
def _ds_case():
    return next(c for c in plan.published.cases()[0] if c.source == "deepseek_v3")


def _ds_eval(framework, recompute="selective"):
    c = _ds_case()
    return plan.evaluate(c.model, c.gpu, replace(c.plan, recompute=recompute), c.network,
                         framework=framework, recipe=c.recipe)


def test_hai_llm_recomputes_norms_mla_up_projections_and_the_moe_swiglu():
    """DeepSeek-V3 Sec. 3.2.3 and 3.3.3: the three kinds, each from independent arithmetic.
    MLA's up-projections multiply 1536 x 128 x 192 + 512 x 128 x (128 + 128) weights again
    per token; the norms free their two outputs (4 sbh at one byte, FP8); the SwiGLU frees
    its activation (2 bytes) and product (1 byte) over the 9 x 2048 channels of the 58 MoE
    layers of 61."""
    fw = plan.framework("deepseek-hai-llm")
    assert fw.recompute_kinds == memory.RECOMPUTE_KINDS
    m = catalog.model("deepseek-v3")
    s, h = 4096, 7168
    one = {k: memory.recomputed_kinds_per_layer((k,), m, s, 1, 1, False, 1.0)
           for k in memory.RECOMPUTE_KINDS}
    assert one["mla_up_projections"]["params"] == 1536 * 128 * 192 + 512 * 128 * 256
    assert one["norms"]["freed_bytes"] == pytest.approx(4 * 0.5 * s * h)
    assert one["moe_swiglu"]["freed_bytes"] == pytest.approx(58 / 61 * 3 * 9 * 2048 * s)
    q_k_v = 128 * 192 + 128 * 192 + 128 * 128  # channels of Q, K and V
    latents = 1536 + 512 + 64
    assert one["mla_up_projections"]["freed_bytes"] == pytest.approx(
        (2 * q_k_v - latents) * s)
    # a dense model without MLA has nothing of the last two
    dense = memory.recomputed_kinds_per_layer(memory.RECOMPUTE_KINDS, catalog.model(DENSE),
                                              s, 1, 1, False, 2.0)
    assert dense["params"] == 0
    assert dense["freed_bytes"] == pytest.approx(4 * s * catalog.model(DENSE).hidden)
    with pytest.raises(ValueError, match="recompute_kinds"):
        replace(fw, recompute_kinds=("softmax",))
    with pytest.raises(ValueError, match="'softmax' is not one of"):
        memory.recomputed_kinds_per_layer(("softmax",), m, s, 1, 1, False)


def test_the_wider_recomputation_costs_time_and_frees_memory_below_full_only():
    """Under the HAI-LLM preset the recomputation takes a few percent of the step
    (DeepSeek-V3's layout: about 0.36 s of 16.4 s) and the activations shrink by the freed
    bytes; under full recomputation (everything recomputed already) nothing changes."""
    fw = plan.framework("deepseek-hai-llm")
    without = replace(fw, recompute_kinds=())
    wide, narrow = _ds_eval(fw), _ds_eval(without)
    assert narrow.step["recompute"] == 0  # flash attention: selective recomputes nothing
    assert 0.01 < wide.step["recompute"] / wide.step_s < 0.05
    assert wide.memory["activations"] < 0.7 * narrow.memory["activations"]
    full_w, full_n = _ds_eval(fw, "full"), _ds_eval(without, "full")
    assert full_w.step_s == pytest.approx(full_n.step_s)
    assert full_w.memory["activations"] == pytest.approx(full_n.memory["activations"])


# ------------------------------------------------------------------- whole-run averages
def test_a_whole_run_average_is_read_over_the_goodput_of_the_reliability_model():
    """DeepSeek-V3's figure averages its whole pre-training stage (measured_over = "whole
    run"). Llama 3's 419 interruptions in 54 days on 16,384 GPUs (52 of them counted per
    node) scale to about 24.7 h between failures on 2,048 GPUs; the sharded checkpoint takes
    a few seconds at 2 TB/s, the restart about 10.6 minutes: the goodput is near
    1 - sqrt(2 delta / M) - R / M, about 98.4%. Steady-state cases keep 1.0."""
    from scaleout import reliability
    from scaleout.plan import published, validation

    c = _ds_case()
    mtbf_h = float(reliability.mtbf_h(2048, "llama3-405b"))
    assert 24 < mtbf_h < 25.5
    ck = reliability.checkpoint_plan(c.model, 2048, storage_gbytes_s=2000, tp=1, pp=16,
                                     recipe=c.recipe)
    restart = 600 + ck.restore_s + 30
    first_order = 1 - (2 * ck.blocking_s / (mtbf_h * 3600)) ** 0.5 - restart / (mtbf_h * 3600)
    assert c.goodput == pytest.approx(first_order, abs=0.002)
    assert 0.97 < c.goodput < 0.99
    r = plan.evaluate(c.model, c.gpu, c.plan, c.network, framework=c.framework,
                      recipe=c.recipe)
    steady = 1e12 / (r.tokens_per_s / c.plan.n_gpus) / 3600
    assert c.predict(r) == pytest.approx(steady / c.goodput)
    # the fit reads the printed number back as a steady-state step
    printed = c.plan.global_batch * c.plan.seq_len * c.published * 3600 / 1e12 / 2048
    assert validation._published_step_s(c) == pytest.approx(printed * c.goodput)
    assert all(k.goodput == 1.0 for k in plan.published.cases()[0] if k is not c)
    # more GPUs, more failures: a lower goodput
    assert published.whole_run_goodput(c.model, replace(c.plan, dp=256), c.recipe) < c.goodput
    with pytest.raises(ValueError, match="measured_over"):
        published._measured_over({"measured_over": "weekly"})
