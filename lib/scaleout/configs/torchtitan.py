"""torchtitan TOML job files <-> the workbook's :class:`~scaleout.plan.Plan`.

Keys are torchtitan's own (``torchtitan/config/job_config.py`` at the release recorded in
``data/frameworks/torchtitan.toml``, the last one configured by TOML files; the same
``section.key`` names are its ``--section.key`` command-line overrides).

=================================================  =================================================
torchtitan key                                     Plan field
=================================================  =================================================
``parallelism.tensor_parallel_degree``             ``tp``; torchtitan's tensor parallelism always
                                                   shards the norms along the sequence: ``sp``
``parallelism.pipeline_parallel_degree``           ``pp``
``parallelism.data_parallel_replicate_degree``     ``dp`` = replicate x shard (shard -1: the GPUs
x ``data_parallel_shard_degree``                   left over, from n_gpus)
shard > 1 (FSDP2) + ``fsdp_reshard_after_``        ``zero_stage`` 3 (``always``, or ``default``
``forward``                                        without pipelining) or 2 (``never``, or
                                                   ``default`` with pipelining); replicate only
                                                   (DDP): 0; replicate and shard (HSDP): not
                                                   modelled
``parallelism.pipeline_parallel_schedule``         ``1F1B``: ``interleave`` 1; ``Interleaved1F1B``:
+ ``pipeline_parallel_layers_per_stage``           ``interleave`` = layers / (pp x layers/stage);
                                                   other schedules: not modelled
``parallelism.pipeline_parallel_microbatch_size``  ``micro_batch`` with pipelining
``training.local_batch_size``                      ``micro_batch`` without pipelining
``training.global_batch_size``                     ``global_batch`` (-1: local x dp)
``training.seq_len``                               ``seq_len``
``activation_checkpoint.mode`` (+ ``selective_``   ``recompute``: none, full; selective with option
``ac_option``)                                     ``op`` (torchtitan's per-op policy saves matrix
                                                   multiplies, close to but not Korthikanti's
                                                   selective); every n-th layer: not modelled
(always)                                           ``flash_attention`` True: attention runs in SDPA
                                                   or FlexAttention kernels
``parallelism.context_parallel_degree``           ``cp``
``parallelism.expert_parallel_degree``             ``ep`` (a mixture of experts; ignored for a
                                                   dense model); expert TP > 1: not modelled
``model.converters`` float8, mx                    recipe ``fp8-te-cs``, ``fp8-te-mx``
=================================================  =================================================

A key torchtitan does not have is an error (torchtitan refuses it too); other known
keys are reported as ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..catalog import ModelSpec
from ..plan import Plan, PlanResult
from ._common import (
    ASSUMED,
    IGNORED,
    NOT_MODELLED,
    ImportedRun,
    UnsupportedPlanError,
    _Collector,
    choice,
    header_lines,
    load_toml,
    reject_unknown,
    used,
    whole,
)

__all__ = ["from_torchtitan_toml", "to_torchtitan_toml"]

_F = "torchtitan"
_SCHEDULES_SINGLE = ("1F1B", "GPipe")
_SCHEDULES_MULTI = ("Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble",
                    "DualPipeV")


def _flatten(raw: Mapping, label: str, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, label, name + "."))
        else:
            out[name] = value
    return out


def from_torchtitan_toml(toml: str | Path | Mapping, *, n_gpus: int | None = None,
                         model: ModelSpec | None = None) -> ImportedRun:
    """Read a torchtitan job TOML (file, text or parsed dict) into an :class:`ImportedRun`.

    Parameters
    ----------
    toml
        The job file; parsed with :mod:`tomllib` only.
    n_gpus
        The world size (torchrun's); needed when ``data_parallel_shard_degree`` is -1.
    model
        The model, for the interleaved schedule's chunks per rank (its layer count).

    Raises
    ------
    ValueError
        Malformed TOML, a key torchtitan does not have (with close matches), a value of the
        wrong type, degrees that do not multiply to the GPU count, batches that do not divide.
    """
    raw, label = load_toml(toml, "torchtitan job file")
    flat = _flatten(raw, label)
    reject_unknown(_F, label, flat, "a torchtitan setting")
    found = _Collector(label)
    read: set[str] = set()

    def get(key: str, default):
        read.add(used(_F, key))
        return flat.get(key, default)

    def degree(key: str, default: int = 1, minimum: int = 1) -> int:
        return whole(label, key, get(key, default), minimum)

    tp = degree("parallelism.tensor_parallel_degree")
    pp = degree("parallelism.pipeline_parallel_degree")
    cp = degree("parallelism.context_parallel_degree")
    ep = degree("parallelism.expert_parallel_degree")
    etp = degree("parallelism.expert_tensor_parallel_degree")
    replicate = degree("parallelism.data_parallel_replicate_degree")
    shard = get("parallelism.data_parallel_shard_degree", -1)
    if shard == -1:
        if n_gpus is None:
            raise ValueError(f"{label}: parallelism.data_parallel_shard_degree is -1 (the GPUs "
                             f"left over); give the number of GPUs (n_gpus=, or --gpus)")
        rest = replicate * tp * pp * cp
        if n_gpus % rest:
            raise ValueError(f"{label}: {n_gpus} GPUs are not a multiple of replicate x tp x pp "
                             f"x cp = {rest}")
        shard = n_gpus // rest
        found.add("parallelism.data_parallel_shard_degree", shard, ASSUMED,
                  f"-1: the {n_gpus} GPUs left over after the other degrees")
    shard = whole(label, "parallelism.data_parallel_shard_degree", shard)
    dp = replicate * shard
    world = dp * tp * pp * cp
    if n_gpus is not None and world != n_gpus:
        raise ValueError(f"{label}: the degrees multiply to {world} GPUs (replicate {replicate} x "
                         f"shard {shard} x tp {tp} x pp {pp} x cp {cp}), not {n_gpus}")
    moe_model = model is not None and model.is_moe
    ep = found.expert_parallel("parallelism.expert_parallel_degree", ep, model)
    if etp > 1:
        found.expert_tensor_parallel("parallelism.expert_tensor_parallel_degree", etp, moe_model)
    reshard = choice(label, "parallelism.fsdp_reshard_after_forward",
                     get("parallelism.fsdp_reshard_after_forward", "default"),
                     ("default", "always", "never"))
    if shard > 1 and replicate > 1:
        found.add("parallelism.data_parallel_replicate_degree", replicate, NOT_MODELLED,
                  f"HSDP: sharded over {shard}, replicated {replicate} times; the planner's "
                  "ZeRO shards over every data-parallel rank", blocks=True)
    if shard > 1:
        zero = 2 if reshard == "never" or (reshard == "default" and pp > 1) else 3
    else:
        zero = 0
    if get("training.enable_cpu_offload", False):
        found.add("training.enable_cpu_offload", True, NOT_MODELLED, "state offloaded to "
                  "host memory", blocks=True)
    # ---- batch and schedule
    local = whole(label, "training.local_batch_size", get("training.local_batch_size", 8))
    if "training.local_batch_size" not in flat:
        found.add("training.local_batch_size", 8, ASSUMED, "absent: torchtitan's default")
    batch = get("training.global_batch_size", -1)
    batch = local * dp if batch == -1 else whole(label, "training.global_batch_size", batch)
    seq = whole(label, "training.seq_len", get("training.seq_len", 2048))
    if "training.seq_len" not in flat:
        found.add("training.seq_len", 2048, ASSUMED, "absent: torchtitan's default")
    if batch % (local * dp):
        raise ValueError(f"{label}: training.global_batch_size {batch} must be a multiple of "
                         f"local_batch_size x dp = {local} x {dp}")
    schedule = get("parallelism.pipeline_parallel_schedule", "1F1B")
    per_stage = get("parallelism.pipeline_parallel_layers_per_stage", None)
    first = whole(label, "parallelism.pipeline_parallel_first_stage_less_layers",
                  get("parallelism.pipeline_parallel_first_stage_less_layers", 1), 0)
    last = whole(label, "parallelism.pipeline_parallel_last_stage_less_layers",
                 get("parallelism.pipeline_parallel_last_stage_less_layers", 1), 0)
    get("parallelism.module_fqns_per_model_part", None)
    v = 1
    uneven = False
    if pp > 1:
        micro = whole(label, "parallelism.pipeline_parallel_microbatch_size",
                      get("parallelism.pipeline_parallel_microbatch_size", 1))
        if local % micro:
            raise ValueError(f"{label}: training.local_batch_size {local} must be a multiple of "
                             f"parallelism.pipeline_parallel_microbatch_size {micro}")
        if batch != local * dp:
            found.add("training.global_batch_size", batch, NOT_MODELLED, "gradient "
                      "accumulation over several pipeline rounds; evaluated as one round of "
                      "all micro-batches (a smaller bubble share)")
        schedule = choice(label, "parallelism.pipeline_parallel_schedule", schedule,
                          _SCHEDULES_SINGLE + _SCHEDULES_MULTI)
        if schedule in _SCHEDULES_MULTI:
            n_layers = model.n_layers if model is not None else None
            if per_stage is None:
                v = 2
                found.add("parallelism.pipeline_parallel_layers_per_stage", None, ASSUMED,
                          "absent: torchtitan puts 2 stages on each rank")
            elif n_layers is None:
                raise ValueError(f"{label}: an interleaved schedule with "
                                 f"pipeline_parallel_layers_per_stage needs the model's layer "
                                 f"count (model=, or --model)")
            else:
                per_stage = whole(label, "parallelism.pipeline_parallel_layers_per_stage",
                                  per_stage)
                stages = -(-(n_layers + first + last) // per_stage)
                if stages % pp:
                    raise ValueError(f"{label}: {stages} stages (layers {n_layers} + "
                                     f"{first} + {last} over {per_stage} per stage) are not a "
                                     f"multiple of pipeline_parallel_degree {pp}")
                v = stages // pp
        if schedule not in ("1F1B", "Interleaved1F1B"):
            found.add("parallelism.pipeline_parallel_schedule", schedule, NOT_MODELLED,
                      "the planner evaluates 1F1B and interleaved 1F1B", blocks=True)
        if first or last:
            uneven = True
            found.add("parallelism.pipeline_parallel_first_stage_less_layers", (first, last),
                      NOT_MODELLED, "the first/last stages hold fewer layers (the embedding "
                      "and output weigh as layers); evaluated with ceil(layers/pp) on the "
                      "busiest stage")
    else:
        micro = local
        if per_stage is not None:
            found.add("parallelism.pipeline_parallel_layers_per_stage", per_stage, IGNORED,
                      "no pipelining")
    # ---- checkpointing, attention, precision
    mode = choice(label, "activation_checkpoint.mode", get("activation_checkpoint.mode",
                                                           "selective"),
                  ("selective", "full", "memory_budget", "none"))
    option = str(get("activation_checkpoint.selective_ac_option", "2"))
    if "activation_checkpoint.mode" not in flat:
        found.add("activation_checkpoint.mode", "selective", ASSUMED, "absent: torchtitan's "
                  "default (selective, option '2')")
    recompute = "none"
    if mode == "full" or (mode == "selective" and option == "1"):
        recompute = "full"
    elif mode == "selective" and option == "op":
        recompute = "selective"
        found.add("activation_checkpoint.selective_ac_option", "op", ASSUMED, "per-op "
                  "checkpointing taken as selective recomputation (Korthikanti et al.); "
                  "torchtitan's policy saves matrix multiplies and recomputes the rest")
    elif mode in ("selective", "memory_budget"):
        found.add("activation_checkpoint.selective_ac_option" if mode == "selective"
                  else "activation_checkpoint.mode", option if mode == "selective" else mode,
                  NOT_MODELLED, "checkpointing a subset of layers (or a compiler memory "
                  "budget); the planner recomputes all layers or none", blocks=True)
    found.add("flash_attention", True, ASSUMED, "torchtitan computes attention with SDPA or "
              "FlexAttention kernels that do not store the score matrix")
    converters = get("model.converters", [])
    recipe = "mixed-adam"
    if get("training.dtype", "float32") == "bfloat16":
        found.add("training.dtype", "bfloat16", NOT_MODELLED, "pure BF16 training without "
                  "FP32 master weights", blocks=True)
    if get("training.mixed_precision_param", "bfloat16") == "float32":
        recipe = "fp32-adam"
    elif any(c.rsplit(".", 1)[-1] in ("float8", "mx") for c in converters):
        # torchao's float8 Linear scales each tensor from its own amax (tensor-wise, or
        # row-wise: priced alike), its MX Linear in 1x32 blocks
        mx = any(c.rsplit(".", 1)[-1] == "mx" for c in converters)
        recipe = "fp8-te-mx" if mx else "fp8-te-cs"
        found.add("model.converters", converters, ASSUMED, "FP8 matrix multiplies (torchao "
                  f"{'MXFP8' if mx else 'float8, dynamic scales'}) priced as recipe {recipe}: "
                  "the Linear layers at the FP8 peak, their inputs kept in FP8")
    get("model.name", None)
    get("model.flavor", None)
    for key, value in flat.items():
        if key not in read:
            found.add(key, value, IGNORED)
    sp = tp > 1
    settings = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "etp": etp,
                "dp_replicate": replicate, "dp_shard": shard, "micro_batch": micro,
                "global_batch": batch, "zero_stage": zero, "sp": sp, "recompute": recompute,
                "interleave": v, "flash_attention": True, "seq_len": seq, "n_gpus": world,
                "schedule": schedule}
    plan = found.plan(tp=tp, pp=pp, dp=dp, micro_batch=micro, global_batch=batch,
                      zero_stage=zero, sp=sp, recompute=recompute, interleave=v,
                      flash_attention=True, seq_len=seq, cp=cp, ep=ep)
    return ImportedRun(_F, label, settings, plan, tuple(found.items), recipe, uneven, model)


def _refuse(setting: str, why: str) -> UnsupportedPlanError:
    return UnsupportedPlanError(f"torchtitan cannot run {setting}: {why}")


def check_torchtitan(plan: Plan) -> None:
    """Raise :class:`UnsupportedPlanError` naming the setting torchtitan cannot run."""
    if plan.tp > 1 and not plan.sp:
        raise _refuse(f"tp={plan.tp} without sequence parallelism (sp=False)", "its tensor "
                      "parallelism always shards the norms along the sequence")
    if not plan.flash_attention:
        raise _refuse("flash_attention=False", "attention always runs in SDPA or "
                      "FlexAttention kernels, which never store the score matrix")
    if plan.zero_stage == 1:
        raise _refuse("zero_stage=1", "it shards with FSDP2 (ZeRO-3, or ZeRO-2 with "
                      "fsdp_reshard_after_forward='never') or replicates with DDP; it has no "
                      "optimizer-only sharding")
    if plan.zero_stage == 0 and plan.dp > 1 and (plan.tp > 1 or plan.pp > 1):
        raise _refuse(f"zero_stage=0 with dp={plan.dp} and tp={plan.tp}, pp={plan.pp}",
                      "its DDP works only without other parallelism ('DDP has not supported "
                      "> 1D parallelism')")


#: The recipes of :data:`scaleout.memory.RECIPES` torchtitan's FP8 converters run
#: (torchtitan/config/job_config.py): torchao's float8 Linear with tensor-wise dynamic scales
#: (each tensor's scale from its own amax: Transformer Engine's current scaling) and its
#: MXFP8 Linear.
FP8_CONVERTERS = {
    "fp8-te-cs": ("quantize.linear.float8", "quantize.linear.float8.recipe_name", "tensorwise"),
    "fp8-te-mx": ("quantize.linear.mx", "quantize.linear.mx.recipe_name", "mxfp8_cublas")}


def _precision(recipe: str) -> tuple[str, tuple[str, str, str] | None]:
    """``training.mixed_precision_param`` and the FP8 converter (with its recipe name) for a
    recipe of :data:`scaleout.memory.RECIPES`; a recipe torchtitan has no setting for is
    refused."""
    from .. import memory

    rec = memory.get_recipe(recipe)
    if rec.fp8:
        if rec.name not in FP8_CONVERTERS:
            raise _refuse(f"recipe {rec.name}", "its FP8 converters scale tensor-wise from "
                          "each tensor's own amax or in MX blocks (recipes "
                          f"{', '.join(FP8_CONVERTERS)})")
        return "bfloat16", FP8_CONVERTERS[rec.name]
    if rec.name in ("mixed-adam", "megatron-bf16"):
        return "bfloat16", None
    if rec.name == "fp32-adam":
        return "float32", None
    raise _refuse(f"recipe {rec.name}", "its mixed precision keeps bf16 or fp32 parameters "
                  "with fp32 master weights and Adam (recipes mixed-adam, megatron-bf16, "
                  "fp32-adam, and FP8 as above)")


def to_torchtitan_toml(plan: Plan, model: ModelSpec | None = None, *,
                       result: PlanResult | None = None, recipe: str = "mixed-adam") -> str:
    """The plan as a torchtitan TOML fragment (``[parallelism]``, ``[training]``,
    ``[activation_checkpoint]``, and for an FP8 recipe ``[model] converters`` with its
    ``[quantize.linear...]`` recipe) after a ``#`` header with the prediction.

    ``[model]``'s name and flavor and the data settings are left to the user. ``recipe`` is
    the precision recipe the plan was priced with (:data:`FP8_CONVERTERS`). Raises
    :class:`UnsupportedPlanError` for a plan torchtitan cannot run.
    """
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a scaleout.plan.Plan, got {type(plan).__name__}")
    check_torchtitan(plan)
    param_dtype, converter = _precision(recipe)
    seq = plan.seq_len if plan.seq_len is not None else (model.seq_len if model else None)
    if seq is None:
        raise ValueError("the plan has no seq_len and no model was given: torchtitan needs "
                         "training.seq_len")
    par: list[tuple[str, Any]] = []

    def p(key: str, value: Any) -> None:
        par.append((used(_F, "parallelism." + key).split(".", 1)[1], value))

    if plan.zero_stage >= 2:
        p("data_parallel_replicate_degree", 1)
        p("data_parallel_shard_degree", plan.dp)
        p("fsdp_reshard_after_forward", "never" if plan.zero_stage == 2 else "always")
    else:
        p("data_parallel_replicate_degree", plan.dp)
        p("data_parallel_shard_degree", 1)
    p("tensor_parallel_degree", plan.tp)
    p("pipeline_parallel_degree", plan.pp)
    if plan.cp > 1:
        p("context_parallel_degree", plan.cp)
    if plan.ep > 1:
        p("expert_parallel_degree", plan.ep)
        p("expert_tensor_parallel_degree", 1)
    if plan.pp > 1:
        p("pipeline_parallel_microbatch_size", plan.micro_batch)
        p("pipeline_parallel_first_stage_less_layers", 0)
        p("pipeline_parallel_last_stage_less_layers", 0)
        if plan.interleave > 1:
            if model is None:
                raise ValueError("an interleaved plan needs the model (its layer count) for "
                                 "pipeline_parallel_layers_per_stage")
            if model.n_layers % (plan.pp * plan.interleave):
                raise _refuse(f"interleave={plan.interleave} with pp={plan.pp}",
                              f"its stages hold equal layer counts and {model.n_layers} layers "
                              f"do not split into {plan.pp * plan.interleave} stages")
            p("pipeline_parallel_schedule", "Interleaved1F1B")
            p("pipeline_parallel_layers_per_stage",
              model.n_layers // (plan.pp * plan.interleave))
        else:
            p("pipeline_parallel_schedule", "1F1B")
            if model is not None:
                p("pipeline_parallel_layers_per_stage", model.n_layers // plan.pp)
    local = plan.global_batch // plan.dp if plan.pp > 1 else plan.micro_batch
    training = [("local_batch_size", local), ("global_batch_size", plan.global_batch),
                ("seq_len", seq), ("mixed_precision_param", param_dtype)]
    for key, _ in training:
        used(_F, "training." + key)
    ac = [("mode", {"none": "none", "full": "full", "selective": "selective"}[plan.recompute])]
    if plan.recompute == "selective":
        ac.append(("selective_ac_option", "op"))
    for key, _ in ac:
        used(_F, "activation_checkpoint." + key)
    notes = ["Fragment: add [model] name and flavor (torchtitan's model matching "
             f"{model.name if model else 'yours'}) and the data settings; world size "
             f"{plan.n_gpus} (NGPU x nodes)."]
    if plan.recompute == "selective":
        notes.append("Selective recomputation written as torchtitan's per-op checkpointing, "
                     "which saves matrix multiplies rather than Korthikanti et al.'s exact set.")
    if plan.pp > 1 and plan.zero_stage == 0 and plan.dp == 1:
        notes.append("No data parallelism (dp = 1).")
    sections = [("parallelism", par), ("training", training), ("activation_checkpoint", ac)]
    if converter is not None:
        name, key, recipe_name = converter
        sections.insert(0, ("model", [(used(_F, "model.converters").split(".", 1)[1],
                                       [name])]))
        sections.append((name, [(used(_F, key).rsplit(".", 1)[1], recipe_name)]))
        notes.append(f"FP8: torchao's {name.rsplit('.', 1)[1]} Linear layers "
                     f"(recipe {recipe_name}), as the plan was priced (recipe {recipe}).")
    out = ["# " + line for line in header_lines(_F, plan, result, notes)]
    for section, items in sections:
        out.append(f"\n[{section}]")
        out += [f"{key} = {_toml_value(value)}" for key, value in items]
    return "\n".join(out) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
