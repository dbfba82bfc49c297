"""The roofline: what bounds each part of a training step, compute or bytes.

A piece of work that does ``F`` FLOPs while moving ``Q`` bytes through some channel (HBM,
NVLink, the network port) has an *arithmetic intensity* ``I = F / Q`` FLOPs per byte. The
channel delivers ``B`` bytes per second, the GPU ``P`` FLOP/s, so the work runs no faster
than ``min(P, I·B)``: it is **compute-bound** above the *ridge point* ``I* = P / B`` and
**bandwidth-bound** below it (Williams, Waterman & Patterson 2009, "Roofline: An
Insightful Visual Performance Model for Multicore Architectures", CACM 52(4)). The same
picture holds for communication: a collective that accompanies ``F`` FLOPs of work and
sends ``Q`` bytes over a link is hidden (if overlapped) or small only when ``F/Q`` exceeds
that link's ridge point (the JAX scaling book's "communication rooflines", Austin et al.
2025, Part 1).

This module gives the ridge point of every catalog GPU for HBM and each of its links
(:func:`ridge_points`), the intensity of the parts of a step (:func:`step_parts`), the
critical batch at which they turn compute-bound (:func:`critical_tokens`), and a
sentence saying what bounds a step's breakdown (:func:`bound_by`).

Taught in ``notebooks/14_long_context_and_precision.ipynb``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import catalog, compute, memory
from .catalog import GPU, ModelSpec
from .checks import check_array, check_choice, check_int, check_positive

__all__ = [
    "CHANNELS",
    "Part",
    "adam_traffic_bytes_per_param",
    "attainable_flops",
    "bound_by",
    "critical_tokens",
    "matmul_intensity",
    "ridge_points",
    "step_parts",
]

#: The channels a ridge point is computed for.
CHANNELS = ("hbm", "scale-up", "scale-out")

#: FLOPs per parameter of one Adam step (first and second moment updates, bias correction,
#: the square root and division, the weight update and decay): about a dozen element-wise
#: operations (Kingma & Ba 2015, Algorithm 1).
ADAM_FLOPS_PER_PARAM = 12


def _out(value):
    return float(value) if np.ndim(value) == 0 else value


def adam_traffic_bytes_per_param() -> int:
    """HBM bytes one Adam step moves per parameter: the planner's
    :data:`scaleout.plan.ADAM_TRAFFIC_BYTES_PER_PARAM` (read master, moments and gradient,
    write them back and the 16-bit weight)."""
    from .plan.step import ADAM_TRAFFIC_BYTES_PER_PARAM

    return ADAM_TRAFFIC_BYTES_PER_PARAM


def _peak(g: GPU, fmt: str) -> float:
    if fmt == "fp8":
        if g.fp8_dense_tflops is None:
            raise ValueError(f"gpu {g.name!r} has no FP8 tensor cores; allowed: fmt='bf16'")
        return g.fp8_dense_tflops * 1e12
    return g.bf16_dense_flops


def ridge_points(gpu: str | GPU, fmt: str = "bf16") -> dict[str, float]:
    """FLOPs per byte at which a GPU turns from bandwidth-bound to compute-bound, per channel.

    ``peak FLOP/s ÷ bytes/s`` of its HBM (``hbm_gbytes_s``), its scale-up link
    (``scaleup_gbytes_s``, one direction) and its network port (``scaleout_link``, one
    direction; absent if the catalog records none), at its dense ``fmt`` peak (``"bf16"``
    or ``"fp8"``). An H100 at BF16: 989e12 / 3.35e12 ≈ 295 FLOPs per HBM byte, about
    2,200 per NVLink byte and about 20,000 per byte of a 400 Gb/s port.
    """
    g = catalog.gpu(gpu)
    check_choice("fmt", fmt, ("bf16", "fp8"))
    peak = _peak(g, fmt)
    out = {"hbm": peak / (g.hbm_gbytes_s * 1e9),
           "scale-up": peak / (g.scaleup_gbytes_s * 1e9)}
    if g.scaleout_link is not None:
        out["scale-out"] = peak / catalog.link(g.scaleout_link).bandwidth_bytes_s
    return out


def attainable_flops(intensity, peak_flops: float, bandwidth_bytes_s: float):
    """The roofline: ``min(peak, intensity × bandwidth)`` FLOP/s. Array-friendly."""
    i = check_array("intensity", intensity)
    p = check_positive("peak_flops", peak_flops)
    b = check_positive("bandwidth_bytes_s", bandwidth_bytes_s)
    return _out(np.minimum(p, i * b))


def matmul_intensity(m, k, n, bytes_per_value: float = 2.0):
    """FLOPs per HBM byte of one ``(m × k) @ (k × n)`` product: ``2mkn / (bytes (mk + kn + mn))``.

    Each operand read once and the result written once (a well-tiled kernel's minimum).
    For a Linear layer on ``T`` tokens with weights ``h × f`` and ``T ≪ h, f`` it is about
    ``2T / bytes`` (``T`` in BF16): the tokens per matrix multiply set the intensity.
    Array-friendly.
    """
    m, k, n = (check_array(name, x, minimum=1) for name, x in (("m", m), ("k", k), ("n", n)))
    b = check_positive("bytes_per_value", bytes_per_value, maximum=64)
    return _out(2 * m * k * n / (b * (m * k + k * n + m * n)))


@dataclass(frozen=True)
class Part:
    """One part of a training step on the roofline.

    ``flops`` done per ``bytes`` moved over ``channel`` (``"hbm"``, ``"scale-up"``,
    ``"scale-out"``); ``intensity`` = flops / bytes; ``ridge`` the channel's ridge point;
    ``bound`` ``"compute"`` or the channel.
    """

    name: str
    flops: float
    bytes: float
    channel: str
    ridge: float

    @property
    def intensity(self) -> float:
        """FLOPs per byte."""
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def bound(self) -> str:
        """What limits this part: ``"compute"`` above the ridge, else its channel."""
        return "compute" if self.intensity >= self.ridge else self.channel


def step_parts(model: str | ModelSpec, gpu: str | GPU, *, micro_batch: int = 1,
               seq_len: int | None = None, tp: int = 1, dp: int = 1, ep: int = 1,
               micro_batches: int = 1, gpus_per_node: int | None = None,
               fmt: str = "bf16") -> list[Part]:
    """The parts of one micro-batch's work on one GPU, each with its FLOPs and bytes.

    * ``matmuls``: the Linear layers on ``T = b s`` tokens, ``h × f`` weights split over
      ``tp`` (:func:`matmul_intensity` with the MLP's shapes), HBM;
    * ``attention``: flash attention's two products against reading Q, K, V and writing
      the output once (``~ s/2`` FLOPs per byte causal), HBM;
    * ``norms``: a normalisation reads and writes each value (2 + 2 bytes) for about 5
      FLOPs, HBM;
    * ``optimizer``: Adam's :data:`ADAM_FLOPS_PER_PARAM` FLOPs over
      :func:`adam_traffic_bytes_per_param` bytes per parameter, HBM;
    * ``TP all-reduce``: one layer's FLOPs per GPU against the ``4 × 2(t-1)/t × 2bsh``
      bytes its all-reduces send (Narayanan et al. 2021 Sec. 3.2), scale-up;
    * ``DP all-reduce``: the FLOPs of the ``micro_batches`` micro-batches a step
      accumulates against sending ``2(n-1)/n`` of the 16-bit gradients once, scale-out;
    * ``EP all-to-all`` (a mixture of experts, ``ep > 1``): one MoE layer's FLOPs per GPU
      against its dispatch and combine bytes leaving the node, scale-out.
    """
    m = catalog.model(model)
    g = catalog.gpu(gpu)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    b, tp, dp, ep = (check_int("micro_batch", micro_batch), check_int("tp", tp),
                     check_int("dp", dp), check_int("ep", ep))
    n_mb = check_int("micro_batches", micro_batches)
    ridge = ridge_points(g, fmt)
    gpn = check_int("gpus_per_node", gpus_per_node if gpus_per_node is not None
                    else g.scaleup_domain_gpus)
    T, h = b * s, m.hidden
    f = m.ffn if not m.is_moe else m.expert_ffn_hidden
    parts = []
    # matmuls: the MLP's up-projection, tokens per expert for an MoE layer
    tokens = T if not m.is_moe else T * m.top_k * ep / m.experts
    mm_flops = 2 * tokens * h * f / tp
    mm_bytes = mm_flops / float(matmul_intensity(tokens, h, f / tp))
    parts.append(Part("matmuls", mm_flops, mm_bytes, "hbm", ridge["hbm"]))
    per_token_attn = compute.attention_flops_per_token(m, s, causal=True) / m.n_layers
    a_flops = per_token_attn * T / tp
    a_bytes = 2.0 * T * m.n_heads * (m.qk_head_dim * 2 + m.head_dim * 2) / tp
    parts.append(Part("attention", a_flops, a_bytes, "hbm", ridge["hbm"]))
    parts.append(Part("norms", 5.0 * T * h, 4.0 * T * h, "hbm", ridge["hbm"]))
    parts.append(Part("optimizer", float(ADAM_FLOPS_PER_PARAM),
                      float(adam_traffic_bytes_per_param()), "hbm", ridge["hbm"]))
    layer_flops = 3 * (2 * T * memory.layers_params(m, active=True) / m.n_layers
                       + per_token_attn * T) / tp
    if tp > 1:
        tp_bytes = 4 * 2 * (tp - 1) / tp * 2.0 * T * h
        channel = "scale-up" if tp <= gpn else "scale-out"
        parts.append(Part("TP all-reduce", layer_flops, tp_bytes, channel, ridge[channel]))
    if dp > 1 and "scale-out" in ridge:
        params = memory.param_count(m) / tp
        step_flops = layer_flops * m.n_layers * n_mb
        grad_bytes = 2 * (dp - 1) / dp * params * 2.0
        parts.append(Part("DP all-reduce", step_flops, grad_bytes, "scale-out",
                          ridge["scale-out"]))
    if m.is_moe and ep > 1 and "scale-out" in ridge:
        from .moe import dispatch_copies

        copies = dispatch_copies(m.experts, m.top_k, ep, gpn,
                                 max_nodes_per_token=m.max_nodes_per_token,
                                 dedup_nodes=m.max_nodes_per_token is not None)
        channel = "scale-out" if ep > gpn else "scale-up"
        leaving = copies["network"] if ep > gpn else copies["nvlink"]
        a2a = 4 * T * h * 2.0 * float(leaving)
        parts.append(Part("EP all-to-all", layer_flops, a2a, channel, ridge[channel]))
    return parts


def critical_tokens(model: str | ModelSpec, gpu: str | GPU, *, fmt: str = "bf16",
                    tp: int = 1, dp: int = 2, bytes_per_value: float = 2.0
                    ) -> dict[str, float]:
    """Tokens per GPU at which the step's main parts turn compute-bound.

    * ``"matmuls"``: tokens per matrix multiply ``T`` at which ``matmul_intensity(T, h,
      f/tp)`` with ``bytes_per_value`` operands reaches the HBM ridge (a little above the
      ridge itself in BF16; FP8 doubles the ridge and halves the bytes, so about the same
      ``T`` with ``bytes_per_value=1``);
    * ``"DP all-reduce"``: tokens per GPU per *step* at which the step's ``6 N_active/tp``
      FLOPs per token outweigh sending ``2(n-1)/n`` of the gradients over the network:
      ``T* = ridge × 2(n-1)/n × bytes × P / (6 N_active)`` (this is the per-GPU batch below
      which data parallelism cannot hide, or amortise, its all-reduce; ``P`` = parameters
      per GPU, all experts).
    """
    m = catalog.model(model)
    g = catalog.gpu(gpu)
    tp, dp = check_int("tp", tp), check_int("dp", dp, minimum=2)
    b = check_positive("bytes_per_value", bytes_per_value, maximum=64)
    ridge = ridge_points(g, fmt)
    f = (m.expert_ffn_hidden if m.is_moe else m.ffn) / tp
    h = m.hidden
    # solve 2Thf / (b (Th + hf + Tf)) = ridge for T
    r = ridge["hbm"]
    denom = 2 * h * f - r * b * (h + f)
    mm = r * b * h * f / denom if denom > 0 else float("inf")
    out = {"matmuls": mm}
    if "scale-out" in ridge:
        active = compute.active_params(m) / tp
        params = memory.param_count(m) / tp
        out["DP all-reduce"] = (ridge["scale-out"] * 2 * (dp - 1) / dp * b * params
                                / (6 * active))
    return out


def bound_by(step: Mapping[str, float], kinds: Mapping[str, str] | None = None
             ) -> tuple[str, float, str]:
    """What bounds a step: its largest part, that part's share, and a sentence.

    ``step`` maps part names to seconds (a planner's breakdown, e.g. ``{"forward_s": ...,
    "ep_comm_s": ...}``); ``kinds`` says what each part waits on (``"compute"``,
    ``"HBM"``, ``"NVLink"``, ``"the InfiniBand all-to-all"``, ...; default: the name).
    Returns ``(part, share, sentence)``: ``"bound by the InfiniBand all-to-all (41% of
    the step), not by compute"``.
    """
    if not step:
        raise ValueError("step must name at least one part and its seconds")
    items = {}
    for name, value in step.items():
        items[str(name)] = float(check_array(f"step[{name!r}]", value))
    total = sum(items.values())
    if total <= 0:
        raise ValueError("step's parts must add up to more than 0 seconds")
    name = max(items, key=items.get)
    share = items[name] / total
    kinds = dict(kinds or {})
    kind = kinds.get(name, name)
    computing = [k for k in items if kinds.get(k) == "compute"]
    compute_share = sum(items[k] for k in computing) / total
    if kind == "compute":
        sentence = f"bound by compute ({share:.0%} of the step in {name})"
    elif computing:
        sentence = (f"bound by {kind} ({share:.0%} of the step), not by compute "
                    f"({compute_share:.0%})")
    else:
        sentence = f"bound by {kind} ({share:.0%} of the step)"
    return name, share, sentence
