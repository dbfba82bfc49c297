"""Mixture of experts and expert parallelism: who holds which expert, what the all-to-all
moves and costs, how uneven routing and capacity limits change the work, what each GPU holds.

A mixture-of-experts (MoE) layer replaces the dense MLP by ``E`` experts; a router sends
each token to ``k`` of them (Shazeer et al. 2017, "Outrageously Large Neural Networks",
arXiv 1701.06538; Fedus et al. 2022, "Switch Transformers", JMLR 23). *Expert
parallelism* (EP, Lepikhin et al. 2021, "GShard", arXiv 2006.16668, Sec. 2) places the
experts on ``ep`` GPUs, ``E/ep`` each, so every MoE layer needs two all-to-alls: a
**dispatch** that sends each token to the GPUs of its experts, and a **combine** that
brings the experts' outputs back; the backward pass runs both again in reverse. Its bytes
are ``tokens × h × k × bytes`` per direction (:func:`a2a_bytes`), most of them leaving
the GPU, which is why MoE training wants large scale-up domains (notebook 13).

Sources
-------
* The all-to-all's bytes and the layer's structure: GShard Sec. 2.2-3; DeepSeek-AI,
  "DeepSeek-V3 Technical Report" (arXiv 2412.19437), Sec. 3.2.2 (dispatch over
  InfiniBand once per node, forwarded over NVLink; node-limited routing: each token to at
  most ``M = 4`` nodes, Sec. 2.1.2) and Sec. 3.3.4 (dispatch in FP8, combine in BF16).
* NCCL's all-to-all is a group of point-to-point sends and receives
  (``ncclSend``/``ncclRecv`` between every pair, NCCL docs "Point-to-point
  communication"; nccl-tests' ``alltoall_perf``, busbw = algbw (n-1)/n): each GPU's bytes
  to peers in its node cross NVLink, those to other nodes its network port, at the same
  time (:func:`all_to_all_time`).
* Capacity factor and dropped tokens: GShard Sec. 2.2 ("expert capacity"), Switch
  Transformers Sec. 2.2 (``capacity = factor × tokens × k / E``).
* Parallel folding (attention's TP × CP × DP and the experts' ETP × EP × EDP mapped onto
  the same GPUs of a pipeline stage): Liu et al. 2025, "MoE Parallel Folding:
  Heterogeneous Parallelism Mappings for Efficient Large-Scale MoE Model Training with
  Megatron Core" (arXiv 2504.14960), Sec. 3.
* The host-bound expert loop (:func:`expert_loop_exposed_s`): GEMMs per local expert counted
  from Megatron-Core's ``TEGroupedMLP`` and Transformer Engine's ``GroupedLinear``
  (:data:`EXPERT_LOOP_GEMMS`); the host cost of each, measured by NVIDIA for Transformer
  Engine's per-expert cuBLASLt loop against one grouped launch (``data/host_overheads.toml``);
  the other launches Megatron-Core issues from Python in the same stretch (:data:`MOE_HOST_OPS`,
  counted from its token dispatcher and ``TEGroupedMLP``), each at the host time of one eager
  PyTorch operator measured on a DGX H100 host (Transformer Engine issue #2053).
* The whole stretch between two of the host's waits (:func:`layer_host_calls`,
  :data:`LAYER_HOST_CALLS`): one transformer layer's Transformer Engine module calls and eager
  operators counted from Megatron-Core's ``TransformerLayer``, ``SelfAttention`` /
  ``MLASelfAttention``, ``TopKRouter`` and token dispatcher (Megatron-LM 92c8482e), each
  priced on its system's host CPU (:func:`host_call_s`: Transformer Engine issue #2053's
  table, a ``torch.nn.Linear`` and a ``te.Linear`` forward timed on the host of a DGX H100, a
  GB200 and a GH200).

Every function takes numpy arrays where a planner would sweep (token counts, EP sizes),
checks its inputs and raises ``ValueError`` naming the parameter, the value and what is
allowed.

Taught in ``notebooks/13_mixture_of_experts.ipynb``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import catalog, memory
from .catalog import ModelSpec
from .checks import (
    check_array,
    check_bool,
    check_choice,
    check_divides,
    check_int,
    check_positive,
    check_range,
    divisors,
)
from .collectives import _link

__all__ = [
    "CUDA_GRAPH_SCOPES",
    "DISPATCHERS",
    "EXPERT_LOOP_GEMMS",
    "LAYER_HOST_CALLS",
    "MOE_HOST_OPS",
    "CapacityOutcome",
    "Fold",
    "HostCallCost",
    "HostOpCost",
    "a2a_bytes",
    "all_to_all_time",
    "capacity_outcome",
    "check_ep",
    "check_graph_scopes",
    "dispatch_copies",
    "ep_sizes",
    "expected_max_load",
    "expected_nodes_per_token",
    "expected_rank_imbalance",
    "expert_loads",
    "expert_loop_cost",
    "expert_loop_exposed_s",
    "expert_params_per_gpu",
    "expert_weight_bytes",
    "experts_per_gpu",
    "fold",
    "fold_groups",
    "host_call_s",
    "host_op_cost",
    "host_stretch_exposed_s",
    "layer_comm_time",
    "layer_flops",
    "layer_host_calls",
    "layer_seconds",
    "model_state_per_gpu",
    "moe_host_ops",
    "permutation_bytes",
    "placement",
    "popularity",
    "rank_imbalance",
    "route_tokens",
    "tokens_per_local_expert",
]


def _out(value):
    return float(value) if np.ndim(value) == 0 else value


# =========================================================================== placement
def check_ep(model: str | ModelSpec, ep: int) -> int:
    """``ep`` if it can split ``model``'s experts evenly over its GPUs.

    Raises
    ------
    ValueError
        ``ep=3 must divide experts=256; allowed: 1, 2, 4, ...``, or ``ep > 1`` for a
        dense model.
    """
    from . import layout

    m = catalog.model(model)
    ep = check_int("ep", ep)
    # the planner's rules (scaleout.layout.RULES), on a layout whose stage holds ep GPUs
    layout.check(layout.Plan(dp=ep, ep=ep), layout.Facts.of(m),
                 only=("ep_needs_moe", "ep_experts"))
    return ep


def ep_sizes(model: str | ModelSpec, max_ep: int | None = None) -> list[int]:
    """Expert-parallel sizes that split ``model``'s experts evenly (divisors of ``E``)."""
    m = catalog.model(model)
    options = divisors(m.experts) if m.is_moe else [1]
    return [e for e in options if max_ep is None or e <= max_ep]


def experts_per_gpu(experts, ep):
    """Routed experts each GPU of an expert-parallel group holds: ``E / ep``.

    Array-friendly; every ``ep`` must divide ``experts``.
    """
    E = check_array("experts", experts, integer=True, minimum=1)
    ep = check_array("ep", ep, integer=True, minimum=1)
    bad = np.mod(E, ep) != 0
    if np.any(bad):
        e_bad = int(np.broadcast_to(ep, bad.shape)[bad].ravel()[0])
        E_bad = int(np.broadcast_to(E, bad.shape)[bad].ravel()[0])
        check_divides("ep", e_bad, "experts", E_bad)
    return _out(E / ep)


def placement(experts: int, ep: int) -> np.ndarray:
    """Which experts each GPU holds: row ``r`` lists the experts of EP rank ``r``.

    Contiguous blocks (expert ``e`` on rank ``e // (E/ep)``), as Megatron-Core's
    ``MoELayer`` numbers its local experts.
    """
    E = check_int("experts", experts)
    ep = check_int("ep", ep)
    check_divides("ep", ep, "experts", E)
    return np.arange(E).reshape(ep, E // ep)


# =========================================================================== routing
def popularity(experts: int, skew: float = 0.0) -> np.ndarray:
    """Share of the routing decisions each expert receives: Zipf-like ``p_e ∝ (e + 1)^-skew``.

    ``skew = 0`` is a perfectly balanced router (what load-balancing losses and
    DeepSeek-V3's bias terms aim at); larger ``skew`` concentrates tokens on a few
    experts, the failure those mechanisms fight (Switch Transformers Sec. 2.2). A
    teaching model of imbalance, not a fit to any router.
    """
    E = check_int("experts", experts)
    skew = check_range("skew", skew, 0.0, 4.0)
    p = (np.arange(E) + 1.0) ** -skew
    return p / p.sum()


def route_tokens(n_tokens: int, experts: int, top_k: int, *, skew: float = 0.0,
                 seed: int = 0) -> np.ndarray:
    """A router's choices for ``n_tokens`` tokens: ``(n_tokens, top_k)`` distinct expert ids.

    Each token draws ``top_k`` different experts with probabilities :func:`popularity`
    (without replacement), from a seeded generator: the drawing and the load histogram
    of notebook 13. ``top_k`` must be at most ``experts``.
    """
    n = check_int("n_tokens", n_tokens, maximum=10**6)
    E = check_int("experts", experts)
    k = check_int("top_k", top_k)
    if k > E:
        raise ValueError(f"top_k={k} must be at most experts={E} (a token's experts are "
                         f"distinct); allowed: 1 to {E}")
    p = popularity(E, skew)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    # Gumbel top-k: the k largest of log p + Gumbel noise are a draw without replacement
    u = np.maximum(rng.random((n, E), dtype=np.float32), np.finfo(np.float32).tiny)
    gumbel = -np.log(-np.log(u))
    keys = np.log(p).astype(np.float32)[None, :] + gumbel
    top = np.argpartition(-keys, k - 1, axis=1)[:, :k]  # the k largest, unordered
    order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def expert_loads(n_tokens: int, experts: int, top_k: int, *, skew: float = 0.0,
                 seed: int = 0) -> np.ndarray:
    """Tokens each expert receives from one routing of ``n_tokens`` tokens (sums to ``n k``)."""
    choice = route_tokens(n_tokens, experts, top_k, skew=skew, seed=seed)
    return np.bincount(choice.ravel(), minlength=int(experts))


def expected_max_load(tokens, experts: int, top_k: int):
    """Expected load of the busiest expert under a perfectly balanced random router.

    Each expert's load is about ``Binomial(n k, 1/E)``: mean ``μ = n k / E``, standard
    deviation ``σ = sqrt(n k (1/E)(1 - 1/E))``; the busiest of ``E`` is
    ``μ + σ E[max of E standard normals]`` (normal approximation;
    :func:`scaleout.reliability.expected_max_normal`). Its ratio to ``μ`` is the
    imbalance a balanced router still leaves: large for few tokens per expert, small for
    many. Array-friendly in ``tokens``.
    """
    from .reliability import expected_max_normal

    n = check_array("tokens", tokens, minimum=1)
    E = check_int("experts", experts)
    k = check_int("top_k", top_k, maximum=E)
    mu = n * k / E
    sigma = np.sqrt(n * k * (1 / E) * (1 - 1 / E))
    return _out(mu + sigma * float(expected_max_normal(E)))


def tokens_per_local_expert(tokens, ep, top_k: int, experts: int):
    """Tokens one local expert multiplies per micro-batch: ``t × ep × k / E``.

    Each of the ``ep`` GPUs of an expert-parallel group routes ``t`` tokens to ``k``
    experts each; after the dispatch all-to-all a GPU holds ``E/ep`` experts and receives,
    on average, ``t × ep × k / ep`` routed copies, ``t × ep × k / E`` per local expert
    (Megatron-Core's ``MoEAlltoAllTokenDispatcher`` sorts them by local expert for the
    grouped GEMM, ``megatron/core/transformer/moe/token_dispatcher.py``). That count, not
    the hidden size, is the row dimension of every expert GEMM: DeepSeek-V3 with 4,096
    tokens a GPU over EP 8 gives its 32 local experts 1,024 tokens each. Array-friendly in
    ``tokens`` and ``ep`` (each ``ep`` must divide ``experts``).
    """
    t = check_array("tokens", tokens)
    E = check_int("experts", experts)
    k = check_int("top_k", top_k, maximum=E)
    ep = check_array("ep", ep, integer=True, minimum=1)
    experts_per_gpu(E, ep)
    return _out(t * ep * k / E)


#: E[max of n standard normals] by n, filled as :func:`expected_rank_imbalance` meets them.
_MAX_NORMAL: dict[int, float] = {}


def expected_rank_imbalance(tokens, experts: int, top_k: int, ep):
    """Expected load of the busiest EP rank over the mean under uniform random routing.

    A balanced router still deals tokens out at random: Megatron-Core's
    ``moe_router_force_load_balancing`` (the setting of NVIDIA's MoE benchmarks) replaces
    the router's logits by independent normal draws (``RandomSTE`` in
    ``megatron/core/transformer/moe/moe_utils.py``), so each token's ``k`` experts are ``k``
    distinct uniform draws from ``E``. The copies a token sends to a rank holding ``E/ep``
    experts are hypergeometric, variance ``k (1/ep)(1 - 1/ep)(E - k)/(E - 1)``; over the
    ``ep t`` tokens routed by an expert-parallel group (``t`` a GPU) a rank's load has mean
    ``μ = t k`` and variance ``σ² = t k (1 - 1/ep)(E - k)/(E - 1)``, and the busiest of
    ``ep`` ranks is about ``μ + σ E[max of ep standard normals]`` (normal approximation, the
    balls-into-bins bound; :func:`scaleout.reliability.expected_max_normal`). The busiest
    rank sets the pace of the expert GEMMs and of the all-to-all's receive side in a
    dropless layer. Returns ``(μ + σ E[max])/μ`` (1 for ``ep = 1``). Array-friendly in
    ``tokens`` and ``ep``.
    """
    from .reliability import expected_max_normal

    t = check_array("tokens", tokens, minimum=1)
    E = check_int("experts", experts)
    k = check_int("top_k", top_k, maximum=E)
    ep = check_array("ep", ep, integer=True, minimum=1)
    experts_per_gpu(E, ep)
    present = np.flatnonzero(np.bincount(np.ravel(ep).astype(np.int64)))  # distinct sizes
    missing = [int(n) for n in present if int(n) not in _MAX_NORMAL]
    if missing:  # one integration for the sizes not seen before in this process
        got = np.atleast_1d(expected_max_normal(np.array(missing, dtype=np.int64)))
        _MAX_NORMAL.update(zip(missing, map(float, got), strict=True))
    table = np.zeros(int(present[-1]) + 1)
    table[present] = [_MAX_NORMAL[int(n)] for n in present]
    z = table[np.asarray(ep, dtype=np.int64)]
    mu = t * k
    var = t * k * (1 - 1 / ep) * ((E - k) / (E - 1) if E > 1 else 0.0)
    return _out(1.0 + np.sqrt(var) * z / mu)


def expert_weight_bytes(local_params, operand_bytes: float, grad_bytes: float
                        ) -> dict[str, float]:
    """HBM bytes the expert GEMMs of one MoE layer move for their weights, per micro-batch.

    Every local expert's weights are read once by each GEMM that uses them, however few
    tokens it holds: the forward GEMM and the backward data-gradient GEMM read the weights
    at the GEMMs' operand width (``operand_bytes``: 2 in BF16, 1 for an FP8 copy); the
    weight-gradient GEMM accumulates into the stored gradient, reading and writing it
    (``2 grad_bytes``: Megatron-Core's ``gradient_accumulation_fusion``, Transformer
    Engine's ``GroupedLinear(fuse_wgrad_accumulation=True)`` adding into ``main_grad``).
    With few tokens per expert these bytes, not the FLOPs, set the GEMMs' time (the
    roofline: Williams et al. 2009, "Roofline", CACM 52(4)). Returns ``{"forward",
    "dgrad", "wgrad"}`` bytes. Array-friendly in ``local_params``.
    """
    n = check_array("local_params", local_params)
    w = check_positive("operand_bytes", operand_bytes, maximum=8)
    g = check_positive("grad_bytes", grad_bytes, maximum=8)
    return {"forward": _out(n * w), "dgrad": _out(n * w), "wgrad": _out(2 * n * g)}


#: How a framework moves an MoE layer's tokens between the router and the experts
#: (:func:`permutation_bytes`): Megatron-Core's ``"alltoall"`` token dispatcher, its flex
#: dispatcher on DeepEP (``"deepep"``), or on HybridEP (``"hybridep"``).
DISPATCHERS = ("alltoall", "deepep", "hybridep")


def _distinct_ranks(experts: int, top_k: int, ep) -> np.ndarray:
    """The expected number of distinct EP ranks among a token's ``top_k`` experts
    (:func:`expected_nodes_per_token` over ``ep`` ranks), computed once per distinct ``ep``."""
    sizes, where = np.unique(np.asarray(ep, dtype=np.int64), return_inverse=True)
    return np.atleast_1d(expected_nodes_per_token(experts, top_k, sizes))[where].reshape(
        np.shape(ep))


def permutation_bytes(tokens, hidden: int, top_k: int, experts: int, ep, *,
                      dispatcher: str = "alltoall", imbalance=1.0,
                      dispatch_bytes: float = 2.0, combine_bytes: float = 2.0,
                      grad_bytes: float = 2.0) -> dict[str, float | np.ndarray]:
    """HBM bytes one GPU's token permutations move in one MoE layer and micro-batch.

    A dropless MoE layer lays each token's ``k`` copies out expert by expert for the grouped
    expert GEMMs and sums the ``k`` outputs back afterwards; outside the communication
    kernels that is a memory-bound copy (Megatron-Core's ``moe_permute_fusion`` kernels,
    Transformer Engine's ``moe_permute_with_probs``/``moe_unpermute`` on the routing mask,
    ``transformer_engine/pytorch/permutation.py`` at v2.9, commit 70f53666). Counted from
    the token dispatchers of Megatron-Core at commit 92c8482e (the submodule of Megatron
    Bridge 5776a6d9, the 25.11 container), ``megatron/core/transformer/moe/
    token_dispatcher.py``, for the ``t`` tokens a GPU routes, ``h`` values a row,
    ``R = t k ρ`` copies received by the busiest rank (:func:`expected_rank_imbalance`):

    * ``"alltoall"`` (``MoEAlltoAllTokenDispatcher``): **permute** before the all-to-all
      reads each token once and writes its ``k`` copies, ``(t + t k) h`` values; with more
      than one local expert (``E/ep > 1``) the received chunks are **sorted** by local expert
      before the experts and **restored** after (``sort_chunks_by_idxs``), a read and a write
      of ``R`` rows each; **unpermute** after the combine reads the ``k`` copies and writes
      their sum, ``(t k + t) h`` (the router's probabilities are applied inside the experts'
      activation, so it is a plain sum);
    * ``"deepep"`` (``_DeepepManager``): DeepEP's dispatch sends a token once to each rank
      holding one of its experts and its combine sums on the sender, inside the
      communication kernels; the receiver **permutes** the ``t d ρ`` token rows it received
      into its ``R`` expert copies and **unpermutes** them back, ``(t d ρ + R) h`` each, with
      ``d`` the expected number of distinct EP ranks among a token's experts
      (:func:`expected_nodes_per_token` over ``ep`` ranks);
    * ``"hybridep"`` (``_HybridEPManager``): both permutations fused into the dispatch and
      combine kernels (their bytes move with the all-to-all's): nothing here.

    The backward pass runs each pass again in reverse on the gradients (``grad_bytes``).
    Forward passes move the hidden states at ``dispatch_bytes`` before the experts (16-bit
    in Megatron-Core, which quantizes inside the experts; FP8 where a recipe dispatches in
    FP8) and ``combine_bytes`` after them. Array-friendly in ``tokens``, ``ep`` and
    ``imbalance``.

    Returns the forward bytes of each pass (``"permute"``, ``"sort"``, ``"unsort"``,
    ``"unpermute"``) and ``"forward"``, ``"backward"``, ``"total"``.
    """
    t = check_array("tokens", tokens)
    h = check_int("hidden", hidden)
    E = check_int("experts", experts)
    k = check_int("top_k", top_k, maximum=E)
    ep = check_array("ep", ep, integer=True, minimum=1)
    n_local = experts_per_gpu(E, ep)
    check_choice("dispatcher", dispatcher, DISPATCHERS)
    rho = check_array("imbalance", imbalance, minimum=1)
    bd = check_positive("dispatch_bytes", dispatch_bytes, maximum=8)
    bc = check_positive("combine_bytes", combine_bytes, maximum=8)
    g = check_positive("grad_bytes", grad_bytes, maximum=8)
    zero = np.zeros(np.broadcast(t, ep, rho).shape)
    received = t * k * rho * h  # values of the busiest rank's copies after the dispatch
    if dispatcher == "alltoall":
        own, copies = t * h, t * k * h
        sorting = np.where(np.asarray(n_local) > 1, 1.0, 0.0)
        permute, unpermute = (own + copies) * bd + zero, (copies + own) * bc + zero
        sort, unsort = 2.0 * received * bd * sorting, 2.0 * received * bc * sorting
        backward = (2.0 * (own + copies) + 4.0 * received * sorting) * g
    elif dispatcher == "deepep":
        rows = t * _distinct_ranks(E, k, ep) * rho * h  # token rows the busiest rank receives
        permute, unpermute = (rows + received) * bd, (received + rows) * bc
        sort = unsort = zero
        backward = 2.0 * (rows + received) * g
    else:
        permute = sort = unsort = unpermute = backward = zero
    forward = permute + sort + unsort + unpermute
    return {"permute": _out(permute), "sort": _out(sort), "unsort": _out(unsort),
            "unpermute": _out(unpermute), "forward": _out(forward),
            "backward": _out(backward), "total": _out(forward + backward)}


#: GEMMs issued one by one per local expert, per MoE layer and micro-batch, when a framework
#: runs the experts as a loop of GEMMs (:attr:`scaleout.plan.frameworks.Framework.
#: expert_gemm_loop`). Counted from the code: Megatron-Core's ``TEGroupedMLP`` runs two
#: ``TEGroupedLinear`` (``linear_fc1``, ``linear_fc2``; ``megatron/core/transformer/moe/
#: experts.py`` at core_v0.15.0); Transformer Engine's ``_GroupedLinear`` calls
#: ``general_grouped_gemm`` once in its forward and twice in its backward (data gradient,
#: weight gradient; ``transformer_engine/pytorch/module/grouped_linear.py`` at v2.9), and each
#: call issues one cuBLASLt GEMM per expert (``multi_stream_cublas_gemm`` in
#: ``transformer_engine/common/gemm/cublaslt_gemm.cu``): 2 forward, 4 backward.
EXPERT_LOOP_GEMMS = {"forward": 2, "backward": 4}


@dataclass(frozen=True)
class HostCallCost(catalog.Entry):
    """A measured host cost of issuing GEMMs one at a time (``data/host_overheads.toml``)."""

    name: str = catalog.field_of("", "catalog name")
    what: str = catalog.field_of("", "what one call issues, and through which code")
    loop_ms: float = catalog.field_of("ms", "wall time with one GEMM issued per expert")
    single_ms: float = catalog.field_of("ms", "wall time of the same GEMMs in one launch")
    calls: int = catalog.field_of("", "GEMMs (experts) in the measured call")
    gpu: str = catalog.field_of("", "the GPU of the measurement")
    source: str = catalog.field_of("", "where the figures come from")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.single_ms >= self.loop_ms:
            raise ValueError(f"HostCallCost {self.name!r}: field 'single_ms' ({self.single_ms}) "
                             f"must be below 'loop_ms' ({self.loop_ms}): the loop's extra "
                             f"time is what is measured")

    @property
    def per_call_s(self) -> float:
        """Seconds each GEMM issued on its own adds: ``(loop − single) / calls``."""
        return (self.loop_ms - self.single_ms) * 1e-3 / self.calls


_host_calls = catalog.cached_entries("host_overheads.toml", "call", HostCallCost)


def expert_loop_cost(name: str = "te-multi-stream-cublaslt-gemm") -> HostCallCost:
    """The measured host cost of an expert loop, by name or alias (``data/host_overheads.toml``).

    Raises
    ------
    ValueError
        An unknown name (with the close ones), or a malformed file naming file, entry, field.
    """
    return catalog.lookup("host call cost", _host_calls(), name, "name")


#: The calls ``data/host_overheads.toml``'s ``[[op]]`` entries time: an eager PyTorch operator
#: (``torch.nn.Linear``) and a Transformer Engine module (``te.Linear``).
HOST_CALLS = ("torch.nn.Linear", "te.Linear")
#: The ``[[op]]`` entry of every GPU no entry names in its ``gpus``: the x86 host of a DGX H100.
DEFAULT_HOST_OP = "pytorch-eager-op-x86"


@dataclass(frozen=True)
class HostOpCost(catalog.Entry):
    """A measured host time of one call issued from Python on one host CPU
    (``data/host_overheads.toml``, ``[[op]]``): an eager operator or a Transformer Engine
    module (``call``, :data:`HOST_CALLS`)."""

    name: str = catalog.field_of("", "catalog name")
    what: str = catalog.field_of("", "the call measured, and through which code")
    cpu_us: float = catalog.field_of("us", "host time per call, the call not waiting for the GPU")
    gpu_us: float = catalog.field_of("us", "GPU time of the same call in the same benchmark")
    gpu: str = catalog.field_of("", "the GPU of the measurement")
    host: str = catalog.field_of("", "the host CPU of the measurement")
    source: str = catalog.field_of("", "where the figures come from")
    call: str = catalog.field_of("", "what was called", choices=HOST_CALLS,
                                 default="torch.nn.Linear")
    gpus: tuple[str, ...] = catalog.field_of(
        "", "catalog GPUs whose systems carry this host CPU (none: not the default x86 host's)",
        default=())

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.cpu_us >= self.gpu_us:
            raise ValueError(f"HostOpCost {self.name!r}: field 'cpu_us' ({self.cpu_us}) must be "
                             f"below 'gpu_us' ({self.gpu_us}): only then was the host never "
                             f"waiting for the GPU, and its time is the issue cost alone")

    @property
    def per_op_s(self) -> float:
        """Seconds of host time each operator costs: ``cpu_us × 1e-6``."""
        return self.cpu_us * 1e-6


_host_ops = catalog.cached_entries("host_overheads.toml", "op", HostOpCost)


def host_op_cost(name: str = "pytorch-eager-op-x86") -> HostOpCost:
    """The measured host time of one eager operator, by name or alias
    (``data/host_overheads.toml``, ``[[op]]``).

    Raises
    ------
    ValueError
        An unknown name (with the close ones), or a malformed file naming file, entry, field.
    """
    return catalog.lookup("host op cost", _host_ops(), name, "name")


def host_call_s(gpu: str, call: str = "torch.nn.Linear") -> float:
    """Seconds of host time one ``call`` (:data:`HOST_CALLS`) costs on the host CPU of
    ``gpu``'s system (``data/host_overheads.toml``, ``[[op]]``).

    The host is the one whose entries name ``gpu`` in their ``gpus`` (a GB200's Grace CPU),
    else the x86 host of :data:`DEFAULT_HOST_OP` (DGX/HGX servers). An eager operator costs
    that host's ``torch.nn.Linear`` time; a Transformer Engine module its ``te.Linear`` time,
    or, where that host has none, its ``torch.nn.Linear`` time times the mean ratio
    ``te.Linear / torch.nn.Linear`` of the hosts that have both (Transformer Engine issue
    #2053: 99.66 / 37.08 on GB200, 90.53 / 33.17 on GH200; mean 2.708): a module taken to
    cost the same multiple of an eager operator on every host. Only ``call`` is checked
    (an unknown ``gpu`` gets the default host).

    Raises
    ------
    ValueError
        An unknown ``call``; a file without the entries needed (naming them).
    """
    check_choice("call", call, HOST_CALLS)
    entries = list(_host_ops().values())
    named = [e for e in entries if gpu in e.gpus]
    torch_op = next((e for e in named if e.call == "torch.nn.Linear"), None) or host_op_cost(
        DEFAULT_HOST_OP)
    if call == "torch.nn.Linear":
        return torch_op.per_op_s
    own = next((e for e in entries if e.call == call and e.host == torch_op.host), None)
    if own is not None:
        return own.per_op_s
    ratios = [m.cpu_us / t.cpu_us for m in entries if m.call == call
              for t in entries if t.call == "torch.nn.Linear" and t.host == m.host]
    if not ratios:
        raise ValueError(f"host_overheads.toml: no host has both a {call!r} and a "
                         f"'torch.nn.Linear' [[op]] entry, so the {call!r} cost on "
                         f"{torch_op.host!r} cannot be derived")
    return torch_op.per_op_s * sum(ratios) / len(ratios)


#: Launches Megatron-Core issues from Python in one MoE layer and micro-batch besides the expert
#: GEMMs (each an eager PyTorch operator, a Triton kernel or an NCCL collective), for its
#: ``"alltoall"`` token dispatcher with ``moe_permute_fusion`` (as the Megatron Bridge MoE
#: providers set it), expert parallelism, no tensor-parallel experts, no shared expert, the
#: fused weighted SwiGLU. Counted at Megatron-LM 92c8482e (core_v0.15 line, the submodule of
#: Megatron Bridge 5776a6d9) and Transformer Engine v2.9:
#:
#: forward, from the host's wait (``_maybe_dtoh_and_synchronize("before_ep_alltoall")``) to
#: the end of the experts:
#:
#: * ``"all_to_all"`` 2: ``MoEAlltoAllTokenDispatcher.token_dispatch``, the tokens and the
#:   probabilities (``tensor_parallel.mappings.all_to_all``, one ``all_to_all_single`` each);
#: * ``"sort"`` 2, with more than one local expert: ``dispatch_postprocess`` ->
#:   ``moe_utils.sort_chunks_by_idxs`` (fused) -> TE ``_moe_chunk_sort.forward``:
#:   ``make_chunk_sort_map`` and ``sort_chunks_by_map``, one Triton kernel each;
#: * ``"activation"`` 1: ``TEGroupedMLP.forward`` -> ``weighted_bias_swiglu_impl`` (one
#:   compiled fused call; ``weighted_bias_quick_geglu_impl`` for gpt-oss's activation);
#: * ``"fp8"`` 3, FP8 recipes only: ``TEGroupedMLP.forward``'s ``quantization_padding`` of the
#:   tokens and of the probabilities and ``quantization_unpadding`` of the output (TE
#:   ``Fp8Padding``/``Fp8Unpadding``: ``tex.fused_multi_row_padding``/``_unpadding``, one each;
#:   padding is skipped only when every expert's count is already aligned).
#:
#: (after the experts the restore sort, the combine all-to-all and the unpermute follow, but
#: the combine's GPU time lets the host get ahead again: not counted forward);
#:
#: backward, the same layer's MoE part (autograd; no wait):
#:
#: * ``"all_to_all"`` 3: ``_AllToAll.backward`` of the combine and of both dispatches;
#: * ``"permute"`` 2: TE ``_moe_unpermute_mask_map.backward`` (``permute_with_mask_map``) and
#:   ``_moe_permute_mask_map.backward`` (``unpermute_with_mask_map``), one Triton kernel each;
#: * ``"sort"`` 2, with more than one local expert: ``_moe_chunk_sort.backward`` of the sort
#:   and of the restore (``sort_chunks_by_map``);
#: * ``"activation"`` 1: ``WeightedSwiGLUFunction.backward`` (``weighted_swiglu_back``);
#: * ``"fp8"`` 3, FP8 recipes only: ``_Fp8Unpadding.backward`` (padding) and
#:   ``_Fp8Padding.backward`` twice (unpadding).
#:
#: Not counted: the quantize kernels Transformer Engine launches per expert from C++
#: (``tex.split_quantize``; no measured host cost per launch from C++), the per-expert Python
#: work inside ``GroupedLinear`` that launches nothing, allocations, and the launches of the
#: ``"deepep"`` and ``"hybridep"`` dispatchers (not counted yet: none here).
MOE_HOST_OPS = {
    "alltoall": {
        "forward": {"all_to_all": 2, "sort": 2, "activation": 1, "fp8": 3},
        "backward": {"all_to_all": 3, "permute": 2, "sort": 2, "activation": 1, "fp8": 3},
    },
}


def moe_host_ops(local_experts, ep=2, *, dispatcher: str = "alltoall", fp8: bool = False
                 ) -> dict[str, float | np.ndarray]:
    """Launches issued from Python in one MoE layer and micro-batch besides the expert GEMMs
    (:data:`MOE_HOST_OPS`): the forward ones after the host's wait, and the backward ones.

    The ``"sort"`` launches only where ``local_experts > 1``, the ``"fp8"`` ones only with
    ``fp8``. Without expert parallelism (``ep = 1``) there is no all-to-all (Megatron-Core's
    ``_AllToAll`` returns its input on a group of one) and the host waits after the sort
    (``"before_finish"``), so neither counts forward; the backward sorts still do. A
    dispatcher without counts (``"deepep"``, ``"hybridep"``) gives 0. Array-friendly in
    ``local_experts`` and ``ep``. Returns ``{"forward", "backward"}``.
    """
    n = check_array("local_experts", local_experts, minimum=1)
    e = check_array("ep", ep, integer=True, minimum=1)
    check_choice("dispatcher", dispatcher, DISPATCHERS)
    check_bool("fp8", fp8)
    many, spread = np.asarray(n) > 1, np.asarray(e) > 1
    out = {}
    for phase in ("forward", "backward"):
        c = MOE_HOST_OPS.get(dispatcher, {}).get(phase, {})
        count = (c.get("activation", 0) + c.get("permute", 0) + (c.get("fp8", 0) if fp8 else 0)
                 + np.where(spread, c.get("all_to_all", 0), 0)
                 + np.where(many & (spread | (phase == "backward")), c.get("sort", 0), 0))
        out[phase] = _out(count + 0.0 * n * e)
    return out


#: The host's calls of one transformer layer with an MoE part, per micro-batch, besides the
#: expert GEMMs and :data:`MOE_HOST_OPS`: the rest of the stretch between two of the host's
#: waits (from one MoE layer's wait before its dispatch all-to-all to the next MoE layer's),
#: counted at Megatron-LM 92c8482e (the submodule of Megatron Bridge 5776a6d9) with
#: Transformer Engine v2.9, the Transformer Engine layer spec, no tensor-parallel experts.
#: ``"module"``: calls of a Transformer Engine module (``te.Linear``-class: its Python
#: bookkeeping and an autograd function), ``"op"``: eager operators, fused kernels launched
#: from Python (Triton, TE's fused functions, TorchScript-fused elementwise) and NCCL calls.
#:
#: forward:
#:
#: * module ``"attention"`` 3: ``SelfAttention``'s ``linear_qkv``
#:   (``TELayerNormColumnParallelLinear``, the input norm fused), ``core_attention``
#:   (``TEDotProductAttention``) and ``linear_proj`` (``TERowParallelLinear``); ``"mla"`` 6
#:   instead for multi-head latent attention (``MLASelfAttention``: ``linear_q_down_proj``,
#:   ``linear_q_up_proj``, ``linear_kv_down_proj``, ``linear_kv_up_proj``, ``core_attention``,
#:   ``linear_proj``; 5 without a query latent, ``linear_q_proj`` alone);
#: * module ``"experts"`` 2: ``TEGroupedMLP``'s ``linear_fc1`` and ``linear_fc2``
#:   (``TEGroupedLinear``), the module's own Python around its per-expert GEMMs (the input
#:   split and the quantizers per expert; Transformer Engine issue #1499);
#: * module ``"shared_expert"`` 2, with shared experts: ``SharedExpertMLP``'s ``linear_fc1`` and
#:   ``linear_fc2`` (one MLP for all shared experts);
#: * op ``"rope"`` 2: the fused RoPE on the query and the key (TE ``FusedRoPEFunc``, one each);
#:   ``"bias_dropout_add"`` 2 (after attention, after the MLP; one fused kernel each);
#:   ``"norm"`` 1: ``pre_mlp_layernorm`` (``TENorm``, a fusible TE op counted as one operator);
#: * op ``"router"`` 4: ``TopKRouter.gating`` (``RouterGatingLinearFunction``, one GEMM), the
#:   fused top-k with its score function, and with the auxiliary load-balancing loss the fused
#:   scores for it and the fused loss;
#: * op ``"preprocess"`` 10, the ``"alltoall"`` dispatcher with expert parallelism:
#:   ``MoEAlltoAllTokenDispatcher.preprocess``: the routing map's column sum and its ``long``,
#:   the input splits' sum, the all-gather of the counts over the expert group, the local
#:   experts' slice made contiguous, three sums (per rank, over ranks, per local expert); the
#:   fused ``permute``: TE's row-id map and permutation kernels; and ``"dtoh_copies"`` 4:
#:   ``_maybe_dtoh_and_synchronize``'s device-to-host copies (the counts, the input, output
#:   and tensor-parallel output splits);
#: * op, the ``"alltoall"`` dispatcher after the experts: ``"restore_sort"`` 2 with more than
#:   one local expert (``sort_chunks_by_idxs`` back: TE's chunk-sort map and kernel),
#:   ``"combine_all_to_all"`` 1 with expert parallelism, ``"unpermute"`` 1 (TE's fused
#:   unpermute with the routing map).
#:
#: backward (autograd; Transformer Engine's functions run their backward in Python):
#:
#: * module: the same calls as forward, each one module call again (no backward figure was
#:   measured; a module's backward launches more kernels than its forward: a lower bound);
#: * op ``"rope"`` 2, ``"bias_dropout_add"`` 2, ``"norm"`` 1 (their backward);
#:   ``"router"`` 4 (the gating's input and weight gradients, the top-k's and the auxiliary
#:   loss's backward); the MoE part's own backward launches are :data:`MOE_HOST_OPS`'.
#:
#: Captured CUDA graphs (Megatron-Core ``--cuda-graph-impl transformer_engine`` with a
#: ``--cuda-graph-scope``, :data:`CUDA_GRAPH_SCOPES`) replace the calls they capture by one
#: graph launch forward and one backward (op ``"graph_launch"``, priced as one eager operator:
#: not measured). Not counted: Qwen3's query/key norms (no catalog field says a model has
#: them), the random router logits of a force-balanced benchmark, the FP8 recipes' extra
#: Python per module and their per-expert quantize launches from C++, DeepEP's and HybridEP's
#: own launches, allocations. A lower bound on the host's time.
LAYER_HOST_CALLS = {
    "forward": {"module": {"attention": 3, "mla": 6, "mla_no_q_latent": 5, "experts": 2,
                           "shared_expert": 2},
                "op": {"rope": 2, "bias_dropout_add": 2, "norm": 1, "router": 4,
                       "preprocess": 10, "dtoh_copies": 4, "combine_all_to_all": 1,
                       "restore_sort": 2, "unpermute": 1, "graph_launch": 1}},
    "backward": {"module": {"attention": 3, "mla": 6, "mla_no_q_latent": 5, "experts": 2,
                            "shared_expert": 2},
                 "op": {"rope": 2, "bias_dropout_add": 2, "norm": 1, "router": 4,
                        "graph_launch": 1}},
}

#: What each Megatron-Core CUDA graph scope captures of :data:`LAYER_HOST_CALLS` (forward and
#: backward alike; ``TransformerLayer._te_cuda_graph_capture`` at Megatron-LM 92c8482e: one
#: graph per layer, the attention part, ``_forward_attention``, with ``"attn"``, and the MoE
#: layer's start, ``_forward_mlp`` up to the early return, with ``"moe_router"``):
#: ``"attn"`` the attention modules, the RoPE and the first bias-dropout-add; ``"moe_router"``
#: the pre-MLP norm, the router and the shared experts (computed before the routing);
#: ``"moe_preprocess"`` (only with ``"moe_router"``) the dispatcher's preprocessing and
#: permutation, its device-to-host copies moved out of the graph to just before the wait
#: (``MoEAlltoAllTokenDispatcher.cuda_dtoh_point = "before_ep_alltoall"``).
CUDA_GRAPH_SCOPES = {
    "attn": {"module": ("attention",), "op": {"rope": 2, "bias_dropout_add": 1}},
    "moe_router": {"module": ("shared_expert",), "op": {"norm": 1, "router": 4}},
    "moe_preprocess": {"module": (), "op": {"preprocess": 10}},
}


def layer_host_calls(model: ModelSpec, local_experts, ep=2, *, dispatcher: str = "alltoall",
                     fp8: bool = False, graphed: tuple[str, ...] = ()
                     ) -> dict[str, dict[str, float | np.ndarray]]:
    """The host's calls in one stretch between two waits, one MoE layer and micro-batch
    (:data:`LAYER_HOST_CALLS` plus :func:`moe_host_ops`' MoE part), besides the expert GEMMs:
    ``{"forward_experts", "forward_combine", "forward_rest", "backward"}``, each
    ``{"module", "op"}``, in the order the host issues them after the wait:
    ``"forward_experts"`` the dispatch to the experts' output (:func:`moe_host_ops`' forward
    launches, the two grouped-linear modules), ``"forward_combine"`` the restore sort, the
    combine all-to-all and the unpermute, ``"forward_rest"`` the rest of the stretch (the
    bias-dropout-adds, the next layer's attention block, shared experts, norm, router and the
    dispatcher's preprocessing up to its wait).

    The dispatcher's preprocessing and combine launches count for the ``"alltoall"``
    dispatcher (the preprocessing and the combine all-to-all only with ``ep > 1``, the restore
    sort only with ``local_experts > 1``); the other dispatchers' own launches are not
    counted. ``graphed``: the CUDA graph scopes captured (:data:`CUDA_GRAPH_SCOPES`), whose
    calls become one graph launch forward and one backward. Array-friendly in
    ``local_experts`` and ``ep``.
    """
    if not isinstance(model, ModelSpec):
        raise ValueError(f"model must be a scaleout.catalog.ModelSpec, got {model!r}")
    graphed = check_graph_scopes(graphed)
    moe_ops = moe_host_ops(local_experts, ep, dispatcher=dispatcher, fp8=fp8)
    n, e = np.asarray(local_experts, dtype=float), np.asarray(ep, dtype=float)
    zero = 0.0 * n * e
    attention = ("attention" if not model.is_mla
                 else "mla" if model.q_lora_rank else "mla_no_q_latent")
    mine = dispatcher == "alltoall"  # the other dispatchers' own launches: not counted
    gone_mod = {k for g in graphed for k in CUDA_GRAPH_SCOPES[g]["module"]}
    gone_op = {k: sum(CUDA_GRAPH_SCOPES[g]["op"].get(k, 0) for g in graphed)
               for k in ("rope", "bias_dropout_add", "norm", "router", "preprocess")}

    def left(phase: str, key: str) -> float:
        return LAYER_HOST_CALLS[phase]["op"][key] - gone_op.get(key, 0)

    def modules(phase: str) -> float:
        c = LAYER_HOST_CALLS[phase]["module"]
        return float((0 if "attention" in gone_mod else c[attention])
                     + (c["shared_expert"] if model.shared_experts
                        and "shared_expert" not in gone_mod else 0))

    def rest_ops(phase: str):
        return (left(phase, "rope") + left(phase, "bias_dropout_add") + left(phase, "norm")
                + left(phase, "router")
                + (LAYER_HOST_CALLS[phase]["op"]["graph_launch"] if graphed else 0))

    f = LAYER_HOST_CALLS["forward"]["op"]
    combine = mine * (np.where(e > 1, f["combine_all_to_all"], 0)
                      + np.where(n > 1, f["restore_sort"], 0) + f["unpermute"])
    rest_f = rest_ops("forward") + mine * np.where(
        e > 1, left("forward", "preprocess") + f["dtoh_copies"], 0)
    experts = float(LAYER_HOST_CALLS["forward"]["module"]["experts"])
    return {
        "forward_experts": {"module": experts,
                            "op": _out(np.asarray(moe_ops["forward"], dtype=float) + zero)},
        "forward_combine": {"module": 0.0, "op": _out(combine + zero)},
        "forward_rest": {"module": modules("forward"), "op": _out(rest_f + zero)},
        "backward": {"module": modules("backward") + experts,
                     "op": _out(rest_ops("backward")
                                + np.asarray(moe_ops["backward"], dtype=float) + zero)},
    }


def check_graph_scopes(graphed) -> tuple[str, ...]:
    """``graphed`` as a tuple of :data:`CUDA_GRAPH_SCOPES` names, checked: each a known scope,
    ``"moe_preprocess"`` only with ``"moe_router"`` (as Megatron-Core's ``TransformerConfig``
    asserts)."""
    if isinstance(graphed, str) or not isinstance(graphed, tuple | list):
        raise ValueError(f"graphed must be a tuple of CUDA graph scopes "
                         f"({', '.join(CUDA_GRAPH_SCOPES)}), got {graphed!r}")
    for scope in graphed:
        check_choice("graphed", scope, tuple(CUDA_GRAPH_SCOPES))
    if "moe_preprocess" in graphed and "moe_router" not in graphed:
        raise ValueError(f"graphed={tuple(graphed)!r}: 'moe_preprocess' is captured only with "
                         f"'moe_router' (Megatron-Core's TransformerConfig asserts it)")
    return tuple(graphed)


def host_stretch_exposed_s(segments, host_backward_s=0.0, gpu_backward_s=0.0
                           ) -> dict[str, float | np.ndarray]:
    """Seconds the host leaves the GPU idle in one stretch between two of its waits (one MoE
    layer and micro-batch), and in that layer's backward pass.

    Forward: after the wait the GPU's queue is empty, and it runs each launch only once the
    host has issued it. ``segments`` are the stretch's parts in the order the host issues
    them, each ``(host_s, gpu_s, last)``: the host's issue time of the part, the GPU's work
    in it, and whether that work comes with the part's last launch (a single large launch,
    such as an all-to-all, which cannot start before the host has issued everything before
    it) or is spread over the part's launches. With ``H_i`` the host's cumulative issue time
    at the end of part ``i`` and ``F_i`` the time its GPU work is done (``F_0 = 0``):
    ``F_i = max(F_{i-1}, H_i) + gpu_i`` for a ``last`` part, ``F_i = max(F_{i-1} + gpu_i,
    H_i)`` for a spread one (its last launch issued at ``H_i``, its own GPU time taken as
    negligible). The stretch ends at ``F_n`` and the GPU was idle for ``F_n − Σ gpu_i``.
    Backward: no wait (the counts stay on the host), so the host runs ahead across layers
    and only ``max(0, host_backward_s − gpu_backward_s)`` shows. Lower bounds.
    Array-friendly in the times.

    Returns ``{"forward_s", "backward_s", "total_s"}``.
    """
    if not isinstance(segments, list | tuple) or not segments:
        raise ValueError(f"segments must be a non-empty list of (host_s, gpu_s, last), "
                         f"got {segments!r}")
    done = issued = busy = 0.0
    for i, seg in enumerate(segments):
        if not isinstance(seg, tuple | list) or len(seg) != 3:
            raise ValueError(f"segments[{i}] must be (host_s, gpu_s, last), got {seg!r}")
        h = check_array(f"segments[{i}] host_s", seg[0])
        g = check_array(f"segments[{i}] gpu_s", seg[1])
        check_bool(f"segments[{i}] last", seg[2])
        issued = issued + h
        done = np.maximum(done, issued) + g if seg[2] else np.maximum(done + g, issued)
        busy = busy + g
    fwd = np.maximum(done - busy, 0.0)
    bwd = np.maximum(check_array("host_backward_s", host_backward_s)
                     - check_array("gpu_backward_s", gpu_backward_s), 0.0)
    return {"forward_s": _out(fwd), "backward_s": _out(bwd), "total_s": _out(fwd + bwd)}


def expert_loop_exposed_s(local_experts, per_call_s: float, forward_gpu_s, backward_gpu_s, *,
                          host_ops=None, per_op_s: float = 0.0
                          ) -> dict[str, float | np.ndarray]:
    """Seconds a host-bound MoE layer leaves the GPU idle, one MoE layer and micro-batch.

    A framework that issues the local experts' GEMMs one by one (:data:`EXPERT_LOOP_GEMMS`:
    2 in the forward pass, 4 in the backward, per local expert) spends
    ``n × gemms × per_call_s`` of host time on them, and ``host_ops × per_op_s`` on its other
    launches (:func:`moe_host_ops`: forward ones after the wait, backward ones). In the
    forward pass the host first waits for the GPU: the per-expert token counts are copied to
    the host to size the all-to-all and the GEMMs (the ``alltoall`` dispatcher's ``.cpu()``
    before the all-to-all; ``tokens_per_expert.tolist()`` in Megatron-Core's
    ``TEGroupedMLP.forward``), so the GPU's queue is empty and it runs each launch as it is
    issued: ``max(0, host − forward_gpu_s)`` shows, ``forward_gpu_s`` the GPU's work queued
    behind the host in that stretch (the expert GEMMs' forward, and the dispatch all-to-all
    where it follows the wait). The backward pass keeps the counts on the host (no second
    wait), and the host's launches show only where they outlast the GPU's work on the layer,
    ``backward_gpu_s``. The host's launches outside the MoE layer are not counted here (the
    whole stretch between two waits: :func:`host_stretch_exposed_s`): a lower bound on the
    host time. Array-friendly in every argument but the two costs.

    Returns ``{"host_forward_s", "host_backward_s", "forward_s", "backward_s", "total_s"}``.
    """
    n = check_array("local_experts", local_experts, minimum=1)
    c = check_positive("per_call_s", per_call_s, allow_zero=True)
    op = check_positive("per_op_s", per_op_s, allow_zero=True)
    f_gpu = check_array("forward_gpu_s", forward_gpu_s)
    b_gpu = check_array("backward_gpu_s", backward_gpu_s)
    if host_ops is None:
        host_ops = {"forward": 0.0, "backward": 0.0}
    if not isinstance(host_ops, dict) or set(host_ops) != {"forward", "backward"}:
        raise ValueError(f"host_ops must be a dict with 'forward' and 'backward' launch counts "
                         f"(moe_host_ops), got {host_ops!r}")
    ops_f = check_array("host_ops['forward']", host_ops["forward"])
    ops_b = check_array("host_ops['backward']", host_ops["backward"])
    host_f = n * EXPERT_LOOP_GEMMS["forward"] * c + ops_f * op
    host_b = n * EXPERT_LOOP_GEMMS["backward"] * c + ops_b * op
    fwd = np.maximum(host_f - f_gpu, 0.0)
    bwd = np.maximum(host_b - b_gpu, 0.0)
    return {"host_forward_s": _out(host_f), "host_backward_s": _out(host_b),
            "forward_s": _out(fwd), "backward_s": _out(bwd), "total_s": _out(fwd + bwd)}


def rank_imbalance(loads, ep: int) -> float:
    """The busiest EP rank's tokens over the mean: ``max_r Σ_{e on r} load_e / mean``.

    With contiguous placement (:func:`placement`). The slowest rank sets the pace of the
    expert computation and of the all-to-all's receive side.
    """
    loads = check_array("loads", loads)
    ep = check_int("ep", ep)
    check_divides("ep", ep, "experts (len(loads))", loads.size)
    per_rank = loads.reshape(ep, -1).sum(axis=1)
    mean = per_rank.mean()
    return float(per_rank.max() / mean) if mean > 0 else 1.0


@dataclass(frozen=True)
class CapacityOutcome:
    """What a capacity limit does to one routing (shares of the ``n k`` routed copies)."""

    capacity: float
    dropped: float
    padded: float
    compute_factor: float

    @property
    def kept(self) -> float:
        """Share of routed copies the experts process."""
        return 1.0 - self.dropped


def capacity_outcome(loads, capacity_factor: float, *, pad: bool = True) -> CapacityOutcome:
    """Tokens dropped and padding added by an expert capacity (GShard Sec. 2.2; Switch Sec. 2.2).

    ``capacity = capacity_factor × (n k / E)`` tokens per expert, the mean load times the
    factor. Copies beyond an expert's capacity are **dropped** (they skip the layer
    through the residual connection); with ``pad`` every expert computes a full
    ``capacity`` (padded), so the experts' work is ``E × capacity`` against ``n k``:
    ``compute_factor``. A dropless run (DeepSeek-V3, Megatron's default) is
    ``capacity_factor = inf``-like: pass ``max(loads)/mean``.
    """
    loads = check_array("loads", loads)
    factor = check_positive("capacity_factor", capacity_factor, maximum=1e6)
    check_bool("pad", pad)
    total = float(loads.sum())
    if total == 0:
        return CapacityOutcome(0.0, 0.0, 0.0, 1.0)
    cap = factor * total / loads.size
    dropped = float(np.maximum(loads - cap, 0.0).sum()) / total
    padded = float(np.maximum(cap - loads, 0.0).sum()) / total if pad else 0.0
    work = (cap * loads.size if pad else float(np.minimum(loads, cap).sum())) / total
    return CapacityOutcome(cap, dropped, padded, work)


# =========================================================================== traffic
def a2a_bytes(tokens, hidden, top_k, bytes_per_value=2.0):
    """Bytes one GPU sends in one all-to-all of an MoE layer: ``tokens × h × k × bytes``.

    Each of its ``tokens`` tokens goes to ``k`` experts (GShard Sec. 2.2): the dispatch
    sends ``k`` copies of the token's ``h`` values, the combine brings ``k`` results back.
    This counts every copy, including those whose expert sits on the same GPU (NCCL-tests'
    all-to-all size convention); :func:`dispatch_copies` splits them by where they go.
    Array-friendly.
    """
    t = check_array("tokens", tokens)
    h = check_array("hidden", hidden, integer=True, minimum=1)
    k = check_array("top_k", top_k, integer=True, minimum=1)
    b = check_array("bytes_per_value", bytes_per_value, allow_zero=False)
    return _out(t * h * k * b)


def expected_nodes_per_token(experts: int, top_k: int, nodes, max_nodes: int | None = None):
    """Expected number of distinct nodes holding a token's ``top_k`` experts.

    Experts spread evenly over ``nodes`` nodes (``E/N`` each), routing uniform. Without a
    limit the ``k`` experts are ``k`` draws without replacement from ``E``, so a given node
    is missed with probability ``C(E - E/N, k) / C(E, k)`` (hypergeometric) and the
    expectation is ``N (1 - C(E - E/N, k)/C(E, k))``. With node-limited routing
    (DeepSeek-V3 Sec. 2.1.2: the ``M`` nodes with the highest scores first, then the top
    ``k`` experts among their ``M E/N``) it is the same count over ``M`` nodes. Array-
    friendly in ``nodes`` (each must divide ``E``).
    """
    E = check_int("experts", experts)
    k = check_int("top_k", top_k, maximum=E)
    N = check_array("nodes", nodes, integer=True, minimum=1)
    if np.any(np.mod(E, N)):
        bad = int(np.asarray(N)[np.mod(E, N) != 0].ravel()[0]) if N.ndim else int(N)
        check_divides("nodes", bad, "experts", E)
    if max_nodes is not None:
        max_nodes = check_int("max_nodes", max_nodes)
    out = np.empty(N.shape)
    for idx, n in np.ndenumerate(N):
        n = int(n)
        m = n if max_nodes is None else min(n, max_nodes)
        pool = m * (E // n)  # experts on the candidate nodes
        if k > pool:
            raise ValueError(f"top_k={k} experts do not fit on max_nodes={m} nodes of "
                             f"{E // n} experts each; allowed: max_nodes >= "
                             f"{math.ceil(k / (E // n))}")
        miss = math.comb(pool - E // n, k) / math.comb(pool, k)
        out[idx] = m * (1 - miss)
    return _out(out)


def dispatch_copies(experts: int, top_k: int, ep, gpus_per_node: int, *,
                    max_nodes_per_token: int | None = None, dedup_nodes: bool = False,
                    dedup_ranks: bool = False):
    """Copies of one token's ``h`` values a GPU sends in a dispatch, by where they go.

    The ``ep`` GPUs of an expert-parallel group fill nodes of ``gpus_per_node`` in order;
    a token's ``k`` experts are uniform over the ``E`` experts. Returns a dict of arrays
    (shaped like ``ep``):

    * ``"local"``: copies to its own GPU, ``k / ep``;
    * ``"nvlink"``: copies to other GPUs of its node, ``k (g - 1)/ep`` with
      ``g = min(ep, gpus_per_node)``;
    * ``"network"``: copies to other nodes. One per routed expert there,
      ``k (ep - g)/ep``, as Megatron's all-to-all token dispatcher sends them; with
      ``dedup_nodes`` one per *node* (DeepSeek-V3 Sec. 3.2.2, DeepEP: a token crosses
      InfiniBand once per destination node and is forwarded over NVLink there), the
      expected number of other nodes among its experts' nodes,
      :func:`expected_nodes_per_token` × ``(N - 1)/N``; ``max_nodes_per_token`` caps the
      nodes a token may reach (node-limited routing). With dedup, the forwarded copies
      are added to ``"nvlink"`` (they cross the destination node's NVLink).

    With ``dedup_ranks`` a token goes once to each *GPU* holding one or more of its experts,
    not once per expert (DeepEP's and HybridEP's dispatch, which the receiving GPU expands to
    its local experts; its combine returns one partial sum per GPU): the expected number of
    distinct GPUs among its experts, :func:`expected_nodes_per_token` over ``ep`` ranks,
    dealt over the same destinations.
    """
    E = check_int("experts", experts)
    k = check_int("top_k", top_k, maximum=E)
    ep = check_array("ep", ep, integer=True, minimum=1)
    gpn = check_int("gpus_per_node", gpus_per_node)
    check_bool("dedup_nodes", dedup_nodes)
    check_bool("dedup_ranks", dedup_ranks)
    experts_per_gpu(E, ep)
    g = np.minimum(ep, gpn)
    nodes = np.ceil(ep / g)
    sent = float(k)  # copies of a token sent: one per expert, or one per distinct GPU
    if dedup_ranks:
        sent = _distinct_ranks(E, k, ep)
    local = sent / ep
    nvlink = sent * (g - 1) / ep
    remote = sent * (ep - g) / ep
    if max_nodes_per_token is not None or dedup_nodes:
        limit = max_nodes_per_token
        if limit is not None:
            limit = check_int("max_nodes_per_token", limit)
        flat = np.atleast_1d(nodes).astype(int)
        distinct = np.atleast_1d(expected_nodes_per_token(E, k, flat, limit)).reshape(
            np.shape(nodes))
        other = distinct * (nodes - 1) / nodes
        if dedup_nodes:
            # every remote expert copy is forwarded over NVLink inside its node
            nvlink = nvlink + np.where(nodes > 1, remote * (g - 1) / g, 0.0)
            remote = np.where(nodes > 1, other, 0.0)
        # without dedup the limit leaves the per-expert copies to other nodes unchanged on
        # average: the chosen nodes are as likely to include the sender's as before
    return {"local": _out(local), "nvlink": _out(nvlink), "network": _out(remote)}


def all_to_all_time(size_bytes, n: int, gpus_per_node: int, intra, inter, *,
                    network_bytes=None, nvlink_bytes=None):
    """Seconds of one all-to-all over ``n`` GPUs as NCCL runs it: point-to-point sends.

    Every GPU posts a send to each peer at once (NCCL groups ``n - 1`` ``ncclSend`` /
    ``ncclRecv`` pairs). Its ``size_bytes`` (the buffer it sends in total, ``size/n`` to
    each rank itself included, NCCL-tests' convention) split into what goes to the
    ``g - 1`` other GPUs of its node over NVLink (``intra``) and to the ``n - g`` GPUs of
    other nodes over its network port (``inter``), which move at the same time:

    ``t = max(S (g-1)/n / B_intra, S (n-g)/n / B_inter) + α_intra [g > 1] + α_inter [n > g]``

    with ``g = min(n, gpus_per_node)``: one latency per kind of link, since the sends
    run concurrently (a model, not NCCL's tuner: :mod:`scaleout.nccl` models its ring and
    tree collectives; NCCL has no all-to-all algorithm other than point-to-point). On one
    link it is ``(n-1)/n S / B``, i.e. nccl-tests' busbw equals the link's bandwidth.

    ``network_bytes`` and ``nvlink_bytes`` override the split for uneven traffic
    (:func:`dispatch_copies`). Links are catalog names, :class:`~scaleout.catalog.Link`
    or :class:`~scaleout.collectives.AlphaBeta`. Array-friendly in the sizes.
    """
    n = check_int("n", n)
    gpn = check_int("gpus_per_node", gpus_per_node)
    a, b = _link(intra, "intra"), _link(inter, "inter")
    S = check_array("size_bytes", size_bytes)
    g = min(n, gpn)
    near = S * (g - 1) / n if nvlink_bytes is None else check_array("nvlink_bytes",
                                                                     nvlink_bytes)
    far = S * (n - g) / n if network_bytes is None else check_array("network_bytes",
                                                                     network_bytes)
    t = np.maximum(near / a.bandwidth_bytes_s, far / b.bandwidth_bytes_s)
    lat = (a.latency_s if g > 1 else 0.0) + (b.latency_s if n > g else 0.0)
    t = np.where((np.asarray(near) + np.asarray(far)) > 0, t + lat, 0.0)
    return _out(t)


def layer_comm_time(model: str | ModelSpec, tokens, ep: int, gpus_per_node: int, intra,
                    inter, recipe: str | memory.PrecisionRecipe = "mixed-adam", *,
                    dedup_nodes: bool | None = None, node_limited: bool = True,
                    imbalance: float = 1.0, recompute: bool = False,
                    dispatcher: str | None = None) -> dict[str, float]:
    """Seconds of one MoE layer's all-to-alls for ``tokens`` tokens per GPU (a micro-batch).

    Forward: a dispatch (``dispatch_bytes`` per value) and a combine (``combine_bytes``);
    backward: the combine's gradient travels the dispatch's way and the dispatch's
    gradient the combine's, at the same sizes (DeepSeek-V3 Sec. 3.3.4 sends both
    dispatch-direction passes in FP8, both combine-direction ones in BF16); ``recompute``
    adds the forward pair again. Each is :func:`all_to_all_time` with the split of
    :func:`dispatch_copies` (``dedup_nodes`` defaults to on for a model with
    node-limited routing, as DeepEP does; ``node_limited`` applies the model's
    ``max_nodes_per_token``). A token ``dispatcher`` (:data:`DISPATCHERS`) decides both:
    ``"alltoall"`` (Megatron-Core's NCCL all-to-all) sends one copy per expert and node
    dedups nothing; ``"deepep"`` and ``"hybridep"`` send a token once per destination GPU
    and, across nodes, once per node (DeepEP's design, DeepSeek-V3 Sec. 3.2.2).
    ``imbalance`` (busiest rank's load over the mean, :func:`rank_imbalance`) scales the
    receive side's bytes.

    Returns ``{"dispatch_s", "combine_s", "forward_s", "backward_s", "total_s",
    "network_bytes", "nvlink_bytes"}`` (bytes per GPU for one dispatch).
    """
    m = catalog.model(model)
    if not m.is_moe:
        raise ValueError(f"model {m.name!r} has no experts; a mixture of experts is needed")
    ep = check_ep(m, ep)
    r = memory.get_recipe(recipe)
    t = check_array("tokens", tokens)
    imb = check_positive("imbalance", imbalance, maximum=1e3)
    check_bool("recompute", recompute)
    limit = m.max_nodes_per_token if node_limited else None
    fused = False
    if dispatcher is not None:
        fused = check_choice("dispatcher", dispatcher, DISPATCHERS) != "alltoall"
    default = (m.max_nodes_per_token is not None) if dispatcher is None else fused
    dedup = default if dedup_nodes is None else dedup_nodes
    copies = dispatch_copies(m.experts, m.top_k, ep, gpus_per_node,
                             max_nodes_per_token=limit, dedup_nodes=dedup, dedup_ranks=fused)
    per_copy = t * m.hidden * imb

    def one(bytes_per_value):
        net = per_copy * copies["network"] * bytes_per_value
        nvl = per_copy * copies["nvlink"] * bytes_per_value
        return all_to_all_time(net + nvl, ep, gpus_per_node, intra, inter,
                               network_bytes=net, nvlink_bytes=nvl), net, nvl

    dispatch, net, nvl = one(r.dispatch_bytes)
    combine, _, _ = one(r.combine_bytes)
    forward = np.asarray(dispatch) + np.asarray(combine)
    backward = forward
    total = forward * (2 if recompute else 1) + backward
    return {"dispatch_s": _out(dispatch), "combine_s": _out(combine),
            "forward_s": _out(forward), "backward_s": _out(backward), "total_s": _out(total),
            "network_bytes": _out(net), "nvlink_bytes": _out(nvl)}


def layer_flops(model: str | ModelSpec, seq_len: int | None = None) -> float:
    """Training FLOPs per token of one MoE layer (forward and backward, no recomputation).

    ``3 × (2 × active weights + attention)``: the layer's attention projections, norms,
    router, ``top_k`` routed and the shared experts (:func:`scaleout.memory.layer_params`),
    and its attention products (:func:`scaleout.compute.attention_flops_per_token` over
    the layers), as :func:`scaleout.compute.flops_per_token` counts the whole model.
    """
    from .compute import attention_flops_per_token

    m = catalog.model(model)
    if not m.is_moe:
        raise ValueError(f"model {m.name!r} has no experts; a mixture of experts is needed")
    p = memory.layer_params(m)
    weights = (p["attention"] + p["norms"] + p["router"]
               + (m.top_k + m.shared_experts) * p["expert"])
    return 3.0 * (2.0 * weights + attention_flops_per_token(m, seq_len) / m.n_layers)


def layer_seconds(model: str | ModelSpec, tokens, gpu, recipe="megatron-bf16",
                  seq_len: int | None = None, efficiency: float = 1.0):
    """Seconds of one MoE layer's training FLOPs (:func:`layer_flops`) for ``tokens`` tokens
    on one GPU, at the peaks of the recipe's formats in the whole model's proportion
    (:func:`scaleout.compute.matmul_seconds` scaled to the layer), times ``efficiency``.
    Array-friendly in ``tokens``."""
    from . import compute

    m = catalog.model(model)
    split = compute.flops_by_format(m, seq_len, recipe)
    share = layer_flops(m, seq_len) / (split["fp8"] + split["bf16"])
    return _out(np.asarray(compute.matmul_seconds(m, tokens, gpu, recipe, seq_len, efficiency))
                * share)


# =========================================================================== memory
def expert_params_per_gpu(model: str | ModelSpec, ep: int = 1, etp: int = 1, tp: int = 1,
                          pp: int = 1) -> dict[str, float]:
    """Parameters one GPU of the busiest pipeline stage holds, experts apart from the rest.

    * ``"experts"``: the stage's MoE layers × ``E/ep`` routed experts, each split over
      ``etp`` (expert tensor parallelism);
    * ``"dense"``: everything else (attention, norms, dense MLPs, shared experts,
      routers) as tensor parallelism splits it, over ``tp``; embedding and output layer
      on the first and last stage as :func:`scaleout.memory.stage_params` places them.

    Layers split evenly over ``pp`` (MoE layers in proportion). ``"total"`` is the sum.
    """
    m = catalog.model(model)
    ep = check_ep(m, ep)
    etp, tp, pp = check_int("etp", etp), check_int("tp", tp), check_int("pp", pp)
    p = memory.layer_params(m)
    parts = memory.param_breakdown(m)
    routed = m.moe_layers * m.experts * p["expert"]
    non_expert = dict(parts, layers=parts["layers"] - routed)
    dense = float(memory.stage_params_arrays(non_expert, m.n_layers, m.tied_embeddings, tp,
                                             pp))
    experts = routed / pp / ep / etp
    return {"experts": experts, "dense": dense, "total": experts + dense}


def model_state_per_gpu(model: str | ModelSpec, *, tp: int = 1, pp: int = 1, dp: int = 1,
                        cp: int = 1, ep: int = 1, etp: int = 1, zero_stage: int = 0,
                        recipe: str | memory.PrecisionRecipe = "mixed-adam"
                        ) -> dict[str, float]:
    """Weights, gradients and optimizer state per GPU (bytes) under expert parallelism.

    The non-expert parameters are replicated over the ``dp × cp`` copies of attention
    and ZeRO shards them over those; the experts' copies are the *expert data-parallel*
    group, ``edp = tp cp dp / (etp ep)`` (:func:`fold`), and ZeRO shards them over
    ``edp`` (Megatron-Core's distributed optimizer does the same per group). ZeRO
    (arXiv 1910.02054) Sec. 5 for each part.
    """
    f = fold(tp * cp * dp * pp, tp=tp, cp=cp, pp=pp, ep=ep, etp=etp)
    params = expert_params_per_gpu(model, ep, etp, tp, pp)
    r = memory.get_recipe(recipe)
    out = {}
    for name, n, copies in (("dense", params["dense"], dp * cp),
                            ("experts", params["experts"], f.edp)):
        w, g, o = memory.model_state_arrays(n, zero_stage, copies, r)
        out[f"{name}_weights_bytes"] = float(w)
        out[f"{name}_grads_bytes"] = float(g)
        out[f"{name}_optimizer_bytes"] = float(o)
    out["total_bytes"] = sum(out.values())
    return out


# =========================================================================== parallel folding
@dataclass(frozen=True)
class Fold:
    """One pipeline stage's GPUs seen twice (MoE Parallel Folding, arXiv 2504.14960).

    Attention and dense layers use ``tp × cp × dp``; the MoE layers regroup the same
    ``tp cp dp`` GPUs as ``etp × ep × edp`` (expert tensor, expert, expert data
    parallelism), so EP can span GPUs that attention uses for data or context
    parallelism.
    """

    n_gpus: int
    tp: int
    cp: int
    dp: int
    pp: int
    etp: int
    ep: int
    edp: int

    @property
    def stage_gpus(self) -> int:
        """GPUs of one pipeline stage: ``tp cp dp = etp ep edp``."""
        return self.tp * self.cp * self.dp


def fold(n_gpus: int, *, tp: int = 1, cp: int = 1, pp: int = 1, ep: int = 1,
         etp: int = 1) -> Fold:
    """The data-parallel sizes of both mappings of ``n_gpus`` GPUs.

    ``dp = n / (tp cp pp)`` for attention, ``edp = n / (etp ep pp)`` for the experts.

    Raises
    ------
    ValueError
        When ``tp cp pp`` or ``etp ep pp`` does not divide ``n_gpus``.
    """
    n = check_int("n_gpus", n_gpus)
    tp, cp, pp = check_int("tp", tp), check_int("cp", cp), check_int("pp", pp)
    ep, etp = check_int("ep", ep), check_int("etp", etp)
    check_divides("tp x cp x pp", tp * cp * pp, "n_gpus", n)
    check_divides("etp x ep x pp", etp * ep * pp, "n_gpus", n)
    return Fold(n, tp, cp, n // (tp * cp * pp), pp, etp, ep, n // (etp * ep * pp))


def fold_groups(f: Fold) -> dict[str, np.ndarray]:
    """Global ranks of pipeline stage 0 arranged by each mapping, for drawing.

    Megatron-Core's rank order (fastest first): attention ``tp, cp, dp``; experts
    ``etp, ep, edp`` over the same ranks. Returns ``{"attention": (dp, cp, tp) array,
    "experts": (edp, ep, etp) array}`` of rank numbers: GPUs in one ``tp`` row form a
    tensor-parallel group, GPUs in one ``ep`` row an expert-parallel group.
    """
    ranks = np.arange(f.stage_gpus)
    return {"attention": ranks.reshape(f.dp, f.cp, f.tp),
            "experts": ranks.reshape(f.edp, f.ep, f.etp)}
