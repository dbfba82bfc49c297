"""The planner with mixtures of experts, context parallelism, FP8 and DualPipe: the rules, each
term against the library function it comes from, search against evaluate, dense plans
unchanged, the published runs, and bad input."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scaleout import catalog, context_parallel, layout, memory, moe, pipeline, plan
from scaleout.layout import Plan
from scaleout.plan import step
from scaleout.plan.frameworks import Framework

MOE, DENSE, GPU = "qwen3-30b-a3b", "llama3-8b", "H100-SXM5-80GB"
#: No overlap of any kind: every term shows, so each can be checked on its own.
BARE = Framework("bare", "no overlap", zero_stages=(0, 1, 2, 3), max_zero_with_pp=3,
                 hybrid_shard=True, cp_variant="ring", expert_parallel=True)


# -------------------------------------------------------------------- the rules
def _row(**fields):
    row = dict(tp=1, pp=1, dp=1, micro_batch=1, interleave=1, zero_stage=0, sp=False,
               recompute="none", global_batch=1, cp=1, ep=1) | fields
    row.setdefault("zero_shard", row["dp"])
    return row


def test_every_new_rule_has_a_layout_that_breaks_it_and_says_so():
    """Each rule of context and expert parallelism, FP8 and DualPipe: a layout that breaks it
    (and no earlier rule) and a one-line sentence naming the value."""
    moe_m, dense_m = catalog.model(MOE), catalog.model(DENSE)
    core = plan.framework("megatron-core")
    fsdp = plan.framework("pytorch-fsdp")
    rec_fp8, a100 = memory.get_recipe("fp8-te"), catalog.gpu("A100-SXM4-80GB")

    def facts(m, **kw):
        base = dict(framework=core, seq_len=m.seq_len, flash_attention=True)
        return layout.Facts.of(m, 8, relaxable=True, **(base | kw))

    breakers = {
        "cp_offered": (_row(cp=2), facts(dense_m, framework=fsdp), "cp=2"),
        "cp_flash": (_row(cp=2), facts(dense_m, flash_attention=False), "cp=2"),
        "cp_sequence": (_row(cp=3), facts(dense_m), "cp=3"),
        "ep_needs_moe": (_row(dp=2, ep=2, global_batch=2), facts(dense_m), "ep=2"),
        "ep_experts": (_row(dp=3, ep=3, global_batch=3), facts(moe_m), "ep=3"),
        "ep_fold": (_row(dp=2, ep=4, global_batch=2), facts(moe_m), "ep=4"),
        "ep_offered": (_row(dp=2, ep=2, global_batch=2), facts(moe_m, framework=fsdp), "ep=2"),
        "moe_tp_sp": (_row(tp=2), facts(moe_m), "tp=2"),
        "fp8_gpu": (_row(), facts(dense_m, recipe=rec_fp8, gpu=a100), "A100-SXM4-80GB"),
        "dualpipe_shape": (_row(pp=3, dp=1, global_batch=2),
                           facts(moe_m, framework=plan.framework("deepseek-hai-llm")), "pp=3"),
    }
    from test_plan import MOE_CP_PRECISION_RULES

    assert set(breakers) == MOE_CP_PRECISION_RULES
    for name, (row, f, value) in breakers.items():
        rule = next(r for r in layout.RULES if r.name == name)
        arrays = {k: np.array([v]) for k, v in row.items()}
        first = int(layout.failures(arrays, f)[0])
        assert layout.RULES[first].name == name, (name, layout.RULES[first].name)
        message = rule.message(row, f)
        assert "\n" not in message and value in message and "allowed" in message, message
        # the same layout keeps the rule once the offending value is 1 (or the GPU has FP8)
        fixed = row | {k: 1 for k in ("cp", "ep", "tp") if row[k] > 1}
        fixed["pp"] = 2 if name == "dualpipe_shape" else fixed["pp"]
        if name == "fp8_gpu":
            f = facts(dense_m, recipe=rec_fp8, gpu=catalog.gpu(GPU))
        assert layout.valid({k: np.array([v]) for k, v in fixed.items()}, f, only=(name,))[0]


def test_evaluate_raises_the_rules_sentence():
    with pytest.raises(ValueError, match=r"ep=3 must divide experts of deepseek-v3=256"):
        plan.evaluate("deepseek-v3", "H800", Plan(pp=16, dp=3, ep=3, global_batch=48,
                                                   flash_attention=True))
    with pytest.raises(ValueError, match=r"ep=16 must divide tp × cp × dp = 1 × 1 × 8 = 8"):
        plan.evaluate(MOE, GPU, Plan(dp=8, ep=16, global_batch=8, flash_attention=True))
    with pytest.raises(ValueError, match=r"tp=2 in a mixture of experts needs sp=True"):
        plan.evaluate(MOE, GPU, Plan(tp=2, dp=4, ep=2, global_batch=4, flash_attention=True))
    with pytest.raises(ValueError, match=r"cp=2 needs flash_attention=True"):
        plan.evaluate(DENSE, GPU, Plan(cp=2, dp=4, global_batch=4))
    with pytest.raises(ValueError, match=r"cp=2: pytorch-fsdp has no context parallelism"):
        plan.evaluate(DENSE, GPU, Plan(cp=2, dp=4, global_batch=4, flash_attention=True),
                      framework="pytorch-fsdp")
    with pytest.raises(ValueError, match=r"ep=2: model 'llama3-8b' has no experts"):
        plan.evaluate(DENSE, GPU, Plan(dp=4, ep=2, global_batch=4))
    with pytest.raises(ValueError, match=r"DualPipe, which needs an even number"):
        plan.evaluate(MOE, GPU, Plan(pp=3, dp=2, ep=2, global_batch=6, flash_attention=True),
                      framework="deepseek-hai-llm")
    with pytest.raises(ValueError, match=r"recipe 'fp8-te' multiplies in FP8, but gpu "
                                         r"'A100-SXM4-80GB' has no FP8 tensor cores"):
        plan.evaluate(DENSE, "A100-SXM4-80GB", Plan(dp=8, global_batch=8), recipe="fp8-te")


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(model=DENSE, ep_sizes=(2,)), r"ep=2: model 'llama3-8b' has no experts; allowed: ep=1"),
    (dict(model=MOE, ep_sizes=(3,)), r"ep=3 must divide experts of qwen3-30b-a3b=128"),
    (dict(model=MOE, ep_sizes="8"), r"ep_sizes must be a list of sizes"),
    (dict(model=MOE, ep_sizes=()), r"ep_sizes must offer at least one size"),
    (dict(model=DENSE, cp_sizes=(3,), flash_attention=True),
     r"cp=3: 2 x cp = 6 .* must divide seq_len=8192; allowed: 1, 2, 4"),
    (dict(model=DENSE, cp_sizes=(2,)), r"cp=2 needs flash_attention=True"),
    (dict(model=DENSE, cp_sizes=(0,), flash_attention=True), r"cp_sizes"),
    (dict(model=DENSE, cp_sizes=(2,), flash_attention=True, framework="deepspeed-2021"),
     r"deepspeed-2021 has no context parallelism"),
    (dict(model=DENSE, gpu="A100-SXM4-80GB", recipe="fp8-deepseek"),
     r"has no FP8 tensor cores .*allowed: a GPU with FP8"),
    (dict(model={"name": "tiny-moe", "n_layers": 4, "hidden": 512, "n_heads": 8, "vocab": 1000,
                 "seq_len": 256, "experts": 4, "top_k": 8, "expert_ffn_hidden": 256}),
     r"top_k=8 must be from 1 to experts=4"),
])
def test_bad_search_input_names_the_parameter_and_what_is_allowed(kwargs, match):
    args = dict(gpu=GPU, n_gpus=64, global_batch=256) | kwargs
    with pytest.raises(ValueError, match=match):
        plan.search(args.pop("model"), args.pop("gpu"), args.pop("n_gpus"),
                    args.pop("global_batch"), **args)


# -------------------------------------------------------------------- each term, by hand
def _ctx(model, plan_, framework=BARE, recipe="mixed-adam", gpu=GPU):
    return step.context(model, gpu, None, None, recipe, plan_.seq_len, plan_.global_batch,
                        framework)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_the_all_to_all_is_moe_layer_comm_time_per_moe_layer_and_micro_batch(recompute):
    """16 GPUs of two nodes in one expert group: each micro-batch runs every MoE layer's
    dispatch and combine forward and backward (and the forward pair again under full
    recomputation), for the b s/(cp tp) tokens a GPU routes, the busiest rank's share."""
    p = Plan(tp=2, dp=8, ep=16, micro_batch=2, global_batch=32, sp=True, recompute=recompute,
             flash_attention=True)
    r = plan.evaluate(MOE, GPU, p, framework=BARE)
    ctx = _ctx(MOE, p)
    m = catalog.model(MOE)
    links = ctx.collectives.links
    routed = 2 * m.seq_len / 2
    # the busiest rank of a balanced random router receives rho times the mean
    rho = moe.expected_rank_imbalance(routed, m.experts, m.top_k, 16)
    assert rho > 1
    t = moe.layer_comm_time(m, routed * rho, 16, 8, links.intra, links.inter,
                            "mixed-adam", recompute=recompute == "full")
    assert t["network_bytes"] > 0  # the group spans two nodes
    assert r.step["ep_comm"] == pytest.approx(p.micro_batches * m.moe_layers * t["total_s"],
                                              rel=1e-9)
    # overlapped (Megatron-Core's switch, DualPipe), only what outlasts the layer shows
    from dataclasses import replace

    hidden = plan.evaluate(MOE, GPU, p, framework=replace(BARE, a2a_overlap=True))
    assert 0 <= hidden.step["ep_comm"] < r.step["ep_comm"]
    assert hidden.step["forward"] == r.step["forward"]


def test_ring_attention_shows_what_outlasts_the_attention_block():
    """Sixteen GPUs share each 8K sequence over the network: every layer and micro-batch
    shows ring_attention_time's exposed transfers, at the attention rate the planner
    computes with (η(min(h/tp, b s/cp)) × peak, scaled by the GPU's measured achievable
    share over the calibration GPU's)."""
    p = Plan(cp=16, dp=1, micro_batch=1, global_batch=2, flash_attention=True)
    r = plan.evaluate(DENSE, GPU, p, framework=BARE)
    ctx = _ctx(DENSE, p)
    m, g = catalog.model(DENSE), catalog.gpu(GPU)
    rate = float(ctx.calibration.matmul_efficiency(min(m.hidden, m.seq_len / 16))
                 * g.bf16_dense_flops * ctx.bf16_achievable)
    ring = context_parallel.ring_attention_time(m, m.seq_len, 16, ctx.collectives.links.inter,
                                                attention_flops_per_s=rate)
    assert ring["exposed_s"] > 0
    assert r.step["cp_comm"] == pytest.approx(2 * m.n_layers * ring["exposed_s"], rel=1e-9)
    # inside one node (tp x cp <= 8) the exchange hides behind the blocks
    inside = plan.evaluate(DENSE, GPU, Plan(cp=4, dp=2, global_batch=2, flash_attention=True),
                           framework=BARE)
    assert inside.step["cp_comm"] < r.step["cp_comm"] / 8


def test_context_parallelism_divides_attention_and_activations_by_cp():
    """The same GPU's share of one sequence: with cp = 2 it computes and stores half the
    tokens (attention's FLOPs per token stay those of the whole sequence)."""
    m = catalog.model("llama3-70b")
    one = plan.evaluate(m, GPU, Plan(tp=8, pp=4, dp=2, global_batch=16, seq_len=32768,
                                     flash_attention=True, sp=True), framework=BARE)
    two = plan.evaluate(m, GPU, Plan(tp=8, pp=4, cp=2, dp=1, global_batch=16, seq_len=32768,
                                     flash_attention=True, sp=True), framework=BARE)
    assert two.memory["activations"] == pytest.approx(one.memory["activations"] / 2, rel=1e-9)
    # per GPU, half the tokens at nearly the same rate: the compute per micro-batch halves, and
    # each GPU runs twice the micro-batches (dp halved)
    assert two.step["forward"] == pytest.approx(one.step["forward"], rel=0.02)


def test_moe_flops_come_from_the_active_parameters_and_memory_from_all():
    m = catalog.model(MOE)
    p = Plan(dp=8, ep=8, global_batch=8, flash_attention=True)
    ctx = _ctx(MOE, p)
    assert ctx.layer_params * m.n_layers == memory.layers_params(m, active=True)
    r = plan.evaluate(MOE, GPU, p, framework=BARE)
    # model FLOPs per token from active parameters (compute.flops_per_token)
    assert r.tokens_per_s * plan.step.compute.flops_per_token(m, m.seq_len) == pytest.approx(
        r.model_tflops_per_gpu * 1e12 * 8, rel=1e-9)
    # the memory: moe.model_state_per_gpu's semantics (experts over edp, the rest over dp x cp)
    for kw in (dict(tp=1, cp=1, dp=8, ep=8, zero_stage=1), dict(tp=2, cp=2, dp=8, ep=16,
                                                                 zero_stage=1, sp=True),
               dict(tp=1, cp=1, dp=16, ep=4, zero_stage=3)):
        sp = kw.pop("sp", False)
        q = Plan(**kw, global_batch=kw["dp"], flash_attention=True, sp=sp)
        got = plan.evaluate(MOE, GPU, q, framework=BARE)
        want = moe.model_state_per_gpu(MOE, pp=1, **kw)
        state = got.memory["weights"] + got.memory["grads"] + got.memory["optimizer"]
        assert state == pytest.approx(want["total_bytes"], rel=1e-9), kw


def test_dense_layers_hold_no_experts_and_route_nothing():
    """DeepSeek-V3's first three layers are dense: a first stage of four layers holds one MoE
    layer's experts; a middle stage four; the busiest GPU runs the all-to-all of four."""
    m = catalog.model("deepseek-v3")
    ex = step.experts_of(m)
    assert ex.moe_first[4] == 1 and ex.moe_window[4] == 4 and ex.moe_last[4] == 4
    assert ex.moe_first[-1] == m.moe_layers == 58
    p = Plan(pp=16, dp=8, ep=8, global_batch=16, flash_attention=True)
    a = {"tp": np.array([1]), "pp": np.array([16]), "dp": np.array([8]), "ep": np.array([8]),
         "cp": np.array([1]), "micro_batch": np.array([1]), "interleave": np.array([1]),
         "zero_stage": np.array([0]), "sp": np.array([False]), "rc": np.array([0]),
         "flash": np.array([True])}
    ctx = _ctx(m, p, gpu="H800")
    out = step.iteration(ctx, a, uneven=True)
    first, last = int(out["first_layers"][0]), int(out["last_layers"][0])
    assert first == 4 and 1 <= last < first
    per_layer = out["layer_ep_comm_s"][0]
    # the busiest stage is a middle one (four MoE layers) or the last (its own MoE layers)
    assert any(out["ep_comm_s"][0] == pytest.approx(2 * n * per_layer, rel=1e-12)
               for n in (4, ex.moe_last[last]))
    routed = m.experts * memory.layer_params(m)["expert"]
    assert out["expert_params_per_gpu"][0] == pytest.approx(4 * routed / 8)


def test_fp8_runs_the_layers_linear_flops_at_the_fp8_peak():
    """Under fp8-te the layers' Linear FLOPs (compute.flops_by_format) run at the FP8 rate,
    attention and the output layer at BF16: on an H100 the FP8 share of the GEMM time shrinks
    by the measured maximum achievable rates' ratio, 794.5 / 1402.6 TFLOP/s (MAMF table),
    not by the datasheet's half; weights, gradients and optimizer state take the recipe's
    bytes."""
    p = Plan(tp=2, dp=4, global_batch=8, sp=True, flash_attention=True)
    bf16 = plan.evaluate(DENSE, GPU, p, framework=BARE, recipe="megatron-bf16")
    fp8 = plan.evaluate(DENSE, GPU, p, framework=BARE, recipe="fp8-te")
    ctx = _ctx(DENSE, p, recipe="fp8-te")
    m = catalog.model(DENSE)
    split = plan.step.compute.flops_by_format(m, m.seq_len, "fp8-te")
    assert ctx.fp8_share == pytest.approx(split["fp8"] / (6 * memory.layers_params(m)))
    assert ctx.fp8_flops == catalog.gpu(GPU).fp8_dense_tflops * 1e12
    x = step._shape(ctx, {k: np.array([v]) for k, v in dict(
        tp=2, pp=1, dp=4, micro_batch=1, interleave=1, zero_stage=0, rc=0, sp=True,
        flash=True).items()})
    g8 = step.compute_parts(ctx, x)["layer_gemm_s"][0]
    g16 = step.compute_parts(_ctx(DENSE, p, recipe="megatron-bf16"), x)["layer_gemm_s"][0]
    share = ctx.fp8_share
    assert g8 == pytest.approx(g16 * (share * 794.5 / 1402.6 + 1 - share), rel=1e-9)
    assert 0.55 * g16 < g8 < 0.6 * g16
    assert fp8.step["forward"] < bf16.step["forward"]
    assert fp8.memory["weights"] == bf16.memory["weights"]  # both keep bf16 weights
    fp8p = plan.evaluate(DENSE, GPU, p, framework=BARE, recipe="fp8-te-fp8-params")
    assert fp8p.memory["weights"] == pytest.approx(fp8.memory["weights"] / 2)


def test_dualpipe_holds_two_stages_and_has_its_bubble():
    """DualPipe with two stages: every GPU holds both (all the model's parameters but the
    experts it leaves to the other EP ranks) and its bubble is pipeline.dualpipe_bubble_s,
    none at pp = 2; with four stages it is (4/2 - 1) x 2F, 2/9 of 1F1B's (pp - 1) x 3F."""
    p = Plan(pp=2, dp=4, ep=4, global_batch=16, flash_attention=True)
    r = plan.evaluate(MOE, GPU, p, framework="deepseek-hai-llm")
    held = moe.expert_params_per_gpu(MOE, ep=4)["total"]  # everything, pp = 1
    assert r.memory["weights"] == pytest.approx(2 * held, rel=1e-6)
    assert r.step["bubble"] == 0
    four = Plan(pp=4, dp=2, ep=2, global_batch=16, flash_attention=True)
    from dataclasses import replace

    dual = plan.framework("deepseek-hai-llm")
    one_f = replace(dual, pipeline_schedule="1f1b")
    d = plan.evaluate(MOE, GPU, four, framework=dual)
    o = plan.evaluate(MOE, GPU, four, framework=one_f)
    assert d.step["bubble"] == pytest.approx(o.step["bubble"] * 2 / 9, rel=1e-9)
    assert float(pipeline.dualpipe_bubble_s(4, 1.0)) == 2.0
    assert float(pipeline.dualpipe_in_flight(16)) == 17


# -------------------------------------------------------------------- search against evaluate
def _random_plans(rng, n_plans: int):
    for _ in range(n_plans):
        t, c = int(rng.choice([1, 2, 4])), int(rng.choice([1, 2, 4, 3]))
        p, d = int(rng.choice([1, 2, 3, 4])), int(rng.choice([1, 2, 4]))
        e = int(rng.choice([1, 2, 4, 8, 16, 3, 6]))
        b = int(rng.choice([1, 2]))
        yield Plan(tp=t, cp=c, pp=p, dp=d, ep=e, micro_batch=b,
                   global_batch=d * b * int(rng.choice([1, 2, 4])),
                   zero_stage=int(rng.integers(4)), sp=bool(rng.integers(2)),
                   recompute=str(rng.choice(["none", "full"])),  # selective = none with flash
                   interleave=int(rng.choice([1, 1, 2])), flash_attention=True)


@pytest.mark.parametrize("framework", ["megatron-core", "deepseek-hai-llm"])
def test_evaluate_accepts_exactly_what_search_enumerates_with_cp_and_ep(framework):
    """Random layouts of a mixture of experts with context and expert parallelism: evaluate
    raises iff the layout is not among the search's plans of its GPU count and batch, and
    prices the ones it accepts as the search did."""
    rng = np.random.default_rng(13)
    enumerated: dict[tuple[int, int], plan.SearchResult | None] = {}
    compared = accepted_count = 0
    options = dict(uneven_layers=True, max_micro_batch=2, max_interleave=2, flash_attention=True,
                   framework=framework, cp_sizes=(1, 2, 4), ep_sizes=(1, 2, 4, 8, 16))
    if framework == "deepseek-hai-llm":
        options["cp_sizes"] = (1,)
    for p in _random_plans(rng, 250):
        key = (p.n_gpus, p.global_batch)
        if key not in enumerated:
            try:
                enumerated[key] = plan.search(MOE, GPU, *key, **options)
            except plan.NoPlanError:
                enumerated[key] = None
        r = enumerated[key]
        if r is None:
            continue
        compared += 1
        a = r.arrays
        row = layout.plan_arrays([p])
        hit = np.ones(a["tp"].size, dtype=bool)
        for f in plan.PLAN_FIELDS:
            hit &= np.asarray(a[f]) == row[f][0]
        try:
            got = plan.evaluate(MOE, GPU, p, framework=framework)
        except ValueError:
            got = None
        assert (got is not None) == bool(hit.any()), p.label
        if got is not None:
            accepted_count += 1
            i = int(np.flatnonzero(hit)[0])
            assert got.step_s == pytest.approx(float(a["step_s"][i]), rel=1e-9), p.label
            assert got.memory_bytes == pytest.approx(float(a["memory_bytes"][i]), rel=1e-9)
    assert compared >= 60 and 0 < accepted_count < compared
    if framework == "megatron-core":  # both dimensions exercised among the accepted
        seen = [r for r in enumerated.values() if r is not None]
        assert any((r.arrays["cp"] > 1).any() for r in seen)
        assert any((r.arrays["ep"] > 1).any() for r in seen)


def test_search_tries_expert_and_context_parallel_sizes_by_default():
    r = plan.search(MOE, GPU, 64, 256, flash_attention=True, max_micro_batch=2, max_interleave=2)
    assert set(np.unique(r.arrays["ep"])) <= set(moe.ep_sizes(MOE))
    assert (r.arrays["ep"] > 8).any() and (r.arrays["cp"] == 1).all()  # 4K tokens: no CP
    top = r.top(3)
    assert {"cp", "ep"} <= set(top[0])
    assert f"EP{top[0]['ep']}" in top[0]["plan"] or top[0]["ep"] == 1
    assert r.best_by("ep") and r.rank_where(ep=int(r.arrays["ep"][r.order[0]])) == 0
    long = plan.search(DENSE, GPU, 64, 64, seq_len=65536, flash_attention=True,
                       max_micro_batch=1, max_interleave=1)
    assert set(np.unique(long.arrays["cp"])) >= {1, 2, 4, 8}
    assert (long.arrays["ep"] == 1).all()
    assert plan.search(DENSE, GPU, 64, 64, seq_len=65536, flash_attention=True,
                       max_micro_batch=1, max_interleave=1, cp_sizes=(1,)).n_evaluated \
        < long.n_evaluated


def test_explain_names_what_bounds_the_winner():
    r = plan.search("qwen3-235b-a22b", GPU, 256, 256, flash_attention=True, max_micro_batch=1,
                    max_interleave=1, ep_sizes=(32, 64), sequence_parallel=(True,))
    text = plan.explain(r)
    assert "It is bound by" in text and "expert parallelism" in text
    p = Plan(pp=4, dp=64, ep=64, global_batch=256, flash_attention=True, zero_stage=1)
    res = plan.evaluate("qwen3-235b-a22b", GPU, p)
    _, share, sentence = plan.bound(res.step, p, plan.default_network(GPU))
    assert sentence.startswith("bound by") and 0 < share <= 1
    ep = plan.bound({**res.step, "ep_comm": 100.0}, p, plan.default_network(GPU))
    assert ep[0] == "ep_comm" and "InfiniBand NDR all-to-all" in ep[2] and \
        "not by compute" in ep[2]


# -------------------------------------------------------------------- dense plans unchanged
#: Searches of dense 16-bit models as main priced them before context and expert parallelism
#: entered the planner (commit 0136e18): plans evaluated, plans that fit, the winner's step and
#: the sums of every plan's step and memory. Context and expert parallelism at 1 change nothing.
#: Since the GPU's measured achievable matmul share scales the calibration's efficiency
#: (Calibration.achievable_ratio), an H100 search differs from those pins by that ratio alone:
#: with the H100 itself as the reference GPU (ratio 1) they come back to the digit.
BEFORE = {
    ("gpt3-175b", "A100-SXM4-80GB", 1024, 1536, ()): (4758, 1222, 16.858892142272502,
                                                     141620.16586019937, 1207942793255008.0),
    # Llama 3 trains without dropout (catalog dropout = false): no masks among its stored
    # activations, nor their memory-bound traffic; more of the 70B's plans fit (1,627 -> 1,657)
    ("llama3-405b", GPU, 16384, 2048, (("flash_attention", True),)): (
        636, 191, 6.079325932019532, 25464.588051241037, 114746465384152.8),
    # torchtitan's selective recomputation reruns every second matmul of a block
    # (step.every_other_matmul_params): its selective plans' times grew, memory did not;
    # then its ZeRO-2 plans without pipelining were priced per unit, as FSDP2 runs them
    # (Framework.zero2_per_unit): the sum fell from 108,208.897 s, the best plan kept its time;
    # then its ZeRO-2/3 under pipelining held whole weights and float32 gradients all step and
    # its ZeRO-3 there was priced as its ZeRO-2 (Framework.pp_defers_grad_sync): 278 pipelined
    # plans stopped fitting (1,657 -> 1,379), the step sum fell from 108,125.786 s, the best
    # plan (no pipelining) kept its time
    ("llama3-70b", GPU, 512, 512, (("framework", "torchtitan"), ("zero_shards", (8,)))): (
        5565, 1379, 10.13375488877474, 107952.46881368467, 2183708042096951.8),
    ("megatron-1t", "A100-SXM4-80GB", 3072, 3072, ()): (5757, 439, 62.01482081406557,
                                                       835208.5246473395, 4559784620571534.0),
}


@pytest.mark.parametrize("key", list(BEFORE))
def test_dense_searches_are_unchanged_to_the_digit(key):
    model, gpu, n, batch, kw = key
    same = replace(plan.DEFAULT_CALIBRATION, reference_gpu=gpu)
    r = plan.search(model, gpu, n, batch, calibration=same, **dict(kw))
    n_eval, n_fit, best, step_sum, memory_sum = BEFORE[key]
    assert (r.n_evaluated, r.n_fit) == (n_eval, n_fit)
    assert r.result(0).step_s == best or float(r.arrays["step_s"][r.order[0]]) == best
    assert float(np.sum(r.arrays["step_s"])) == step_sum
    assert float(np.sum(r.arrays["memory_bytes"])) == memory_sum
    assert (r.arrays["cp"] == 1).all() and (r.arrays["ep"] == 1).all()


# -------------------------------------------------------------------- the published runs
@pytest.fixture(scope="module")
def rows():
    return {r.case: r for r in plan.validate(sources=["deepseek_v3", "megatron_bridge_perf_2511",
                                                      "llama3_table4"])}


def test_deepseek_v3_against_its_report(rows):
    """DeepSeek-V3's stated layout (PP16 DualPipe, EP64 over 8 nodes, ZeRO-1, FP8) under the
    HAI-LLM preset: the all-to-alls hidden as the report says, 112 of 132 SMs computing. The
    planner's GPU-hours per 10^12 tokens come out about 14% below the report's whole-run
    average (the target: within 15%). It was 41% below before five
    mechanisms entered the model: the H100-class GPU's measured achievable BF16 and FP8
    matmul rates (to 33%), the FP8 tile casts (to 29%), the MTP module the run trained
    (Sec. 4.2, depth 1) on the last stage with a DualPipe-aware layer split (to 20%), the
    whole-run average read over a goodput of 98.4% from the reliability model (failures at
    Llama 3's rates on 2,048 GPUs, sharded checkpoints, MegaScale's restart; to 18.6%), and
    HAI-LLM's recomputation of the norms, MLA up-projections and MoE SwiGLU (Sec. 3.2.3 and
    3.3.3; to 16.2%), which also brings the stated layout inside 80 GB, then the token
    permutations as memory-bound kernels of their own (moe.permutation_bytes, those of
    DeepEP's receiver; to 14.0%, inside the target). The batch ramp,
    evaluation and any routing imbalance are left out; no factor closes the gap. The bound
    states it and fails if the prediction drifts either way."""
    r = rows["deepseek-v3 pre-training on 2,048 H800"]
    assert r.published == 180_000
    assert -16.5 < r.error_pct < -12, r.error_pct
    case = next(c for c in plan.published.cases()[0] if c.source == "deepseek_v3")
    assert 0.97 < case.goodput < 0.99
    assert case.plan.label.startswith("TP1 PP16 DP128 EP64")
    assert case.framework == "deepseek-hai-llm" and case.recipe == "fp8-deepseek"
    res = plan.evaluate(case.model, case.gpu, case.plan, case.network, framework=case.framework,
                        recipe=case.recipe)
    assert res.step["ep_comm"] == 0  # hidden behind the other chunk's computation
    assert res.fits  # with the framework's recomputation


def test_long_context_llama3_row_within_15_percent(rows):
    r = rows["405B, 128K context, 16,384 GPUs"]
    assert abs(r.error_pct) < 15, r.error_pct


def _without_source(cv, source):
    """``cv`` with one held-out source's rows (and their baseline rows) taken out."""
    keep = [r.source != source for r in cv.held_out]
    return replace(
        cv, held_out=[r for r, k in zip(cv.held_out, keep, strict=True) if k],
        baseline_held_out=[r for r, k in zip(cv.baseline_held_out, keep, strict=True) if k])


def test_moe_fp8_and_cp_runs_are_measured_apart_and_their_gap_is_stated():
    """The held-out runs that exercise a mixture of experts, FP8 or context parallelism. The
    FP8 GEMMs at each GPU's measured achievable FP8 rate and the FP8 recipes' casts took the
    mean error over the 20 runs predicted before from 74% to about 54% (the constant-MFU
    baseline's: 56%) and the FP8 dense Llama 3 rows to within 20%. With multi-token
    prediction modelled, Megatron Bridge's DeepSeek-V3 row with MTP (B200, PP16 EP8) joins
    the group at about +80%, and the 21 runs' mean, about 55.3%, is level with the
    baseline's 55.3% (55.5% and 55.2% before DeepSeek-V3's whole-run figure was read over a
    goodput and its recomputation modelled), not below it. Megatron-Core's host-bound loop
    of per-expert GEMMs (a measured cost per GEMM, not fitted; scaleout.moe.
    expert_loop_exposed_s) took the 21 runs' mean from 54.5% to about 47% and the worst,
    Qwen3-30B-A3B at micro-batch 1 on B200, from +284% to about +160%. The token
    permutations as kernels of their own (each token copied k times before the dispatch and
    summed back after the combine, Megatron-Core's sort by local expert and its inverse,
    forward and backward; scaleout.moe.permutation_bytes) took the mean to about 42.5% and the
    worst to about +155%, and DeepSeek-V3's report row from -15.8% to -14.6%; each row's
    token dispatcher and recompute modules as its recipe sets them (HybridEP's permutations
    inside its communication kernels, DeepEP's on the receiver only) leave it at about 43.5%
    (DeepSeek-V3's report row, DeepEP-style, at -14.0%), and those dispatchers sending a
    token once per destination GPU (HybridEP's Qwen3-30B-A3B on GB200: 5.34 GPUs for its 8
    copies, from +48% to +61%) at about 44.3%. The alltoall dispatcher's other launches
    after the host's wait (scaleout.moe.MOE_HOST_OPS, each at the measured host time of one
    eager PyTorch operator, not fitted) take it to about 43.8% (Qwen3-30B-A3B on B200 from
    +155.6% to +138.6%). Counting the dispatch all-to-all, which that dispatcher issues first
    after the wait, among the GPU's work queued behind the host (it runs while the host
    issues the rest; before, the all-to-all was charged in full and the host's issue time
    behind it charged again) widens the gap to about 45.1% (Qwen3-30B-A3B on B200 +148%, on
    H100 +158.5%; Qwen3-235B-A22B on B200 +111%): a correction of the timeline, kept although
    it moves away from the measurements. Counting the whole stretch between two of the host's
    waits (Framework.moe_host_layer: one layer's Transformer Engine modules and eager
    operators, scaleout.moe.LAYER_HOST_CALLS, issued in order against the GPU's work of the
    whole layer, scaleout.moe.host_stretch_exposed_s, each call at its system's measured host
    time: GB200's Grace 2.75 times the DGX H100's Xeon, TE issue #2053; nothing fitted; the
    calls a run's recipe captures in CUDA graphs replaced by one launch) takes it to about
    44.5% (Qwen3-30B-A3B on B200 +142.6%, Qwen3-235B-A22B on B200 +107%, Qwen3-30B-A3B on
    GB200 +59%; the H100 rows and DeepSeek-V3's report row unchanged, their GPU work hiding
    the host's). The planner still runs faster than measured on most MoE rows (Qwen3-30B-A3B
    on B200 and H100 near or above 140%, which no modelled mechanism explains;
    the per-expert quantize kernels, DeepEP's and HybridEP's own launches and the FP8 recipes'
    extra Python per module are not counted). Stated here so that a change that widens the gap
    fails; the dense 16-bit runs keep their own claim (test_validation.py). The claim is over
    the sources it was stated for: the Megatron Bridge 26.02 table, held out since, is left
    out of it here (its 30 runs would move the group's mean to about 44.7% and its worst to
    +169%) and keeps a claim of its own (test_bridge_2602.py)."""
    cv = _without_source(plan.cross_validation(), "megatron_bridge_perf_2602")
    new = cv.overall("held out", dense_16bit=False)
    dense = cv.overall("held out", dense_16bit=True)
    assert new["cases"] >= 19 and dense["cases"] + new["cases"] == cv.overall("held out")["cases"]
    assert new["mean_abs_pct"] < 44.7 and new["worst_abs_pct"] < 160
    assert new["mean_abs_pct"] < new["baseline_mean_abs_pct"] - 5
    fp8_dense = [r for r in cv.held_out
                 if "FP8" in r.mechanisms and "mixture of experts" not in r.mechanisms]
    assert len(fp8_dense) >= 6 and max(abs(r.error_pct) for r in fp8_dense) < 20
    over = [r for r in cv.held_out if r.mechanisms and r.error_pct > 0
            and r.quantity != "H800 GPU-hours per 10^12 tokens"]
    assert len(over) >= 0.75 * (new["cases"] - 1)


# -------------------------------------------------------------------- the experts' GEMMs
def _expert_parts(p, gpu=GPU, recipe="mixed-adam"):
    from scaleout.plan.evaluate import _arrays

    ctx = _ctx(MOE, p, recipe=recipe, gpu=gpu)
    x = step._shape(ctx, _arrays(p))
    return step.expert_gemm_parts(ctx, x)


def test_few_tokens_per_expert_make_the_expert_gemms_read_bound():
    """Qwen3-30B-A3B without expert parallelism, sequences of 128: 128 x 8 / 128 = 8 rows per
    expert GEMM, so every pass is bound by reading the 128 experts' weights: 3 x 2048 x 768
    parameters each, read at 2 bytes by the forward and data-gradient GEMMs and their 2-byte
    gradients read and written by the weight-gradient GEMM, 8 bytes a parameter at the H100's
    3.35 TB/s; a third of that per forward-pass unit (every layer is MoE)."""
    p = Plan(dp=1, micro_batch=1, global_batch=1, seq_len=128, flash_attention=True)
    got = _expert_parts(p)
    assert float(got["tokens_per_expert"][0]) == 8.0
    assert float(got["rank_imbalance"][0]) == 1.0  # one rank holds every expert
    weights = 128 * 3 * 2048 * 768
    assert float(got["layer_expert_gemm_s"][0]) == pytest.approx(
        weights * 8 / 3.35e12 / 3, rel=1e-9)


def test_many_tokens_per_expert_leave_the_expert_gemms_compute_bound():
    """At 4,096 tokens a GPU over EP 8 (2,048 rows an expert) the weights' bytes no longer
    bound the expert GEMMs: doubling the micro-batch doubles their time (FLOPs), where the
    read-bound case above would not move; the busiest rank's share is above one."""
    one = _expert_parts(Plan(dp=8, ep=8, micro_batch=1, global_batch=8, flash_attention=True))
    two = _expert_parts(Plan(dp=8, ep=8, micro_batch=2, global_batch=16, flash_attention=True))
    assert float(one["tokens_per_expert"][0]) == 4096 * 8 * 8 / 128
    ratio = float(two["layer_expert_gemm_s"][0] / one["layer_expert_gemm_s"][0])
    rho = float(two["rank_imbalance"][0] / one["rank_imbalance"][0])
    assert 1 < float(one["rank_imbalance"][0]) < 1.02
    # twice the rows at the same eta (its dimension min(h, f_e, rows) is the experts' width,
    # 768, both times),
    # the busiest rank's share of them a little nearer the mean
    assert ratio / rho == pytest.approx(2.0, rel=1e-9)
    # each of the three passes multiplies 4,096 tokens by 8 experts of 3 x 2048 x 768 on the
    # busiest rank, at the calibrated eta of the experts' width (768), not of h = 2,048
    ctx = _ctx(MOE, Plan(dp=8, ep=8, micro_batch=1, global_batch=8, flash_attention=True))
    rate = (ctx.calibration.matmul_efficiency(768.0) * ctx.gpu.bf16_dense_flops
            * ctx.bf16_achievable)
    flops = 2 * 4096 * 8 * (3 * 2048 * 768) * float(one["rank_imbalance"][0])
    assert float(one["layer_expert_gemm_s"][0]) == pytest.approx(flops / rate, rel=1e-9)


# -------------------------------------------------------------------- token permutations
def test_the_token_permutations_are_memory_bound_time_of_every_moe_layer():
    """Qwen3-30B-A3B on eight H100s, EP 8 (16 local experts), one sequence of 4,096 a GPU:
    the planner's permutation bytes are moe.permutation_bytes for the 4,096 tokens a GPU
    routes at the busiest rank's ρ and the framework's dispatcher. Against HybridEP (every
    permutation inside the communication kernels) the all-to-all dispatcher adds, by hand:
    forward, permute and unpermute 2 x (4,096 + 4,096 x 8) rows of 2,048 BF16 values, the
    sort and restore 4 x R rows (R = 4,096 x 8 x ρ); the backward the same; at the H100's
    3.35 TB/s, a third of it in each forward-pass unit (every layer is MoE)."""
    from scaleout.plan.evaluate import _arrays

    p = Plan(dp=8, ep=8, micro_batch=1, global_batch=8, seq_len=4096, flash_attention=True)
    rho = float(moe.expected_rank_imbalance(4096, 128, 8, 8))
    ctx = _ctx(MOE, p)
    x = step._shape(ctx, _arrays(p))
    got = float(step.permutation_parts(ctx, x, np.array([rho]))["layer_permutation_bytes"][0])
    want = moe.permutation_bytes(4096, 2048, 8, 128, 8, imbalance=rho)["total"]
    assert got == pytest.approx(want, rel=1e-12)

    def forward(fw):
        c = _ctx(MOE, p, framework=fw)
        return float(step.compute_parts(c, step._shape(c, _arrays(p)))["layer_forward_s"][0])

    rows = 2 * (4096 + 4096 * 8) + 4 * 4096 * 8 * rho
    fused = replace(BARE, moe_dispatcher="hybridep")
    assert forward(BARE) - forward(fused) == pytest.approx(
        2 * rows * 2048 * 2 / 3.35e12 / 3, rel=1e-9)


def test_dense_layers_have_no_token_permutations():
    """A dense model's step does not depend on the framework's MoE dispatcher; an unknown
    dispatcher is refused naming the allowed ones."""
    p = Plan(tp=1, dp=8, micro_batch=1, global_batch=8, seq_len=4096, flash_attention=True)
    a = plan.evaluate(DENSE, GPU, p, framework=BARE)
    b = plan.evaluate(DENSE, GPU, p, framework=replace(BARE, moe_dispatcher="deepep"))
    assert a.step_s == b.step_s
    with pytest.raises(ValueError, match="moe_dispatcher"):
        replace(BARE, moe_dispatcher="nccl")


def test_bridge_moe_runs_take_their_recipes_dispatcher_and_recompute_modules():
    """Each Megatron Bridge MoE run records the recipe's token dispatcher, recompute modules
    and all-to-all overlap (data/published/megatron_bridge_perf_2511.toml, from the recipes
    at 5776a6d9); the planner runs Megatron-Core with the first two: HybridEP on the GB200
    Qwen3 and DeepSeek-V3 rows, DeepEP on the H100 DeepSeek-V3 row, the all-to-all
    dispatcher elsewhere; DeepSeek-V3's mla_up_proj and gpt-oss's layernorm and moe_act as
    the planner's recompute kinds ("mlp" is named as not modelled)."""
    runs = [r for r in catalog.published("megatron_bridge_perf_2511")["run"]
            if catalog.model(r["model"]).is_moe and r["gpu"] in catalog.gpu_names()]
    assert runs and all(r["dispatcher"] in moe.DISPATCHERS and "recompute_modules" in r
                        and isinstance(r["moe_a2a_overlap"], bool) for r in runs)
    cases = {c.label: c for c in plan.published.cases()[0]
             if c.source == "megatron_bridge_perf_2511"}
    fw = {label: plan.framework(c.framework) for label, c in cases.items()}
    assert fw["qwen3-30b-a3b FP8-MX on 8 × GB200"].moe_dispatcher == "hybridep"
    assert fw["qwen3-30b-a3b FP8-MX on 8 × B200"].moe_dispatcher == "alltoall"
    assert fw["deepseek-v3 FP8-CS on 1024 × H100-SXM5-80GB"].moe_dispatcher == "deepep"
    assert fw["deepseek-v3 FP8-MX on 256 × B200"].recompute_kinds == ("mla_up_projections",)
    assert fw["gpt-oss-120b on 64 × H100-SXM5-80GB"].recompute_kinds == ("norms", "moe_swiglu")
    assert not any(f.a2a_overlap for f in fw.values())  # recorded, not applied
    assert any("mlp not modelled" in a
               for a in cases["deepseek-v3 FP8-CS on 1024 × H100-SXM5-80GB"].assumed)
    assert cases["llama3-8b FP8-CS on 8 × B200"].framework == "megatron-core"
