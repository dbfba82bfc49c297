"""Tensor parallelism: splitting each layer's matrix multiplies over t GPUs, and its traffic.

Megatron-LM's tensor parallelism splits every transformer layer's two blocks
so that each needs one all-reduce forward and one backward:

* MLP ``Z = GeLU(X A) B``: ``A`` is split by **columns** (each GPU computes
  ``Y_i = GeLU(X A_i)`` with no communication, because GeLU acts element by
  element), ``B`` by **rows** (each GPU computes a partial ``Z_i = Y_i B_i``);
  the partial sums are all-reduced: ``Z = Σ Z_i``.
* Attention: the heads are split (Q, K, V by columns), the output projection
  by rows; again one all-reduce.

The conjugate operators ``f`` (identity forward, all-reduce backward) and ``g``
(all-reduce forward, identity backward) mark where. Per layer and micro-batch
that is **four all-reduces** of the ``b × s × h`` activation tensor.

Sources
-------
* Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter
  Language Models Using Model Parallelism" (arXiv 1909.08053), Sec. 3 and
  Fig. 3-4: column- then row-parallel linear layers, the f and g operators,
  two all-reduces in the forward and two in the backward pass per layer.
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on
  GPU Clusters Using Megatron-LM" (arXiv 2104.04473), Sec. 3.2: "a total
  communication of ``8bsh(t−1)/t`` per layer per device for each
  microbatch", counted in **elements** (four ring all-reduces, each sending
  ``2(t−1)/t`` of the ``bsh`` tensor per GPU); with 16-bit activations that
  is ``16bsh(t−1)/t`` bytes. Sec. 3.3 and Fig. 7: tensor parallelism belongs
  inside a node, where the all-reduces run over NVLink.
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models" (arXiv 2205.05198), Sec. 4.2.2: sequence parallelism
  replaces each all-reduce by a reduce-scatter and an all-gather, the same
  bytes, and splits the layer norms' and dropouts' activations by ``t``
  (:func:`scaleout.memory.activation_bytes_per_layer` with ``sp=True``).
* Compute per layer: PaLM (Chowdhery et al. 2022, arXiv 2204.02311), App. B,
  ``6N + 12 l h s`` FLOPs per token, restricted to one layer.

Taught in ``notebooks/04_tensor_parallelism.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import catalog, memory
from .catalog import ModelSpec
from .checks import check_array, check_bool, check_divides, check_int, check_positive
from .collectives import NodeNetwork
from .data_parallel import ACHIEVED_TFLOPS

__all__ = [
    "ALL_REDUCES_PER_LAYER",
    "TPLayer",
    "TPMLPResult",
    "gelu",
    "gelu_derivative",
    "layer_flops",
    "split_columns",
    "split_rows",
    "tensor_parallel_mlp",
    "tp_activation_bytes",
    "tp_layer",
    "tp_sweep",
    "tp_traffic_bytes_per_layer",
    "tp_traffic_elements_per_layer",
]

#: Megatron-LM (Shoeybi et al. 2019, Sec. 3): g after attention and after the MLP in the
#: forward pass, f before each block in the backward pass.
ALL_REDUCES_PER_LAYER = 4


# =========================================================================== the split, in numpy
def gelu(x):
    """GeLU, tanh approximation (Hendrycks & Gimpel 2016, arXiv 1606.08415), as in Megatron-LM."""
    x = np.asarray(x, dtype=float)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def gelu_derivative(x):
    """d GeLU / dx of the tanh approximation (the backward pass of :func:`tensor_parallel_mlp`)."""
    x = np.asarray(x, dtype=float)
    c = np.sqrt(2.0 / np.pi)
    th = np.tanh(c * (x + 0.044715 * x**3))
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th**2) * c * (1.0 + 3 * 0.044715 * x**2)


def _matrix(name: str, w) -> np.ndarray:
    if isinstance(w, str | bytes) or np.asarray(w).dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a 2-D matrix of numbers, got {w!r}")
    arr = np.asarray(w, dtype=float)
    # a broadcast view of one value (every stride 0, as the diagrams pass for shapes alone)
    # holds that value only: check it once, not h x f times
    held = arr.flat[:1] if arr.size and not any(arr.strides) else arr
    if not np.all(np.isfinite(held)):
        raise ValueError(f"{name} must hold finite numbers (no NaN or inf)")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {arr.shape}")
    return arr


def split_columns(w, t: int) -> list[np.ndarray]:
    """``[A_1 | A_2 | ... | A_t]``: ``t`` equal blocks of columns (a column-parallel layer)."""
    w = _matrix("w", w)
    t = check_int("t", t)
    check_divides("t", t, "columns", w.shape[1])
    return np.split(w, t, axis=1)


def split_rows(w, t: int) -> list[np.ndarray]:
    """``t`` equal blocks of rows, stacked: ``B = [B_1; ...; B_t]`` (a row-parallel layer)."""
    w = _matrix("w", w)
    t = check_int("t", t)
    check_divides("t", t, "rows", w.shape[0])
    return np.split(w, t, axis=0)


@dataclass(frozen=True)
class TPMLPResult:
    """A tensor-parallel MLP run on ``t`` simulated GPUs, and the one-GPU reference."""

    t: int
    partial_outputs: list[np.ndarray]  # Z_i = GeLU(X A_i) B_i, one per GPU
    output: np.ndarray  # Σ Z_i: what the all-reduce (g) leaves on every GPU
    reference: np.ndarray  # GeLU(X A) B on one GPU
    partial_input_grads: list[np.ndarray]  # dX_i, one per GPU, before f's all-reduce
    input_grad: np.ndarray  # Σ dX_i
    reference_input_grad: np.ndarray
    all_reduces: int  # forward (g) + backward (f)

    @property
    def matches(self) -> bool:
        """Whether the split computation reproduces the one-GPU results."""
        return bool(np.allclose(self.output, self.reference)
                    and np.allclose(self.input_grad, self.reference_input_grad))


def tensor_parallel_mlp(x, a, b, t: int, grad_output=None) -> TPMLPResult:
    """Megatron-LM's MLP split over ``t`` simulated GPUs (Shoeybi et al. 2019, Sec. 3, Fig. 3a).

    Forward: GPU ``i`` holds column block ``A_i`` and row block ``B_i`` and
    computes ``Z_i = GeLU(X A_i) B_i`` alone; the g operator all-reduces
    ``Z = Σ Z_i``. Backward for the input: GPU ``i`` computes
    ``dX_i = (dZ B_iᵀ ⊙ GeLU'(X A_i)) A_iᵀ``; the f operator all-reduces
    ``dX = Σ dX_i``. One all-reduce forward, one backward.

    Parameters
    ----------
    x
        Input ``(tokens, h)``.
    a, b
        ``(h, f)`` and ``(f, h)`` weights; ``t`` must divide ``f``.
    grad_output
        ``dZ`` of shape ``(tokens, h)`` (default: ones).
    """
    x, a, b = _matrix("x", x), _matrix("a", a), _matrix("b", b)
    if x.shape[1] != a.shape[0] or a.shape[1] != b.shape[0]:
        raise ValueError(f"shapes do not chain: x {x.shape}, a {a.shape}, b {b.shape}")
    a_parts, b_parts = split_columns(a, t), split_rows(b, t)
    dz = np.ones((x.shape[0], b.shape[1])) if grad_output is None else _matrix(
        "grad_output", grad_output)

    partial_out, partial_dx = [], []
    for a_i, b_i in zip(a_parts, b_parts, strict=True):
        u_i = x @ a_i
        partial_out.append(gelu(u_i) @ b_i)
        partial_dx.append(((dz @ b_i.T) * gelu_derivative(u_i)) @ a_i.T)
    u = x @ a
    return TPMLPResult(
        t=t,
        partial_outputs=partial_out,
        output=np.sum(partial_out, axis=0),
        reference=gelu(u) @ b,
        partial_input_grads=partial_dx,
        input_grad=np.sum(partial_dx, axis=0),
        reference_input_grad=((dz @ b.T) * gelu_derivative(u)) @ a.T,
        all_reduces=2,
    )


# =========================================================================== traffic
def _t_array(t):
    return check_array("t", t, integer=True, minimum=1)


def tp_activation_bytes(micro_batch: int, seq_len: int, hidden: int,
                        bytes_per_element: float = 2) -> float:
    """Bytes of the ``b × s × h`` activation tensor each tensor-parallel all-reduce carries."""
    b = check_int("micro_batch", micro_batch)
    s = check_int("seq_len", seq_len)
    h = check_int("hidden", hidden)
    return b * s * h * check_positive("bytes_per_element", bytes_per_element)


def tp_traffic_elements_per_layer(micro_batch: int, seq_len: int, hidden: int, t):
    """Elements one GPU sends per layer and micro-batch: ``8 b s h (t−1)/t``.

    Narayanan et al. 2021, Sec. 3.2: four all-reduces (Shoeybi et al. 2019)
    of ``bsh`` elements, each sending ``2(t−1)/t · bsh`` per GPU in a ring
    (Patarasuk & Yuan 2009): ``4 · 2(t−1)/t · bsh``. Zero at ``t = 1``.
    Array-friendly in ``t``.
    """
    bsh = tp_activation_bytes(micro_batch, seq_len, hidden, bytes_per_element=1)
    tt = _t_array(t)
    out = 8 * bsh * (tt - 1) / tt
    return float(out) if out.ndim == 0 else out


def tp_traffic_bytes_per_layer(micro_batch: int, seq_len: int, hidden: int, t,
                               bytes_per_element: float = 2):
    """Bytes one GPU sends per layer and micro-batch: ``8 b s h (t−1)/t`` elements × 2 bytes
    (16-bit activations) = ``16 b s h (t−1)/t`` bytes. Array-friendly in ``t``."""
    check_positive("bytes_per_element", bytes_per_element)
    out = np.asarray(tp_traffic_elements_per_layer(micro_batch, seq_len, hidden, t))
    out = out * bytes_per_element
    return float(out) if out.ndim == 0 else out


# =========================================================================== compute
def layer_flops(model: str | ModelSpec, micro_batch: int = 1, seq_len: int | None = None) -> float:
    """Training FLOPs of ONE transformer layer for one micro-batch (forward + backward).

    PaLM (arXiv 2204.02311) App. B counts ``6N + 12 l h s`` per token; one
    layer's share is ``6 N_layer + 12 h s`` per token, with ``N_layer`` the
    layer's parameters (:func:`scaleout.memory.param_breakdown`), times
    ``b·s`` tokens. For a GPT layer (``N_layer ≈ 12h²``) this is
    ``72 b s h² (1 + s/(6h))``: one layer's share of the model FLOPs of
    Korthikanti et al. 2022 (arXiv 2205.05198), App. A,
    ``72 B s l h² (1 + s/(6h) + V/(12 l h))`` (forward and backward, no
    recomputation). Megatron-LM's Eq. 3 (Narayanan et al. 2021, Sec. 5.1) is the
    whole model with full recomputation, ``96 B s l h² (1 + s/(6h) + V/(16 l h))``:
    the same layers counted four times instead of three
    (:func:`scaleout.compute.megatron_iteration_flops`).
    For a mixture of experts ``N_layer`` is the weights a token uses
    (:func:`scaleout.memory.layers_params` with ``active=True``).
    """
    m = catalog.model(model)
    b = check_int("micro_batch", micro_batch)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    per_layer_params = memory.layers_params(m, active=True) / m.n_layers
    return b * s * (6 * per_layer_params + 12 * m.hidden * s)


@dataclass(frozen=True)
class TPLayer:
    """One transformer layer, one micro-batch, on one of ``t`` tensor-parallel GPUs."""

    t: int
    traffic_bytes: float
    comm_s: float
    compute_s: float
    crosses_network: bool
    sp: bool

    @property
    def total_s(self) -> float:
        """Compute plus communication: Megatron's all-reduces sit on the critical path."""
        return self.compute_s + self.comm_s

    @property
    def comm_fraction(self) -> float:
        """Share of the layer's time spent in tensor-parallel communication."""
        return self.comm_s / self.total_s if self.total_s > 0 else 0.0


def tp_layer(
    model: str | ModelSpec,
    t: int,
    *,
    micro_batch: int = 1,
    seq_len: int | None = None,
    fabric: NodeNetwork | None = None,
    achieved_tflops: float = ACHIEVED_TFLOPS,
    sp: bool = False,
    bytes_per_element: float = 2,
) -> TPLayer:
    """Compute and tensor-parallel communication time of one layer and micro-batch on one GPU.

    * communication: :data:`ALL_REDUCES_PER_LAYER` all-reduces of the ``bsh``
      tensor (:func:`tp_activation_bytes`) over ``t`` GPUs of ``fabric``
      (NVLink while ``t`` fits in a node, the network beyond); with sequence
      parallelism each becomes a reduce-scatter plus an all-gather
      (Korthikanti et al. 2022, Sec. 4.2.2), the same bytes;
    * compute: :func:`layer_flops` divided by ``t``, at ``achieved_tflops``.

    The cost model does not require ``t`` to divide the heads; a real layout
    does (:func:`scaleout.memory.training_memory` checks it).
    """
    check_bool("sp", sp)
    m = catalog.model(model)
    t = check_int("t", t)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    rate = check_positive("achieved_tflops", achieved_tflops) * 1e12
    fab = fabric or NodeNetwork()
    size = tp_activation_bytes(micro_batch, s, m.hidden, bytes_per_element)
    if sp:
        one = (fab.time("reduce_scatter", size, t, name="t")
               + fab.time("all_gather", size, t, name="t"))
    else:
        one = fab.time("all_reduce", size, t, name="t")
    return TPLayer(
        t=t,
        traffic_bytes=tp_traffic_bytes_per_layer(micro_batch, s, m.hidden, t, bytes_per_element),
        comm_s=ALL_REDUCES_PER_LAYER * float(one),
        compute_s=layer_flops(m, micro_batch, s) / t / rate,
        crosses_network=fab.crosses_network(t),
        sp=bool(sp),
    )


def tp_sweep(model: str | ModelSpec, ts: Sequence[int], **layer_kw) -> dict[str, np.ndarray]:
    """:func:`tp_layer` for each ``t``: arrays ``t``, ``traffic_bytes``, ``comm_s``,
    ``compute_s``, ``comm_fraction``, ``crosses_network`` (keywords as :func:`tp_layer`)."""
    layers = [tp_layer(model, t, **layer_kw) for t in ts]
    return {
        "t": np.array([x.t for x in layers]),
        "traffic_bytes": np.array([x.traffic_bytes for x in layers]),
        "comm_s": np.array([x.comm_s for x in layers]),
        "compute_s": np.array([x.compute_s for x in layers]),
        "comm_fraction": np.array([x.comm_fraction for x in layers]),
        "crosses_network": np.array([x.crosses_network for x in layers]),
    }
