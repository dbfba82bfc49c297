"""Compute: FLOPs of training, MFU and HFU, and training time.

Sources
-------
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on
  GPU Clusters Using Megatron-LM" (arXiv 2104.04473), Sec. 5.1: Eq. 3 (FLOPs
  per iteration) and Eq. 4 (end-to-end training time).
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models" (arXiv 2205.05198), App. A: the model FLOPs per iteration
  without recomputation, ``72 B s l h^2 (1 + s/(6h) + V/(12 l h))``.
* Chowdhery et al. 2022, "PaLM" (arXiv 2204.02311), Appendix B: model FLOPs
  utilisation (MFU) counts ``6N + 12 L H Q T`` FLOPs per token and no
  recomputation; hardware FLOPs utilisation (HFU) counts what the hardware
  actually ran, recomputation included.
* Hoffmann et al. 2022 ("Chinchilla", arXiv 2203.15556) and Kaplan et al.
  2020: training costs about ``6ND`` FLOPs for N parameters and D tokens.

Taught in ``notebooks/01_scale_up_limits.ipynb`` and (MFU) the planner notebook.
"""

from __future__ import annotations

from . import catalog
from .catalog import ModelSpec
from .checks import MAX_SECONDS, check_array, check_bool, check_int, check_positive, int_bound
from .memory import param_count
from .units import SECONDS_PER_DAY

__all__ = [
    "flops_per_token",
    "forward_flops",
    "hfu",
    "megatron_iteration_flops",
    "mfu",
    "training_days",
    "training_flops",
    "training_seconds",
    "utilisation",
]


def forward_flops(tokens, params, n_layers, hidden, seq_len):
    """Forward-pass FLOPs of ``tokens`` tokens: ``tokens (2 params + 4 n_layers hidden seq_len)``.

    PaLM (arXiv 2204.02311), App. B: each parameter costs a multiply and an
    add per token (``2N``); attention's ``Q K^T`` and ``A V`` cost ``4 l h s``
    per token more. The backward pass costs twice the forward (Kaplan et al.
    2020, Sec. 2.1), so a training step is three of these. Array-friendly:
    the planner calls it per layer (``params`` = one layer's, ``n_layers`` = 1)
    and for the output layer (``params = V h``, ``n_layers`` = 0).
    """
    tokens = check_array("tokens", tokens)
    params = check_array("params", params)
    n_layers, hidden, seq_len = (check_array(name, x, maximum=int_bound(name)) for name, x in
                                 (("n_layers", n_layers), ("hidden", hidden),
                                  ("seq_len", seq_len)))
    return tokens * (2 * params + 4 * n_layers * hidden * seq_len)


def utilisation(flops, seconds, n_gpus, peak_flops_per_gpu):
    """Share of peak: ``flops / (seconds n_gpus peak)`` (PaLM App. B's MFU and HFU).

    Array-friendly kernel of :func:`mfu` and :func:`hfu`; which FLOPs are
    counted (the model's alone, or recomputation too) makes it one or the other.
    """
    flops = check_array("flops", flops)
    seconds = check_array("seconds", seconds, allow_zero=False, maximum=MAX_SECONDS)
    n_gpus = check_array("n_gpus", n_gpus, integer=True, minimum=1)
    peak = check_array("peak_flops_per_gpu", peak_flops_per_gpu, allow_zero=False)
    return flops / (seconds * n_gpus * peak)


def flops_per_token(
    model: str | ModelSpec,
    seq_len: int | None = None,
    *,
    attention: bool = True,
    recompute: bool = False,
) -> float:
    """Training FLOPs per token: ``6N + 12 l h s`` (PaLM, arXiv 2204.02311, App. B).

    ``6N`` counts the forward (2N) and backward (4N) matrix multiplies over the
    N parameters (embedding included, as PaLM does); ``12 l h s`` the
    attention scores and their use (``Q K^T`` and ``A V``), which grow with the
    sequence length. With ``recompute=True`` a full extra forward pass is
    added (``8N + 16 l h s``): the hardware FLOPs that HFU counts.
    """
    check_bool("attention", attention)
    check_bool("recompute", recompute)
    m = catalog.model(model)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    passes = 4 if recompute else 3  # forward = 1, backward = 2, recomputed forward = 1
    layers = m.n_layers if attention else 0
    return passes * float(forward_flops(1, param_count(m), layers, m.hidden, s))


def megatron_iteration_flops(
    model: str | ModelSpec,
    global_batch: int,
    seq_len: int | None = None,
    *,
    recompute: bool = True,
) -> float:
    """FLOPs of one training iteration, Megatron-LM Eq. 3 (or its model-FLOPs form).

    ``F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))`` with full activation
    recomputation (Narayanan et al. 2021, arXiv 2104.04473, Sec. 5.1): the layers'
    ``24 B s l h^2 (1 + s/(6h))`` forward FLOPs four times (forward, recomputed
    forward, backward = 2 × forward) and the vocabulary projection's ``2 B s h V``
    three times. This is the count the paper's "achieved teraFLOP/s per GPU" divides
    by the iteration time.

    Without recomputation (``recompute=False``) the layers count three times and the
    projection still three: ``72 B s l h^2 (1 + s/(6h) + V/(12 l h))``, the model
    FLOPs of Korthikanti et al. 2022 (arXiv 2205.05198), App. A.
    """
    check_bool("recompute", recompute)
    m = catalog.model(model)
    B = check_int("global_batch", global_batch)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    l, h, V = m.n_layers, m.hidden, m.vocab
    if recompute:
        return 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    return 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))


def training_flops(params: float, tokens: float) -> float:
    """Total training FLOPs ``6ND`` (Kaplan et al. 2020; Hoffmann et al. 2022, Sec. 3)."""
    check_positive("params", params)
    check_positive("tokens", tokens)
    return 6 * params * tokens


def mfu(
    tokens_per_s: float,
    model: str | ModelSpec,
    n_gpus: int,
    peak_tflops_per_gpu: float,
    seq_len: int | None = None,
) -> float:
    """Model FLOPs utilisation (PaLM, arXiv 2204.02311, App. B).

    Observed tokens per second times the model's FLOPs per token (no
    recomputation), over the cluster's peak FLOP/s.
    """
    check_positive("tokens_per_s", tokens_per_s)
    n_gpus = check_int("n_gpus", n_gpus)
    check_positive("peak_tflops_per_gpu", peak_tflops_per_gpu)
    per_token = flops_per_token(model, seq_len)
    return float(utilisation(tokens_per_s * per_token, 1.0, n_gpus, peak_tflops_per_gpu * 1e12))


def hfu(
    tokens_per_s: float,
    model: str | ModelSpec,
    n_gpus: int,
    peak_tflops_per_gpu: float,
    seq_len: int | None = None,
    *,
    recompute: bool = True,
) -> float:
    """Hardware FLOPs utilisation: as :func:`mfu`, counting recomputed FLOPs too (PaLM App. B)."""
    check_bool("recompute", recompute)
    check_positive("tokens_per_s", tokens_per_s)
    n_gpus = check_int("n_gpus", n_gpus)
    check_positive("peak_tflops_per_gpu", peak_tflops_per_gpu)
    per_token = flops_per_token(model, seq_len, recompute=recompute)
    return float(utilisation(tokens_per_s * per_token, 1.0, n_gpus, peak_tflops_per_gpu * 1e12))


def training_seconds(
    params: float, tokens: float, n_gpus: int, tflops_per_gpu: float, recompute: bool = True
) -> float:
    """End-to-end training time, Megatron-LM Eq. 4: ``8 T P / (n X)`` seconds.

    Narayanan et al. 2021 (arXiv 2104.04473), Sec. 5.1: T tokens, P
    parameters, n GPUs, X achieved FLOP/s per GPU. The 8 is 6 (forward and
    backward) plus 2 (the forward recomputed under full activation
    recomputation); without recomputation it is 6.
    """
    check_bool("recompute", recompute)
    check_positive("params", params)
    check_positive("tokens", tokens)
    n_gpus = check_int("n_gpus", n_gpus)
    check_positive("tflops_per_gpu", tflops_per_gpu)
    factor = 8 if recompute else 6
    return factor * tokens * params / (n_gpus * tflops_per_gpu * 1e12)


def training_days(
    params: float, tokens: float, n_gpus: int, tflops_per_gpu: float, recompute: bool = True
) -> float:
    """Eq. 4 in days: GPT-3 (175e9 params, 300e9 tokens, 1024 A100 at 140 TFLOP/s) ≈ 34 days."""
    return training_seconds(params, tokens, n_gpus, tflops_per_gpu, recompute) / SECONDS_PER_DAY
