"""A parallel layout, and the one table of rules that makes it valid.

A *layout* (:class:`Plan`) splits the training of one model over ``n = tp × cp × pp × dp``
GPUs: tensor parallelism (``tp``) splits every matrix, context parallelism (``cp``) splits
every sequence, pipeline parallelism (``pp``) splits the layers into stages, data parallelism
(``dp``) copies the result and splits the batch; ZeRO shards model state over the copies;
sequence parallelism, activation recomputation, the micro-batch size and the interleaved
schedule trade memory for time. A mixture of experts regroups the ``tp × cp × dp`` GPUs of a
pipeline stage for its expert layers as ``ep × edp`` (expert parallelism ``ep``, expert
tensor parallelism 1: Megatron-Core's "parallel folding", :func:`scaleout.moe.fold`).

Which layouts are valid is written once, in :data:`RULES`: each rule has a name, a sentence
for the one layout that breaks it, and a vectorised test over arrays of layouts. Everything
that asks the question uses the table:

* :func:`scaleout.plan.search` masks its candidate arrays with it (:func:`valid`);
* :func:`scaleout.plan.evaluate` raises the first failing rule's sentence (:func:`check`);
* the search's "no layout" message counts the candidates each rule removed
  (:func:`failures`);
* :func:`scaleout.memory.training_memory` checks the rules about the model's shape;
* :class:`Plan` itself checks the batch rule.

The rules follow the frameworks that ran the published layouts: Megatron-LM (tensor
parallelism splits heads and stays inside an NVLink domain; the interleaved schedule needs
``v`` to divide a stage's layers and ``m`` to be a multiple of ``pp``; Narayanan et al. 2021,
Sec. 2.2 and 3), DeepSpeed ("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
its pipeline docs) and Korthikanti et al. 2022 (sequence parallelism rides on tensor
parallelism), Megatron-Core's mixture-of-experts and context-parallel checks (its MoE
README; Transformer Engine's attention for CP) and DeepSeek-V3's DualPipe (arXiv 2412.19437
Sec. 3.2.1). Taught in notebooks 02, 05, 08, 13 and 14.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .checks import check_bool, check_choice, check_int

__all__ = [
    "RECOMPUTE_MODES",
    "RULES",
    "Facts",
    "Plan",
    "Rule",
    "allowed_divisors",
    "check",
    "demand",
    "failures",
    "plan_arrays",
    "valid",
]

#: Activation recomputation: none, the attention core only (Korthikanti et al. 2022 Sec. 5),
#: or every layer's forward pass (Megatron-LM's full recomputation).
RECOMPUTE_MODES = ("none", "selective", "full")


# =========================================================================== the layout
@dataclass(frozen=True)
class Plan:
    """One way to split training over ``tp × cp × pp × dp`` GPUs.

    ``cp`` splits each sequence over that many GPUs (context parallelism); ``ep`` spreads a
    mixture of experts' routed experts over that many GPUs of a pipeline stage (expert
    parallelism; the stage's ``tp × cp × dp`` GPUs regrouped as ``ep × edp``, each expert
    whole on its GPU). ``global_batch`` is in sequences (default ``dp × micro_batch``);
    ``interleave`` is ``v``, model chunks per GPU (1: plain 1F1B); ``recompute`` one of
    :data:`RECOMPUTE_MODES`; ``seq_len`` defaults to the model's. ``zero_shard`` is the size
    of ZeRO's shard groups: model state is sharded over that many data-parallel ranks and
    replicated across the ``dp / zero_shard`` groups (hybrid sharding: PyTorch FSDP's
    ``HYBRID_SHARD``, torchtitan's HSDP, Megatron-Core's distributed-optimizer instances);
    None shards over all ``dp``.
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
    zero_shard: int | None = None
    cp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "micro_batch", "interleave", "cp", "ep"):
            object.__setattr__(self, name, check_int(name, getattr(self, name)))
        batch = self.global_batch if self.global_batch is not None else self.dp * self.micro_batch
        object.__setattr__(self, "global_batch", check_int("global_batch", batch))
        object.__setattr__(self, "zero_stage",
                           check_int("zero_stage", self.zero_stage, minimum=0, maximum=3))
        check_choice("recompute", self.recompute, RECOMPUTE_MODES)
        check_bool("sp", self.sp)
        check_bool("flash_attention", self.flash_attention)
        if self.seq_len is not None:
            object.__setattr__(self, "seq_len", check_int("seq_len", self.seq_len))
        if self.zero_shard is not None:
            object.__setattr__(self, "zero_shard", check_int("zero_shard", self.zero_shard))
            if self.zero_shard == self.dp:
                object.__setattr__(self, "zero_shard", None)  # the same plan as plain ZeRO
        check(self, Facts(), only=("batch", "zero_shard_divides", "zero_shard_needs_zero"))

    @property
    def shard_group(self) -> int:
        """Data-parallel ranks that share one copy of the model state (``zero_shard`` or
        ``dp``)."""
        return self.zero_shard if self.zero_shard is not None else self.dp

    @property
    def n_gpus(self) -> int:
        """``tp × cp × pp × dp``."""
        return self.tp * self.cp * self.pp * self.dp

    @property
    def edp(self) -> int:
        """Expert data-parallel size: the copies of each expert, ``tp cp dp / ep``
        (:func:`scaleout.moe.fold` with expert tensor parallelism 1)."""
        return self.tp * self.cp * self.dp // self.ep

    @property
    def micro_batches(self) -> int:
        """``m``: micro-batches per replica per iteration."""
        return self.global_batch // (self.dp * self.micro_batch)

    @property
    def label(self) -> str:
        """``"TP8 PP8 DP16, b=1, v=3, ZeRO-1, SP, selective"`` (``CP2`` after TP and ``EP64``
        after DP where they are above 1)."""
        split = (f"TP{self.tp}" + (f" CP{self.cp}" if self.cp > 1 else "")
                 + f" PP{self.pp} DP{self.dp}" + (f" EP{self.ep}" if self.ep > 1 else ""))
        parts = [split, f"b={self.micro_batch}"]
        if self.interleave > 1:
            parts.append(f"v={self.interleave}")
        if self.zero_stage:
            parts.append(f"ZeRO-{self.zero_stage}" + (
                f" in groups of {self.zero_shard} (hybrid)" if self.zero_shard else ""))
        if self.sp:
            parts.append("SP")
        parts.append(f"recompute {self.recompute}")
        return ", ".join(parts)


#: The fields of a layout as arrays (one entry per layout), as the search holds them
#: (``zero_shard`` as the shard group's size: ``dp`` where the plan shards over all of it).
FIELDS = ("tp", "pp", "dp", "micro_batch", "interleave", "zero_stage", "sp", "recompute",
          "zero_shard", "cp", "ep")


def plan_arrays(plans: Iterable[Plan]) -> dict[str, np.ndarray]:
    """Layouts as arrays of :data:`FIELDS` plus ``global_batch`` (``recompute`` as names)."""
    plans = list(plans)
    out = {name: np.array([getattr(p, name) for p in plans]) for name in FIELDS
           if name != "zero_shard"}
    out["zero_shard"] = np.array([p.shard_group for p in plans])
    out["global_batch"] = np.array([p.global_batch for p in plans])
    return out


# =========================================================================== the facts
@dataclass(frozen=True)
class Facts:
    """What the rules compare a layout with: the model's shape, the node, the relaxations.

    A field left as None is unknown, and the rules that need it are not applied (a layout
    is checked against the batch before any model is chosen, against the model's shape
    before any network is). ``experts`` is 0 for a dense model; ``precision`` is the
    sentence saying why the GPU cannot run the recipe (empty when it can:
    :func:`scaleout.memory.precision_problem`); ``cp_variant`` is the framework's context
    parallelism (``""``: none), ``expert_parallel`` whether it has expert parallelism,
    ``pipeline_schedule`` its schedule (``"1f1b"`` or ``"dualpipe"``); ``tensor_parallel``,
    ``pipeline_parallel``, ``interleaved_schedule``, ``sequence_parallel`` and
    ``recompute_modes`` what layouts it can run at all.
    """

    model: str = ""
    n_heads: int | None = None
    kv_heads: int | None = None
    n_layers: int | None = None
    gpus_per_node: int | None = None
    uneven_layers: bool = False
    allow_tp_across_nodes: bool = False
    relaxable: bool = False
    framework: str = ""
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    max_zero_with_pp: int = 1
    hybrid_shard: bool = True
    experts: int | None = None
    seq_len: int | None = None
    flash_attention: bool | None = None
    cp_variant: str = "ring"
    expert_parallel: bool = True
    pipeline_schedule: str = "1f1b"
    precision: str = ""
    tensor_parallel: bool = True
    pipeline_parallel: bool = True
    interleaved_schedule: bool = True
    sequence_parallel: bool = True
    recompute_modes: tuple[str, ...] = RECOMPUTE_MODES

    @classmethod
    def of(cls, model, gpus_per_node: int | None = None, *, uneven_layers: bool = False,
           allow_tp_across_nodes: bool = False, relaxable: bool = False,
           framework=None, seq_len: int | None = None, flash_attention: bool | None = None,
           recipe=None, gpu=None) -> Facts:
        """The facts of a :class:`~scaleout.catalog.ModelSpec` (and a node size, the framework
        whose rules apply, a :class:`scaleout.plan.frameworks.Framework`; the sequence length,
        the attention kernels, the precision recipe and the GPU, where known).

        ``relaxable``: the caller offers ``uneven_layers`` and ``allow_tp_across_nodes``
        (the planner does), so messages may suggest them.
        """
        extra: dict = {} if framework is None else {
            "framework": framework.name, "zero_stages": tuple(framework.zero_stages),
            "max_zero_with_pp": framework.max_zero_with_pp,
            "hybrid_shard": framework.hybrid_shard, "cp_variant": framework.cp_variant,
            "expert_parallel": framework.expert_parallel,
            "pipeline_schedule": framework.pipeline_schedule,
            "tensor_parallel": framework.tensor_parallel,
            "pipeline_parallel": framework.pipeline_parallel,
            "interleaved_schedule": framework.interleaved_schedule,
            "sequence_parallel": framework.sequence_parallel,
            "recompute_modes": tuple(framework.recompute_modes)}
        if seq_len is not None:
            extra["seq_len"] = check_int("seq_len", seq_len)
        if flash_attention is not None:
            extra["flash_attention"] = check_bool("flash_attention", flash_attention)
        if recipe is not None and gpu is not None:
            from .memory import precision_problem

            extra["precision"] = precision_problem(recipe, gpu) or ""
        return cls(model.name, model.n_heads, model.kv_heads, model.n_layers, gpus_per_node,
                   check_bool("uneven_layers", uneven_layers),
                   check_bool("allow_tp_across_nodes", allow_tp_across_nodes),
                   check_bool("relaxable", relaxable),
                   experts=model.experts if model.is_moe else 0, **extra)


def allowed_divisors(total: int, limit: int = 12) -> str:
    """``"1, 2, 3, 4, 6, 8, ..., 96"``: the divisors of ``total`` for a message."""
    from .checks import divisors

    options = divisors(int(total))
    shown = options if len(options) <= limit else [*options[: limit - 1], "...", options[-1]]
    return ", ".join(map(str, shown))


def _get(a, name: str):
    """Field ``name`` of arrays of layouts, 1 where absent (``cp``, ``ep``: a caller that
    predates them means none)."""
    return a[name] if name in a else np.ones((), dtype=np.int64)


def _micro_batches(a):
    return a["global_batch"] // (a["dp"] * a["micro_batch"])


def _shard(a):
    """The shard group's size of arrays of layouts (``dp`` where ``zero_shard`` is absent)."""
    shard = a.get("zero_shard")
    return a["dp"] if shard is None else np.where(shard == 0, a["dp"], shard)


def _layers_per_stage(facts: Facts, pp):
    return -(-facts.n_layers // np.asarray(pp))  # the busiest stage's layers


@dataclass(frozen=True)
class Rule:
    """One validity rule: its name, what it needs to know, its test and its sentence.

    ``test(a, facts)`` takes arrays of layouts (:data:`FIELDS`, plus ``global_batch``) and
    returns a boolean array, True where the layout keeps the rule. ``message(row, facts)``
    says, for one layout (a dict of plain values) that breaks it, what is wrong and what
    would do. ``needs`` names the :class:`Facts` fields the rule uses. ``demand`` says what
    the rule asks of every split a search tries, for the message of a search that finds no
    valid layout: a format string over ``B`` (the global batch), ``f`` (the facts) and
    ``name`` (the framework); empty for a rule a search never counts (its grid keeps it).
    """

    name: str
    needs: tuple[str, ...]
    test: Callable[[Mapping[str, np.ndarray], Facts], np.ndarray]
    message: Callable[[Mapping[str, int], Facts], str]
    source: str = ""
    demand: str = ""

    def applies(self, facts: Facts) -> bool:
        """Whether ``facts`` hold everything this rule needs."""
        return all(getattr(facts, name) is not None for name in self.needs)


def _batch_message(r: Mapping[str, int], f: Facts) -> str:
    """The batch rule's sentence, with the nearest batches that work and the dp sizes that do."""
    from .checks import divisors

    batch, dp, mb = r["global_batch"], r["dp"], r["micro_batch"]
    per = dp * mb
    below, above = batch // per * per, (batch // per + 1) * per
    near = " or ".join(f"{x:,}" for x in (below, above) if x > 0)
    dps = [d for d in divisors(batch // mb) if abs(d - dp) <= dp] if batch % mb == 0 else []
    alt = f"; or dp in {', '.join(map(str, dps[:8]))}" if dps else ""
    return (f"global_batch={batch} must be a multiple of dp × micro_batch = "
            f"{dp} × {mb} = {per}: the nearest batches that are: {near}{alt}")


def _offered(field: str, attr: str, what: str, demand: str) -> Rule:
    """The rule that a layout keeps ``field`` at 1 where the framework lacks ``attr``."""
    return Rule(f"{field}_offered", (),
                lambda a, f: (a[field] == 1) | getattr(f, attr),
                lambda r, f: (f"{field}={r[field]}: {f.framework or 'this framework'} {what}; "
                              f"allowed: {field}=1"),
                "each framework's layouts and schedules (scaleout.plan.frameworks)", demand)


RULES: tuple[Rule, ...] = (
    Rule("batch", (),
         lambda a, f: a["global_batch"] % (a["dp"] * a["micro_batch"]) == 0,
         _batch_message, "every replica runs whole micro-batches",
         "the data-parallel size n/(tp·pp) must divide global_batch={B}"),
    Rule("tp_heads", ("n_heads",),
         lambda a, f: f.n_heads % a["tp"] == 0,
         lambda r, f: (f"tp={r['tp']} must divide n_heads={f.n_heads}; allowed: "
                       f"{allowed_divisors(f.n_heads)}"),
         "Megatron-LM splits attention by heads (Shoeybi et al. 2019, Sec. 3)",
         "tensor-parallel sizes must divide the {f.n_heads} heads"),
    Rule("tp_kv_heads", ("kv_heads",),
         lambda a, f: (f.kv_heads % a["tp"] == 0) | (a["tp"] % f.kv_heads == 0),
         lambda r, f: (f"tp={r['tp']} must divide the {f.kv_heads} KV heads of {f.model} or be "
                       f"a multiple of them"),
         "grouped-query attention: KV heads are split, or copied to every rank of a group",
         "tensor-parallel sizes must divide the {f.kv_heads} KV heads (or be a multiple of "
         "them)"),
    Rule("tp_in_node", ("gpus_per_node",),
         lambda a, f: f.allow_tp_across_nodes | (a["tp"] <= f.gpus_per_node),
         lambda r, f: (f"tp={r['tp']} is larger than the {f.gpus_per_node} GPUs of a node"
                       + ("; pass allow_tp_across_nodes=True to run tensor parallelism over "
                          "the network" if f.relaxable else "")),
         "tensor parallelism's all-reduces need NVLink (Narayanan et al. 2021, Sec. 3.3)",
         "tensor-parallel sizes must fit in the {f.gpus_per_node} GPUs of a node"),
    Rule("tp_whole_nodes", ("gpus_per_node",),
         lambda a, f: (((a["tp"] <= f.gpus_per_node) & (f.gpus_per_node % a["tp"] == 0))
                       | ((a["tp"] > f.gpus_per_node) & (a["tp"] % f.gpus_per_node == 0))),
         lambda r, f: (f"tp={r['tp']} must divide the {f.gpus_per_node} GPUs per node (or be a "
                       "multiple of it) so that no tensor-parallel group straddles two nodes"),
         "Megatron-LM's rank order puts a tensor-parallel group on consecutive GPUs",
         "tensor-parallel sizes must divide the {f.gpus_per_node} GPUs per node"),
    Rule("pp_layers", ("n_layers",),
         lambda a, f: (a["pp"] <= f.n_layers) & (f.uneven_layers | (f.n_layers % a["pp"] == 0)),
         lambda r, f: (f"pp={r['pp']} must divide n_layers={f.n_layers}; allowed: "
                       f"{allowed_divisors(f.n_layers)}"
                       + (" (or pass uneven_layers=True)"
                          if f.relaxable and r["pp"] <= f.n_layers else "")),
         "every stage runs whole layers (Narayanan et al. 2021, Sec. 2.2)",
         "pipeline sizes must divide the {f.n_layers} layers"),
    Rule("interleave_layers", ("n_layers",),
         lambda a, f: (a["interleave"] == 1) | ((a["pp"] > 1)
                                                 & (_layers_per_stage(f, a["pp"])
                                                    % a["interleave"] == 0)),
         lambda r, f: (f"interleave={r['interleave']} must divide the "
                       f"{int(_layers_per_stage(f, r['pp']))} layers per stage "
                       f"(pp={r['pp']} > 1)"),
         "each of a GPU's v model chunks holds whole layers (Narayanan et al. 2021, Sec. 2.2.2)",
         "interleaved stages must divide each pipeline stage's layers"),
    Rule("interleave_micro_batches", (),
         lambda a, f: (a["interleave"] == 1)
         | ((a["global_batch"] // (a["dp"] * a["micro_batch"])) % a["pp"] == 0),
         lambda r, f: (f"the interleaved schedule needs the "
                       f"{r['global_batch'] // (r['dp'] * r['micro_batch'])} micro-batches to "
                       f"be a multiple of pp={r['pp']}"),
         "Megatron-LM's interleaved 1F1B schedule",
         "the interleaved schedule needs a multiple of pp micro-batches"),
    *(_offered(field, attr, what, demand) for field, attr, what, demand in (
        ("tp", "tensor_parallel", "has no tensor parallelism",
         "{name} has no tensor parallelism, so tp must be 1"),
        ("pp", "pipeline_parallel", "has no pipeline parallelism",
         "{name} has no pipeline parallelism, so pp must be 1"),
        ("interleave", "interleaved_schedule", "runs no interleaved pipeline schedule",
         "{name} runs no interleaved pipeline schedule"))),
    Rule("sp_offered", (),
         lambda a, f: ~a["sp"].astype(bool) | f.sequence_parallel,
         lambda r, f: (f"sp=True: {f.framework or 'this framework'} has no sequence "
                       "parallelism; allowed: sp=False"),
         "each framework's layouts (scaleout.plan.frameworks)"),
    Rule("recompute_offered", (),
         lambda a, f: (np.isin(a["rc"], [RECOMPUTE_MODES.index(m) for m in f.recompute_modes])
                       if "rc" in a else np.isin(a["recompute"], f.recompute_modes)),
         lambda r, f: (f"recompute={_recompute_name(r)!r}: "
                       f"{f.framework or 'this framework'} offers "
                       f"{', '.join(repr(m) for m in f.recompute_modes)}"),
         "each framework's activation recomputation (scaleout.plan.frameworks)"),
    Rule("zero_offered", (),
         lambda a, f: np.isin(a["zero_stage"], f.zero_stages),
         lambda r, f: (f"zero_stage={r['zero_stage']} is not offered by "
                       f"{f.framework or 'this framework'}; it offers "
                       f"{', '.join(map(str, f.zero_stages))}"),
         "each framework's sharding options (scaleout.plan.frameworks)"),
    Rule("zero_pipeline", (),
         lambda a, f: (a["zero_stage"] <= f.max_zero_with_pp) | (a["pp"] == 1),
         lambda r, f: (f"zero_stage={r['zero_stage']} cannot be combined with pp={r['pp']} in "
                       f"{f.framework or 'DeepSpeed'}: it combines pipelining with ZeRO stage "
                       f"{f.max_zero_with_pp} at most"
                       + (" (DeepSpeed: ZeRO-2 and ZeRO-3 are incompatible with pipeline "
                          "parallelism; FSDP2 in torchtitan and Llama 3's sharded data "
                          "parallelism do combine them)" if f.max_zero_with_pp < 2 else "")),
         "DeepSpeed's pipeline engine; torchtitan (FSDP2 + PP)"),
    Rule("sp_needs_tp", (),
         lambda a, f: ~a["sp"].astype(bool) | (a["tp"] > 1),
         lambda r, f: "sp=True (sequence parallelism) needs tp > 1",
         "sequence parallelism splits what tensor parallelism replicates (Korthikanti et al. "
         "2022, Sec. 4.2.2)"),
    Rule("zero_shard_divides", (),
         lambda a, f: a["dp"] % _shard(a) == 0,
         lambda r, f: (f"zero_shard={r['zero_shard']} must divide dp={r['dp']}; allowed: "
                       f"{allowed_divisors(r['dp'])}"),
         "hybrid sharding splits the data-parallel ranks into equal shard groups"),
    Rule("zero_shard_needs_zero", (),
         lambda a, f: (_shard(a) == a["dp"]) | (a["zero_stage"] >= 1),
         lambda r, f: (f"zero_shard={r['zero_shard']} shards model state, but zero_stage=0: "
                       "use zero_stage 1, 2 or 3, or leave zero_shard unset"),
         "only ZeRO shards model state; plain data parallelism replicates all of it"),
    Rule("zero_shard_offered", (),
         lambda a, f: f.hybrid_shard | (_shard(a) == a["dp"]),
         lambda r, f: (f"zero_shard={r['zero_shard']} (hybrid sharding) is not offered by "
                       f"{f.framework or 'this framework'}: it shards over the whole "
                       "data-parallel group; PyTorch FSDP, torchtitan and Megatron-Core offer "
                       "hybrid sharding"),
         "PyTorch FSDP ShardingStrategy.HYBRID_SHARD; torchtitan HSDP; Megatron-Core "
         "--num-distributed-optimizer-instances"),
    Rule("zero_needs_dp", (),
         lambda a, f: (a["zero_stage"] == 0) | (a["dp"] > 1),
         lambda r, f: (f"zero_stage={r['zero_stage']} shards over data-parallel copies, but "
                       "dp=1: use zero_stage 0"),
         "ZeRO partitions model state over the data-parallel group (Rajbhandari et al. 2020)"),
    Rule("cp_offered", (),
         lambda a, f: (_get(a, "cp") == 1) | bool(f.cp_variant),
         lambda r, f: (f"cp={r['cp']}: {f.framework or 'this framework'} has no context "
                       "parallelism; allowed: cp=1 (megatron-core and torchtitan split "
                       "sequences with ring attention)"),
         "each framework's context parallelism (scaleout.plan.frameworks)",
         "{name} has no context parallelism, so cp must be 1"),
    Rule("cp_flash", ("flash_attention",),
         lambda a, f: (_get(a, "cp") == 1) | bool(f.flash_attention),
         lambda r, f: (f"cp={r['cp']} needs flash_attention=True: ring attention computes "
                       "attention block by block and never stores the score matrices, as "
                       "flash attention does; allowed: cp=1 without it"),
         "Liu et al. 2023 (arXiv 2310.01889) Sec. 3: blockwise attention in the ring",
         "context parallelism needs flash attention"),
    Rule("cp_sequence", ("seq_len",),
         lambda a, f: _cp_divides(f, _get(a, "cp")),
         lambda r, f: _cp_message(f, r["cp"]),
         "load-balanced ring attention: two chunks of s/(2 cp) tokens per GPU "
         "(scaleout.context_parallel.check_cp)",
         "context-parallel sizes must split the sequence into 2 × cp chunks"),
    Rule("ep_needs_moe", ("experts",),
         lambda a, f: (_get(a, "ep") == 1) | (f.experts > 0),
         lambda r, f: f"ep={r['ep']}: model {f.model!r} has no experts; allowed: ep=1",
         "expert parallelism splits a mixture of experts' experts (GShard, Lepikhin et al. "
         "2021)",
         "expert parallelism needs a model with experts"),
    Rule("ep_experts", ("experts",),
         lambda a, f: (f.experts == 0) | (f.experts % _get(a, "ep") == 0),
         lambda r, f: _divides_message("ep", r["ep"], f"experts of {f.model}", f.experts),
         "every expert-parallel rank holds E/ep whole experts (Megatron-Core MoELayer)",
         "expert-parallel sizes must divide the {f.experts} experts"),
    Rule("ep_fold", (),
         lambda a, f: (a["tp"] * _get(a, "cp") * a["dp"]) % _get(a, "ep") == 0,
         lambda r, f: (f"ep={r['ep']} must divide tp × cp × dp = {r['tp']} × {r['cp']} × "
                       f"{r['dp']} = {r['tp'] * r['cp'] * r['dp']}: the expert-parallel groups "
                       "are carved out of one pipeline stage's GPUs; allowed: "
                       f"{allowed_divisors(r['tp'] * r['cp'] * r['dp'])}"),
         "MoE parallel folding (Liu et al. 2025, arXiv 2504.14960, Sec. 3; scaleout.moe.fold)",
         "expert-parallel sizes must divide a stage's tp × cp × dp GPUs"),
    Rule("ep_offered", (),
         lambda a, f: (_get(a, "ep") == 1) | bool(f.expert_parallel),
         lambda r, f: (f"ep={r['ep']}: {f.framework or 'this framework'} has no expert "
                       "parallelism; allowed: ep=1 (megatron-core, torchtitan and "
                       "deepseek-hai-llm have it)"),
         "each framework's expert parallelism (scaleout.plan.frameworks)",
         "{name} has no expert parallelism, so ep must be 1"),
    Rule("moe_tp_sp", ("experts",),
         lambda a, f: (f.experts == 0) | (a["tp"] == 1) | a["sp"].astype(bool),
         lambda r, f: (f"tp={r['tp']} in a mixture of experts needs sp=True: each "
                       "tensor-parallel rank routes its own share of the tokens (sequence "
                       "parallelism); allowed: sp=True, or tp=1"),
         "Megatron-Core's MoE README: with expert and tensor parallelism, sequence "
         "parallelism must be used"),
    Rule("fp8_gpu", (),
         lambda a, f: np.asarray(not f.precision),
         lambda r, f: f.precision,
         "FP8 recipes need FP8 tensor cores (scaleout.memory.check_precision)",
         "{f.precision}"),
    Rule("dualpipe_shape", (),
         lambda a, f: ((f.pipeline_schedule != "dualpipe") | (a["pp"] == 1)
                       | ((a["pp"] % 2 == 0) & (a["interleave"] == 1)
                          & (_micro_batches(a) % 2 == 0))),
         lambda r, f: (f"{f.framework or 'DualPipe'} runs DualPipe, which needs an even number "
                       f"of pipeline stages and of micro-batches and no interleaving: pp="
                       f"{r['pp']}, {r['global_batch'] // (r['dp'] * r['micro_batch'])} "
                       f"micro-batches, interleave={r['interleave']}; allowed: pp even (or 1), "
                       "an even number of micro-batches, interleave=1"),
         "DeepSeek-V3 report (arXiv 2412.19437) Sec. 3.2.1: stages and micro-batches "
         "divisible by 2",
         "DualPipe needs an even number of stages and of micro-batches"),
)


def _cp_divides(f: Facts, cp):
    from .context_parallel import cp_divides

    a2a = f.cp_variant == "all-to-all"
    return cp_divides(f.seq_len, cp, variant="all-to-all" if a2a else "ring",
                      kv_heads=f.kv_heads if a2a else None)


def _cp_message(f: Facts, cp: int) -> str:
    from .context_parallel import cp_problem

    a2a = f.cp_variant == "all-to-all"
    return cp_problem(f.seq_len, cp, variant="all-to-all" if a2a else "ring",
                      kv_heads=f.kv_heads if a2a else None, model_name=f.model) or ""


def _divides_message(name: str, value: int, what: str, total: int) -> str:
    from .checks import check_divides

    try:
        check_divides(name, value, what, total)
    except ValueError as e:
        return str(e)
    return ""

_BY_NAME = {rule.name: rule for rule in RULES}
_INDEX = {rule.name: i for i, rule in enumerate(RULES)}


def demand(name: str) -> str:
    """What rule ``name`` asks of every split a search tries (:attr:`Rule.demand`, a format
    string over ``B``, ``f`` and ``name``).

    Raises
    ------
    KeyError
        An unknown rule, or one without a demand (a search's grid never breaks it).
    """
    words = _BY_NAME[name].demand
    if not words:
        raise KeyError(f"layout rule {name!r} states no demand for a search")
    return words


def _rules(facts: Facts, only: Sequence[str] | None) -> list[Rule]:
    chosen = RULES if only is None else tuple(_BY_NAME[name] for name in only)
    return [rule for rule in chosen if rule.applies(facts)]


def _recompute_name(row: Mapping[str, object]) -> str:
    """A row's recomputation mode by name (a search's rows carry its code, ``rc``)."""
    return RECOMPUTE_MODES[int(row["rc"])] if "rc" in row else str(row["recompute"])


def _as_arrays(a: Mapping[str, object]) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in a.items()}


def failures(a: Mapping[str, object], facts: Facts, only: Sequence[str] | None = None
             ) -> np.ndarray:
    """For each layout in ``a``, the index in :data:`RULES` of the first rule it breaks, or -1.

    Arrays hold :data:`FIELDS` and ``global_batch``; rules whose facts are unknown, or not
    named in ``only``, are skipped.
    """
    a = _as_arrays(a)
    n = np.broadcast(*a.values()).shape
    first = np.full(n, -1, dtype=np.int64)
    for rule in _rules(facts, only):
        ok = np.broadcast_to(np.asarray(rule.test(a, facts), dtype=bool), n)
        first[(first < 0) & ~ok] = _INDEX[rule.name]
    return first


def valid(a: Mapping[str, object], facts: Facts, only: Sequence[str] | None = None
          ) -> np.ndarray:
    """True where a layout keeps every rule (of ``only``, if given) that ``facts`` can judge."""
    return failures(a, facts, only) < 0


def check(plan: Plan, facts: Facts, only: Sequence[str] | None = None) -> None:
    """Raise the sentence of the first rule ``plan`` breaks (``ValueError``)."""
    row = {name: getattr(plan, name) for name in FIELDS if name != "zero_shard"}
    row["zero_shard"] = plan.shard_group
    row["global_batch"] = plan.global_batch
    row["sp"] = bool(plan.sp)
    arrays = {k: np.array([v]) for k, v in row.items()}
    i = int(failures(arrays, facts, only)[0])
    if i >= 0:
        raise ValueError(RULES[i].message(row, facts))
