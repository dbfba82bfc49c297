"""Published training runs as cases the planner predicts: one reader per paper or benchmark.

Each file of ``data/published/`` prints runs in its own terms (a model shape or a catalog name,
a layout, a framework, and one measured quantity: seconds per iteration, TFLOP/s per GPU
counted some way, tokens per second). A reader turns each run into a :class:`Case`: the model,
GPU, network and :class:`~scaleout.layout.Plan`, the framework preset that ran it, and how to
read the planner's prediction in the run's own quantity. What a paper leaves out is assumed as
its file says (``assumed``); a run the planner cannot represent (a GPU outside the catalog, a
recomputation policy or a multi-token-prediction module it does not model, Megatron FSDP) is
kept out with the reason (:func:`cases` returns both).

The sources are split once, before any fitting: :data:`TRAINING` fits the calibration,
every other source is held out and only predicted.

**Whole-run averages.** The planner predicts a steady-state iteration. A run whose file says
``measured_over = "whole run"`` printed an average over its whole stage (GPU-hours over the
tokens of the stage), which also pays for failures: the work lost since the last checkpoint,
the restarts, and the checkpoints themselves. Such a case is read as the steady-state
prediction over the run's goodput, the share of wall time spent on work that is kept
(:func:`whole_run_goodput`, Daly's exact model :func:`scaleout.reliability.goodput`), with
these stated assumptions (:data:`WHOLE_RUN`), none fitted:

* failures at the per-GPU, per-node rates of Llama 3's 54-day snapshot (419 unexpected
  interruptions on 16,384 H100s; Grattafiori et al. 2024, arXiv 2407.21783, Table 5), scaled
  to the case's GPU count (:func:`scaleout.reliability.mtbf_h`): the only published
  breakdown of a large H100-class training run;
* one checkpoint of the weights and optimizer state in the case's recipe, written by every
  GPU for its shard (:func:`scaleout.reliability.checkpoint_plan`, ``layout="sharded"``) at
  Llama 3's sustained storage throughput, 2 TB/s (Sec. 3.3.1), and read back at the same
  rate; synchronous (the write pauses training);
* the checkpoint interval that maximises the goodput
  (:func:`scaleout.reliability.exact_optimal_interval_s`);
* a restart (:func:`scaleout.reliability.restart_time_s`, ``"restart"`` with no wait for a
  repair: the job resumes on healthy nodes) of MegaScale's 10 minutes to detect and
  diagnose a failure (Jiang et al. 2024, arXiv 2402.15627, Sec. 6.3), the checkpoint's read
  and MegaScale's 30 s initialisation on 10,000 GPUs.

Evaluation pauses, the batch-size ramp and stragglers are not counted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .. import catalog, memory, reliability
from ..catalog import ModelSpec
from ..collectives import NodeNetwork
from ..layout import Plan
from .evaluate import PlanResult
from .frameworks import Framework, framework
from .network import default_network

__all__ = ["SOURCES", "TRAINING", "WHOLE_RUN", "Case", "cases", "source_title",
           "whole_run_goodput"]

#: The sources the calibration is fitted to (every other one is held out).
TRAINING = ("korthikanti_table5", "megatron_lm_table1")


@dataclass(frozen=True)
class Case:
    """One published run: what ran, and how its measured number compares with a prediction.

    ``predict(result)`` reads a :class:`~scaleout.plan.PlanResult` in the run's quantity
    (``quantity`` names it, with its unit); ``published`` is the printed value.
    ``framework`` is a preset's name, or the :class:`~scaleout.plan.frameworks.Framework` of
    a preset with the settings the run's recipe changed (a Megatron Bridge MoE run's token
    dispatcher and recompute modules).
    """

    source: str
    label: str
    model: ModelSpec
    gpu: str
    network: NodeNetwork
    plan: Plan
    framework: str | Framework
    quantity: str
    published: float
    predict: Callable[[PlanResult], float] = field(repr=False)
    assumed: tuple[str, ...] = ()
    recipe: str = "mixed-adam"
    #: The share of the run's wall time on kept work that ``predict`` already divides by
    #: (1.0: the quantity is a steady-state rate; below 1: a whole-run average, see the
    #: module docstring).
    goodput: float = 1.0

    @property
    def mechanisms(self) -> tuple[str, ...]:
        """What the run exercises beyond a dense model in 16 bits: ``"mixture of experts"``,
        ``"FP8"``, ``"context parallelism"`` (empty for a dense 16-bit run)."""
        from .. import memory

        return tuple(name for name, on in (
            ("mixture of experts", self.model.is_moe),
            ("FP8", memory.get_recipe(self.recipe).fp8),
            ("context parallelism", self.plan.cp > 1)) if on)


# ---------------------------------------------------------------------------- readers
def _seconds(r: PlanResult) -> float:
    return r.step_s


def _megatron_tflops(r: PlanResult) -> float:
    return r.megatron_tflops_per_gpu


def _model_tflops(r: PlanResult) -> float:
    return r.model_tflops_per_gpu


def _tokens_per_gpu(r: PlanResult) -> float:
    return r.tokens_per_s / r.plan.n_gpus


def _gpu_hours_per_trillion(r: PlanResult) -> float:
    return 1e12 / _tokens_per_gpu(r) / 3600


#: The assumptions of :func:`whole_run_goodput`, as names of ``data/failures.toml`` (each
#: entry there carries its source): the failure study scaled to a case's GPUs, the storage
#: throughput checkpoints are written and read at, and the restart's detection and
#: initialisation times.
WHOLE_RUN = {"study": "llama3-405b", "storage": "llama3-storage-sustained",
             "detect": "megascale-detect-and-diagnose", "init": "megascale-init-10k-gpus"}
#: What a run's ``measured_over`` may say.
MEASURED_OVER = ("steady state", "whole run")


def whole_run_goodput(model: ModelSpec, plan: Plan, recipe: str, gpus_per_node: int = 8
                      ) -> float:
    """The share of a whole run's wall time spent on kept work, under :data:`WHOLE_RUN`'s
    assumptions (the module docstring gives each one's source).

    Daly's exact goodput (:func:`scaleout.reliability.goodput`) at the optimal checkpoint
    interval, with the MTBF of ``plan.n_gpus`` GPUs at the study's rates, the sharded
    checkpoint's write time as its cost and a restart of detection + read + initialisation.
    DeepSeek-V3 on 2,048 GPUs: an MTBF of 24.7 h, a 3.4 s checkpoint every 13 minutes, a
    10.6-minute restart: 98.4%.
    """
    n = plan.n_gpus
    mtbf_s = float(reliability.mtbf_h(n, WHOLE_RUN["study"], gpus_per_node=gpus_per_node)
                   ) * 3600
    ck = reliability.checkpoint_plan(
        model, n, storage_gbytes_s=reliability.figure(WHOLE_RUN["storage"]).value,
        tp=plan.tp, pp=plan.pp, layout="sharded", recipe=recipe)
    restart_s = reliability.restart_time_s(
        "restart", detect_s=reliability.figure(WHOLE_RUN["detect"]).si,
        restore_s=ck.restore_s, init_s=reliability.figure(WHOLE_RUN["init"]).si)
    interval_s = reliability.exact_optimal_interval_s(ck.blocking_s, mtbf_s)
    return float(reliability.goodput(interval_s, ck.blocking_s, mtbf_s, restart_s))


def _over_goodput(read: Callable[[PlanResult], float], goodput: float, slower_is_larger: bool
                  ) -> Callable[[PlanResult], float]:
    """``read`` as a whole-run average: time-like quantities (seconds, GPU-hours) divided by
    ``goodput``, rates multiplied by it."""
    if slower_is_larger:
        return lambda r: read(r) / goodput
    return lambda r: read(r) * goodput


def _measured_over(run: dict, param: str = "measured_over") -> str:
    got = run.get(param, "steady state")
    if got not in MEASURED_OVER:
        raise ValueError(f"{param}: {got!r} is not one of {MEASURED_OVER}")
    return got


def _gpt(name: str, layers: int, hidden: int, heads: int, vocab: int, seq_len: int,
         **extra: Any) -> ModelSpec:
    return catalog.model({"name": name, "n_layers": layers, "hidden": hidden, "n_heads": heads,
                          "vocab": vocab, "seq_len": seq_len, **extra})


def _dp(run: dict, source: str) -> int:
    """The data-parallel size of a run stated by its GPUs, ``tp`` and ``pp``; a count they do
    not divide is an error naming the file and the entry (never a silently smaller plan)."""
    split = run["tp"] * run["pp"]
    if run["gpus"] % split:
        raise ValueError(f"data/published/{source}.toml: run {run['model']!r}: gpus="
                         f"{run['gpus']} is not a multiple of tp × pp = {split}")
    return run["gpus"] // split


def _korthikanti(raw: dict) -> tuple[list[Case], list[str]]:
    out = []
    for run in raw["run"]:
        m = catalog.model(run["model"])
        for key, rc, sp, label in (("seconds_full_recompute", "full", False, "full recompute"),
                                   ("seconds_selective_sp", "selective", True,
                                    "SP + selective")):
            plan = Plan(tp=run["tp"], pp=run["pp"], dp=_dp(run, "korthikanti_table5"),
                        micro_batch=run["micro_batch"], global_batch=run["global_batch"],
                        sp=sp, recompute=rc, interleave=run["interleave"])
            out.append(Case("korthikanti_table5", f"{m.name}, {label}", m, "A100-SXM4-80GB",
                            default_network("A100-SXM4-80GB"), plan, "megatron-lm-2021",
                            "s/iteration", run[key], _seconds))
    return out, []


def _megatron_t1(raw: dict) -> tuple[list[Case], list[str]]:
    out = []
    for run in raw["run"]:
        m = catalog.model(run["model"])
        d = _dp(run, "megatron_lm_table1")
        plan = Plan(tp=run["tp"], pp=run["pp"], dp=d, micro_batch=1, global_batch=run["batch"],
                    recompute="full")
        out.append(Case("megatron_lm_table1", f"{m.name} on {run['gpus']:,} GPUs", m,
                        "A100-SXM4-80GB", default_network("A100-SXM4-80GB"), plan,
                        "megatron-lm-2021", "TFLOP/s per GPU (Eq. 3)",
                        run["achieved_tflops_per_gpu"], _megatron_tflops,
                        ("micro-batch 1", "plain 1F1B (no interleaving)")))
    return out, []


def _zero3(raw: dict) -> tuple[list[Case], list[str]]:
    out = []
    for run in raw["run"]:
        m = catalog.model(run["model"])
        zero = run.get("zero_stage", 0)
        plan = Plan(tp=run["tp"], pp=run["pp"], dp=run["dp"], micro_batch=run["micro_batch"],
                    global_batch=run["global_batch"], zero_stage=zero, recompute="full")
        fw = "deepspeed-2021" if run["scheme"] == "zero3" else "megatron-lm-2021"
        what = "ZeRO-3" if run["scheme"] == "zero3" else "PTD-P"
        out.append(Case("narayanan2021_table2_zero3", f"{m.name}, {what} on {run['gpus']:,} GPUs",
                        m, raw["gpu"], default_network(raw["gpu"]), plan, fw,
                        "TFLOP/s per GPU (Eq. 3)", run["achieved_tflops_per_gpu"],
                        _megatron_tflops, tuple(run.get("assumed", ()))))
    return out, []


def _megascale(raw: dict) -> tuple[list[Case], list[str]]:
    out, skipped = [], []
    for run in raw["run"]:
        if run["method"] != "megatron-lm" or "seconds_per_iteration" not in run:
            skipped.append(f"{run['method']} {run['gpus']} GPUs: "
                           + ("MegaScale's own model (parallel block, sliding-window attention)"
                              if run["method"] != "megatron-lm" else "no iteration time"))
            continue
        m = _gpt("megascale-175b", run["layers"], run["hidden"], run["heads"], run["vocab"],
                 run["seq_len"])
        plan = Plan(tp=run["tp"], pp=run["pp"], dp=run["dp"], micro_batch=1,
                    global_batch=run["global_batch"], interleave=run["interleave"],
                    sp=True, recompute="selective", zero_stage=1)
        net = NodeNetwork(intra="NVLink 3", inter="InfiniBand HDR", gpus_per_node=8)
        out.append(Case("megascale_table2", f"175B (128 heads), Megatron-LM on {run['gpus']:,}",
                        m, "A100-SXM4-80GB", net, plan, "megatron-lm-2023", "s/iteration",
                        run["seconds_per_iteration"], _seconds,
                        ("A100 80GB", "micro-batch 1", "SP + selective recompute",
                         "Megatron-LM at commit 285068c8 (Sec. 6.1): no TP, pipeline or DP "
                         "overlap (MegaScale adds them)",
                         "distributed optimizer (ZeRO-1)",
                         "200 Gb/s RoCE per GPU priced as the catalog's 200 Gb/s port "
                         "(InfiniBand HDR)")))
    return out, skipped


def _llama3(raw: dict) -> tuple[list[Case], list[str]]:
    out, skipped = [], []
    m = catalog.model("llama3-405b")
    for run in raw["run"]:
        plan = Plan(tp=run["tp"], pp=run["pp"], dp=run["dp"], micro_batch=1,
                    global_batch=run["global_batch"], zero_stage=2, recompute="none",
                    interleave=2, flash_attention=True, seq_len=run["seq_len"], cp=run["cp"])
        net = NodeNetwork(intra="NVLink 4", inter="RoCE v2 400GbE", gpus_per_node=8)
        cp = (("context parallelism as ring attention (Llama 3 all-gathers K and V)",)
              if run["cp"] > 1 else ())
        out.append(Case("llama3_table4", run["case"], m, run["gpu"], net, plan, "torchtitan",
                        "TFLOP/s per GPU (model FLOPs)", run["tflops_per_gpu"], _model_tflops,
                        ("micro-batch 1", "interleave 2", "sharded data parallelism as "
                         "ZeRO-2 with pipelining", "first and last stage one layer fewer: "
                         "the planner's balanced split", *cp)))
    return out, skipped


def _torchtitan(raw: dict) -> tuple[list[Case], list[str]]:
    out, skipped = [], []
    for run in raw["run"]:
        if not str(run["gpu"]).startswith("A100"):
            skipped.append(f"{run['part']} {run['model']} on {run['gpus']}: "
                           f"{run['gpu']} is not in the catalog (peak unknown)")
            continue
        rc = str(run["recompute"])
        if "every other layer" in rc:
            skipped.append(f"{run['part']} {run['model']} on {run['gpus']}: recomputation of "
                           "every other layer is not modelled")
            continue
        m = catalog.model(run["model"])
        seq = run.get("seq_len", 8192)
        plan = Plan(tp=run.get("tp", 1), pp=run.get("pp", 1), dp=run["fsdp"],
                    micro_batch=run["micro_batch"], global_batch=run["global_batch"],
                    zero_stage=3, recompute="selective" if "selective" in rc else rc,
                    flash_attention=True, seq_len=seq)
        out.append(Case("torchtitan_2024", f"{m.name}, FSDP2 on {run['gpus']} A100, {rc}", m,
                        run["gpu"], default_network(run["gpu"]), plan, "torchtitan",
                        "tokens/s per GPU", run["tokens_per_s_per_gpu"], _tokens_per_gpu,
                        tuple(run.get("assumed", ()))))
    return out, skipped


def _mpt(raw: dict) -> tuple[list[Case], list[str]]:
    out = []
    for run in raw["run"]:
        # biases in every linear layer and LayerNorm (MPTConfig's no_bias defaults to False):
        # the table's NumParams counts them, and a model that does not match it is refused
        m = _gpt(run["model"], run["layers"], run["hidden"], run["heads"], raw["vocab"],
                 run["seq_len"], biases=True, dropout=raw["dropout"])
        counted = memory.param_count(m)
        if counted != run["params"]:
            raise ValueError(f"data/published/mpt_llm_foundry_2024.toml: run {run['model']!r} "
                             f"on {run['gpus']} GPUs: params={run['params']:,} but the shapes "
                             f"give {counted:,}")
        zero = 3 if run["sharding"] == "FULL_SHARD" else 2
        plan = Plan(dp=run["gpus"], micro_batch=run["micro_batch"],
                    global_batch=run["global_batch"], zero_stage=zero,
                    recompute=run["recompute"], flash_attention=True, seq_len=run["seq_len"])
        gpu = run["gpu"]
        if gpu.startswith("A100"):  # "1600 Gbps node-node interconnect (RoCE)": 200 Gb/s a GPU
            net = NodeNetwork(intra="NVLink 3", inter="InfiniBand HDR", gpus_per_node=8)
        else:  # "3200 Gbps" a node (llm-foundry issue #1584): the DGX H100's NDR port a GPU
            net = default_network(gpu)
        out.append(Case("mpt_llm_foundry_2024", f"{run['model']} on {run['gpus']} × {gpu}, "
                        f"{run['sharding']}, b={run['micro_batch']}, s={run['seq_len']}",
                        m, gpu, net, plan, "pytorch-fsdp", "tokens/s per GPU",
                        run["tokens_per_s_per_gpu"], _tokens_per_gpu,
                        ("8 GPUs per node",)))
    return out, []


#: Megatron Bridge's precision columns as recipes: BF16 as the other sources' 16-bit recipe,
#: FP8 with current scaling as Transformer Engine's per-tensor current scaling (an amax pass
#: before each cast), MXFP8 (Blackwell's 1x32 block scales) at the same FP8 peak, its scales
#: counted in the casts (one byte per 32 values) and left out of the stored activations.
#: 25.11 prints "FP8-CS" and "FP8-MX"; 26.02 prints "FP8" (its recipes' fp8_cs, assumed in
#: data/published/megatron_bridge_perf_2602.toml) and "MXFP8".
_BRIDGE_RECIPES = {"BF16": "mixed-adam", "FP8-CS": "fp8-te-cs", "FP8-MX": "fp8-te-mx",
                   "FP8": "fp8-te-cs", "MXFP8": "fp8-te-mx"}
#: Megatron-Core's recompute_modules the planner models, as its recompute kinds.
_RECOMPUTE_MODULES = {"layernorm": "norms", "moe_act": "moe_swiglu",
                      "mla_up_proj": "mla_up_projections"}


def _bridge_framework(run: dict) -> tuple[str | Framework, list[str]]:
    """Megatron-Core with the MoE settings a run's recipe sets (the file's ``dispatcher``,
    ``recompute_modules`` and ``cuda_graph_scope``; its ``moe_a2a_overlap`` is recorded, not
    applied), and those settings in words; the preset's name where the run records none."""
    if "dispatcher" not in run:
        return "megatron-core", []
    base = framework("megatron-core")
    kinds = tuple(_RECOMPUTE_MODULES[r] for r in run["recompute_modules"]
                  if r in _RECOMPUTE_MODULES)
    unmodelled = [r for r in run["recompute_modules"] if r not in _RECOMPUTE_MODULES]
    graphs = tuple(run.get("cuda_graph_scope", ()))
    said = [f"the {run['dispatcher']} token dispatcher (the recipe's)",
            "CUDA graphs of " + (", ".join(graphs) or "nothing") + " (the recipe's)",
            "the recipe's recompute modules: " + (", ".join(run["recompute_modules"]) or "none")
            + (f" ({', '.join(unmodelled)} not modelled)" if unmodelled else ""),
            "no all-to-all overlap" + (" (the recipe sets moe_a2a_overlap; not applied)"
                                       if run["moe_a2a_overlap"] else " (the recipe's)")]
    # the label names the dispatcher, so a run with settings is never the bare preset
    fw = replace(base, moe_dispatcher=run["dispatcher"], recompute_kinds=kinds,
                 a2a_overlap=False, cuda_graph_scopes=graphs,
                 label=f"{base.label}, {run['dispatcher']} dispatcher"
                       + (f", recomputing {', '.join(kinds)}" if kinds else "")
                       + (f", CUDA graphs of {', '.join(graphs)}" if graphs else ""))
    return fw, said


def _bridge(raw: dict, source: str) -> tuple[list[Case], list[str]]:
    """The runs of one Megatron Bridge performance table (``source``, the file's key) as cases.

    A run of another release than the file's ``release`` (the 26.02 file's 26.02.01 rows)
    carries its release in its label; ``mtp = true`` keeps the model's multi-token
    prediction where the table does not print "w/ MTP" (the recipe's setting)."""
    out, skipped = [], []
    main_release = raw.get("release")
    for run in raw["run"]:
        why = None
        if run["precision"] not in _BRIDGE_RECIPES:
            why = f"{run['precision']}: no recipe for it"
        elif run["gpu"] not in catalog.gpu_names():
            why = f"{run['gpu']} is not in the catalog"
        elif run["model"] not in catalog.model_names():
            why = f"{run['model']} is not in the catalog"
        elif run.get("fsdp", 0):
            why = "Megatron FSDP rows are not modelled"
        if why:
            skipped.append(f"{run['model']} on {run['gpus']} × {run['gpu']}: {why}")
            continue
        m = catalog.model(run["model"])
        with_mtp = run.get("variant") == "w/ MTP" or run.get("mtp", False)
        if m.mtp_layers and not with_mtp:
            m = replace(m, mtp_layers=0)  # "w/o MTP", or not stated: the model without it
        plan = Plan(tp=run["tp"], pp=run["pp"], dp=run["dp"], micro_batch=run["micro_batch"],
                    global_batch=run["global_batch"], zero_stage=1, sp=run["tp"] > 1,
                    recompute="selective", interleave=run.get("vp") or 1,
                    flash_attention=True, seq_len=run["seq_len"], cp=run["cp"],
                    ep=run.get("ep", 1))
        extra = []
        if run["precision"] in ("FP8-MX", "MXFP8"):
            extra.append("MXFP8 at the FP8 peak; its block scales in the casts only")
        elif run["precision"] == "FP8":
            extra.append("FP8 with current scaling (the recipe's fp8_cs; the table says FP8)")
        fw, settings = _bridge_framework(run)
        if m.is_moe:
            extra += ["force-balanced (random scores), dropless routing",
                      "expert tensor parallelism 1",
                      *(settings or ["no all-to-all overlap (Megatron-Core's default)"])]
        if run.get("variant") == "dropless" or (catalog.model(run["model"]).mtp_layers
                                                 and "variant" not in run and "mtp" not in run):
            extra.append("no multi-token prediction (not stated for this row)")
        if "mtp" in run and m.mtp_layers:
            extra.append("multi-token prediction on (the recipe's; not stated for this row)")
        if run["cp"] > 1:
            extra.append("context parallelism as ring attention (Megatron-Core's p2p)")
        label = (f"{m.name}{' ' + run['precision'] if run['precision'] != 'BF16' else ''} on "
                 f"{run['gpus']} × {run['gpu']}"
                 + (f" ({run['release']})" if main_release and run["release"] != main_release
                    else ""))
        out.append(Case(source, label, m, run["gpu"],
                        default_network(run["gpu"]), plan, fw,
                        "tokens/s per GPU", run["tokens_per_s_per_gpu"], _tokens_per_gpu,
                        ("distributed optimizer (ZeRO-1)", "SP with TP",
                         "selective recomputation", "the system's datasheet network", *extra),
                        _BRIDGE_RECIPES[run["precision"]]))
    return out, skipped


def _deepseek_v3(raw: dict) -> tuple[list[Case], list[str]]:
    out = []
    for run in raw["run"]:
        # the multi-token-prediction depth the run trained, as the file records it; the
        # run's node size serves both the network and the failures' goodput
        m = replace(catalog.model(run["model"]), mtp_layers=run.get("mtp_depth", 0))
        plan = Plan(tp=run["tp"], pp=run["pp"], dp=run["dp"], ep=run["ep"], cp=run["cp"],
                    micro_batch=1, global_batch=run["global_batch"],
                    zero_stage=run["zero_stage"], recompute="selective", flash_attention=True,
                    seq_len=run["seq_len"])
        recipe = "fp8-deepseek"
        predict, good, over = _gpu_hours_per_trillion, 1.0, []
        if _measured_over(run) == "whole run":
            good = whole_run_goodput(m, plan, recipe, run["gpus_per_node"])
            predict = _over_goodput(predict, good, slower_is_larger=True)
            over = [f"a whole-run average: the steady state over a goodput of {good:.1%} "
                    "(failures at Llama 3's rates, sharded checkpoints at 2 TB/s, "
                    "MegaScale's restart)"]
        out.append(Case("deepseek_v3", f"{m.name} pre-training on {run['gpus']:,} H800", m,
                        "H800-SXM5-80GB", replace(default_network("H800-SXM5-80GB"),
                                                  gpus_per_node=run["gpus_per_node"]), plan,
                        "deepseek-hai-llm", "H800 GPU-hours per 10^12 tokens",
                        run["gpu_hours_per_trillion_tokens"], predict,
                        (*run["assumed"], "micro-batch 1, 120 micro-batches per step",
                         "the final batch (15,360 sequences) throughout",
                         "selective recomputation plus HAI-LLM's: RMSNorm, MLA up-projections "
                         "and the MoE SwiGLU (the framework's recompute_kinds)",
                         "the MTP module (depth 1, Sec. 4.2) on the last stage with the "
                         "output layer, its parameters in that stage's memory",
                         "the catalog's H800 links (NVLink 200 GB/s, IB NDR 50 GB/s a GPU)",
                         "balanced routing", *over),
                        recipe, good))
    return out, []


#: Each source's reader and a short title, in the order tables are printed.
SOURCES: dict[str, tuple[str, Callable[[dict], tuple[list[Case], list[str]]]]] = {
    "korthikanti_table5": ("Korthikanti et al. 2022, Table 5", _korthikanti),
    "megatron_lm_table1": ("Narayanan et al. 2021, Table 1", _megatron_t1),
    "narayanan2021_table2_zero3": ("Narayanan et al. 2021, Table 2 (ZeRO-3 vs PTD-P)", _zero3),
    "mpt_llm_foundry_2024": ("MosaicML MPT benchmarks (PyTorch FSDP)", _mpt),
    "megascale_table2": ("MegaScale 2024, Table 2 (Megatron-LM rows)", _megascale),
    "llama3_table4": ("Llama 3 2024, Table 4", _llama3),
    "torchtitan_2024": ("torchtitan 2024 (FSDP2, A100)", _torchtitan),
    "megatron_bridge_perf_2511": ("Megatron Bridge 25.11 (dense, MoE, FP8, CP)",
                                  functools.partial(_bridge, source="megatron_bridge_perf_2511")),
    "megatron_bridge_perf_2602": ("Megatron Bridge 26.02 (dense, MoE, FP8, CP)",
                                  functools.partial(_bridge, source="megatron_bridge_perf_2602")),
    "deepseek_v3": ("DeepSeek-V3 report 2024 (2,048 H800)", _deepseek_v3),
}


def source_title(source: str) -> str:
    """A source's short title."""
    return SOURCES[source][0]


@functools.cache
def cases() -> tuple[tuple[Case, ...], tuple[str, ...]]:
    """Every published run the planner can represent, and the reasons for the others."""
    out: list[Case] = []
    skipped: list[str] = []
    for name, (title, reader) in SOURCES.items():
        got, left = reader(catalog.published(name))
        out += got
        skipped += [f"{title}: {why}" for why in left]
    return tuple(out), tuple(skipped)

