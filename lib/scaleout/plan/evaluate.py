"""One plan evaluated: memory per GPU, time per iteration, throughput, training time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .. import catalog, compute, layout, memory
from ..catalog import GPU, ModelSpec
from ..checks import check_bool, check_positive
from ..collectives import NodeNetwork
from ..layout import RECOMPUTE_MODES, Plan
from ..units import GIB, SECONDS_PER_DAY, SECONDS_PER_HOUR
from .calibration import Calibration
from .frameworks import Framework
from .network import default_network
from .stages import StageMemory, stage_memory
from .step import MEMORY_PARTS, STEP_PARTS, TIGHT_SHARE, Context, _shape, context, iteration

__all__ = ["PlanResult", "evaluate", "plan_from_arrays", "throughput"]


@dataclass(frozen=True)
class PlanResult:
    """One plan evaluated: memory per GPU (bytes), time per iteration (seconds), throughput.

    ``memory`` maps :data:`~scaleout.plan.MEMORY_PARTS` to bytes (the fullest pipeline rank,
    ``reserve`` included; :attr:`fits` compares it with HBM), ``step`` maps
    :data:`~scaleout.plan.STEP_PARTS` to seconds; ``stage_memory_bytes`` gives the first and
    the last stage; ``stages`` every pipeline rank, rank 0 first
    (:func:`~scaleout.plan.stages.stage_memory`: its layers, the embedding and output layer it
    holds, the micro-batches it keeps in flight, bytes per part), and ``memory`` is the
    largest of them; ``framework`` names the preset whose collectives and overlaps were
    assumed.
    """

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
    framework: str = ""
    stage_memory_bytes: dict[str, float] | None = None
    framework_label: str = ""
    stages: tuple[StageMemory, ...] = ()

    @property
    def largest_stage(self) -> StageMemory | None:
        """The pipeline rank that holds the most bytes (None without :attr:`stages`)."""
        return max(self.stages, key=lambda s: s.total_bytes) if self.stages else None

    @property
    def memory_bytes(self) -> float:
        """Everything the busiest GPU holds."""
        return float(sum(self.memory[k] for k in MEMORY_PARTS))

    @property
    def fits(self) -> bool:
        """Whether the busiest GPU's memory is within its HBM."""
        return self.memory_bytes <= self.capacity_bytes

    @property
    def headroom_gib(self) -> float:
        """GiB left on the busiest GPU (negative when it does not fit)."""
        return (self.capacity_bytes - self.memory_bytes) / GIB

    @property
    def tight(self) -> bool:
        """Whether the busiest GPU fills more than :data:`~scaleout.plan.step.TIGHT_SHARE`
        of its HBM: peaks and fragmentation the model does not see may push it over."""
        return self.memory_bytes > TIGHT_SHARE * self.capacity_bytes

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


def plan_from_arrays(a: Mapping[str, np.ndarray], i: int, *, global_batch: int,
                     seq_len: int | None = None) -> Plan:
    """The :class:`Plan` at index ``i`` of a search's arrays (``recompute`` as names)."""
    return Plan(tp=int(a["tp"][i]), pp=int(a["pp"][i]), dp=int(a["dp"][i]),
                micro_batch=int(a["micro_batch"][i]), global_batch=global_batch,
                zero_stage=int(a["zero_stage"][i]), sp=bool(a["sp"][i]),
                recompute=str(a["recompute"][i]), interleave=int(a["interleave"][i]),
                flash_attention=bool(a["flash"][i]), seq_len=seq_len,
                zero_shard=int(a["zero_shard"][i]) if "zero_shard" in a else None,
                cp=int(a["cp"][i]) if "cp" in a else 1, ep=int(a["ep"][i]) if "ep" in a else 1)


def _arrays(plan: Plan) -> dict[str, np.ndarray]:
    """One plan as the one-element arrays :func:`~scaleout.plan.step.iteration` takes."""
    a = {"tp": plan.tp, "pp": plan.pp, "dp": plan.dp, "micro_batch": plan.micro_batch,
         "interleave": plan.interleave, "zero_stage": plan.zero_stage, "sp": plan.sp,
         "rc": memory.recompute_code(plan.recompute), "flash": plan.flash_attention,
         "zero_shard": plan.shard_group, "cp": plan.cp, "ep": plan.ep}
    return {k: np.array([v]) for k, v in a.items()}


def throughput(ctx: Context, n_gpus, step_s, rc) -> dict[str, np.ndarray]:
    """Tokens/s, MFU, HFU and TFLOP/s per GPU (PaLM App. B; Megatron-LM Eq. 3).

    Model FLOPs count a mixture of experts' active parameters
    (:func:`scaleout.compute.flops_per_token`); MFU and HFU are shares of the GPU's dense
    BF16 peak, whatever the recipe (an FP8 run's MFU is its BF16-equivalent one)."""
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
    network: NodeNetwork | None = None,
    *,
    calibration: Calibration | None = None,
    recipe: str | memory.PrecisionRecipe = "mixed-adam",
    tokens: float | None = None,
    uneven_layers: bool | None = None,
    allow_tp_across_nodes: bool = False,
    framework: str | Framework | None = None,
    switches: Mapping[str, bool] | None = None,
    reserve_gib: float | None = None,
) -> PlanResult:
    """Memory per GPU, iteration time and throughput of one plan.

    Parameters
    ----------
    model, gpu
        Catalog names or specs.
    plan
        The layout; its ``seq_len`` overrides the model's.
    network
        A :class:`~scaleout.collectives.NodeNetwork` (default :func:`default_network`).
    calibration
        Efficiency parameters (default :data:`~scaleout.plan.DEFAULT_CALIBRATION`).
    recipe
        Bytes per parameter (:data:`scaleout.memory.RECIPES`).
    tokens
        A training budget in tokens: fills ``training_days`` and ``gpu_hours``.
    uneven_layers
        Stages of unequal layer counts where ``pp`` does not divide the layers (the
        default, None, allows them; False refuses such a plan).
    allow_tp_across_nodes
        Relaxes the validity rules (:mod:`scaleout.layout`).
    framework
        A preset of :mod:`scaleout.plan.frameworks` (default: Megatron-Core): which
        collectives it issues, what it overlaps, which ZeRO stages it offers.
    switches
        The framework's mechanisms to turn off, e.g. ``{"grad_overlap": False}``
        (:data:`~scaleout.plan.frameworks.SWITCHES`).
    reserve_gib
        The fixed memory a run keeps besides its tensors, GiB per GPU (default: the CUDA
        context and NCCL's buffers of :data:`~scaleout.plan.step.RESERVE`, 1.75 GiB); the
        allocator's share, the logits and ZeRO-3's gathered layers come on top.

    Raises
    ------
    ValueError
        The sentence of the first rule of :data:`scaleout.layout.RULES` the plan breaks.
    """
    m = catalog.model(model)
    uneven = True if uneven_layers is None else check_bool("uneven_layers", uneven_layers)
    check_bool("allow_tp_across_nodes", allow_tp_across_nodes)
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a scaleout.plan.Plan, got {plan!r}")
    net = network if network is not None else default_network(gpu)
    ctx = context(m, gpu, net, calibration, recipe, plan.seq_len, plan.global_batch, framework,
                  switches, reserve_gib)
    layout.check(plan, layout.Facts.of(m, net.gpus_per_node, uneven_layers=uneven,
                                       allow_tp_across_nodes=allow_tp_across_nodes,
                                       relaxable=True, framework=ctx.framework,
                                       seq_len=ctx.seq_len,
                                       flash_attention=plan.flash_attention,
                                       recipe=ctx.recipe, gpu=ctx.gpu))
    arrays = _arrays(plan)
    out = iteration(ctx, arrays, uneven=uneven)
    stages = stage_memory(ctx, _shape(ctx, arrays), out["first_layers"][0],
                          out["last_layers"][0])
    largest = max(stages, key=lambda s: s.total_bytes)
    rc = RECOMPUTE_MODES.index(plan.recompute)
    thr = throughput(ctx, plan.n_gpus, out["step_s"], rc)
    days = hours = None
    if tokens is not None:
        seconds = check_positive("tokens", tokens) / float(thr["tokens_per_s"][0])
        days = seconds / SECONDS_PER_DAY
        hours = seconds * plan.n_gpus / SECONDS_PER_HOUR
    return PlanResult(
        plan=plan, model=m.name, gpu=ctx.gpu.name,
        memory=largest.parts(),
        capacity_bytes=ctx.gpu.hbm_bytes,
        step={k: float(out[f"{k}_s"][0]) for k in STEP_PARTS},
        tokens_per_s=float(thr["tokens_per_s"][0]), mfu=float(thr["mfu"][0]),
        hfu=float(thr["hfu"][0]), model_tflops_per_gpu=float(thr["model_tflops"][0]),
        hardware_tflops_per_gpu=float(thr["hardware_tflops"][0]),
        megatron_tflops_per_gpu=float(np.ravel(thr["megatron_tflops"])[0]),
        training_days=days, gpu_hours=hours, framework=ctx.framework.name,
        framework_label=ctx.framework.label,
        stage_memory_bytes={"first": float(out["first_stage_bytes"][0]),
                            "last": float(out["last_stage_bytes"][0])},
        stages=stages,
    )
