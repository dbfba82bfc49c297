"""The planner beyond the two tables it is fitted to: held-out sources, leave-one-source-out,
a constant baseline, and the mechanisms that make the difference (frameworks' collectives and
overlaps, stages of unequal layers, the memory a real run reserves)."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scaleout import catalog, compute, plan
from scaleout.plan import published, validation
from scaleout.units import GIB


@pytest.fixture(scope="module")
def cv() -> validation.CrossValidation:
    return plan.cross_validation()


def test_sources_are_split_before_fitting_and_held_out_ones_are_many():
    every, skipped = published.cases()
    sources = {c.source for c in every}
    held = sources - set(published.TRAINING)
    assert set(published.TRAINING) <= sources and len(held) >= 4
    # frameworks, GPU generations and scales differ across the held-out sources
    held_cases = [c for c in every if c.source in held]
    assert len({c.framework for c in held_cases}) >= 3
    assert {catalog.gpu(c.gpu).architecture for c in held_cases} >= {"Ampere", "Hopper"}
    assert max(c.plan.n_gpus for c in held_cases) >= 8192
    assert skipped and all(": " in why for why in skipped)  # each with its reason


def test_the_planner_beats_a_constant_mfu_on_runs_it_was_not_fitted_to(cv):
    """On the dense 16-bit runs it never saw (every held-out run before mixtures of experts,
    FP8 and context parallelism entered the planner; those are measured apart, in
    test_plan_moe.py). The mean is about 14% (the baseline's 22%): it was 18.8% before each
    GPU's measured maximum achievable matmul rate scaled the A100-fitted efficiency, which
    brought the H100 runs (MPT, Llama 3) nearer, and 13.6% before the models trained without
    dropout (MPT, Llama 3) lost its masks from their stored activations and from the
    memory-bound traffic priced on them (14.2%), and 15.5% since PyTorch FSDP's ZeRO-2
    (SHARD_GRAD_OP) is priced as FSDP runs it, each layer gathered once and kept for its
    backward instead of DDP-style buckets and a trailing gather: its six MPT rows went from
    -6..+19% (errors that cancelled) to +28..+41%, beside the FSDP rows without
    recomputation the planner already predicted too fast."""
    held = cv.overall("held out", dense_16bit=True)
    assert held["cases"] >= 20
    assert held["mean_abs_pct"] < 16
    assert held["mean_abs_pct"] < held["baseline_mean_abs_pct"]
    assert held["worst_abs_pct"] < held["baseline_worst_abs_pct"]
    left = cv.overall("left out")
    assert left["mean_abs_pct"] < left["baseline_mean_abs_pct"]


def test_the_cross_validation_table_names_every_source_and_role(cv):
    roles = {(r["source"], r["role"]) for r in cv.table()}
    for s in published.TRAINING:
        assert (published.source_title(s), "fitted") in roles
        assert (published.source_title(s), "left out") in roles
    text = plan.validation_table()
    assert "held out" in text and "left out" in text and "baseline" in text


def _zero3(rows, scheme):
    return {int(r.case.split(" on ")[1].split()[0].replace(",", "")): r
            for r in rows if scheme in r.case and "175b" in r.case}


def test_zero3_collapses_at_a_fixed_batch_and_3d_parallelism_stays_flat():
    """Narayanan et al. 2021 Table 2, held out: as GPUs double at a fixed batch, ZeRO-3's
    throughput per GPU halves (each GPU still moves the whole model's weights and gradients)
    while PTD-P's barely moves. Both trends come out of the mechanisms."""
    rows = plan.validate(sources=["narayanan2021_table2_zero3"])
    z, p = _zero3(rows, "ZeRO-3"), _zero3(rows, "PTD-P")
    assert z[768].predicted < 0.75 * z[384].predicted
    assert z[1536].predicted < 0.6 * z[768].predicted
    assert p[1536].predicted > 0.85 * p[384].predicted
    # the levels: PTD-P within 6%; ZeRO-3 within 10% at every scale, 384 GPUs included, now
    # that DeepSpeed 2021's blocking fetch (one weight matrix prefetched, the CPU synchronising
    # at every submodule) is modelled: before it, the planner hid the gathers behind compute
    # at 384 GPUs and was 42% optimistic there
    assert all(abs(r.error_pct) < 6 for r in p.values())
    assert all(abs(r.error_pct) < 10 for r in z.values())


def test_deepspeed_2021_zero3_rows_of_both_models_within_15_percent():
    """Both models of Table 2 (174.6B and 529.6B), every GPU count: ZeRO-3's measured
    throughput is predicted within 15% by the framework's mechanisms alone (no fit: the
    calibration only knows Megatron-LM runs)."""
    rows = [r for r in plan.validate(sources=["narayanan2021_table2_zero3"])
            if "ZeRO-3" in r.case]
    assert len(rows) == 6
    assert all(abs(r.error_pct) < 15 for r in rows)


def test_llama3_405b_considers_its_published_layout_and_keeps_headroom():
    """126 layers: with stages of unequal layers (the default) the published TP8 PP16 is a
    candidate; the winner keeps the reserve a real run needs."""
    r = plan.search("llama3-405b", "H100-SXM5-80GB", 16384, 2048, seq_len=8192,
                    flash_attention=True)
    a = r.arrays
    assert np.any((a["tp"] == 8) & (a["pp"] == 16))
    best = r.result(0)
    assert best.fits and best.memory["reserve"] > 1.5 * GIB
    strict = plan.search("llama3-405b", "H100-SXM5-80GB", 16384, 2048, seq_len=8192,
                         flash_attention=True, uneven_layers=False)
    assert not np.any(strict.arrays["pp"] == 16) and strict.n_evaluated < r.n_evaluated


def test_an_uneven_split_balances_the_output_layer():
    """Llama 3 gave its first and last stages one layer fewer; the planner's balanced split
    gives the last stage fewer layers when it also runs the output layer."""
    ctx = plan.step.context("llama3-405b", "H100-SXM5-80GB", None, None, "mixed-adam", 8192,
                            64)
    out = plan.step.iteration(ctx, {"tp": np.array([8]), "pp": np.array([16]),
                                    "dp": np.array([8]), "micro_batch": np.array([1]),
                                    "interleave": np.array([1]), "zero_stage": np.array([1]),
                                    "sp": np.array([True]), "rc": np.array([0]),
                                    "flash": np.array([True])}, uneven=True)
    first, last = float(out["first_layers"][0]), float(out["last_layers"][0])
    assert first == 8 and last < first and 15 * first + last == 126


def test_with_flash_attention_selective_recompute_is_not_listed_twice():
    r = plan.search("llama3-8b", "H100-SXM5-80GB", 64, 512, flash_attention=True)
    assert "selective" not in set(r.arrays["recompute"])
    top = r.top(10)
    keys = [(x["tp"], x["pp"], x["dp"], x["micro_batch"], x["interleave"], x["zero_stage"],
             x["sp"]) for x in top]
    assert len(keys) == len(set(keys))


def test_zero_with_pipelining_where_the_framework_allows_it():
    p = plan.Plan(tp=8, pp=4, dp=8, global_batch=64, zero_stage=3, sp=True)
    with pytest.raises(ValueError, match="cannot be combined with pp=4 in megatron-core"):
        plan.evaluate("llama3-70b", "H100-SXM5-80GB", p)
    r = plan.evaluate("llama3-70b", "H100-SXM5-80GB", p, framework="torchtitan")
    assert r.framework == "torchtitan" and r.step["dp_comm"] > 0


def test_an_unknown_framework_names_the_presets():
    with pytest.raises(ValueError, match="presets: megatron-lm-2021, deepspeed-2021"):
        plan.search("llama3-8b", "H100", 64, 512, framework="megatron")
    with pytest.raises(ValueError, match="did you mean 'torchtitan'"):
        plan.framework("torchtitn")


def test_overlap_hides_what_the_backward_pass_covers():
    """The same layout under Megatron-LM 2021 (all-reduce after the flush) and Megatron-Core
    (buckets reduce-scattered during the last backward pass): less exposed communication."""
    p = plan.Plan(tp=8, pp=1, dp=64, global_batch=512, micro_batch=1, recompute="selective",
                  sp=True)
    old = plan.evaluate("llama3-70b", "H100-SXM5-80GB", p, framework="megatron-lm-2021")
    new = plan.evaluate("llama3-70b", "H100-SXM5-80GB", p.__class__(**{**p.__dict__,
                                                                        "zero_stage": 1}),
                        framework="megatron-core")
    assert new.step["dp_comm"] < 0.5 * old.step["dp_comm"]


def test_flat_rings_move_each_gpus_share_over_its_own_port():
    """ZeRO-3 over 1,536 GPUs: DeepSpeed's flat rings against the same collectives spread
    over each node's ports, everything else equal."""
    from dataclasses import replace

    p = plan.Plan(dp=1536, global_batch=1536, zero_stage=3, recompute="full")
    flat = plan.framework("deepspeed-2021")
    spread = replace(flat, name="spread", flat_dp_rings=False)
    slow = plan.evaluate("korthikanti-175b", "A100-SXM4-80GB", p, framework=flat)
    fast = plan.evaluate("korthikanti-175b", "A100-SXM4-80GB", p, framework=spread)
    assert slow.step["dp_comm"] > 4 * fast.step["dp_comm"]


def test_the_reserve_and_the_tight_flag():
    """The reserve holds the CUDA context, NCCL's buffers, the allocator's slack and the fp32
    logits of the loss (8 b s V / tp bytes on the last stage under Megatron-Core), by hand
    here."""
    p = plan.Plan(tp=8, pp=1, dp=1, global_batch=1, seq_len=8192, flash_attention=True)
    r = plan.evaluate("llama3-8b", "H100-SXM5-80GB", p)
    m = catalog.model("llama3-8b")
    held = sum(r.memory[k] for k in ("weights", "grads", "optimizer", "activations"))
    expected = (plan.RESERVE["context_gib"] + plan.RESERVE["nccl_gib"]) * GIB \
        + plan.RESERVE["allocator_share"] * held + 8 * 8192 * m.vocab / 8
    assert r.memory["reserve"] == pytest.approx(expected)
    assert r.headroom_gib == pytest.approx((r.capacity_bytes - r.memory_bytes) / GIB)
    assert r.tight == (r.memory_bytes > 0.9 * r.capacity_bytes)


def test_the_logits_the_loss_keeps_depend_on_the_framework():
    """Megatron's vocab-parallel cross entropy keeps fp32 logits and their fp32 gradient (8 bytes
    a logit); flash-attn's fused cross entropy, which llm-foundry's FSDP runs use, keeps the bf16
    logits and writes a bf16 gradient (4). Llama 3 8B, one 8,192-token sequence per GPU:
    4 x 8192 x 128,256 bytes = 4.20 GB less on the GPU with the output layer."""
    from dataclasses import replace

    from scaleout.plan.frameworks import FRAMEWORKS

    p = plan.Plan(dp=8, global_batch=8, zero_stage=3, seq_len=8192, flash_attention=True)
    fsdp = FRAMEWORKS["pytorch-fsdp"]
    assert fsdp.logits_bytes == 4 and FRAMEWORKS["megatron-core"].logits_bytes == 8
    fused = plan.evaluate("llama3-8b", "H100-SXM5-80GB", p, framework=fsdp)
    fp32 = plan.evaluate("llama3-8b", "H100-SXM5-80GB", p,
                         framework=replace(fsdp, logits_bytes=8.0))
    assert fp32.memory["reserve"] - fused.memory["reserve"] == pytest.approx(4 * 8192 * 128_256)
    assert fp32.step == fused.step  # memory only
    with pytest.raises(ValueError, match=r"logits_bytes.*0\.5"):
        replace(fsdp, logits_bytes=0.5)
    big = plan.evaluate("llama3-70b", "H100-SXM5-80GB",
                        plan.Plan(tp=8, pp=4, dp=1, global_batch=8, flash_attention=True,
                                  seq_len=8192))
    assert big.tight or not big.fits or big.headroom_gib > 0.1 * 80


def test_the_batch_message_suggests_what_works():
    with pytest.raises(ValueError, match=r"nearest batches that are: 992 or 1,008; or dp in "):
        plan.Plan(dp=16, global_batch=1000)


# ------------------------------------------------- published numbers read back by hand
def _case(label: str) -> published.Case:
    every, _ = published.cases()
    return next(c for c in every if c.label == label)


def test_a_tflops_by_eq3_row_reads_back_as_seconds_per_iteration_by_hand():
    """Narayanan et al. 2021, Table 1: the 1T model (l = 128, h = 25,600, V = 51,200,
    s = 2,048) at a batch of 3,072 on 3,072 GPUs, 163 TFLOP/s per GPU. Their Eq. 3 counts
    F = 96 B s l h² (1 + s/6h + V/16lh) FLOPs an iteration, so one iteration takes
    F / (163 × 10^12 × 3,072) = 102.63 s."""
    case = _case("megatron-1t on 3,072 GPUs")
    m = case.model
    assert (m.n_layers, m.hidden, m.vocab, m.seq_len) == (128, 25600, 51200, 2048)
    B, s, n, l, h, V = 3072, 2048, 3072, 128, 25600, 51200
    flops = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert validation._printed_step_s(case) == pytest.approx(flops / (163e12 * n), rel=1e-12)
    assert validation._printed_step_s(case) == pytest.approx(102.63, abs=0.005)


def test_a_model_flops_row_reads_back_as_about_6n_flops_a_token():
    """Llama 3 405B (Dubey et al. 2024, Table 4): 400 TFLOP/s per GPU on 16,384 GPUs, batches
    of 2,048 sequences of 8,192 tokens. Read back as a step, the FLOPs per token it implies,
    step × 400e12 × 16,384 / (2,048 × 8,192), are 6N (N = 405.9 billion, Kaplan et al.'s
    count) plus attention's 12 l h s = 12 × 126 × 16,384 × 8,192 = 0.2 × 10^15: between 6N
    and 1.2 × 6N."""
    case = _case("405B, 8K context, 16,384 GPUs")
    step = validation._printed_step_s(case)
    per_token = step * 400e12 * 16384 / (2048 * 8192)
    six_n = 6 * 405.9e9
    assert six_n < per_token < 1.2 * six_n
    attention = 12 * 126 * 16384 * 8192
    assert per_token - six_n == pytest.approx(attention, rel=0.25)


def test_the_constant_mfu_baseline_is_the_grid_minimum_of_a_plain_loop():
    """The baseline's one MFU, searched on 0.200, 0.201, ..., 0.700: the mean over the
    training sources of each source's root-mean-square log error (the planner's objective),
    with each case's step at that MFU taken as its step at peak BF16 over the MFU."""
    every, _ = published.cases()
    by_source: dict[str, list[float]] = {}
    for c in every:
        if c.source in published.TRAINING:
            s = c.plan.seq_len or c.model.seq_len
            peak = (compute.flops_per_token(c.model, s) * c.plan.global_batch * s
                    / (catalog.gpu(c.gpu).bf16_dense_flops * c.plan.n_gpus))
            by_source.setdefault(c.source, []).append(
                math.log(peak / (validation._printed_step_s(c) * c.goodput)))
    best, best_score = None, math.inf
    for k in range(501):
        mfu = 0.2 + k / 1000
        score = sum(math.sqrt(sum((x - math.log(mfu)) ** 2 for x in xs) / len(xs))
                    for xs in by_source.values()) / len(by_source)
        if score < best_score - 1e-15:
            best, best_score = mfu, score
    assert set(by_source) == set(published.TRAINING)
    assert 0.2 < best < 0.7  # an interior minimum
    assert validation.fit_baseline() == pytest.approx(best, abs=1e-12)


def test_zero3_falls_and_ptd_p_holds_as_gpus_grow_at_a_fixed_batch():
    """Narayanan et al. 2021, Table 2: TFLOP/s per GPU at a fixed global batch. ZeRO-3
    (DeepSpeed) 175B: 144, 88, 44 on 384, 768, 1,536 GPUs; 530B: 138, 98, 48 on 640, 1,120,
    2,240. PTD-P 175B: 153, 149, 141; 530B: 171, 167, 159 on 560, 1,120, 2,240. The predicted
    series keep the trend: ZeRO-3 loses more than half from its smallest to its largest count,
    PTD-P less than a tenth."""
    series = validation.scaling_series()
    paper = {
        "korthikanti-175b, deepspeed-2021": ([384, 768, 1536], [144, 88, 44]),
        "megatron-529.6b, deepspeed-2021": ([640, 1120, 2240], [138, 98, 48]),
        "korthikanti-175b, megatron-lm-2021": ([384, 768, 1536], [153, 149, 141]),
        "megatron-529.6b, megatron-lm-2021": ([560, 1120, 2240], [171, 167, 159]),
    }
    assert set(series) == set(paper)
    for key, (gpus, tflops) in paper.items():
        assert series[key]["gpus"].tolist() == gpus
        assert series[key]["published"].tolist() == tflops
        first, last = series[key]["predicted"][[0, -1]]
        if "deepspeed" in key:
            assert last / first < 0.5
        else:
            assert 0.9 < last / first < 1.0


def _raw(name: str) -> dict:
    """A published source's data file, read directly (not through the library)."""
    path = Path(__file__).resolve().parents[2] / "data" / "published" / f"{name}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_narayanan_table2_runs_become_cases_as_the_paper_names_them():
    """Each ZeRO-3 run of the data file is DeepSpeed at ZeRO stage 3, each PTD-P run
    Megatron-LM; both report TFLOP/s per GPU counted by Eq. 3; each case keeps the file's
    assumptions and published number."""
    raw = _raw("narayanan2021_table2_zero3")["run"]
    got = [c for c in published.cases()[0] if c.source == "narayanan2021_table2_zero3"]
    assert len(got) == len(raw) == 12
    assert sum(r["scheme"] == "zero3" for r in raw) == 6
    for run, case in zip(raw, got, strict=True):
        zero3 = run["scheme"] == "zero3"
        assert case.framework == ("deepspeed-2021" if zero3 else "megatron-lm-2021")
        assert case.plan.zero_stage == (3 if zero3 else run.get("zero_stage", 0))
        assert case.label == (f"{run['model']}, {'ZeRO-3' if zero3 else 'PTD-P'} on "
                              f"{run['gpus']:,} GPUs")
        assert case.quantity == "TFLOP/s per GPU (Eq. 3)"
        assert case.assumed == tuple(run["assumed"]) and case.assumed
        assert case.published == run["achieved_tflops_per_gpu"]


def test_megascale_rows_left_out_say_why():
    """MegaScale's own rows (its model differs: parallel block, sliding-window attention) and
    the Megatron-LM rows without an iteration time are left out, each with its reason."""
    raw = _raw("megascale_table2")["run"]
    own = [r for r in raw if r["method"] != "megatron-lm"]
    no_time = [r for r in raw if r["method"] == "megatron-lm" and "seconds_per_iteration" not in r]
    left = [s for s in published.cases()[1] if s.startswith("MegaScale 2024")]
    assert own and no_time and len(left) == len(own) + len(no_time)
    assert sum(s.endswith("MegaScale's own model (parallel block, sliding-window attention)")
               for s in left) == len(own)
    assert sum(s.endswith("no iteration time") for s in left) == len(no_time)


def test_the_baseline_scales_times_and_costs_with_the_step_and_rates_against_it():
    """Halving the constant MFU doubles every step: an iteration time and a GPU-hours cost
    double, a throughput (TFLOP/s, tokens/s) halves."""
    every, _ = published.cases()
    picks = {q: next(c for c in every if c.quantity == q) for q in (
        "s/iteration", "H800 GPU-hours per 10^12 tokens", "tokens/s per GPU",
        "TFLOP/s per GPU (Eq. 3)")}
    for quantity, case in picks.items():
        slow, fast = (validation.baseline_rows(mfu, [case])[0].predicted for mfu in (0.2, 0.4))
        ratio = 2.0 if quantity in ("s/iteration", "H800 GPU-hours per 10^12 tokens") else 0.5
        assert slow / fast == pytest.approx(ratio, rel=1e-12), quantity


def test_the_sources_layouts_reach_their_cases():
    """Stated in the sources: MegaScale's GPUs each have one 200 Gb/s NIC (25 GB/s), 8 a
    server (p. 10); DeepSeek-V3 ran 16-way pipeline, 64-way expert and ZeRO-1 data
    parallelism, no tensor parallelism, on 2,048 H800s (Sec. 3.2); Llama 3's Table 4 rows run
    8,192-token sequences without context parallelism and 131,072 with CP 16; Megatron
    Bridge's recipes set the expert-parallel sizes, MTP variants and recompute modules the
    data file copies (``layernorm``, ``moe_act``: the norms and the experts' SwiGLU;
    ``mla_up_proj``: MLA's up-projections)."""
    every, _ = published.cases()
    by = {(c.source, c.label): c for c in every}
    for c in every:
        assert c.model.n_layers > 0 and c.network.gpus_per_node > 0 and c.plan.n_gpus > 0
    for c in (c for c in every if c.source == "megascale_table2"):
        assert c.network.inter.gbytes_s == 25 and c.network.gpus_per_node == 8
    ds = next(c for c in every if c.source == "deepseek_v3")
    assert (ds.plan.n_gpus, ds.plan.tp, ds.plan.pp, ds.plan.ep, ds.plan.zero_stage) == (
        2048, 1, 16, 64, 1)
    llama = [c for c in every if c.source == "llama3_table4"]
    assert [(c.plan.seq_len, c.plan.cp) for c in llama] == [(8192, 1), (8192, 1), (131072, 16)]
    bridge = "megatron_bridge_perf_2511"
    for label, ep, mtp, kinds in [
        ("deepseek-v3 on 256 × GB200", 64, 0, ("mla_up_projections",)),
        ("deepseek-v3 FP8-MX on 256 × B200", 8, 1, ("mla_up_projections",)),
        ("gpt-oss-120b on 64 × GB200", 64, 0, ("norms", "moe_swiglu")),
        ("qwen3-235b-a22b on 256 × GB200", 32, 0, ()),
    ]:
        c = by[(bridge, label)]
        assert (c.plan.ep, c.model.mtp_layers, c.framework.recompute_kinds) == (ep, mtp, kinds)


def test_deepseek_v3s_gpu_hours_are_the_steady_state_over_the_goodput():
    """The report's 180K H800 GPU-hours per trillion tokens is a whole-run figure: the planner's
    steady-state step, 2,048 GPUs × step / 3,600 s per 15,360 × 4,096 tokens, scaled to 10^12
    tokens, is divided by the goodput (below 1: failures and checkpoints cost time)."""
    ds = next(c for c in published.cases()[0] if c.source == "deepseek_v3")
    r = plan.evaluate(ds.model, ds.gpu, ds.plan, ds.network, framework=ds.framework,
                      recipe=ds.recipe)
    steady = 2048 * r.step_s / 3600 * 1e12 / (15360 * 4096)
    assert 0.95 < ds.goodput < 1.0
    assert ds.predict(r) == pytest.approx(steady / ds.goodput, rel=1e-12)


def test_the_validation_table_of_given_rows_by_hand():
    """Two tables of made-up rows: each under its title and quantity, the columns right-aligned
    (published and predicted to two decimals, the error signed to one), then each table's mean
    and worst |error|: (10 + 5) / 2 = 7.5 % and 10 %; 0 % for the exact row."""
    row = validation.ValidationRow
    rows = [row("Paper A, Table 1", "x on 8 GPUs", "s/iteration", 10.0, 11.0),
            row("Paper B", "z", "tokens/s per GPU", 100.0, 100.0),
            row("Paper A, Table 1", "y", "s/iteration", 20.0, 19.0)]
    head = "  case" + " " * 10 + "published" + " " * 3 + "predicted" + " " * 4 + "error"
    assert plan.validation_table(rows).splitlines() == [
        "Paper A, Table 1  (s/iteration)",
        head,
        "  x on 8 GPUs" + " " * 7 + "10.00" + " " * 7 + "11.00" + " " * 3 + "+10.0%",
        "  y" + " " * 17 + "20.00" + " " * 7 + "19.00" + " " * 4 + "-5.0%",
        "  mean |error| 7.5%, worst 10.0% over 2 cases",
        "",
        "Paper B  (tokens/s per GPU)",
        head,
        "  z" + " " * 16 + "100.00" + " " * 6 + "100.00" + " " * 4 + "+0.0%",
        "  mean |error| 0.0%, worst 0.0% over 1 cases",
    ]


def test_the_full_table_names_its_summary_rows_and_groups_what_it_left_out(cv):
    """The summary rows of the cross-validation, each by its label; the runs the planner cannot
    represent counted by source and reason: MegaScale's own method's rows (the data file's
    rows with ``method = "megascale"``) under one line."""
    text = plan.validation_table()
    for label in ("all fitted", "all held out", "held out, dense 16-bit",
                  "held out, MoE / FP8 / CP", "all left out"):
        assert any(line.startswith(f"  {label}  ") for line in text.splitlines()), label
    own = sum(r["method"] == "megascale" for r in _raw("megascale_table2")["run"])
    assert own == 11
    assert (f"  {own:>3} × MegaScale 2024, Table 2 (Megatron-LM rows): MegaScale's own model "
            "(parallel block, sliding-window attention)") in text.splitlines()


def test_each_fitting_round_moves_on_from_where_the_last_stopped():
    """Coordinate descent from a corner of the grid (the lowest GEMM efficiency and half-size)
    on Korthikanti et al.'s rows: while a round moves a number, the next round can improve on
    it, so one, two and three rounds score strictly better each; the default is three."""
    from dataclasses import replace

    corner = replace(plan.DEFAULT_CALIBRATION, gemm_efficiency=validation.GRID[
        "gemm_efficiency"][0], gemm_half_dim=validation.GRID["gemm_half_dim"][0])
    src = ["korthikanti_table5"]
    one, two, three = (validation.fit_calibration(src, start=corner, rounds=r)
                       for r in (1, 2, 3))
    assert one[1] > two[1] > three[1]
    assert validation.fit_calibration(src, start=corner) == three


def test_log_step_errors_are_of_the_step_whatever_the_quantity():
    """log(predicted step / published step): a time or a cost 10 % above the published one is
    a step 10 % too long; a throughput 10 % above it is a step 1/1.1 as long."""
    row = validation.ValidationRow
    errs = validation._log_step_errors([
        row("t", "a", "s/iteration", 10.0, 11.0, source="x"),
        row("t", "b", "H800 GPU-hours per 10^12 tokens", 10.0, 11.0, source="x"),
        row("t", "c", "tokens/s per GPU", 10.0, 11.0, source="x")])
    assert errs["x"].tolist() == pytest.approx([math.log(1.1), math.log(1.1), -math.log(1.1)],
                                               rel=1e-12)
