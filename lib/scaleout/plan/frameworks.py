"""What a training framework does with a layout: its collectives, what it overlaps, what it allows.

The same layout runs at different speeds under different frameworks because they issue
different collectives and hide different parts of them. A :class:`Framework` is a small set of
switches, each set as the framework's code or documentation says (the ``sources`` name where);
the planner's model of one iteration (:mod:`scaleout.plan.step`) reads them. A preset is a set
of mechanisms, never a per-case factor: the calibration is the same for every preset.

Switches
--------
collectives
    ``"nccl"``: every collective costs what NCCL's own model predicts for its size and group,
    with the algorithm NCCL picks (:mod:`scaleout.nccl`); ``"hierarchical"``: the textbook
    α-β model of notebook 07 (reduce-scatter in the node, the collective across nodes,
    all-gather in the node).
flat_dp_rings
    The data-parallel (and ZeRO/FSDP) collectives run as flat rings over the whole group,
    each GPU's traffic crossing its own network port (``(n-1)/n`` of the data per port), rather
    than a node's data spread over all its ports as nccl-tests' topology-aware rings do.
grad_bucket_bytes, grad_overlap
    Gradients are reduced in buckets of this size (None: one call for all of them) and, with
    ``grad_overlap``, during the backward pass of the last micro-batch as buckets fill
    (PyTorch DDP, Li et al. 2020; Megatron-Core ``overlap_grad_reduce``).
param_gather_overlap
    ZeRO-1/2's all-gather of updated weights overlapped with the next forward pass
    (Megatron-Core ``overlap_param_gather``).
zero3_unit, zero3_prefetch
    ZeRO-3 / FSDP gathers weights per ``"layer"`` (an FSDP unit wraps a transformer block) or
    per ``"tensor"`` (DeepSpeed's stage 3 of 2021 fetched each parameter tensor with its own
    all-gather when prefetching), for every micro-batch's forward and backward pass;
    ``zero3_prefetch`` units are gathered ahead, on a separate stream, while the current one
    computes.
zero3_blocking_fetch, zero3_persistence_threshold, zero3_max_reuse_distance
    DeepSpeed's ZeRO-3 of 2021: on entering each submodule the CPU waits for every gather in
    flight and for the GPU (``torch.cuda.synchronize``), then prefetches only the next
    parameter tensor, so a tensor's gather hides behind the previous tensor's computation
    alone (:func:`scaleout.plan.step.tensor_fetch_chain_s`); tensors under
    ``zero3_persistence_threshold`` elements stay whole and are never gathered; a tensor
    released after its forward use is gathered again for its backward use when more than
    ``zero3_max_reuse_distance`` elements are used in between (None: always gathered again).
zero2_per_unit
    ZeRO-2 as FSDP runs it without pipelining (FSDP1's ``ShardingStrategy.SHARD_GRAD_OP``,
    FSDP2's ``reshard_after_forward=False``): each unit's weights all-gathered before its
    forward (prefetched as under ZeRO-3) and kept through its backward, its gradients
    reduce-scattered unit by unit as the backward reaches them, every micro-batch; not
    DeepSpeed's or Megatron-Core's bucketed gradient reduction followed by one gather of the
    updated weights after the optimizer step. Under pipelining a schedule that syncs the
    gradients at the last micro-batch only (``torch.distributed.pipelining``) is priced as
    those are.
pp_defers_grad_sync
    Under pipelining, a ZeRO-2 or ZeRO-3 plan keeps its stage's weights gathered and its
    gradients whole from the step's first forward to the schedule's end, then reduce-scatters
    once (``torch.distributed.pipelining``'s stage runs every micro-batch's backward with
    FSDP2's ``set_reshard_after_backward(False)`` and ``set_requires_gradient_sync(False)``;
    its ``_post_backward`` reshards and reduces after the last; torchtitan's default
    ``fsdp_reshard_after_forward`` is off with PP). Both stages are then priced as the
    framework's ZeRO-2 under pipelining (gathered and reduced once a step) with a ZeRO-1
    footprint: weights whole, gradients whole in FSDP2's reduce dtype (fp32), only the
    optimizer state sharded.
zero_stages, max_zero_with_pp
    The ZeRO stages the framework offers, and the highest it combines with pipelining
    (DeepSpeed: 1; torchtitan's FSDP2 and Llama 3's sharded data parallelism: 2 or 3).
tp_overlap
    Tensor-parallel communication pipelined with the GEMMs around it (Megatron-Core
    ``tp_comm_overlap`` with userbuffers; torchtitan's async TP): only the part longer than
    those GEMMs is exposed; only for a tensor-parallel group inside one NVLink domain
    (userbuffers register their buffers through CUDA IPC / multicast handles, which exist
    within an NVLink domain alone: Transformer Engine issue #1071, PR #1470 for multi-node
    NVLink; a group spanning domains runs its collectives unoverlapped).
p2p_overlap
    Pipeline sends overlapped with compute (Megatron-Core ``overlap_p2p_comm``, Llama 3's
    asynchronous point-to-point): one micro-batch's sends stay on the critical path.
hybrid_shard
    Whether ZeRO may shard inside groups of data-parallel ranks and replicate across them
    (a plan's ``zero_shard``): the sharded collectives then run inside a group, and the
    gradients' shards are all-reduced across the groups.
tensor_parallel, pipeline_parallel, interleaved_schedule, sequence_parallel, recompute_modes
    The layouts the framework can run at all: tensor parallelism (``tp > 1``), pipelining
    (``pp > 1``), the interleaved schedule (``interleave > 1``), sequence parallelism
    (``sp``), and which of a plan's recomputation modes (:data:`scaleout.layout.RECOMPUTE_MODES`)
    it offers. DeepSpeed's pipeline engine of 2021 ran one 1F1B schedule and its activation
    checkpointing recomputed whole layers, before sequence parallelism and selective
    recomputation existed (Korthikanti et al. 2022); Composer's FSDP runs of 2022-23 had
    neither tensor nor pipeline parallelism. The planner searches only what the framework
    can run, and refuses the rest with the framework's name.
cp_variant
    The framework's context parallelism: ``"ring"`` (ring attention, key/value blocks passed
    around the context-parallel group beside the attention compute), or ``""``: none (a plan
    keeps ``cp = 1``).
expert_parallel
    Whether the framework spreads a mixture of experts' experts over GPUs (a plan's ``ep``).
expert_gemm_loop
    The routed experts' GEMMs issued one per local expert from the host (Transformer
    Engine's ``GroupedLinear`` without a fused grouped GEMM: one cuBLASLt call per expert),
    rather than in one grouped launch for all local experts (PyTorch's ``torch._grouped_mm``,
    DeepSeek's DeepGEMM). With few tokens per expert the host's issue time, not the GEMMs,
    sets the pace (:func:`scaleout.moe.expert_loop_exposed_s`).
moe_host_sync
    The framework's dropless MoE layer makes the host wait for the GPU once per forward pass
    (the token counts copied to the host before the all-to-all), so the launches it issues
    from Python after the wait run as they are issued: each at a measured host time per
    eager operator (:func:`scaleout.moe.moe_host_ops`, :func:`scaleout.moe.host_op_cost`),
    exposed where they outlast the GPU's work queued behind them
    (:func:`scaleout.moe.expert_loop_exposed_s`). The host's time per call is its system's
    (:func:`scaleout.moe.host_call_s`: a Grace CPU in a GB200 system, an x86 CPU elsewhere).
moe_host_layer
    With ``moe_host_sync``: the whole stretch between two of the host's waits counted, not the
    MoE part alone. After one MoE layer's wait the host issues the rest of that layer and the
    next layer's attention block, router and dispatcher preprocessing before it waits again,
    and the GPU runs each of those launches only as it is issued: one layer's forward takes at
    least the host's issue time of one whole layer (its Transformer Engine module calls and
    its eager operators, :func:`scaleout.moe.layer_host_calls`, each at its system's measured
    host time), against the GPU's work of the whole layer (its computation and, where not
    overlapped, its all-to-alls); the backward likewise (Transformer Engine's autograd
    functions run their backward in Python, one call per module). Off: the launches after the
    wait in the MoE part only (:func:`scaleout.moe.moe_host_ops`), against the expert GEMMs
    and the dispatch behind them.
cuda_graph_scopes
    The parts of each layer captured as CUDA graphs and replayed with one launch
    (Megatron-Core ``--cuda-graph-impl transformer_engine --cuda-graph-scope``:
    :data:`scaleout.moe.CUDA_GRAPH_SCOPES`): their calls leave the host's count of the stretch
    between two waits (:func:`scaleout.moe.layer_host_calls`). None by default.
a2a_overlap
    The mixture-of-experts dispatch and combine all-to-alls overlapped with computation
    (Megatron-Core ``--overlap-moe-expert-parallel-comm``; DeepSeek's DualPipe): only the part
    longer than the layer's computation is exposed.
pipeline_schedule
    ``"1f1b"`` (Megatron-LM's 1F1B, interleaved when ``v > 1``) or ``"dualpipe"`` (DeepSeek-V3
    Sec. 3.2.1: micro-batches fed from both ends, every GPU holding stages ``i`` and
    ``pp - 1 - i``, so two copies of its stage's parameters; bubble
    :func:`scaleout.pipeline.dualpipe_bubble_s`; sends overlapped).
comm_sm_share
    The share of a GPU's streaming multiprocessors given to communication kernels that run
    beside the computation (DeepSeek-V3: 20 of the H800's 132, Sec. 3.2.2); computation runs
    on the rest.
sac_every_other_matmul
    Under a plan's ``"selective"`` recomputation, the framework's per-operator policy: every
    matmul output is saved except every second one of each transformer block, which the
    backward pass recomputes (torchtitan's ``selective_ac_option = "op"``): in a Llama block
    ``wk``, ``wo`` and ``w3`` (:func:`scaleout.plan.step.every_other_matmul_params`).
logits_bytes
    Bytes per logit the loss keeps on the GPU that runs the output layer, ``b s V / tp``
    logits: Megatron's vocab-parallel cross entropy casts them to fp32 and keeps the fp32
    softmax, in which its backward pass writes the gradient, beside the 16-bit logits the
    output layer produced (``2 × 4``, the default); flash-attn's fused cross entropy keeps
    the 16-bit logits and writes a 16-bit gradient (``2 + 2``).
recompute_kinds
    Tensor kinds (:data:`scaleout.memory.RECOMPUTE_KINDS`) the framework recomputes in the
    backward pass on top of a plan's ``recompute`` mode (below full recomputation), instead of
    storing them: DeepSeek-V3's HAI-LLM recomputes the normalisations, MLA's up-projections
    and the MoE SwiGLU (Sec. 3.2.3 and 3.3.3). Their forward work is added to the recomputation
    and their activations leave memory (:func:`scaleout.memory.recomputed_kinds_per_layer`).

moe_dispatcher
    How a mixture of experts' tokens reach their experts and come back
    (:data:`scaleout.moe.DISPATCHERS`), which decides the memory-bound token permutations
    outside the communication kernels (:func:`scaleout.moe.permutation_bytes`):
    ``"alltoall"``, each token copied ``k`` times before a plain all-to-all and summed back
    after it, the received tokens sorted by local expert and restored (Megatron-Core's
    all-to-all dispatcher); ``"deepep"``, tokens sent once per destination rank and summed
    inside the communication kernels, the receiver laying them out by expert and back;
    ``"hybridep"``, every permutation inside the communication kernels.

The overlaps and hybrid sharding are switches a user may turn off (:func:`framework`'s
``switches``: what a run that disabled them would do); a switch the framework does not have
cannot be turned on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..checks import check_choice, check_range, close_matches
from ..layout import RECOMPUTE_MODES
from ..memory import RECOMPUTE_KINDS
from ..moe import DISPATCHERS, check_graph_scopes
from ..units import MIB

__all__ = ["DEFAULT_FRAMEWORK", "FRAMEWORKS", "PIPELINE_SCHEDULES", "SWITCHES", "Framework",
           "framework", "framework_names", "preset_rows"]

#: The switches a user may turn off (a framework's mechanisms that a run can disable).
SWITCHES = ("grad_overlap", "param_gather_overlap", "tp_overlap", "p2p_overlap",
            "hybrid_shard", "a2a_overlap")
#: Pipeline schedules a framework may run.
PIPELINE_SCHEDULES = ("1f1b", "dualpipe")


@dataclass(frozen=True)
class Framework:
    """A training framework's collectives, overlaps and rules (see the module docstring)."""

    name: str
    label: str
    collectives: str = "nccl"
    grad_bucket_bytes: float | None = None
    grad_overlap: bool = False
    param_gather_overlap: bool = False
    flat_dp_rings: bool = False
    zero3_unit: str = "layer"
    zero3_prefetch: int = 1
    zero3_blocking_fetch: bool = False
    zero3_persistence_threshold: int = 0
    zero3_max_reuse_distance: float | None = None
    zero2_per_unit: bool = False
    pp_defers_grad_sync: bool = False
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    max_zero_with_pp: int = 1
    tp_overlap: bool = False
    p2p_overlap: bool = False
    hybrid_shard: bool = False
    tensor_parallel: bool = True
    pipeline_parallel: bool = True
    interleaved_schedule: bool = True
    sequence_parallel: bool = True
    recompute_modes: tuple[str, ...] = ("none", "selective", "full")
    cp_variant: str = ""
    expert_parallel: bool = False
    expert_gemm_loop: bool = False
    moe_host_sync: bool = False
    moe_host_layer: bool = False
    cuda_graph_scopes: tuple[str, ...] = ()
    a2a_overlap: bool = False
    pipeline_schedule: str = "1f1b"
    comm_sm_share: float = 0.0
    sac_every_other_matmul: bool = False
    recompute_kinds: tuple[str, ...] = ()
    logits_bytes: float = 8.0
    moe_dispatcher: str = "alltoall"
    sources: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name of a framework must be a non-empty string (messages and "
                             f"reports name it), got {self.name!r}")
        check_choice("collectives", self.collectives, ("nccl", "hierarchical"))
        check_choice("zero3_unit", self.zero3_unit, ("layer", "tensor"))
        check_choice("cp_variant", self.cp_variant, ("", "ring"))
        check_choice("pipeline_schedule", self.pipeline_schedule, PIPELINE_SCHEDULES)
        check_range("comm_sm_share", self.comm_sm_share, 0.0, 0.9)
        check_range("logits_bytes", self.logits_bytes, 1.0, 16.0)
        check_choice("moe_dispatcher", self.moe_dispatcher, DISPATCHERS)
        if not self.recompute_modes:
            raise ValueError(f"recompute_modes of framework {self.name!r} is empty; allowed: "
                             f"some of {', '.join(RECOMPUTE_MODES)}")
        for mode in self.recompute_modes:
            check_choice("recompute_modes", mode, RECOMPUTE_MODES)
        for kind in self.recompute_kinds:
            check_choice("recompute_kinds", kind, RECOMPUTE_KINDS)
        check_graph_scopes(self.cuda_graph_scopes)
        if self.moe_host_layer and not self.moe_host_sync:
            raise ValueError(f"moe_host_layer=True needs moe_host_sync=True (framework "
                             f"{self.name!r}): the stretch it counts runs between two of the "
                             f"host's waits")

    def with_switches(self, switches: Mapping[str, bool] | None) -> Framework:
        """This preset with some of its :data:`SWITCHES` turned off (or left on).

        Raises
        ------
        ValueError
            An unknown switch, a value that is not a bool, or turning on a switch this
            framework does not have.
        """
        if not switches:
            return self
        if not isinstance(switches, Mapping):
            raise ValueError(f"switches must map switch names to True/False, got {switches!r}")
        changes = {}
        for name, value in switches.items():
            check_choice("switch", name, SWITCHES)
            if not isinstance(value, bool):
                raise ValueError(f"switches[{name!r}] must be True or False, got {value!r}")
            if value and not getattr(self, name):
                have = [s for s in SWITCHES if getattr(self, s)]
                raise ValueError(
                    f"switches[{name!r}]=True: {self.name} has no {name.replace('_', ' ')} "
                    f"to turn on; its switches that can be turned off: "
                    f"{', '.join(have) or 'none'}")
            if value != getattr(self, name):
                changes[name] = value
        if not changes:
            return self
        off = ", ".join(f"{k} off" for k in changes)
        return replace(self, label=f"{self.label}, {off}", **changes)


_MEGATRON_2021 = Framework(
    "megatron-lm-2021", "Megatron-LM as published in 2021-22",
    grad_bucket_bytes=None, grad_overlap=False, zero_stages=(0,), max_zero_with_pp=0,
    sources={
        "grad_overlap": "Narayanan et al. 2021 (arXiv 2104.04473) and Korthikanti et al. 2022: "
                        "the data-parallel all-reduce runs after the pipeline flush, on one "
                        "contiguous gradient buffer (Megatron's local DDP)",
        "zero_stages": "no ZeRO in Megatron-LM of 2021 (ZeRO-3 was compared through DeepSpeed)",
        "p2p_overlap": "sends on the critical path (scatter/gather, Sec. 4.1)",
    })

_MEGATRON_2023 = Framework(
    "megatron-lm-2023", "Megatron-LM of early 2023 (commit 285068c8)",
    grad_bucket_bytes=None, grad_overlap=False, param_gather_overlap=False,
    zero_stages=(0, 1), max_zero_with_pp=1, tp_overlap=False, p2p_overlap=False,
    sources={
        "zero_stages": "megatron/arguments.py @ 285068c8 (2023-01-11): --use-distributed-"
                       "optimizer (ZeRO-1), the only sharding it offers",
        "grad_overlap": "megatron/arguments.py @ 285068c8: no --overlap-grad-reduce (added later "
                        "in 2023); local DDP reduces the contiguous gradient buffer after the "
                        "pipeline flush",
        "param_gather_overlap": "megatron/arguments.py @ 285068c8: no --overlap-param-gather; "
                                "the distributed optimizer gathers the weights after its step",
        "tp_overlap": "megatron/arguments.py @ 285068c8: no --tp-comm-overlap (only the "
                      "asynchronous all-reduce beside a column-parallel layer's weight "
                      "gradient); the MegaScale paper (arXiv 2402.15627, Sec. 3.3, 6.1) adds "
                      "TP/SP overlap on top of this baseline",
        "p2p_overlap": "megatron/arguments.py @ 285068c8: no --overlap-p2p-communication; the "
                       "interleaved schedule's sends are blocking",
    })

_DEEPSPEED_2021 = Framework(
    "deepspeed-2021", "DeepSpeed ZeRO, 2021 (v0.3-0.4)",
    grad_bucket_bytes=5e8 * 2, grad_overlap=True, flat_dp_rings=True, zero3_unit="tensor",
    zero3_prefetch=1, zero3_blocking_fetch=True, zero3_persistence_threshold=100_000,
    zero3_max_reuse_distance=1e9,
    zero_stages=(0, 1, 2, 3), max_zero_with_pp=1,
    interleaved_schedule=False, sequence_parallel=False, recompute_modes=("none", "full"),
    sources={
        "interleaved_schedule": "deepspeed/runtime/pipe/schedule.py @ v0.3.16: TrainSchedule, "
                                "one 1F1B schedule per stage; no interleaved (virtual) stages",
        "sequence_parallel": "none in DeepSpeed v0.3-0.4: Megatron's sequence parallelism "
                             "came with Korthikanti et al. 2022 (arXiv 2205.05198)",
        "recompute_modes": "deepspeed/runtime/activation_checkpointing/checkpointing.py @ "
                           "v0.3.16: checkpoint() recomputes a whole wrapped layer; selective "
                           "recomputation came with Korthikanti et al. 2022",
        "zero3_blocking_fetch": "deepspeed/runtime/zero/stage3.py @ v0.3.16: fetch_sub_module "
                                "ends in _synchronize_communication (comm_stream.synchronize() "
                                "and torch.cuda.synchronize()); prefetch_next_sub_modules runs "
                                "only with nothing in flight and takes the next parameters up to "
                                "stage3_prefetch_bucket_size (5e7 elements): one weight matrix "
                                "of a large layer",
        "zero3_persistence_threshold": "deepspeed/runtime/zero/constants.py @ v0.3.16: "
                                       "stage3_param_persistence_threshold default 1e5 "
                                       "elements (biases and norms stay whole)",
        "zero3_max_reuse_distance": "deepspeed/runtime/zero/constants.py @ v0.3.16: "
                                    "stage3_max_reuse_distance default 1e9 elements; "
                                    "stage3.py _keep_for_later releases a tensor whose next "
                                    "use is further away",
        "flat_dp_rings": "ZeRO-3 over the whole data-parallel group as flat NCCL rings, each "
                         "GPU's share crossing its own NIC (the mechanism Narayanan et al. "
                         "2021 Sec. 5.2 names: 'less cross-node communication' for PTD-P)",
        "zero3_unit": "deepspeed/runtime/zero/partition_parameters.py @ v0.3.16: prefetching "
                      "calls _allgather_param once per parameter tensor (async)",
        "zero3_prefetch": "stage3.py @ v0.3.16 prefetch_next_sub_modules (stage3_prefetch_"
                          "bucket_size 5e7 elements: about the next submodule)",
        "grad_bucket_bytes": "reduce_bucket_size default 5e8 elements (2-byte gradients)",
        "max_zero_with_pp": "DeepSpeed pipeline engine: ZeRO-2 and ZeRO-3 are incompatible "
                            "with pipeline parallelism",
    })

_FSDP = Framework(
    "pytorch-fsdp", "PyTorch FSDP (FSDP1, 2022-23)",
    grad_bucket_bytes=25 * MIB, grad_overlap=True, zero3_unit="layer", zero3_prefetch=1,
    zero2_per_unit=True,
    zero_stages=(0, 2, 3), max_zero_with_pp=0, hybrid_shard=True, logits_bytes=4.0,
    tensor_parallel=False, pipeline_parallel=False, interleaved_schedule=False,
    sequence_parallel=False, recompute_modes=("none", "full"),
    sources={
        "tensor_parallel": "Composer's FSDP integration of 2022-23 (composer/trainer/"
                           "dist_strategy.py, prepare_fsdp_module): FSDP only, no tensor or "
                           "pipeline parallelism (llm-foundry's MPT benchmarks: 'no tensor or "
                           "pipeline parallelism', data/published/mpt_llm_foundry_2024.toml)",
        "pipeline_parallel": "as tensor_parallel: FSDP1 through Composer shards data-parallel "
                             "ranks only",
        "recompute_modes": "FSDP's activation_checkpointing flag wraps whole transformer "
                           "blocks (torch.distributed.algorithms._checkpoint."
                           "checkpoint_wrapper): none or full",
        "logits_bytes": "llm-foundry's MPT training (Composer on FSDP1), llmfoundry/models/mpt/"
                        "modeling_mpt.py @ 5e85bd62: loss_fn 'fused_crossentropy' by default, "
                        "flash-attn's CrossEntropyLoss (flash_attn/losses/cross_entropy.py: saves "
                        "the bf16 logits and an fp32 log-sum-exp per row; the backward writes "
                        "dlogits = torch.empty_like(logits), bf16)",
        "hybrid_shard": "ShardingStrategy.HYBRID_SHARD / _HYBRID_SHARD_ZERO2 (PyTorch 2.0+): "
                        "shard within a node's group, replicate across (Zhao et al. 2023 "
                        "Sec. 3.2.2)",
        "zero3_unit": "Zhao et al. 2023 (arXiv 2304.11277) Sec. 3: one FlatParameter per FSDP "
                      "unit, a transformer block under the usual auto-wrap policy",
        "zero3_prefetch": "backward_prefetch=BACKWARD_PRE and the CPU running ahead in forward "
                          "with limit_all_gathers (at most two all-gathers in flight), Sec. 4",
        "zero_stages": "ShardingStrategy NO_SHARD (DDP), SHARD_GRAD_OP (ZeRO-2), FULL_SHARD "
                       "(ZeRO-3)",
        "zero2_per_unit": "torch/distributed/fsdp/api.py, ShardingStrategy: SHARD_GRAD_OP "
                          "'unshards before the forward, does not reshard them after the "
                          "forward, and only reshards them after the backward computation'; "
                          "gradients reduce-scattered per FSDP unit after its backward",
        "grad_bucket_bytes": "DDP's bucket_cap_mb=25 for NO_SHARD; FSDP reduce-scatters per unit",
    })

_TORCHTITAN = Framework(
    "torchtitan", "torchtitan (FSDP2 + TP + PP, 2024-25)",
    grad_bucket_bytes=None, grad_overlap=True, zero3_unit="layer", zero3_prefetch=1,
    zero2_per_unit=True, pp_defers_grad_sync=True, zero_stages=(0, 2, 3), max_zero_with_pp=3,
    tp_overlap=False, p2p_overlap=False, hybrid_shard=True, cp_variant="ring",
    expert_parallel=True, sac_every_other_matmul=True,
    sources={
        "sac_every_other_matmul": "torchtitan/parallelisms/parallelize_llama.py @ 4d88a8a4 "
                                  "(2024-12-03): activation_checkpoint.mode='selective', "
                                  "selective_ac_option='op': _custom_policy saves the ops of "
                                  "_save_list 'except every second mm' of each block",
        "cp_variant": "parallelism.context_parallel_degree: PyTorch's context_parallel, ring "
                      "attention over the sequence shards (Liang et al. 2025 Sec. 2.1)",
        "expert_parallel": "parallelism.expert_parallel_degree (torchtitan's mixture-of-experts "
                           "models, 2025)",
        "expert_gemm_loop": "off: torchtitan/models/moe/moe.py MoEArgs.use_grouped_mm = True, "
                            "the experts' GEMMs in one torch._grouped_mm call each (the "
                            "per-expert loop is kept only 'for comparison')",
        "hybrid_shard": "HSDP: data_parallel_replicate_degree x data_parallel_shard_degree "
                        "(Liang et al. 2025 Sec. 2.1)",
        "zero3_unit": "Liang et al. 2025 (arXiv 2410.06511) Sec. 2.1: fully_shard per "
                      "TransformerBlock (FSDP2, per-parameter sharding)",
        "zero3_prefetch": "FSDP2's implicit prefetch of the next block in forward and backward",
        "zero2_per_unit": "parallelism.fsdp_reshard_after_forward 'never' (torchtitan/"
                          "distributed/fsdp.py get_fsdp_reshard_after_forward_policy; the "
                          "default with PP): without PP, trainer.py's train_step runs each "
                          "micro-batch's forward_backward_step with FSDP2's gradient sync on "
                          "(@ b5bcd76c, 2026-08), so every micro-batch reduce-scatters",
        "pp_defers_grad_sync": "torch/distributed/pipelining/stage.py @ 01386103: "
                               "backward_maybe_with_nosync sets set_reshard_after_backward"
                               "(False) and set_requires_gradient_sync(False) on the FSDP "
                               "module for every micro-batch, _post_backward reshards and "
                               "reduces once after the schedule; FSDP2 keeps the unsharded "
                               "gradient in its reduce dtype (_fsdp_param.py "
                               "FSDPParam.to_accumulated_grad_if_needed), float32 by "
                               "torchtitan's mixed_precision_reduce default",
        "max_zero_with_pp": "torchtitan composes FSDP2 with torch.distributed.pipelining "
                            "(Sec. 2.3); reshard_after_forward is off with PP",
        "tp_overlap": "async TP exists but is off by default (experimental.enable_async_"
                      "tensor_parallel=false)",
    })

_MEGATRON_CORE = Framework(
    "megatron-core", "Megatron-Core (2024-25)",
    grad_bucket_bytes=40e6 * 4, grad_overlap=True, param_gather_overlap=True,
    zero3_unit="layer", zero3_prefetch=1, zero_stages=(0, 1, 3), max_zero_with_pp=1,
    tp_overlap=True, p2p_overlap=True, hybrid_shard=True, cp_variant="ring",
    expert_parallel=True, expert_gemm_loop=True, moe_host_sync=True, moe_host_layer=True,
    a2a_overlap=False, moe_dispatcher="alltoall",
    sources={
        "moe_host_layer": "between two waits (MoEAlltoAllTokenDispatcher.token_dispatch's "
                          "'before_ep_alltoall' in consecutive MoE layers) the host issues "
                          "the rest of the MoE layer and the next TransformerLayer.forward: "
                          "TELayerNormColumnParallelLinear (linear_qkv), TEDotProductAttention, "
                          "TERowParallelLinear (linear_proj), the fused RoPE and "
                          "bias-dropout-adds, TENorm (pre_mlp_layernorm), TopKRouter (gating, "
                          "fused top-k, aux loss) and dispatch_preprocess (megatron/core/"
                          "transformer/{transformer_layer,attention}.py, moe/{router,"
                          "token_dispatcher,moe_layer}.py at Megatron-LM 92c8482e; "
                          "Transformer Engine v2.9 modules); counted in scaleout.moe."
                          "LAYER_HOST_CALLS",
        "cuda_graph_scopes": "none: cuda_graph_impl = 'none' by default (megatron/core/"
                             "transformer/transformer_config.py at Megatron-LM 92c8482e); a "
                             "run's recipe sets its scopes (Megatron Bridge's "
                             "scripts/performance/configs at 5776a6d9)",
        "moe_host_sync": "dropless routing: MoEAlltoAllTokenDispatcher copies the token counts "
                         "to the host and waits (_maybe_dtoh_and_synchronize at "
                         "'before_ep_alltoall', megatron/core/transformer/moe/"
                         "token_dispatcher.py at Megatron-LM 92c8482e); the launches after the "
                         "wait counted in scaleout.moe.MOE_HOST_OPS",
        "moe_dispatcher": "--moe-token-dispatcher-type alltoall, as Megatron Bridge's MoE "
                          "model providers set it (Qwen3MoEModelProvider, GPTOSSProvider at "
                          "5776a6d9); MoEAlltoAllTokenDispatcher in megatron/core/transformer/"
                          "moe/token_dispatcher.py (Megatron-LM 92c8482e): permute, all-to-all, "
                          "sort_chunks_by_idxs by local expert, and back; --moe-flex-"
                          "dispatcher-backend deepep or hybridep selects the others",
        "cp_variant": "--context-parallel-size: ring attention in Transformer Engine "
                      "(cp_comm_type 'p2p' by default)",
        "expert_parallel": "--expert-model-parallel-size; experts folded over TP x CP x DP "
                           "(MoE parallel folding, arXiv 2504.14960)",
        "a2a_overlap": "--overlap-moe-expert-parallel-comm exists and is off by default "
                       "(megatron/training/arguments.py)",
        "expert_gemm_loop": "--moe-grouped-gemm runs TEGroupedMLP (megatron/core/transformer/"
                            "moe/experts.py, core_v0.15.0): Transformer Engine's GroupedLinear "
                            "(v2.9) issues one cuBLASLt GEMM per local expert "
                            "(nvte_multi_tensor_gemm -> multi_stream_cublas_gemm; the CUTLASS "
                            "grouped path is Hopper-only and off unless "
                            "NVTE_USE_CUTLASS_GROUPED_GEMM=1), sized by token counts copied "
                            "to the host (tokens_per_expert.tolist())",
        "hybrid_shard": "--num-distributed-optimizer-instances: the distributed optimizer "
                        "sharded within each instance, gradients all-reduced across them",
        "grad_bucket_bytes": "megatron/core/distributed/distributed_data_parallel_config.py: "
                             "bucket_size default max(40,000,000, 1,000,000 x dp) parameters, "
                             "fp32 main grads",
        "grad_overlap": "overlap_grad_reduce (distributed optimizer)",
        "param_gather_overlap": "overlap_param_gather",
        "zero_stages": "use_distributed_optimizer (ZeRO-1); Megatron FSDP (ZeRO-3)",
        "tp_overlap": "tp_comm_overlap: userbuffers pipeline TP all-gather/reduce-scatter with "
                      "the GEMMs (Transformer Engine), within one NVLink domain (TE #1071)",
        "p2p_overlap": "overlap_p2p_comm (interleaved 1F1B)",
    })

_HAI_LLM = Framework(
    "deepseek-hai-llm", "DeepSeek HAI-LLM with DualPipe (DeepSeek-V3, 2024)",
    grad_bucket_bytes=None, grad_overlap=False, param_gather_overlap=False,
    zero_stages=(0, 1), max_zero_with_pp=1, tp_overlap=False, p2p_overlap=True,
    hybrid_shard=False, cp_variant="", expert_parallel=True, a2a_overlap=True,
    pipeline_schedule="dualpipe", comm_sm_share=20 / 132, recompute_kinds=RECOMPUTE_KINDS,
    moe_dispatcher="deepep",
    sources={
        "moe_dispatcher": "Sec. 3.2.2: a token crosses IB once per node and NVLink once per "
                          "GPU, the combine reducing on the way back, in custom kernels "
                          "(released as DeepEP): permutations of the received tokens only",
        "pipeline_schedule": "DeepSeek-V3 report (arXiv 2412.19437) Sec. 3.2.1 and Table 2: "
                             "DualPipe, bubble (PP/2 - 1)(F&B + B - 3W), two copies of the "
                             "parameters, PP + 1 micro-batches of activations",
        "a2a_overlap": "Sec. 3.2.1: the dispatch and combine all-to-alls of one chunk overlap "
                       "the computation of another (forward and backward pairs)",
        "p2p_overlap": "Sec. 3.2.1: pipeline communication hidden inside DualPipe's overlapped "
                       "chunks",
        "comm_sm_share": "Sec. 3.2.2: 20 of the H800's 132 SMs run the communication kernels",
        "recompute_kinds": "Sec. 3.2.3, p. 14: 'We recompute all RMSNorm operations and MLA "
                           "up-projections during back-propagation'; Sec. 3.3.3, p. 18: the "
                           "SwiGLU operator's inputs cached and its output recomputed in the "
                           "backward pass",
        "zero_stages": "Sec. 3.2: 'ZeRO-1 Data Parallelism'",
        "expert_parallel": "Sec. 3.2: 64-way expert parallelism over 8 nodes",
        "expert_gemm_loop": "off: DeepSeek's DeepGEMM (github.com/deepseek-ai/DeepGEMM, "
                            "README 'Grouped GEMMs (contiguous layout)') runs all experts' "
                            "GEMMs of a training forward pass as one M-grouped FP8 GEMM, and "
                            "the weight gradients as one K-grouped GEMM",
        "cp_variant": "no context parallelism in the report (4K pre-training sequences)",
        "grad_overlap": "not stated in the report: the gradient reduction is taken as exposed",
        "tp_overlap": "no tensor parallelism in training (Sec. 3.2)",
    })

FRAMEWORKS: dict[str, Framework] = {f.name: f for f in (
    _MEGATRON_2021, _DEEPSPEED_2021, _MEGATRON_2023, _FSDP, _TORCHTITAN, _MEGATRON_CORE,
    _HAI_LLM)}
#: The framework the planner assumes when none is named: how large models are trained today.
DEFAULT_FRAMEWORK = "megatron-core"


def framework_names() -> list[str]:
    """The preset names."""
    return list(FRAMEWORKS)


def framework(spec: str | Framework | None,
              switches: Mapping[str, bool] | None = None) -> Framework:
    """A preset by name (None: :data:`DEFAULT_FRAMEWORK`), or a :class:`Framework` as given,
    with ``switches`` turned off where given (:meth:`Framework.with_switches`).

    Raises
    ------
    ValueError
        An unknown name, with the close ones and the list.
    """
    if isinstance(spec, Framework):
        return spec.with_switches(switches)
    if spec is None:
        return FRAMEWORKS[DEFAULT_FRAMEWORK].with_switches(switches)
    if not isinstance(spec, str) or spec not in FRAMEWORKS:
        near = close_matches(str(spec), FRAMEWORKS)
        hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
        raise ValueError(f"framework={spec!r} is not a preset{hint}; presets: "
                         f"{', '.join(FRAMEWORKS)}")
    return FRAMEWORKS[spec].with_switches(switches)


def preset_rows() -> list[dict[str, str]]:
    """Each preset's switches in words, one dict per preset (for a table): the parallelisms
    and recomputation it runs, what its collectives are, when gradients are reduced, how
    ZeRO-3 gathers, which ZeRO stages it offers and which of them combine with pipelining, and
    what else it overlaps."""
    out = []
    for f in FRAMEWORKS.values():
        bucket = ("one call" if not f.grad_bucket_bytes
                  else f"buckets of {f.grad_bucket_bytes / MIB:,.0f} MiB")
        overlaps = [name for name, on in (("gradient reduction", f.grad_overlap),
                                          ("ZeRO-1/2 weight gather", f.param_gather_overlap),
                                          ("tensor-parallel", f.tp_overlap),
                                          ("pipeline sends", f.p2p_overlap),
                                          ("MoE all-to-all", f.a2a_overlap)) if on]
        layouts = [name for name, on in (("TP", f.tensor_parallel), ("SP", f.sequence_parallel),
                                         ("PP", f.pipeline_parallel),
                                         ("interleaved", f.interleaved_schedule)) if on]
        out.append({
            "preset": f.name, "framework": f.label,
            "layouts": ", ".join(layouts) or "data parallel only",
            "recompute": ", ".join(f.recompute_modes),
            "collectives": ("NCCL, flat rings across nodes" if f.flat_dp_rings
                            else "NCCL, topology-aware") if f.collectives == "nccl"
            else "textbook hierarchical α-β",
            "gradients": bucket,
            "overlapped": ", ".join(overlaps) or "nothing",
            "ZeRO-3 gathers": (f"per {f.zero3_unit}, {f.zero3_prefetch} ahead"
                               + (", the host waiting at each" if f.zero3_blocking_fetch else "")
                               if 3 in f.zero_stages else "—"),
            "ZeRO stages": ", ".join(map(str, f.zero_stages)),
            "with pipelining": (f"up to ZeRO-{f.max_zero_with_pp}"
                                + (", synced once a step"
                                   if f.pp_defers_grad_sync else "")
                                if f.max_zero_with_pp else "no ZeRO"),
            "hybrid sharding": "yes" if f.hybrid_shard else "no",
            "context parallel": f.cp_variant or "no",
            "expert parallel": "yes" if f.expert_parallel else "no",
            "schedule": "DualPipe" if f.pipeline_schedule == "dualpipe" else "1F1B",
        })
    return out
