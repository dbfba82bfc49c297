"""DeepSpeed JSON configurations <-> the workbook's :class:`~scaleout.plan.Plan`.

Keys are DeepSpeed's own (``deepspeed/runtime/config.py``, ``constants.py``,
``zero/config.py``, ``tensor_parallel/config.py``, ``activation_checkpointing/config.py``
at the commit in ``data/frameworks/deepspeed.toml``). DeepSpeed reads its file with an
hjson reader, so the exported header is a block of ``//`` comment lines; the importer
skips full-line comments and reads the rest as strict JSON.

=============================================  ===============================================
DeepSpeed key                                  Plan field
=============================================  ===============================================
``tensor_parallel.autotp_size``                ``tp`` (AutoTP training; absent or 0: 1)
``pipeline.stages``                            ``pp`` (DeepSpeed sets the stages in code,
                                               ``PipelineModule(num_stages=...)``; the config
                                               key records it; absent: 1, assumed)
``train_batch_size`` / (``train_micro_``       ``dp`` = train_batch_size / (micro x GA)
``batch_size_per_gpu`` x ``gradient_``
``accumulation_steps``)
``train_micro_batch_size_per_gpu``             ``micro_batch``
``train_batch_size``                           ``global_batch``
``zero_optimization.stage``                    ``zero_stage``
``pipeline.activation_checkpoint_interval``    ``recompute`` full when 1 (with pipelining)
``activation_checkpointing`` present           ``recompute`` full (without pipelining: the
                                               model checkpoints every layer through
                                               DeepSpeed's API, which this section configures)
``bf16.enabled`` / ``fp16.enabled``            recipe ``mixed-adam`` (neither: ``fp32-adam``)
(not in the file)                              ``seq_len``, ``flash_attention``: model code;
                                               give them to the importer
``sequence_parallel_size``                     Ulysses sequence parallelism: not modelled
=============================================  ===============================================

What DeepSpeed cannot run, and export refuses: ZeRO-2/3 with pipelining ("ZeRO-2 and
ZeRO-3 are incompatible with pipeline parallelism", ``runtime/pipe/engine.py``); ZeRO-3
with AutoTP (``runtime/engine.py`` asserts stage <= 2); interleaved schedules (its
pipeline engine runs one 1F1B schedule, ``TrainSchedule``); Megatron-style sequence
parallelism; selective recomputation (its checkpointing recomputes whole layers).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..plan import Plan, PlanResult
from ._common import (
    ASSUMED,
    IGNORED,
    NOT_MODELLED,
    UNKNOWN,
    ImportedRun,
    UnsupportedPlanError,
    _Collector,
    flag,
    framework_keys,
    header_lines,
    load_json,
    used,
    whole,
)

__all__ = ["check_deepspeed", "from_deepspeed_json", "to_deepspeed_json"]

_F = "deepspeed"


def _sub(name: str) -> str:
    """The last part of a dotted key the data file lists (``"pipeline.stages"`` -> ``"stages"``)."""
    return used(_F, name).rsplit(".", 1)[1]


def from_deepspeed_json(config: str | Path | Mapping, *, n_gpus: int | None = None,
                        seq_len: int | None = None, flash_attention: bool = False
                        ) -> ImportedRun:
    """Read a DeepSpeed JSON configuration into an :class:`ImportedRun`.

    Parameters
    ----------
    config
        The file, its text or the parsed dict (read with :mod:`json`; full-line ``//`` or
        ``#`` comments skipped).
    n_gpus
        The world size, to check ``tp x pp x dp`` against (and to derive
        ``train_batch_size`` when only micro-batch and accumulation are given).
    seq_len, flash_attention
        What the model code does (a DeepSpeed configuration does not say): reported as
        assumed.

    Raises
    ------
    ValueError
        Malformed JSON, a key that looks like a misspelt DeepSpeed key, a value of the
        wrong type, batch sizes that do not multiply out, naming the file and the key.
    """
    raw, label = load_json(config, "DeepSpeed configuration")
    found = _Collector(label)
    keys = set(framework_keys(_F)["used"])
    top_used = {k for k in keys if "." not in k}
    for key in raw:
        if key not in top_used:
            near = difflib.get_close_matches(key, sorted(top_used), n=1, cutoff=0.85)
            if near:
                raise ValueError(f"{label}: {key!r} is not a DeepSpeed key the workbook reads; "
                                 f"did you mean {near[0]!r}?")

    def section(name: str) -> dict[str, Any]:
        value = raw.get(used(_F, name), {})
        if not isinstance(value, dict):
            raise ValueError(f"{label}: {name} must be an object {{...}}, got {value!r}")
        return value

    tp_sec, pipe, zero_sec = section("tensor_parallel"), section("pipeline"), section(
        "zero_optimization")
    tp = tp_sec.get(_sub("tensor_parallel.autotp_size"), 0)
    tp = max(1, whole(label, "tensor_parallel.autotp_size", tp, 0))
    stages = pipe.get(_sub("pipeline.stages"), "auto")
    if stages == "auto":
        pp = 1
        found.add("pipeline.stages", stages, ASSUMED, "the pipeline's stages are set in the "
                  "model code (PipelineModule num_stages); taken as 1 (no pipelining)")
    else:
        pp = whole(label, "pipeline.stages", stages)
    zero = whole(label, "zero_optimization.stage",
                 zero_sec.get(_sub("zero_optimization.stage"), 0), 0)
    if zero > 3:
        raise ValueError(f"{label}: zero_optimization.stage must be 0, 1, 2 or 3, got {zero}")
    micro = raw.get(used(_F, "train_micro_batch_size_per_gpu"))
    accum = raw.get(used(_F, "gradient_accumulation_steps"))
    batch = raw.get(used(_F, "train_batch_size"))
    if micro is None:
        raise ValueError(f"{label}: train_micro_batch_size_per_gpu is missing")
    micro = whole(label, "train_micro_batch_size_per_gpu", micro)
    accum = whole(label, "gradient_accumulation_steps", 1 if accum is None else accum)
    if batch is None:
        if n_gpus is None:
            raise ValueError(f"{label}: train_batch_size is missing; give it or the number of "
                             f"GPUs (n_gpus=, --gpus)")
        if n_gpus % (tp * pp):
            raise ValueError(f"{label}: {n_gpus} GPUs are not a multiple of tp x pp = {tp * pp}")
        batch = micro * accum * (n_gpus // (tp * pp))
    batch = whole(label, "train_batch_size", batch)
    if batch % (micro * accum):
        raise ValueError(f"{label}: train_batch_size {batch} must be a multiple of "
                         f"train_micro_batch_size_per_gpu x gradient_accumulation_steps = "
                         f"{micro} x {accum}")
    dp = batch // (micro * accum)
    if n_gpus is not None and tp * pp * dp != n_gpus:
        raise ValueError(f"{label}: tp x pp x dp = {tp} x {pp} x {dp} = {tp * pp * dp} GPUs "
                         f"(dp = train_batch_size / (micro x accumulation)), not {n_gpus}")
    interval = whole(label, "pipeline.activation_checkpoint_interval",
                     pipe.get(_sub("pipeline.activation_checkpoint_interval"), 0), 0)
    has_ac = used(_F, "activation_checkpointing") in raw
    if has_ac:
        act = section("activation_checkpointing")
        if act.get(_sub("activation_checkpointing.partition_activations")):
            found.add("activation_checkpointing.partition_activations", True, NOT_MODELLED,
                      "checkpoints split over the model-parallel ranks")
    recompute = "none"
    if pp > 1:
        if interval == 1:
            recompute = "full"
        elif interval > 1:
            found.add("pipeline.activation_checkpoint_interval", interval, NOT_MODELLED,
                      "one checkpoint per several layers", blocks=True)
    elif has_ac:
        recompute = "full"
        found.add("activation_checkpointing", True, ASSUMED, "the model checkpoints every "
                  "layer through deepspeed.checkpointing (this section configures it)")
    bf16 = flag(label, "bf16.enabled", section("bf16").get(_sub("bf16.enabled"), False))
    fp16 = flag(label, "fp16.enabled", section("fp16").get(_sub("fp16.enabled"), False))
    recipe = "mixed-adam" if (bf16 or fp16) else "fp32-adam"
    if not (bf16 or fp16):
        found.add("bf16.enabled", False, ASSUMED, "neither bf16 nor fp16: fp32 training "
                  "(recipe fp32-adam)")
    sp_size = raw.get(used(_F, "sequence_parallel_size"), 1)
    if whole(label, "sequence_parallel_size", sp_size) > 1:
        found.add("sequence_parallel_size", sp_size, NOT_MODELLED, "Ulysses sequence "
                  "parallelism (all-to-all attention over a split sequence)", blocks=True)
    found.add("seq_len", seq_len, ASSUMED, "not in a DeepSpeed configuration (the data "
              "loader's); " + ("given" if seq_len else "the model's"))
    found.add("flash_attention", flash_attention, ASSUMED, "not in a DeepSpeed configuration "
              "(the model code's attention)")
    for key, value in raw.items():
        if key in ("tensor_parallel", "pipeline", "zero_optimization", "bf16", "fp16",
                   "train_batch_size", "train_micro_batch_size_per_gpu",
                   "gradient_accumulation_steps", "sequence_parallel_size",
                   "activation_checkpointing"):
            continue
        found.add(key, value, UNKNOWN if key not in top_used else IGNORED,
                  "not read by the workbook (DeepSpeed reads what it knows)")
    for key, value in zero_sec.items():
        if key != "stage":
            found.add(f"zero_optimization.{key}", value, IGNORED)
    settings = {"tp": tp, "pp": pp, "dp": dp, "micro_batch": micro, "global_batch": batch,
                "gradient_accumulation_steps": accum, "zero_stage": zero, "sp": False,
                "recompute": recompute, "interleave": 1, "flash_attention": flash_attention,
                "seq_len": seq_len, "n_gpus": tp * pp * dp}
    plan = found.plan(tp=tp, pp=pp, dp=dp, micro_batch=micro, global_batch=batch,
                      zero_stage=zero, recompute=recompute, flash_attention=flash_attention,
                      seq_len=seq_len)
    return ImportedRun(_F, label, settings, plan, tuple(found.items), recipe, False, None)


def _refuse(setting: str, why: str) -> UnsupportedPlanError:
    return UnsupportedPlanError(f"DeepSpeed cannot run {setting}: {why}")


def check_deepspeed(plan: Plan) -> None:
    """Raise :class:`UnsupportedPlanError` naming the setting DeepSpeed cannot run."""
    if plan.zero_stage >= 2 and plan.pp > 1:
        raise _refuse(f"zero_stage={plan.zero_stage} with pp={plan.pp}", "ZeRO-2 and ZeRO-3 "
                      "are incompatible with pipeline parallelism (runtime/pipe/engine.py)")
    if plan.zero_stage == 3 and plan.tp > 1:
        raise _refuse(f"zero_stage=3 with tp={plan.tp}", "AutoTP tensor parallelism is "
                      "validated with ZeRO stages up to 2 only (runtime/engine.py)")
    if plan.cp > 1:
        raise _refuse(f"cp={plan.cp}", "its sequence parallelism (Ulysses) splits attention by "
                      "heads with all-to-alls; the planner's DeepSpeed preset has no context "
                      "parallelism")
    if plan.ep > 1:
        raise _refuse(f"ep={plan.ep}", "the planner's DeepSpeed preset has no expert "
                      "parallelism (DeepSpeed-MoE's settings are not written)")
    if plan.interleave > 1:
        raise _refuse(f"interleave={plan.interleave}", "its pipeline engine runs a single "
                      "1F1B schedule (TrainSchedule), no interleaved stages")
    if plan.sp:
        raise _refuse("sp=True (sequence parallelism)", "AutoTP does not shard the norms' "
                      "activations along the sequence")
    if plan.recompute == "selective":
        raise _refuse("recompute='selective'", "its activation checkpointing recomputes "
                      "whole layers")


def to_deepspeed_json(plan: Plan, model=None, *, result: PlanResult | None = None,
                      recipe: str = "mixed-adam") -> str:
    """The plan as a DeepSpeed JSON configuration after ``//`` header lines with the prediction.

    ``recipe`` is the precision recipe the plan was priced with: ``bf16.enabled`` for the
    16-bit ones, not for ``fp32-adam``. Raises :class:`UnsupportedPlanError` for a plan
    DeepSpeed cannot run (see the module), an FP8 recipe included: its configuration has no
    FP8 matrix-multiply setting (FP8 comes from the model code, e.g. Transformer Engine).
    """
    from .. import memory

    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a scaleout.plan.Plan, got {type(plan).__name__}")
    check_deepspeed(plan)
    rec = memory.get_recipe(recipe)
    if rec.fp8:
        raise _refuse(f"recipe {rec.name}", "its configuration has no FP8 matrix-multiply "
                      "setting (FP8 Linear layers come from the model code)")
    accum = plan.micro_batches
    out: dict[str, Any] = {
        used(_F, "train_batch_size"): plan.global_batch,
        used(_F, "train_micro_batch_size_per_gpu"): plan.micro_batch,
        used(_F, "gradient_accumulation_steps"): accum,
        used(_F, "zero_optimization"): {_sub("zero_optimization.stage"): plan.zero_stage},
        used(_F, "bf16"): {_sub("bf16.enabled"): not rec.name.startswith("fp32")},
    }
    if plan.tp > 1:
        out[used(_F, "tensor_parallel")] = {_sub("tensor_parallel.autotp_size"): plan.tp}
    if plan.pp > 1:
        out[used(_F, "pipeline")] = {
            _sub("pipeline.stages"): plan.pp,
            _sub("pipeline.activation_checkpoint_interval"):
                1 if plan.recompute == "full" else 0}
    elif plan.recompute == "full":
        out[used(_F, "activation_checkpointing")] = {
            _sub("activation_checkpointing.partition_activations"): False}
    seq = plan.seq_len if plan.seq_len is not None else (model.seq_len if model else None)
    notes = [f"World size {plan.n_gpus}: dp = train_batch_size / (micro x accumulation) = "
             f"{plan.dp}."]
    if plan.pp > 1:
        notes.append(f"Build the model as PipelineModule(..., num_stages={plan.pp}); "
                     "pipeline.stages records it.")
    if plan.pp == 1 and plan.recompute == "full":
        notes.append("Checkpoint every layer with deepspeed.checkpointing.checkpoint.")
    notes.append(f"Model code: sequences of {seq if seq else 'the model default'} tokens; "
                 + ("fused (flash) attention." if plan.flash_attention
                    else "attention that stores its score matrix."))
    head = "\n".join("// " + line for line in header_lines(_F, plan, result, notes))
    return head + "\n" + json.dumps(out, indent=2) + "\n"
