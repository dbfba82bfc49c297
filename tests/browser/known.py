"""What each explorer must show after a move, worked out here without the library.

Every value below is a published number (a paper's table, a datasheet, a study's count) or a
hand calculation written out from them, formatted the way the explorer prints it
(:mod:`scaleout.formatting`, or the explorer's own f-string where it uses one). The library is
never called to get an expected number: a test that asked the library for its own answer
could not fail when the library is wrong.

Figures used again and again:

* GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, h = 12,288, vocabulary 50,257,
  2,048 learned positions. Parameters by Narayanan et al. 2021 (arXiv 2104.04473) Sec. 5.1,
  P = 12lh²(1 + 13/(12h) + (V + s)/(12lh)), plus the final layer norm's 2h that the formula
  leaves out: :data:`GPT3_PARAMS`.
* GPT-2 XL (Radford et al. 2019, Table 2): 48 layers, d = 1,600, vocabulary 50,257, 1,024
  positions; the released checkpoint holds 1,557,611,200 parameters.
* Links (datasheets, as ``data/links.toml`` cites them): NVLink 4, 450 GB/s per direction,
  α = 0.5 µs; InfiniBand NDR, 400 Gb/s = 50 GB/s, α = 1 µs; RoCE v2 400GbE, 50 GB/s,
  α = 2 µs.
* Ring collectives (Patarasuk & Yuan 2009; Thakur et al. 2005) on n GPUs of a link of
  bandwidth B and latency α: all-reduce 2(n−1)/n·S/B + 2(n−1)α; reduce-scatter and
  all-gather (n−1)/n·S/B + (n−1)α each.
"""

from __future__ import annotations

import math

from scaleout import formatting as fmt

from .pages import Chart, Known, value_at

GIB = 2**30
MIB = 2**20

# =========================================================================== published figures
#: GPT-3 175B's parameters by Narayanan et al. 2021, Sec. 5.1 (l = 96, h = 12,288, V = 50,257,
#: s = 2,048), 12lh² + 13lh + (V + s)h, and the final layer norm's 2h: 174,604,259,328.
GPT3_PARAMS = 12 * 96 * 12288**2 + 13 * 96 * 12288 + (50257 + 2048) * 12288 + 2 * 12288
GPT2_XL_PARAMS = 1_557_611_200
#: Llama 3: 419 unexpected interruptions in 54 days of pre-training on 16,384 H100s
#: (Llama Team 2024, arXiv 2407.21783, Sec. 3.3.4 and Table 5).
LLAMA3_INTERRUPTIONS, LLAMA3_DAYS, LLAMA3_GPUS = 419, 54, 16384
#: Llama 3's checkpoint storage: "a sustainable throughput of 2 TB/s" (Sec. 3.3.1).
LLAMA3_STORAGE_BYTES_S = 2e12
#: NVLink 4 and the two 400 Gb/s network ports (datasheets; data/links.toml).
NVLINK4_B, NVLINK4_ALPHA = 450e9, 0.5e-6
NDR_B, NDR_ALPHA = 50e9, 1e-6
ROCE_B, ROCE_ALPHA = 50e9, 2e-6


def ring_all_reduce_s(size_bytes: float, n: int, bandwidth: float, alpha: float) -> float:
    """2(n−1)/n·S/B + 2(n−1)α."""
    return 2 * (n - 1) / n * size_bytes / bandwidth + 2 * (n - 1) * alpha


def ring_half_s(size_bytes: float, n: int, bandwidth: float, alpha: float) -> float:
    """A ring reduce-scatter or all-gather: (n−1)/n·S/B + (n−1)α."""
    return (n - 1) / n * size_bytes / bandwidth + (n - 1) * alpha


def two_level_all_reduce_s(size_bytes: float, nodes: int, inter_b: float,
                           inter_alpha: float) -> float:
    """Reduce-scatter over a node's 8 NVLink-4 GPUs, all-reduce of the 1/8 shards across the
    nodes (one rail per GPU), all-gather in the node (Thakur et al. 2005; NCCL's tree of rings)."""
    inside = ring_half_s(size_bytes, 8, NVLINK4_B, NVLINK4_ALPHA)
    return 2 * inside + ring_all_reduce_s(size_bytes / 8, nodes, inter_b, inter_alpha)


# =========================================================================== 00: glossary
def _one_match_in_07(chart: Chart) -> None:
    _equal(chart.bar_total("07 all-reduce"), "1", "07's bar")
    _equal(chart.bar_total("03 data par."), "0", "03's bar")


GLOSSARY_ALL_REDUCE = Known(
    "the glossary: the Korean term for the all-reduce is 올 리듀스, and the walk teaches it in "
    "notebook 07 (README, 'The walk'); one term matches, in that notebook only",
    rows=(("all-reduce", "올 리듀스", None, "07 all-reduce (available)"),),
    figure=("in a written notebook: 1",), check=_one_match_in_07)


# =========================================================================== 01: scale-up limits
def _holding(model: str, params: float, gpus_for_weights: int, label: str) -> Known:
    """18 bytes per parameter (Megatron-LM's distributed-optimizer docs: bf16 weights 2, fp32
    gradients 4, fp32 master weights, momentum and variance 12) on 80 GiB A100s."""
    state = 18 * params
    gpus = math.ceil(state / (80 * GIB))
    return Known(
        f"{label}: 18 bytes per parameter (Megatron-LM's bf16 recipe) = {state:.4g} bytes, on "
        f"A100s of 80 GiB (datasheet) that is ⌈{state / (80 * GIB):.2f}⌉ = {gpus} GPUs",
        rows=(("bytes per parameter", "2", "18"),
              ("decimal (GB = 10⁹ bytes)", fmt.bytes_si(2 * params), fmt.bytes_si(state)),
              ("GPUs of 80 GiB to hold it", str(gpus_for_weights), str(gpus))),
        figure=(f"{model} on A100-SXM4-80GB: weights need {gpus_for_weights} GPUs, training "
                f"state {gpus}", f"gradients: {fmt.sig(4 * params / GIB)}"))


#: GPT-3 has 175 billion parameters (Brown et al. 2020, Table 2.1)
SCALE_UP_BF16_GPT3 = _holding("gpt3-175b", 175e9, 5, "GPT-3's 175 B parameters (Table 2.1)")
#: Llama 3.1 70B has 70.6 billion (Meta's model card)
SCALE_UP_BF16_LLAMA70 = _holding("llama3-70b", 70.6e9, 2,
                                 "Llama 3.1 70B's 70.6 B parameters (model card)")


# =========================================================================== 02: memory
def memory_micro_batch(b: int) -> Known:
    """GPT-3 with t = 8, p = 8, sequence parallelism and selective recomputation (notebook 02's
    defaults): Korthikanti et al. 2022 Table 2 keeps 34·s·b·h/t bytes per layer, and under 1F1B
    the first stage holds p micro-batches of its l/p layers, so l layers' worth."""
    act = 34 * 2048 * b * 12288 * 96 / 8
    # the first stage: l/p = 12 layers of 12h² + 13h parameters and the (V + s)·h embeddings,
    # split t = 8 ways (Narayanan et al. 2021, Sec. 5.1's count, stage by stage)
    per_gpu = (12 * (12 * 12288**2 + 13 * 12288) + (50257 + 2048) * 12288) / 8
    return Known(
        f"Korthikanti et al. Table 2 (TP + SP + selective): 34·s·b·h·l/t = 34 × 2,048 × {b} × "
        "12,288 × 96 / 8 bytes; parameters per GPU: the first stage's 12 layers and embeddings "
        "over t = 8",
        rows=(("activations", fmt.bytes_iec(act)),
              ("parameters per GPU", fmt.large_count(per_gpu, 4)),
              ("in flight", "8 micro-batches")),
        figure=(f"activations: {fmt.sig(act / GIB)}", f"weights: {fmt.sig(2 * per_gpu / GIB)}"))


# =========================================================================== 03: data parallel
def dp_one_bucket(n_gpus: int, link: str, inter_b: float, inter_alpha: float) -> Known:
    """GPT-2 XL's fp16 gradients in one 6,400 MiB bucket: one two-level all-reduce, all of it
    after the backward pass (nothing left to overlap), against PaLM's 6N + 12·l·h·s FLOPs per
    token for 8 sequences of 1,024 tokens at 400 TFLOP/s."""
    grads = 2 * GPT2_XL_PARAMS
    comm = two_level_all_reduce_s(grads, n_gpus // 8, inter_b, inter_alpha)
    compute = (6 * GPT2_XL_PARAMS + 12 * 48 * 1600 * 1024) * 8 * 1024 / 400e12
    eff = compute / (compute + comm)
    return Known(
        f"{fmt.bytes_si(grads)} of gradients (2 B × 1,557,611,200) all-reduced over "
        f"{n_gpus:,} GPUs: ring reduce-scatter and all-gather on 8 NVLink-4 GPUs, ring "
        f"all-reduce of S/8 over {n_gpus // 8} nodes on {link}; compute by PaLM's FLOPs",
        rows=(("gradients per GPU", fmt.bytes_si(grads)), ("buckets", "1"),
              ("all-reduce per bucket", fmt.duration(comm)),
              ("compute (forward + backward)", fmt.duration(compute)),
              ("exposed communication", fmt.duration(comm)),
              ("scaling efficiency", fmt.percent(eff))),
        figure=(f"{link}: {fmt.sig(100 * eff)}",
                f"{fmt.plural(n_gpus, 'GPU')}: {fmt.percent(eff)}"))


DP_ONE_BUCKET_NDR = dp_one_bucket(1024, "InfiniBand NDR", NDR_B, NDR_ALPHA)
DP_ONE_BUCKET_ROCE_4096 = dp_one_bucket(4096, "RoCE v2 400GbE", ROCE_B, ROCE_ALPHA)


# =========================================================================== 04: tensor parallel
def _tp_layer(t: int, crosses: bool) -> Known:
    """Megatron's four all-reduces of b·s·h per layer (two forward, two backward; Shoeybi et al.
    2019, Sec. 3) for GPT-3 at b = 1, s = 2,048, in 2-byte elements, as rings on NVLink 4
    inside an 8-GPU node (two-level across nodes beyond it)."""
    size = 1 * 2048 * 12288 * 2
    if crosses:
        one = two_level_all_reduce_s(size, t // 8, NDR_B, NDR_ALPHA)
    else:
        one = ring_all_reduce_s(size, t, NVLINK4_B, NVLINK4_ALPHA)
    comm = 4 * one
    where = "InfiniBand NDR" if crosses else "NVLink 4"
    key = "comm over the network" if crosses else "comm over NVLink"
    return Known(
        f"four ring all-reduces of b·s·h = {size:,} bytes at t = {t} on {where}: "
        f"4 × {one * 1e6:.1f} µs; each GPU sends 4 × 2(t−1)/t × S",
        rows=(("all-reduce size (b·s·h · 2 B)", fmt.bytes_iec(size)),
              ("sent per GPU per layer", fmt.bytes_iec(4 * 2 * (t - 1) / t * size)),
              ("collectives", "4 all-reduce"), ("runs over", where),
              ("communication", fmt.duration(comm))),
        figure=(f"{key}: {fmt.sig(comm * 1e3)}",))


TP_2 = _tp_layer(2, crosses=False)
TP_16 = _tp_layer(16, crosses=True)


# =========================================================================== 05: pipeline
def pipeline_1f1b(p: int, m: int, forward_ms: float = 1.0) -> Known:
    """1F1B with a backward twice the forward: the iteration is (m + p − 1) passes of
    forward + backward, the bubble (p − 1)/m of the ideal (Narayanan et al. 2021, Sec. 2.2),
    one bar per forward and per backward of every micro-batch on every stage: 2pm bars."""
    f, b = forward_ms * 1e-3, 2 * forward_ms * 1e-3
    return Known(
        f"1F1B, p = {p}, m = {m}: ({m} + {p} − 1) × {3 * forward_ms:g} ms per iteration, "
        f"bubble ({p} − 1)/{m}, {2 * p * m} passes",
        rows=(("passes", fmt.count(2 * p * m)),
              ("iteration", fmt.duration((m + p - 1) * (f + b))),
              ("ideal (no bubble)", fmt.duration(m * (f + b))),
              ("bubble, simulated", fmt.percent((p - 1) / m)),
              ("bubble, formula", fmt.percent((p - 1) / m)),
              ("in flight, first stage", f"{p} micro-batches")),
        figure=(f"1F1B: p={p} stages, m={m} micro-batches",),
        check=lambda c: _equal(c.bar_count(), 2 * p * m, "bars in the Gantt chart"))


#: the interleaved schedule's bubble, (p − 1)/(v·m) (Narayanan et al. 2021, Sec. 2.2.2)
PIPELINE_INTERLEAVED = Known(
    "interleaved 1F1B, p = 8, m = 16, v = 2: bubble (p − 1)/(v·m) = 7/32",
    rows=(("bubble, formula", fmt.percent(7 / 32)), ("bubble, simulated", fmt.percent(7 / 32))),
    figure=("interleaved 1F1B, v=2: p=8 stages, m=16 micro-batches",))


# =========================================================================== 06: ZeRO
def zero_stage(stage: int, dp: int) -> Known:
    """ZeRO (Rajbhandari et al. 2020) for GPT-3 on N_d GPUs: Sec. 5's model state per GPU
    (weights 2Ψ, 2Ψ/N_d at stage 3; optimizer state 12Ψ/N_d from stage 1), and Sec. 7's
    traffic: 2Ψ elements per step (a reduce-scatter and an all-gather, as an all-reduce),
    3Ψ at stage 3; each ring sends (N_d − 1)/N_d of them, in 2-byte elements."""
    psi = GPT3_PARAMS
    elements = 3 if stage == 3 else 2
    sent = elements * psi * 2 * (dp - 1) / dp
    opt = 12 * psi / dp / GIB
    return Known(
        f"ZeRO Sec. 5 and 7 with Ψ = {psi:,} (Narayanan's count of GPT-3), N_d = {dp}: "
        f"optimizer state 12Ψ/N_d = {opt:.2f} GiB, traffic {elements}Ψ elements × 2 B × "
        f"(N_d − 1)/N_d",
        rows=(("parameters Ψ", fmt.large_count(psi, 4)),
              ("traffic per GPU per step", f"{elements}Ψ elements, {fmt.bytes_si(sent)}")),
        figure=(f"optimizer state: {fmt.sig(opt)}",
                f"weights: {fmt.sig(2 * psi / dp / GIB)}",  # ZeRO-3's row: 2Ψ/N_d
                f"weights: {fmt.sig(2 * psi / GIB)}"))  # the other rows: 2Ψ


# =========================================================================== 07: collectives
def ring_all_reduce_at(size: float, link: str, b: float, alpha: float, n: int = 1000) -> Known:
    """A ring all-reduce on n GPUs of a catalog link; nccl-tests' bus bandwidth is the algorithm
    bandwidth S/t times 2(n−1)/n (NVIDIA nccl-tests, doc/PERFORMANCE.md)."""
    t = ring_all_reduce_s(size, n, b, alpha)
    busbw = size / t * 2 * (n - 1) / n
    return Known(
        f"ring all-reduce of {fmt.bytes_iec(size)} on {n:,} GPUs of {link} (B = {b / 1e9:g} GB/s, "
        f"α = {alpha * 1e6:g} µs): 2(n−1)/n·S/B + 2(n−1)α = {t * 1e3:.3f} ms; busbw = S/t·2(n−1)/n",
        rows=(("ring", fmt.duration(t), fmt.byte_rate(busbw)),),
        readout=(f"of {fmt.bytes_iec(size)} on {n:,} GPUs; link α = {fmt.duration(alpha)}, "
                 f"B = {fmt.byte_rate(b)} per direction",),
        figure=(f"ring: {fmt.sig(t)}", f"ring: {fmt.sig(busbw / 1e9)}", fmt.bytes_iec(size)))


ALL_REDUCE_64MIB_NDR = ring_all_reduce_at(2**26, "InfiniBand NDR", NDR_B, NDR_ALPHA)
ALL_REDUCE_64MIB_ROCE = ring_all_reduce_at(2**26, "RoCE v2 400GbE", ROCE_B, ROCE_ALPHA)


def broadcast_bound(size: float, link: str) -> Known:
    """Every GPU must receive the S bytes once, over a link of B = 50 GB/s: no broadcast is
    faster than S/B."""
    return Known(f"broadcast of {fmt.bytes_iec(size)}: S/B = {size / 50e9 * 1e3:.3f} ms",
                 readout=(f"Bandwidth lower bound: {fmt.duration(size / 50e9)}.",),
                 figure=(f"Time: broadcast, n = 1,000, {link}",))


# =========================================================================== 08: planner
#: H200's 141 GB of HBM3e (NVIDIA H200 datasheet, 2024), counted as GiB like the catalog's
#: other "80 GB" GPUs
PLANNER_H200 = Known(
    "H200 datasheet: 141 GB of HBM3e per GPU, the planner's capacity",
    readout=("valid plans fit in 141 GiB",),
    figure=("megatron-1t on 3,072 × H200-SXM-141GB: memory of the best plans", "HBM 141 GiB"))


# =========================================================================== 09: Clos fabric
def clos_planes(planes: int, n: int = 32768, k: int = 64, port_gbps: int = 400) -> Known:
    """A three-tier folded Clos of radix k (Al-Fares et al. 2008): k²/2 = 2,048 < N ≤ k³/4 =
    65,536 GPUs; per plane N/(k/2) leaves, N/(k/2) spines and N/k cores, N links per tier,
    optical links above the leaves with a module at each end; bisection N·port/2 per
    direction, per plane."""
    leaf, spine, core = n // (k // 2), n // (k // 2), n // k
    switches = planes * (leaf + spine + core)
    nic = fmt.bit_rate(planes * port_gbps * 1e9)
    return Known(
        f"Clos of radix {k} for {n:,} GPUs × {planes} planes: {switches:,} switches, "
        f"{planes * n:,} links per tier, {2 * 2 * planes * n:,} transceivers",
        rows=(("GPUs / most these tiers serve", f"{n:,} / {k**3 // 4:,}"),
              ("NIC", f"{planes} × {port_gbps}G = {nic}"),
              ("switches leaf / spine / core",
               f"{planes * leaf:,} / {planes * spine:,} / {planes * core:,}"),
              ("switches, all", f"{switches:,}"),
              ("links endpoint-leaf / leaf-spine / spine-core",
               " / ".join([f"{planes * n:,}"] * 3)),
              ("transceivers (optical links × 2)", f"{2 * 2 * planes * n:,}"),
              ("bisection, per direction", fmt.bit_rate(n * planes * port_gbps * 1e9 / 2, 4))),
        figure=(f"tier 1 (leaf): {planes * leaf:,}", f"tier 3 (core): {planes * core:,}",
                f"switches: {switches:,}", f"transceivers: {2 * 2 * planes * n:,}"))


def incast(senders: int) -> Known:
    """Each of the senders sends 2 MB to one 400 Gb/s port: the port needs senders × 2 MB × 8 /
    400 Gb/s at the least; the 32 MB victim flow needs 32 MB × 8 / 400 Gb/s, and receiver
    credits leave it untouched (its line reaches 32 MB at that time)."""
    ideal = senders * 2e6 * 8 / 400e9
    victim = 32e6 * 8 / 400e9

    def victim_line(chart: Chart) -> None:
        pts = chart.line("receiver credits", part=1)
        done = next(x for x, y in pts if y >= 32 * 0.999)
        assert math.isclose(done, victim * 1e6, rel_tol=0.02), (
            f"the victim under credits finishes at {done:.0f} µs on the chart, not "
            f"{victim * 1e6:.0f} µs")

    return Known(
        f"{senders} × 2 MB through one 400 Gb/s port: {ideal * 1e6:.0f} µs; the 32 MB victim: "
        f"{victim * 1e6:.0f} µs",
        readout=(f"Ideal: incast {ideal * 1e6:,.0f} µs (the port busy all along), victim "
                 f"{victim * 1e6:,.0f} µs.",),
        figure=(f"{senders} senders × 2 MB to one 400G port: its queue (PFC pauses at 1,000 KB)",),
        check=victim_line, explorer=".so-explorer-incast")


# =========================================================================== 10: optics
def optics_800g(choice: str, label: str, watts: float, source: str) -> Known:
    """32,768 GPUs at 800G on Tomahawk 6 (102.4 Tb/s: radix 128): k²/2 = 8,192 < N, so three
    tiers of N links each; GPU–leaf at 3 m on passive copper (0 W), leaf–spine and spine–core
    optical, a module at each end (2 × 2 × 32,768), 16 fibres per 800G DR8/SR8 link
    (8 lanes, IEEE 802.3df)."""
    modules = 2 * 2 * 32768
    power = modules * watts
    return Known(
        f"{modules:,} module ends × {watts:g} W ({source}) = {power / 1e6:.3f} MW",
        rows=((f"★ {label}", f"{modules:,}", f"{32768:,}", f"{2 * 32768 * 16:,}",
               fmt.power(power)),),
        readout=("on radix-128 switches (3 tiers, 1,280 switches, 98,304 links of 800G)",),
        figure=(f"{choice}: {fmt.sig(power / 1e3)}" if choice != "auto" else
                f"LPO: {fmt.sig(power / 1e3)}",
                f"leaf-spine: {fmt.sig(power / 2e3)}"))


OPTICS_DSP = optics_800g("DSP", "DSP", 15, "NVIDIA MMA4Z00-NS 800G SR8 spec and the DR8's 15 W")
OPTICS_AUTO = optics_800g("auto", "auto (cheapest that reaches)", 6,
                          "800G LPO DR8, 500 m reach covers the 500 m spine-core run")


# =========================================================================== 11: checkpoints
#: Llama 3 405B (arXiv 2407.21783, Table 3): 126 layers of width 16,384 (128 heads of 128,
#: 8 key/value heads), FFN 53,248 (SwiGLU: three matrices), vocabulary 128,256 in and out
#: (untied), two RMSNorms per layer and a final one: 405,853,388,800 parameters
LLAMA3_405B_PARAMS = (126 * (2 * 16384**2 + 2 * 16384 * 8 * 128 + 3 * 16384 * 53248 + 2 * 16384)
                      + 2 * 128256 * 16384 + 16384)


def llama3_mtbf(n_gpus: int) -> Known:
    """Llama 3's 419 interruptions in 54 days on 16,384 GPUs, scaled by the GPU count
    (independent failures: the rate grows as N); its 405B checkpoint at 14 bytes per parameter
    (fp16 weights and the fp32 Adam state) written at 2 TB/s, every GPU its shard."""
    per_day = LLAMA3_INTERRUPTIONS / LLAMA3_DAYS * n_gpus / LLAMA3_GPUS
    mtbf_s = 86400 / per_day
    ckpt = 14 * LLAMA3_405B_PARAMS
    delta = ckpt / LLAMA3_STORAGE_BYTES_S
    return Known(
        f"Llama 3: 419 interruptions in 54 days on 16,384 GPUs → {per_day:.3g} a day on "
        f"{n_gpus:,}; checkpoint 14 B × {LLAMA3_405B_PARAMS:,} at 2 TB/s",
        rows=(("MTBF M", f"{fmt.duration(mtbf_s)} ({fmt.sig(per_day)} failures a day)"),
              ("checkpoint", f"{fmt.bytes_si(ckpt)} ({fmt.bytes_si(ckpt / n_gpus)} per GPU)"),
              ("write time δ", fmt.duration(delta)),
              ("Young √(2δM)", fmt.duration(math.sqrt(2 * delta * mtbf_s)))),
        figure=(f"Goodput: {fmt.plural(n_gpus, 'GPU')}, MTBF {fmt.duration(mtbf_s)}, "
                f"checkpoint write {fmt.duration(delta)}",))


#: a 1 TB checkpoint written at Llama 3's 2 TB/s by 16,384 GPUs, a failure a day
CHECKPOINT_1TB_DAILY = Known(
    "1 TB at 2 TB/s (Llama 3, Sec. 3.3.1): δ = 0.5 s; MTBF 24 h; Young (1974): τ = √(2δM) "
    f"= √(2 × 0.5 × 86,400) = {math.sqrt(2 * 0.5 * 86400):.0f} s",
    rows=(("checkpoint", f"1 TB ({fmt.bytes_si(1e12 / 16384)} per GPU)"),
          ("write time δ", fmt.duration(1e12 / LLAMA3_STORAGE_BYTES_S)),
          ("MTBF M", "24 h (1 failures a day)"),
          ("Young √(2δM)", fmt.duration(math.sqrt(2 * 1e12 / LLAMA3_STORAGE_BYTES_S * 86400)))),
    figure=("Goodput: MTBF 24 h, checkpoint write 500 ms",))


# =========================================================================== 12: synthesis
def domain_design(domain: int) -> Known:
    """1,152 GB200s in domains of the chosen size; failures at Llama 3's rate; the scale-out
    fabric's 1,152 leaf–spine links (30 m) of 400G SR4 modules (9 W: NVIDIA's MMA1Z00-NS400
    specification) with a module at each end, GPU–leaf on 3 m copper; a checkpoint of GPT-3's
    Ψ at 14 bytes (fp16 weights and the fp32 Adam state: 2 + 12)."""
    per_day = LLAMA3_INTERRUPTIONS / LLAMA3_DAYS * 1152 / LLAMA3_GPUS
    label = f"{domain} GPUs/domain"

    def highlighted(chart: Chart) -> None:
        assert chart.bold_texts().count(label) == 2, (
            f"{label!r} should be the highlighted row of both charts: {chart.bold_texts()}")

    return Known(
        f"1,152 / {domain} = {1152 // domain} domains; Llama 3's 419/54 a day × 1,152/16,384 = "
        f"{per_day:.3f} a day; 2,304 × 9 W of 400G SR4 modules; 14 B × GPT-3's parameters",
        rows=(("cluster", f"1,152 × GB200, {domain} per scale-up domain "
                          f"({fmt.plural(1152 // domain, 'domain')})"),
              ("failures", f"{fmt.sig(per_day)} per day (one every "
                           f"{fmt.duration(86400 / per_day)})"),),
        readout=(f"2,304 module ends, {fmt.power(2304 * 9)}",
                 f"{fmt.bytes_si(14 * GPT3_PARAMS)} written in"),
        check=highlighted)


# =========================================================================== 13: experts
#: DeepSeek-V3 (arXiv 2412.19437, Sec. 4.2): 61 layers, the first 3 dense, h = 7,168, 256
#: routed experts of intermediate size 2,048 (three matrices each), top-8
DSV3_EXPERT_PARAMS = 58 * 256 * 3 * 7168 * 2048


def moe_ep(ep: int) -> Known:
    """Experts per GPU E/EP; their state at the fp8-deepseek recipe's 14 bytes per parameter
    (bf16 working weights 2, fp32 gradients 4, fp32 master 4, two bf16 moments 4: Sec. 3.3)."""
    state = DSV3_EXPERT_PARAMS / ep * 14
    return Known(
        f"DeepSeek-V3: 256 experts / EP {ep}; 58 × 256 × 3 × 7,168 × 2,048 expert parameters × "
        f"14 B / {ep}",
        rows=(("experts per GPU", f"{256 // ep:,}"),
              ("expert state, no ZeRO", f"{state / GIB:,.1f} GiB")),
        figure=(f"deepseek-v3 (E=256, k=8), EP {ep}: one MoE layer by scale-up domain size",))


def _inside(chart: Chart, rows: tuple[str, ...]) -> None:
    for row in rows:
        parts = chart.bar_segments(row)
        assert not any(p.startswith("all-to-all across the network") for p in parts), (
            f"row {row!r}: EP 32 fits in the domain, yet the chart sends it over the network: "
            f"{parts}")
        assert any(p.startswith("all-to-all on NVLink") for p in parts), parts


#: EP 32 inside a 72-GPU domain: no byte crosses the network; every token's 8 copies leave the
#: GPU with probability 31/32, each 7,168 FP8 values plus one fp32 scale per 128 (Sec. 3.3)
MOE_EP32_IN_NVL72 = Known(
    "EP 32 ≤ 72: all-to-all on NVLink only; 4,096 tokens × 8 × (7,168 + 4 × 7,168/128) B × 31/32",
    rows=(("network MB / dispatch", "0.0"),
          ("NVLink MB / dispatch", f"{4096 * 8 * (7168 + 4 * 7168 / 128) * 31 / 32 / 1e6:,.1f}")),
    check=lambda c: _inside(c, ("36 GPUs", "72 GPUs")))


# =========================================================================== 14: long context
#: Llama 3 405B's activations per layer in bytes per s·b·h, with FP8 inputs kept for its
#: Linear layers (Transformer Engine, the explorer's fp8-te recipe), selective recomputation
#: and sequence parallelism, by Korthikanti et al. 2022's Sec. 4.1 accounting redone for its
#: shape (8 key/value heads of 128 heads, SwiGLU of width f = 53,248 = 3.25h):
#: outside the TP region, attention and MLP inputs 2 + 2 and two norm outputs at 1 byte (FP8
#: GEMM inputs) 1 + 1 = 6 (Llama 3 trains without dropout: none of the paper's two 1-byte
#: masks); inside, Q at 2 and K, V at 2 × 2 × 8/128 = 2.25, attention's output at 1 byte
#: (FP8) = 1, the MLP's two up-projections and the activation 3 × 2 × 3.25 = 19.5, the
#: down-projection's input at 1 byte 3.25 = 26. All 32 of them are split by t (sequence
#: parallelism outside the region).
LLAMA405_FP8_SBH = (2 + 2 + 1 + 1) + (2 + 2 * 2 * 8 / 128 + 1 + 3 * 2 * 3.25 + 3.25)


def context_activations(seq: int, cp: int) -> Known:
    """Llama 3 405B (126 layers, h = 16,384) at TP 8: :data:`LLAMA405_FP8_SBH` bytes per
    s·h per layer, split t ways, and over cp GPUs by context parallelism; without CP the
    line is cp times higher."""
    per_gpu = LLAMA405_FP8_SBH * seq * 16384 * 126 / (8 * cp) / GIB

    def on_the_line(chart: Chart) -> None:
        for label, want in ((f"CP {cp} (TP 8)", per_gpu), ("CP 1 (TP 8)", per_gpu * cp)):
            got = value_at(chart.line(label), seq)
            assert math.isclose(got, want, rel_tol=0.01), (
                f"the line {label!r} is at {got:.1f} GiB at {seq:,} tokens, not {want:.1f}")

    return Known(
        f"{LLAMA405_FP8_SBH:g} × {seq:,} × 16,384 × 126 / (8 × {cp}) bytes (Korthikanti et "
        f"al.'s accounting for Llama 3 405B with FP8 Linear inputs, TP 8 + SP, over CP {cp})",
        rows=(("activations/GPU", f"{per_gpu:,.1f} GiB"),),
        figure=(f"{seq:,} tokens",), check=on_the_line)


def roofline_h100(fmt_name: str, peak_tflops: float) -> Known:
    """H100 SXM datasheet: BF16 989 and FP8 1,979 TFLOP/s dense (half the sparse figures),
    3.35 TB/s of HBM, NVLink 450 GB/s and a 400 Gb/s port per direction; a ridge point is the
    peak over the channel's bandwidth (Williams et al. 2009)."""
    peak = peak_tflops * 1e12
    ridges = {"hbm": peak / 3.35e12, "scale-up": peak / 450e9, "scale-out": peak / 50e9}

    def plateau(chart: Chart) -> None:
        top = max(y for _x, y in chart.line("HBM"))
        assert math.isclose(top, peak_tflops, rel_tol=0.01), (
            f"the HBM roof flattens at {top:.0f} TFLOP/s, not {peak_tflops:,.0f}")

    return Known(
        f"H100 {fmt_name.upper()} peak {peak_tflops:,.0f} TFLOP/s over 3.35 TB/s, 450 GB/s and "
        f"50 GB/s: ridges {', '.join(f'{r:,.0f}' for r in ridges.values())} FLOP/B",
        rows=(("3 · norms", None, f"{ridges['hbm']:,.0f}", "hbm"),
              ("4 · optimizer", None, f"{ridges['hbm']:,.0f}", "hbm"),
              ("5 · TP all-reduce", None, f"{ridges['scale-up']:,.0f}"),
              ("6 · DP all-reduce", None, f"{ridges['scale-out']:,.0f}")),
        figure=(f"H100-SXM5-80GB, {fmt_name.upper()} peak {peak_tflops:,.0f} TFLOP/s",),
        check=plateau, explorer=1)


# =========================================================================== 15: the lab
#: the lab's GPT (notebook 15's defaults): 2 layers, h = 64, b = 8 sequences of s = 32, fp32
_BSH_BYTES = 8 * 32 * 64 * 4

LAB_TP = Known(
    "Megatron TP: four all-reduces of b·s·h per layer (two forward, two backward), 2 layers, "
    "b·s·h × 4 B = 64 KiB each",
    readout=(f"8 collective instructions, {8 * _BSH_BYTES / 1024:,.1f} KiB per step",),
    figure=(f"all-reduce: {fmt.sig(8 * _BSH_BYTES / 1024)}",))

LAB_SP = Known(
    "sequence parallelism (Korthikanti et al. Sec. 4.2.2): each of TP's 8 all-reduces becomes a "
    "reduce-scatter and an all-gather of b·s·h × 4 B = 64 KiB",
    rows=(("reduce-scatters of b·s·h (one per all-reduce of TP)",
           f"{8 * _BSH_BYTES / 1024:,.1f} KiB (8×)"),
          ("all-gathers of b·s·h (one per all-reduce of TP)",
           f"{8 * _BSH_BYTES / 1024:,.1f} KiB (8×)")),
    figure=(f"reduce-scatter: {fmt.sig(8 * _BSH_BYTES / 1024)}",
            f"all-gather: {fmt.sig(8 * _BSH_BYTES / 1024)}"))


def _equal(got: object, want: object, what: str) -> None:
    assert got == want, f"{what}: {got!r}, expected {want!r}"
