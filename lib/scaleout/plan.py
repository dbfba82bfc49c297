"""The 3D-parallel planner: a step-time model of a parallel layout, and a vectorised search.

A *plan* splits the training of one model over ``n = tp × pp × dp`` GPUs:
tensor parallelism (``tp``) splits every matrix, pipeline parallelism (``pp``)
splits the layers into stages, data parallelism (``dp``) copies the result and
splits the batch; ZeRO shards the optimizer state (and more) over the copies;
sequence parallelism, activation recomputation, micro-batch size and the
interleaved schedule trade memory for time. :func:`evaluate` predicts one plan's
memory per GPU and iteration time; :func:`search` evaluates every valid plan at
once, as numpy arrays, and ranks those that fit.

The model of one iteration (busiest pipeline stage, ``m = B / (dp b)`` micro-batches)
-----------------------------------------------------------------------------------
* **Compute**: the FLOPs of :func:`scaleout.compute.forward_flops` (PaLM App. B:
  ``2N + 4lhs`` per token forward, backward twice that) for the stage's layers,
  divided by ``tp``, at a matrix-multiply rate ``η(x) × peak`` where
  ``η(x) = η_max x / (x + x_half)`` and ``x`` is the smaller large dimension of the
  sharded matrix multiplies, ``min(h/tp, b s)``: thin shards run slower
  (Narayanan et al. 2021, Sec. 3.3: "a high degree of model parallelism can
  create small matrix multiplications"). The last stage also runs the output layer.
* **Memory-bound work** (norms, softmax, dropout, GeLU, residuals): the HBM
  traffic of a forward + backward pass is ``κ`` times the activation bytes the
  layer stores (Korthikanti et al. 2022, Table 2, :mod:`scaleout.memory`), at the
  GPU's HBM bandwidth.
* **Recomputation** (Korthikanti et al. 2022, Sec. 5): full recompute repeats the
  forward pass; selective recompute repeats the attention core (``4bs²h`` FLOPs and
  its ``5as²b`` stored bytes).
* **Tensor-parallel communication** (Narayanan et al. 2021, Sec. 3.3; Korthikanti
  Sec. 4.2.2): four all-reduces of ``2bsh`` bytes per layer per micro-batch (two
  forward, two backward; six with full recompute); sequence parallelism turns each
  into a reduce-scatter + all-gather pair of the same cost. Not overlapped.
* **Pipeline**: ``m`` micro-batches at the busiest stage's pace plus the bubble,
  ``(pp - 1)/v`` of an average stage's micro-batch time (:mod:`scaleout.pipeline`,
  Narayanan Sec. 2.2); point-to-point sends of ``2bsh/tp`` bytes (scatter/gather,
  Sec. 4.1), two per micro-batch per model chunk, on the critical path.
* **Data parallelism and ZeRO** (:func:`scaleout.zero.stage_collectives`): an
  all-reduce of the gradients (stage 0), reduce-scatter + all-gather (1, 2), and for
  stage 3 the weights gathered again for every micro-batch's forward and backward;
  hierarchical across nodes (:class:`scaleout.data_parallel.Fabric`). Exposed
  except for ``Calibration.dp_overlap``.
* **Optimizer step**: Adam reads and writes its state once, memory-bound.

Collectives run at ``Calibration.collective_efficiency`` of the links' line rates
(``data/links.toml``). The four numbers of :class:`Calibration` are fitted once,
by :func:`fit_calibration`, to the 18 published measurements :func:`validate` checks
(Korthikanti et al. 2022, Table 5; Narayanan et al. 2021, Table 1) and are then the
same for every model, GPU and layout.

Validity (what :func:`search` enumerates)
-----------------------------------------
``tp`` divides the heads (and the KV heads, or is a multiple of them) and the GPUs
per node (a tensor-parallel group never straddles two nodes), unless
``allow_tp_across_nodes``; ``pp`` divides the layers (or, with ``uneven_layers``,
the busiest stage takes ``ceil(l/pp)``); ``dp = n / (tp pp)`` divides the global
batch and the micro-batch size divides ``B/dp``; the interleaved schedule needs
``v`` to divide the layers per stage and ``m`` to be a multiple of ``pp``
(Megatron-LM); ZeRO stages 2 and 3 only without pipelining (DeepSpeed: "ZeRO-2 and
ZeRO-3 are incompatible with pipeline parallelism"); sequence parallelism only with
``tp > 1``.

Taught in ``notebooks/08_3d_parallelism_planner.ipynb``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import catalog, collectives, compute, memory, pipeline, zero
from .catalog import GPU, ModelSpec
from .checks import check_bool, check_choice, check_int, check_positive, check_range, divisors
from .collectives import AlphaBeta
from .data_parallel import Fabric
from .units import GIB, SECONDS_PER_DAY, SECONDS_PER_HOUR

__all__ = [
    "DEFAULT_CALIBRATION",
    "Calibration",
    "NoPlanError",
    "Plan",
    "PlanResult",
    "SearchResult",
    "ValidationRow",
    "default_network",
    "evaluate",
    "explain",
    "fit_calibration",
    "search",
    "validate",
    "validation_summary",
    "validation_table",
]

#: Bytes per activation value sent between GPUs: 16-bit, as Korthikanti et al.'s Table 2 assumes.
ACTIVATION_BYTES = 2
#: HBM traffic of one Adam step, bytes per parameter: read fp32 master, momentum, variance and
#: the 16-bit gradient (4 + 4 + 4 + 2), write the three states and the 16-bit weight (12 + 2).
#: The 16 bytes per parameter of ZeRO Sec. 3.1, each moved once or twice.
ADAM_TRAFFIC_BYTES_PER_PARAM = 28
STEP_PARTS = ("forward", "backward", "recompute", "tp_comm", "bubble", "p2p", "dp_comm",
              "optimizer")
MEMORY_PARTS = ("weights", "grads", "optimizer", "activations")


# =========================================================================== calibration
@dataclass(frozen=True)
class Calibration:
    """The planner's efficiency parameters: one set for every model, GPU and layout.

    Attributes
    ----------
    gemm_efficiency
        ``η_max``: the share of peak FLOP/s large matrix multiplies reach.
    gemm_half_dim
        ``x_half``: the matrix dimension at which they reach half of ``η_max``.
    nonmatmul_traffic
        ``κ``: HBM bytes moved by the memory-bound operations of a forward and
        backward pass, per byte of activations a layer stores.
    collective_efficiency
        Share of a link's line rate that collectives and sends reach.
    dp_overlap
        Share of the data-parallel communication hidden behind computation: 0 as in
        Megatron-LM 2021/2022, where the gradient all-reduce follows the backward pass.
    source
        Where the numbers come from.
    """

    gemm_efficiency: float = 0.76
    gemm_half_dim: float = 50.0
    nonmatmul_traffic: float = 8.0
    collective_efficiency: float = 0.7
    dp_overlap: float = 0.0
    source: str = ("fitted by scaleout.plan.fit_calibration() to Korthikanti et al. 2022 "
                   "Table 5 and Narayanan et al. 2021 Table 1 (A100 80GB, Selene)")

    def __post_init__(self) -> None:
        check_range("gemm_efficiency", self.gemm_efficiency, 0.01, 1.0)
        check_positive("gemm_half_dim", self.gemm_half_dim, allow_zero=True)
        check_positive("nonmatmul_traffic", self.nonmatmul_traffic, allow_zero=True)
        check_range("collective_efficiency", self.collective_efficiency, 0.01, 1.0)
        check_range("dp_overlap", self.dp_overlap, 0.0, 1.0)

    def matmul_efficiency(self, dim):
        """``η(x) = η_max x / (x + x_half)``: the share of peak at matrix dimension ``x``."""
        dim = np.asarray(dim, dtype=float)
        return self.gemm_efficiency * dim / (dim + self.gemm_half_dim)


DEFAULT_CALIBRATION = Calibration()


# =========================================================================== plans
@dataclass(frozen=True)
class Plan:
    """One way to split training over ``tp × pp × dp`` GPUs.

    ``global_batch`` is in sequences (default ``dp × micro_batch``); ``interleave``
    is ``v``, model chunks per GPU (1: plain 1F1B); ``recompute`` one of
    ``"none"``, ``"selective"``, ``"full"``; ``seq_len`` defaults to the model's.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    micro_batch: int = 1
    global_batch: int | None = None
    zero_stage: int = 0
    sp: bool = False
    recompute: str = "none"
    interleave: int = 1
    flash_attention: bool = False
    seq_len: int | None = None

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "micro_batch", "interleave"):
            object.__setattr__(self, name, check_int(name, getattr(self, name)))
        batch = self.global_batch if self.global_batch is not None else self.dp * self.micro_batch
        object.__setattr__(self, "global_batch", check_int("global_batch", batch))
        object.__setattr__(self, "zero_stage",
                           check_int("zero_stage", self.zero_stage, minimum=0, maximum=3))
        check_choice("recompute", self.recompute, memory.RECOMPUTE_MODES)
        check_bool("sp", self.sp)
        check_bool("flash_attention", self.flash_attention)
        if self.seq_len is not None:
            object.__setattr__(self, "seq_len", check_int("seq_len", self.seq_len))
        per_replica = self.dp * self.micro_batch
        if self.global_batch % per_replica:
            raise ValueError(
                f"global_batch={self.global_batch} must be a multiple of dp × micro_batch = "
                f"{self.dp} × {self.micro_batch} = {per_replica}")

    @property
    def n_gpus(self) -> int:
        """``tp × pp × dp``."""
        return self.tp * self.pp * self.dp

    @property
    def micro_batches(self) -> int:
        """``m``: micro-batches per replica per iteration."""
        return self.global_batch // (self.dp * self.micro_batch)

    @property
    def label(self) -> str:
        """``"TP8 PP8 DP16, b=1, v=3, ZeRO-1, SP, selective"``."""
        parts = [f"TP{self.tp} PP{self.pp} DP{self.dp}", f"b={self.micro_batch}"]
        if self.interleave > 1:
            parts.append(f"v={self.interleave}")
        if self.zero_stage:
            parts.append(f"ZeRO-{self.zero_stage}")
        if self.sp:
            parts.append("SP")
        parts.append(f"recompute {self.recompute}")
        return ", ".join(parts)


def default_network(gpu: str | GPU, gpus_per_node: int | None = None,
                    inter: str | None = None) -> Fabric:
    """The GPU's usual server: its scale-up link inside a node, its network port between nodes.

    ``gpus_per_node`` (the NVLink domain) defaults to the GPU's ``scaleup_domain_gpus``
    (8 for an HGX board, 72 for a GB200 NVL72 rack), ``inter`` to its
    ``scaleout_link`` (``data/gpus.toml``).
    """
    g = catalog.gpu(gpu)
    intra = _scaleup_link(g)
    if inter is None:
        if g.scaleout_link is None:
            raise ValueError(f"gpu {g.name!r} has no usual network port recorded in "
                             f"data/gpus.toml (field scaleout_link): choose a network port for "
                             f"it (inter=<a scale-out link of data/links.toml>)")
        inter = g.scaleout_link
    nodes = g.scaleup_domain_gpus if gpus_per_node is None else gpus_per_node
    return Fabric(intra=intra, inter=inter, gpus_per_node=check_int("gpus_per_node", nodes))


def _scaleup_link(g: GPU):
    """The catalog link of a GPU's scale-up fabric, or an α-β link from its datasheet figure."""
    try:
        return catalog.link(g.scaleup_link)
    except ValueError:
        return AlphaBeta(0.5e-6, g.scaleup_gbytes_s * 1e9)


def _derate(link, efficiency: float) -> AlphaBeta:
    ab = link if isinstance(link, AlphaBeta) else AlphaBeta(link.latency_s,
                                                             link.bandwidth_bytes_s)
    return AlphaBeta(ab.latency_s, ab.bandwidth_bytes_s * efficiency)


# =========================================================================== the kernel
@dataclass(frozen=True)
class _Links:
    """The two derated links and how collectives cross nodes (what a collective's time needs)."""

    intra: AlphaBeta
    inter: AlphaBeta
    hierarchical: bool
    inter_algorithm: str


@dataclass(frozen=True)
class _Context:
    """Everything a plan's time and memory depend on besides the plan itself."""

    model: ModelSpec
    gpu: GPU
    network: Fabric
    calibration: Calibration
    recipe: memory.PrecisionRecipe
    seq_len: int
    global_batch: int
    links: _Links
    parts: dict[str, int]


def _context(model, gpu, network, calibration, recipe, seq_len, global_batch) -> _Context:
    m = catalog.model(model)
    g = catalog.gpu(gpu)
    net = network if network is not None else default_network(g)
    if not isinstance(net, Fabric):
        raise ValueError(f"network must be a scaleout.data_parallel.Fabric, got {net!r}")
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    return _Context(m, g, net, cal, memory.get_recipe(recipe), s,
                    check_int("global_batch", global_batch),
                    _Links(_derate(net.intra, cal.collective_efficiency),
                           _derate(net.inter, cal.collective_efficiency),
                           net.hierarchical, net.inter_algorithm),
                    memory.param_breakdown(m))


def _by_value(keys: np.ndarray, fn, *arrays: np.ndarray) -> np.ndarray:
    """``fn(key, *arrays[mask])`` for each distinct key, assembled into one array.

    The collectives take one group size at a time; a search has a handful of
    distinct sizes, so this is a few calls, not one per plan.
    """
    out = np.zeros(keys.shape, dtype=float)
    for key in np.unique(keys):
        mask = keys == key
        out[mask] = fn(key, *(a[mask] for a in arrays))
    return out


def _group_time(links: _Links, op: str, size_bytes: np.ndarray, n: int, per_node: int) -> Any:
    """One collective over ``n`` GPUs, ``per_node`` of them in each node."""
    if n == 1:
        return np.zeros_like(size_bytes)
    if per_node >= n:
        return collectives.collective_time(op, size_bytes, n, links.intra)
    if per_node > 1 and n % per_node == 0:
        fab = Fabric(links.intra, links.inter, per_node, links.hierarchical,
                     links.inter_algorithm)
        return fab.time(op, size_bytes, n)
    return collectives.collective_time(op, size_bytes, n, links.inter, links.inter_algorithm)


def _kernel(ctx: _Context, tp, pp, dp, b, v, zero_stage, sp, rc, flash, uneven=False):
    """Memory per GPU and iteration time of many plans at once (numpy arrays, one per field).

    ``rc`` is 0/1/2 for none/selective/full recomputation. Returns a dict of arrays:
    the :data:`MEMORY_PARTS`, ``memory``, ``capacity``, the :data:`STEP_PARTS` (seconds,
    summing to ``step_s``), ``step_s``, ``m`` and ``stage_layers``.
    """
    m_, g, cal = ctx.model, ctx.gpu, ctx.calibration
    s = float(ctx.seq_len)  # products such as 5 a s^2 b stay in floating point (no int64 wrap)
    tp, pp, dp, b, v, zero_stage, rc = (np.asarray(x) for x in (tp, pp, dp, b, v, zero_stage, rc))
    sp, flash = np.asarray(sp, dtype=bool), np.asarray(flash, dtype=bool)
    l, h, a = m_.n_layers, m_.hidden, m_.n_heads
    n_mb = ctx.global_batch // (dp * b)
    stage_layers = np.ceil(l / pp) if uneven else l / pp
    avg_layers = l / pp
    gpn = ctx.network.gpus_per_node

    # ---- memory (scaleout.memory kernels: ZeRO model state, Korthikanti activations)
    params = memory._stage_params(ctx.parts, l, m_.tied_embeddings, tp, pp, stage_layers)
    weights, grads, optim = memory._model_state(params, zero_stage, dp, ctx.recipe)
    kv, ffn = m_.kv_heads / a, m_.ffn / h
    act_layer = memory._activation_per_layer(s, b, h, a, tp, sp, rc, flash, kv, ffn,
                                             m_.gated_mlp)
    in_flight = np.where(pp > 1, pipeline._in_flight(pp, n_mb, v), 1.0)
    activations = act_layer * stage_layers * in_flight

    # ---- compute: FLOPs at the calibrated matrix-multiply rate, plus memory-bound work
    tokens = b * s
    rate = cal.matmul_efficiency(np.minimum(h / tp, tokens)) * g.bf16_dense_flops
    layer_params = ctx.parts["layers"] / l
    dense = compute.forward_flops(tokens, layer_params, 0, h, s)  # one layer's matrices
    attention = compute.forward_flops(tokens, 0, 1, h, s)  # Q K^T and A V: 4 b s^2 h
    head = compute.forward_flops(tokens, ctx.parts["embedding"], 0, h, s)  # output layer
    stored = memory._activation_per_layer(s, b, h, a, tp, sp, 0, flash, kv, ffn, m_.gated_mlp)
    hbm = g.hbm_gbytes_s * 1e9
    mem_s = cal.nonmatmul_traffic * stored / hbm  # forward + backward, one layer
    fwd_layer = (dense + attention) / tp / rate + mem_s / 3
    scores = np.where(flash, 0.0, 5 * a * s * s * b / tp)  # Korthikanti's 5as^2b bytes
    selective = np.where(flash, 0.0, attention / tp / rate + cal.nonmatmul_traffic * scores
                         / hbm / 3)
    rec_layer = np.where(rc == 2, fwd_layer, np.where(rc == 1, selective, 0.0))
    head_s = 3 * head / tp / rate  # forward + backward of the output layer, last stage

    # ---- tensor-parallel communication: 4 (6 with full recompute) all-reduces of 2bsh bytes
    tp_bytes = ACTIVATION_BYTES * tokens * h * np.ones_like(tp, dtype=float)
    per_node_tp = np.minimum(tp, gpn)
    def all_reduce(t, size, per_node):
        a, b = _linear_cost(ctx.links, "all_reduce", int(t), int(per_node[0]))
        return a + b * size

    one_ar = _by_value(tp, all_reduce, tp_bytes, per_node_tp)
    tp_layer = (4 + 2 * (rc == 2)) * one_ar

    per_layer = 3 * fwd_layer + rec_layer + tp_layer  # forward, backward (2x), recompute, TP
    busiest = stage_layers * per_layer + head_s
    average = avg_layers * per_layer + head_s / pp

    # ---- pipeline: m micro-batches at the busiest stage's pace, bubble of (p-1)/v averages
    forward = n_mb * stage_layers * fwd_layer + n_mb * head_s / 3
    backward = n_mb * 2 * stage_layers * fwd_layer + n_mb * head_s * 2 / 3
    recompute = n_mb * stage_layers * rec_layer
    tp_comm = n_mb * stage_layers * tp_layer
    bubble = (pp - 1) / v * average
    send_bytes = ACTIVATION_BYTES * tokens * h / tp
    links = ctx.links
    link_bw = np.where(tp * dp >= gpn, links.inter.bandwidth_bytes_s,
                       links.intra.bandwidth_bytes_s)
    link_lat = np.where(tp * dp >= gpn, links.inter.latency_s, links.intra.latency_s)
    p2p = np.where(pp > 1, 2 * v * n_mb * (link_lat + send_bytes / link_bw), 0.0)

    # ---- data parallelism / ZeRO: the stage's collectives over dp, hierarchical across nodes
    per_node_dp = _dp_per_node(dp, np.maximum(1, gpn // np.minimum(tp, gpn)))
    key = (dp * 8 + zero_stage) * 1024 + per_node_dp  # one key per (dp, stage, per-node)
    dp_comm = _by_value(key, lambda k, d, z, pn, grad_b, w_b, mb: _dp_time(
        ctx, int(d[0]), int(z[0]), int(pn[0]), grad_b, w_b, mb),
        dp, zero_stage, per_node_dp, params * ctx.recipe.grad_bytes,
        params * ctx.recipe.weight_bytes, n_mb)
    dp_comm = dp_comm * (1 - cal.dp_overlap)
    optimizer = params * ADAM_TRAFFIC_BYTES_PER_PARAM / np.where(zero_stage >= 1, dp, 1) / hbm

    step = n_mb * busiest + bubble + p2p + dp_comm + optimizer
    # the forward/backward/recompute/TP parts above count the busiest stage's m micro-batches
    return {
        "weights": weights, "grads": grads, "optimizer_state": optim,
        "activations": activations, "memory": weights + grads + optim + activations,
        "capacity": np.full(np.shape(weights), g.hbm_bytes),
        "forward": forward, "backward": backward, "recompute": recompute,
        "tp_comm": tp_comm, "bubble": bubble, "p2p": p2p, "dp_comm": dp_comm,
        "optimizer": optimizer, "step_s": step, "m": n_mb, "stage_layers": stage_layers,
        "params_per_gpu": params, "in_flight": in_flight,
    }


def _dp_per_node(dp: np.ndarray, room: np.ndarray) -> np.ndarray:
    """Ranks of a data-parallel group that share a node: the largest divisor of ``dp`` that is
    at most ``room`` (the data-parallel ranks a node has room for, ``gpus_per_node // tp``),
    so the group splits into whole per-node parts for the hierarchical collectives."""
    dp = np.asarray(dp, dtype=np.int64)
    key = dp * 65536 + np.broadcast_to(np.asarray(room, dtype=np.int64), dp.shape)
    uniq, inverse = np.unique(key, return_inverse=True)
    best = [max(k for k in range(1, min(d, r) + 1) if d % k == 0)
            for d, r in zip((uniq // 65536).tolist(), (uniq % 65536).tolist(), strict=True)]
    return np.asarray(best, dtype=np.int64)[inverse.reshape(dp.shape)]


@functools.lru_cache(maxsize=4096)
def _linear_cost(links: _Links, op: str, n: int, per_node: int) -> tuple[float, float]:
    """``(seconds at 0 bytes, seconds per byte)`` of one collective: the α-β model is linear in
    the size, so two evaluations give every size (cached: a search asks for few groups)."""
    t0, t1 = np.asarray(_group_time(links, op, np.array([0.0, 1e9]), n, per_node), dtype=float)
    return float(t0), float((t1 - t0) / 1e9)


def _dp_time(ctx: _Context, dp: int, stage: int, per_node: int, grad_bytes, weight_bytes, n_mb):
    """Seconds of one step's data-parallel collectives (ZeRO Sec. 7.2, :mod:`scaleout.zero`).

    Stage 3 gathers the weights before every micro-batch's forward and backward pass.
    """
    total = np.zeros_like(grad_bytes)
    if dp == 1:
        return total
    for op, what in zero.stage_collectives(stage):
        size = grad_bytes if what == "gradients" else weight_bytes
        repeat = n_mb if (stage == 3 and what != "gradients") else 1
        a, b = _linear_cost(ctx.links, op, dp, per_node)
        total = total + repeat * (a + b * size)
    return total


# =========================================================================== one plan
@dataclass(frozen=True)
class PlanResult:
    """One plan evaluated: memory per GPU (bytes), time per iteration (seconds), throughput."""

    plan: Plan
    model: str
    gpu: str
    memory: dict[str, float]
    capacity_bytes: float
    step: dict[str, float]
    tokens_per_s: float
    mfu: float
    hfu: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    megatron_tflops_per_gpu: float
    training_days: float | None = None
    gpu_hours: float | None = None

    @property
    def memory_bytes(self) -> float:
        """Everything the busiest GPU holds."""
        return float(sum(self.memory[k] for k in MEMORY_PARTS))

    @property
    def fits(self) -> bool:
        """Whether the busiest GPU's memory is within its HBM."""
        return self.memory_bytes <= self.capacity_bytes

    @property
    def shortfall_gib(self) -> float:
        """GiB missing (0 when it fits)."""
        return max(0.0, (self.memory_bytes - self.capacity_bytes) / GIB)

    @property
    def step_s(self) -> float:
        """Seconds per iteration: the sum of :attr:`step`."""
        return float(sum(self.step.values()))

    def memory_gib(self) -> dict[str, float]:
        """Memory parts in GiB, with ``total`` and ``capacity``."""
        out = {k: v / GIB for k, v in self.memory.items()}
        out["total"] = self.memory_bytes / GIB
        out["capacity"] = self.capacity_bytes / GIB
        return out


def _rc_code(recompute) -> int:
    return memory.RECOMPUTE_MODES.index(check_choice("recompute", recompute,
                                                     memory.RECOMPUTE_MODES))


def _check_plan(m: ModelSpec, plan: Plan, network: Fabric, uneven: bool,
                allow_tp_across_nodes: bool) -> None:
    """The validity rules of the module docstring, as clear errors for one plan."""
    if m.n_heads % plan.tp:
        raise ValueError(f"tp={plan.tp} must divide the {m.n_heads} attention heads of {m.name}")
    if m.kv_heads % plan.tp and plan.tp % m.kv_heads:
        raise ValueError(f"tp={plan.tp} must divide the {m.kv_heads} KV heads of {m.name} or "
                         f"be a multiple of them")
    gpn = network.gpus_per_node
    if plan.tp > gpn and not allow_tp_across_nodes:
        raise ValueError(f"tp={plan.tp} is larger than the {gpn} GPUs of a node; pass "
                         f"allow_tp_across_nodes=True to run tensor parallelism over the network")
    if (plan.tp <= gpn and gpn % plan.tp) or (plan.tp > gpn and plan.tp % gpn):
        raise ValueError(f"tp={plan.tp} must divide the {gpn} GPUs per node (or be a multiple "
                         f"of it) so that no tensor-parallel group straddles two nodes")
    if plan.pp > m.n_layers or (m.n_layers % plan.pp and not uneven):
        raise ValueError(f"pp={plan.pp} must divide the {m.n_layers} layers of {m.name} "
                         f"(or pass uneven_layers=True)")
    if plan.interleave > 1:
        per_stage = -(-m.n_layers // plan.pp)  # the busiest stage's layers
        if plan.pp == 1 or per_stage % plan.interleave:
            raise ValueError(f"interleave={plan.interleave} must divide the {per_stage} layers "
                             f"per stage (pp={plan.pp} > 1)")
        if plan.micro_batches % plan.pp:
            raise ValueError(f"the interleaved schedule needs the {plan.micro_batches} "
                             f"micro-batches to be a multiple of pp={plan.pp}")
    if plan.zero_stage >= 2 and plan.pp > 1:
        raise ValueError(f"zero_stage={plan.zero_stage} cannot be combined with pp={plan.pp}: "
                         f"ZeRO stages 2 and 3 are incompatible with pipeline parallelism "
                         f"(DeepSpeed); use zero_stage 0 or 1")
    if plan.sp and plan.tp == 1:
        raise ValueError("sp=True (sequence parallelism) needs tp > 1")


def _one(ctx: _Context, plan: Plan, uneven: bool = False) -> dict[str, np.ndarray]:
    return _kernel(ctx, *(np.array([x]) for x in (
        plan.tp, plan.pp, plan.dp, plan.micro_batch, plan.interleave, plan.zero_stage,
        plan.sp, _rc_code(plan.recompute), plan.flash_attention)), uneven=uneven)


def _throughput(ctx: _Context, n_gpus, step_s, rc) -> dict[str, np.ndarray]:
    """Tokens/s, MFU, HFU and TFLOP/s per GPU (PaLM App. B; Megatron-LM Eq. 3)."""
    m, s, B = ctx.model, ctx.seq_len, ctx.global_batch
    peak = ctx.gpu.bf16_dense_flops
    model_flops = compute.flops_per_token(m, s) * B * s
    full = compute.flops_per_token(m, s, recompute=True) * B * s
    attention_again = compute.forward_flops(B * s, 0, m.n_layers, m.hidden, s)
    hardware = np.where(rc == 2, full, np.where(rc == 1, model_flops + attention_again,
                                                model_flops))
    mfu = compute.utilisation(model_flops, step_s, n_gpus, peak)
    hfu = compute.utilisation(hardware, step_s, n_gpus, peak)
    megatron = compute.megatron_iteration_flops(m, B, s, recompute=True)
    return {"tokens_per_s": B * s / np.asarray(step_s), "mfu": mfu, "hfu": hfu,
            "model_tflops": mfu * peak / 1e12, "hardware_tflops": hfu * peak / 1e12,
            "megatron_tflops": megatron / (np.asarray(step_s) * n_gpus) / 1e12}


def evaluate(
    model: str | ModelSpec,
    gpu: str | GPU,
    plan: Plan,
    network: Fabric | None = None,
    *,
    calibration: Calibration | None = None,
    recipe: str | memory.PrecisionRecipe = "mixed-adam",
    tokens: float | None = None,
    uneven_layers: bool = False,
    allow_tp_across_nodes: bool = False,
) -> PlanResult:
    """Memory per GPU, iteration time and throughput of one plan (see the module docstring).

    Parameters
    ----------
    model, gpu
        Catalog names or specs.
    plan
        The layout; its ``seq_len`` overrides the model's.
    network
        A :class:`~scaleout.data_parallel.Fabric` (default :func:`default_network`).
    calibration
        Efficiency parameters (default :data:`DEFAULT_CALIBRATION`).
    recipe
        Bytes per parameter (:data:`scaleout.memory.RECIPES`).
    tokens
        A training budget in tokens: fills ``training_days`` and ``gpu_hours``.
    uneven_layers, allow_tp_across_nodes
        Relax the validity rules (see the module docstring).
    """
    m = catalog.model(model)
    check_bool("uneven_layers", uneven_layers)
    check_bool("allow_tp_across_nodes", allow_tp_across_nodes)
    net = network if network is not None else default_network(gpu)
    ctx = _context(m, gpu, net, calibration, recipe, plan.seq_len, plan.global_batch)
    _check_plan(m, plan, net, uneven_layers, allow_tp_across_nodes)
    out = _one(ctx, plan, uneven_layers)
    rc = _rc_code(plan.recompute)
    thr = _throughput(ctx, plan.n_gpus, out["step_s"], rc)
    days = hours = None
    if tokens is not None:
        seconds = check_positive("tokens", tokens) / float(thr["tokens_per_s"][0])
        days = seconds / SECONDS_PER_DAY
        hours = seconds * plan.n_gpus / SECONDS_PER_HOUR
    return PlanResult(
        plan=plan, model=m.name, gpu=ctx.gpu.name,
        memory={"weights": float(out["weights"][0]), "grads": float(out["grads"][0]),
                "optimizer": float(out["optimizer_state"][0]),
                "activations": float(out["activations"][0])},
        capacity_bytes=ctx.gpu.hbm_bytes,
        step={k: float(out[k][0]) for k in STEP_PARTS},
        tokens_per_s=float(thr["tokens_per_s"][0]), mfu=float(thr["mfu"][0]),
        hfu=float(thr["hfu"][0]), model_tflops_per_gpu=float(thr["model_tflops"][0]),
        hardware_tflops_per_gpu=float(thr["hardware_tflops"][0]),
        megatron_tflops_per_gpu=float(np.ravel(thr["megatron_tflops"])[0]),
        training_days=days, gpu_hours=hours,
    )


# =========================================================================== the search
class NoPlanError(ValueError):
    """No plan is valid, or none fits: the message says why; ``closest`` is the nearest miss."""

    def __init__(self, message: str, closest: PlanResult | None = None) -> None:
        super().__init__(message)
        self.closest = closest


def _divisors(n: int) -> list[int]:
    return divisors(n)


@dataclass(frozen=True)
class SearchResult:
    """Every valid plan of a search as arrays (one entry per plan), ranked fitting plans first.

    ``arrays`` holds the plan fields (``tp``, ``pp``, ``dp``, ``micro_batch``,
    ``interleave``, ``zero_stage``, ``sp``, ``rc``, ``flash``) and the kernel's outputs
    (memory parts and ``memory`` in bytes, step parts and ``step_s`` in seconds,
    ``tokens_per_s``, ``mfu``, ``hfu``, ...). ``order`` indexes the fitting plans,
    fastest first.
    """

    model: str
    gpu: str
    n_gpus: int
    global_batch: int
    seq_len: int
    network: Fabric
    calibration: Calibration
    recipe: str
    arrays: dict[str, np.ndarray]
    order: np.ndarray
    tokens: float | None = None
    uneven_layers: bool = False
    allow_tp_across_nodes: bool = False
    flash_attention: bool = False
    model_spec: ModelSpec | None = None

    @property
    def n_evaluated(self) -> int:
        """Plans evaluated (all valid ones, fitting or not)."""
        return int(self.arrays["step_s"].size)

    @property
    def n_fit(self) -> int:
        """Plans that fit in memory."""
        return int(self.order.size)

    def plan(self, rank: int = 0) -> Plan:
        """The plan ranked ``rank`` (0 = fastest that fits)."""
        i = int(self.order[check_int("rank", rank, minimum=0, maximum=self.n_fit - 1)])
        a = self.arrays
        return Plan(tp=int(a["tp"][i]), pp=int(a["pp"][i]), dp=int(a["dp"][i]),
                    micro_batch=int(a["micro_batch"][i]), global_batch=self.global_batch,
                    zero_stage=int(a["zero_stage"][i]), sp=bool(a["sp"][i]),
                    recompute=memory.RECOMPUTE_MODES[int(a["rc"][i])],
                    interleave=int(a["interleave"][i]), flash_attention=bool(a["flash"][i]),
                    seq_len=self.seq_len)

    def result(self, rank: int = 0) -> PlanResult:
        """The plan ranked ``rank``, evaluated in full (:func:`evaluate`)."""
        return evaluate(self.model_spec or self.model, self.gpu, self.plan(rank), self.network,
                        calibration=self.calibration, recipe=self.recipe, tokens=self.tokens,
                        uneven_layers=self.uneven_layers,
                        allow_tp_across_nodes=self.allow_tp_across_nodes)

    def top(self, k: int = 10) -> list[dict[str, Any]]:
        """The ``k`` fastest fitting plans as table rows (plain numbers, units in the keys)."""
        a, rows = self.arrays, []
        best = float(a["step_s"][self.order[0]]) if self.n_fit else float("nan")
        for rank, i in enumerate(self.order[:check_int("k", k)]):
            rows.append({
                "rank": rank + 1, "plan": self.plan(rank).label,
                "tp": int(a["tp"][i]), "pp": int(a["pp"][i]), "dp": int(a["dp"][i]),
                "micro_batch": int(a["micro_batch"][i]), "interleave": int(a["interleave"][i]),
                "zero_stage": int(a["zero_stage"][i]), "sp": bool(a["sp"][i]),
                "recompute": memory.RECOMPUTE_MODES[int(a["rc"][i])],
                "memory_gib": float(a["memory"][i] / GIB),
                "step_s": float(a["step_s"][i]),
                "slower_pct": 100 * (float(a["step_s"][i]) / best - 1),
                "tokens_per_s": float(a["tokens_per_s"][i]),
                "mfu_pct": 100 * float(a["mfu"][i]),
            })
        return rows

    def best_by(self, *names: str) -> dict[tuple[int, ...], int]:
        """For each combination of the plan fields ``names`` (e.g. ``"tp", "pp"``) among the
        fitting plans, the rank of the fastest one."""
        a, out = self.arrays, {}
        for name in names:
            check_choice("field", name, ("tp", "pp", "dp", "micro_batch", "interleave",
                                         "zero_stage", "sp", "rc"))
        keys = np.stack([np.asarray(a[n])[self.order] for n in names], axis=1).astype(int)
        for rank, key in enumerate(map(tuple, keys)):
            out.setdefault(key, rank)
        return out

    def rank_where(self, **conditions: int) -> int | None:
        """Rank of the fastest fitting plan whose fields equal ``conditions`` (``pp=1``).

        None if no fitting plan has them.
        """
        mask = np.ones(self.order.size, dtype=bool)
        for name, value in conditions.items():
            check_choice("field", name, ("tp", "pp", "dp", "micro_batch", "interleave",
                                         "zero_stage", "sp", "rc"))
            mask &= np.asarray(self.arrays[name])[self.order] == value
        hits = np.flatnonzero(mask)
        return int(hits[0]) if hits.size else None

    def share_where(self, rank_limit: int = 10) -> dict[str, float]:
        """Among the top plans: the share with TP inside a node, PP > 1, DP > 1."""
        idx = self.order[:rank_limit]
        a = self.arrays
        gpn = self.network.gpus_per_node
        return {"tp_within_node": float(np.mean(a["tp"][idx] <= gpn)),
                "pp_over_1": float(np.mean(a["pp"][idx] > 1)),
                "dp_over_1": float(np.mean(a["dp"][idx] > 1))}


def _enumerate(m: ModelSpec, n: int, B: int, gpn: int, *, max_micro_batch: int,
               max_interleave: int, zero_stages: Sequence[int], recompute: Sequence[str],
               sp_options: Sequence[bool], uneven: bool, allow_tp_across_nodes: bool,
               ) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Every valid plan of ``n`` GPUs and batch ``B`` as arrays, and why others were dropped."""
    why = {"tp": 0, "pp": 0, "batch": 0}
    outer = []  # (tp, pp, dp, b, v)
    for t in _divisors(n):
        heads_ok = m.n_heads % t == 0 and (m.kv_heads % t == 0 or t % m.kv_heads == 0)
        node_ok = (t <= gpn and gpn % t == 0) or (allow_tp_across_nodes and t % gpn == 0)
        if not (heads_ok and node_ok):
            why["tp"] += 1
            continue
        for p in _divisors(n // t):
            if p > m.n_layers or (m.n_layers % p and not uneven):
                why["pp"] += 1
                continue
            d = n // (t * p)
            if B % d:
                why["batch"] += 1
                continue
            per_replica = B // d
            for b in _divisors(per_replica):
                if b > max_micro_batch:
                    break
                n_mb = per_replica // b
                vs = [1]
                if p > 1 and n_mb % p == 0:
                    per_stage = -(-m.n_layers // p)  # the busiest stage's layers
                    vs += [v for v in range(2, max_interleave + 1) if per_stage % v == 0]
                outer.extend((t, p, d, b, v) for v in vs)
    if not outer:
        return {}, why
    base = np.array(outer, dtype=np.int64)
    inner = np.array([(z, int(sp), memory.RECOMPUTE_MODES.index(r))
                      for z in zero_stages for sp in sp_options for r in recompute],
                     dtype=np.int64)
    grid = np.repeat(base, len(inner), axis=0)
    opts = np.tile(inner, (len(base), 1))
    t, p, d, b, v = grid.T
    z, sp, rc = opts.T
    keep = ((sp == 0) | (t > 1)) & ((z < 2) | (p == 1)) & ((z == 0) | (d > 1))
    arrays = {"tp": t[keep], "pp": p[keep], "dp": d[keep], "micro_batch": b[keep],
              "interleave": v[keep], "zero_stage": z[keep], "sp": sp[keep].astype(bool),
              "rc": rc[keep]}
    return arrays, why


def search(
    model: str | ModelSpec,
    gpu: str | GPU,
    n_gpus: int,
    global_batch: int,
    network: Fabric | None = None,
    *,
    seq_len: int | None = None,
    gpus_per_node: int | None = None,
    calibration: Calibration | None = None,
    recipe: str | memory.PrecisionRecipe = "mixed-adam",
    tokens: float | None = None,
    max_micro_batch: int = 16,
    max_interleave: int = 8,
    zero_stages: Iterable[int] = (0, 1, 2, 3),
    recompute: Iterable[str] = memory.RECOMPUTE_MODES,
    sequence_parallel: Iterable[bool] = (False, True),
    flash_attention: bool = False,
    uneven_layers: bool = False,
    allow_tp_across_nodes: bool = False,
) -> SearchResult:
    """Evaluate every valid plan of ``n_gpus`` GPUs at once and rank the ones that fit.

    Parameters
    ----------
    model, gpu, n_gpus, global_batch
        What to train, on what, and the batch in sequences.
    network
        A :class:`~scaleout.data_parallel.Fabric`; default :func:`default_network`
        with ``gpus_per_node`` (the NVLink domain; the GPU's usual one if None).
    seq_len, calibration, recipe, tokens
        As in :func:`evaluate`.
    max_micro_batch, max_interleave
        Largest micro-batch size and model chunks per GPU tried.
    zero_stages, recompute, sequence_parallel
        The options tried (all by default).
    flash_attention
        Attention kernels that never store the score matrices.
    uneven_layers, allow_tp_across_nodes
        Relax the validity rules (see the module docstring).

    Raises
    ------
    NoPlanError
        (a ``ValueError``) when no layout of ``n_gpus`` is valid, saying which rule
        removed them, or when none fits, naming the closest plan and its shortfall.
    """
    m = catalog.model(model)
    g = catalog.gpu(gpu)
    n = check_int("n_gpus", n_gpus)
    B = check_int("global_batch", global_batch)
    if tokens is not None:
        tokens = check_positive("tokens", tokens)
    for flag, value in (("flash_attention", flash_attention), ("uneven_layers", uneven_layers),
                        ("allow_tp_across_nodes", allow_tp_across_nodes)):
        check_bool(flag, value)
    if network is None:
        network = default_network(g, gpus_per_node)
    elif gpus_per_node is not None and gpus_per_node != network.gpus_per_node:
        raise ValueError(f"gpus_per_node={gpus_per_node} disagrees with the network's "
                         f"{network.gpus_per_node}; give one of them")
    zs = sorted({check_int("zero_stages", z, minimum=0, maximum=3) for z in zero_stages})
    rcs = [check_choice("recompute", r, memory.RECOMPUTE_MODES) for r in recompute]
    sps = sorted({check_bool("sequence_parallel", x) for x in sequence_parallel})
    if not zs or not rcs or not sps:
        raise ValueError("zero_stages, recompute and sequence_parallel must each offer at "
                         "least one option")
    ctx = _context(m, g, network, calibration, recipe, seq_len, B)
    arrays, why = _enumerate(
        m, n, B, network.gpus_per_node, max_micro_batch=check_int("max_micro_batch",
                                                                  max_micro_batch),
        max_interleave=check_int("max_interleave", max_interleave), zero_stages=zs,
        recompute=rcs, sp_options=sps, uneven=uneven_layers,
        allow_tp_across_nodes=allow_tp_across_nodes)
    if not arrays:
        raise NoPlanError(_no_layout_message(m, n, B, network.gpus_per_node, why))
    flash = np.full(arrays["tp"].shape, bool(flash_attention))
    arrays["flash"] = flash
    out = _kernel(ctx, arrays["tp"], arrays["pp"], arrays["dp"], arrays["micro_batch"],
                  arrays["interleave"], arrays["zero_stage"], arrays["sp"], arrays["rc"],
                  flash, uneven=uneven_layers)
    arrays.update(out)
    arrays.update(_throughput(ctx, n, out["step_s"], arrays["rc"]))
    fits = arrays["memory"] <= arrays["capacity"]
    idx = np.flatnonzero(fits)
    order = idx[np.lexsort((arrays["memory"][idx], arrays["step_s"][idx]))]
    result = SearchResult(m.name, g.name, n, B, ctx.seq_len, network, ctx.calibration,
                          ctx.recipe.name, arrays, order, tokens, uneven_layers,
                          allow_tp_across_nodes, bool(flash_attention), m)
    if not order.size:
        i = int(np.argmin(arrays["memory"]))
        short = (arrays["memory"][i] - arrays["capacity"][i]) / GIB
        plan = Plan(tp=int(arrays["tp"][i]), pp=int(arrays["pp"][i]), dp=int(arrays["dp"][i]),
                    micro_batch=int(arrays["micro_batch"][i]), global_batch=B,
                    zero_stage=int(arrays["zero_stage"][i]), sp=bool(arrays["sp"][i]),
                    recompute=memory.RECOMPUTE_MODES[int(arrays["rc"][i])],
                    interleave=int(arrays["interleave"][i]), flash_attention=flash_attention,
                    seq_len=ctx.seq_len)
        closest = evaluate(m, g, plan, network, calibration=ctx.calibration, recipe=recipe,
                           uneven_layers=uneven_layers,
                           allow_tp_across_nodes=allow_tp_across_nodes)
        raise NoPlanError(
            f"{m.name} fits on none of the {result.n_evaluated:,} valid layouts of {n:,} × "
            f"{g.name} ({g.hbm_gib:g} GiB each): the closest, {plan.label}, needs "
            f"{closest.memory_bytes / GIB:.1f} GiB per GPU, {short:.1f} GiB short. Add GPUs, "
            f"or a GPU with more memory.", closest)
    return result


def _no_layout_message(m: ModelSpec, n: int, B: int, gpn: int, why: dict[str, int]) -> str:
    """Why no plan of ``n`` GPUs is valid, naming the rule that removed the most."""
    reasons = []
    if why["tp"]:
        reasons.append(f"tensor-parallel sizes must divide both the {m.n_heads} heads and the "
                       f"{gpn} GPUs per node")
    if why["pp"]:
        reasons.append(f"pipeline sizes must divide the {m.n_layers} layers")
    if why["batch"]:
        reasons.append(f"the data-parallel size n/(tp·pp) must divide global_batch={B}")
    return (f"no layout of n_gpus={n:,} is valid for {m.name} with global_batch={B}: "
            + "; ".join(reasons) + ". Try a GPU count with more small factors (a multiple of "
            f"{gpn}) or a global batch divisible by it.")


# =========================================================================== explanations
_PART_WORDS = {
    "forward": "forward compute", "backward": "backward compute",
    "recompute": "recomputation", "tp_comm": "tensor-parallel all-reduces",
    "bubble": "pipeline bubble", "p2p": "pipeline sends", "dp_comm": "data-parallel/ZeRO "
    "communication", "optimizer": "optimizer step",
}


def explain(result: SearchResult, k: int = 3) -> str:
    """Plain sentences: why the best plan wins and what the next ``k`` give up.

    The best plan's step is broken into its parts (the biggest first); each
    runner-up is compared part by part and the parts that grew most are named.
    """
    if not result.n_fit:
        return "No plan fits."
    a = result.arrays
    best = result.order[0]
    step = float(a["step_s"][best])
    lines = [f"Best: {result.plan(0).label} — {step:.3g} s per iteration, "
             f"MFU {100 * float(a['mfu'][best]):.1f}%, "
             f"{float(a['memory'][best]) / GIB:.1f} of {result.arrays['capacity'][best] / GIB:.0f}"
             f" GiB per GPU."]
    parts = sorted(STEP_PARTS, key=lambda p: -float(a[p][best]))
    shares = ", ".join(f"{_PART_WORDS[p]} {100 * float(a[p][best]) / step:.0f}%"
                       for p in parts if float(a[p][best]) / step >= 0.005)
    lines.append(f"Its time goes to: {shares}.")
    gpn = result.network.gpus_per_node
    t = int(a["tp"][best])
    lines.append(
        f"Tensor parallelism {t} {'stays inside' if t <= gpn else 'crosses'} the {gpn}-GPU "
        f"NVLink domain; {int(a['pp'][best])} pipeline stage(s) split the layers; "
        f"{int(a['dp'][best])} data-parallel replica(s) split the batch.")
    for rank in range(1, min(k + 1, result.n_fit)):
        i = result.order[rank]
        other = float(a["step_s"][i])
        deltas = sorted(((float(a[p][i]) - float(a[p][best]), p) for p in STEP_PARTS),
                        reverse=True)
        worse = [f"+{d:.2g} s {_PART_WORDS[p]}" for d, p in deltas[:2] if d > 0.001 * step]
        lines.append(f"#{rank + 1} {result.plan(rank).label}: {100 * (other / step - 1):.1f}% "
                     f"slower" + (f" ({', '.join(worse)})" if worse else "") + ".")
    return "\n".join(lines)


# =========================================================================== validation
@dataclass(frozen=True)
class ValidationRow:
    """One published measurement against the planner's prediction."""

    table: str
    case: str
    quantity: str
    published: float
    predicted: float

    @property
    def error_pct(self) -> float:
        """Signed error of the prediction, percent of the published value."""
        return 100 * (self.predicted / self.published - 1)


def validate(calibration: Calibration | None = None) -> list[ValidationRow]:
    """Predict the 18 published cases with one calibration.

    * Korthikanti et al. 2022 (arXiv 2205.05198), Table 5: seconds per iteration of
      four models on A100 80GB (configurations of their Table 3, in
      ``data/published/korthikanti_table5.toml``), with full recomputation and with
      sequence parallelism + selective recomputation.
    * Narayanan et al. 2021 (arXiv 2104.04473), Table 1: achieved TFLOP/s per GPU
      (Eq. 3's FLOPs over the iteration time) of ten models, 32 to 3,072 A100s, full
      recomputation. The table does not give the micro-batch size or the schedule:
      they are taken as 1 and plain (non-interleaved) 1F1B.
    """
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    rows = []
    kt = catalog.published("korthikanti_table5")
    for run in kt["run"]:
        m = catalog.model(run["model"])
        g = catalog.gpu("A100-SXM4-80GB")
        for key, rc, sp, label in (("seconds_full_recompute", "full", False, "full recompute"),
                                   ("seconds_selective_sp", "selective", True,
                                    "SP + selective")):
            plan = Plan(tp=run["tp"], pp=run["pp"], dp=run["gpus"] // (run["tp"] * run["pp"]),
                        micro_batch=run["micro_batch"], global_batch=run["global_batch"],
                        sp=sp, recompute=rc, interleave=run["interleave"])
            r = evaluate(m, g, plan, default_network(g), calibration=cal)
            rows.append(ValidationRow("Korthikanti et al. 2022, Table 5",
                                      f"{m.name}, {label}", "s/iteration", run[key], r.step_s))
    mt = catalog.published("megatron_lm_table1")
    for run in mt["run"]:
        m = catalog.model(run["model"])
        g = catalog.gpu("A100-SXM4-80GB")
        d = run["gpus"] // (run["tp"] * run["pp"])
        plan = Plan(tp=run["tp"], pp=run["pp"], dp=d, micro_batch=1, global_batch=run["batch"],
                    recompute="full")
        r = evaluate(m, g, plan, default_network(g), calibration=cal)
        rows.append(ValidationRow("Narayanan et al. 2021, Table 1",
                                  f"{m.name} on {run['gpus']:,} GPUs", "TFLOP/s per GPU",
                                  run["achieved_tflops_per_gpu"], r.megatron_tflops_per_gpu))
    return rows


def validation_summary(rows: Sequence[ValidationRow]) -> dict[str, dict[str, float]]:
    """Mean and worst absolute error (percent) per table."""
    out: dict[str, dict[str, float]] = {}
    for table in dict.fromkeys(r.table for r in rows):
        errs = np.abs([r.error_pct for r in rows if r.table == table])
        out[table] = {"cases": int(errs.size), "mean_abs_pct": float(errs.mean()),
                      "worst_abs_pct": float(errs.max())}
    return out


def validation_table(rows: Sequence[ValidationRow] | None = None) -> str:
    """Predicted against published as a plain-text table, with each table's mean and worst."""
    rows = validate() if rows is None else rows
    width = max(len(r.case) for r in rows)
    out = []
    for table, stats in validation_summary(rows).items():
        out.append(f"{table}  ({rows[[r.table for r in rows].index(table)].quantity})")
        out.append(f"  {'case':<{width}}  {'published':>10}  {'predicted':>10}  {'error':>7}")
        for r in rows:
            if r.table == table:
                out.append(f"  {r.case:<{width}}  {r.published:>10.2f}  {r.predicted:>10.2f}  "
                           f"{r.error_pct:>+6.1f}%")
        out.append(f"  mean |error| {stats['mean_abs_pct']:.1f}%, worst "
                   f"{stats['worst_abs_pct']:.1f}% over {stats['cases']} cases")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _objective(rows: Sequence[ValidationRow]) -> float:
    """Root-mean-square of the log errors over all cases: every case weighs the same."""
    return float(np.sqrt(np.mean(np.log([r.predicted / r.published for r in rows]) ** 2)))


def fit_calibration(
    gemm_efficiency: Sequence[float] = (0.70, 0.72, 0.74, 0.76, 0.78, 0.80, 0.82),
    gemm_half_dim: Sequence[float] = (0.0, 25.0, 50.0, 75.0, 100.0),
    nonmatmul_traffic: Sequence[float] = (6.0, 7.0, 8.0, 9.0, 10.0),
    collective_efficiency: Sequence[float] = (0.6, 0.7, 0.8, 0.9),
) -> tuple[Calibration, float]:
    """The grid point that minimises the RMS log error of :func:`validate`; and that error.

    How :data:`DEFAULT_CALIBRATION` was obtained (a test re-runs it): every
    combination of the four grids, all 18 published cases each.
    """
    best: tuple[float, Calibration] | None = None
    for e in gemm_efficiency:
        for x in gemm_half_dim:
            for k in nonmatmul_traffic:
                for c in collective_efficiency:
                    cal = Calibration(float(e), float(x), float(k), float(c))
                    score = _objective(validate(cal))
                    if best is None or score < best[0]:
                        best = (score, cal)
    assert best is not None
    return best[1], best[0]


