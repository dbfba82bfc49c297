"""The exhaustive, vectorised search: every valid plan of a cluster, evaluated at once, ranked.

Candidates are every ``(tp, cp, pp, dp)`` split of the GPUs (context-parallel sizes as
asked) with every expert-parallel size, micro-batch size and interleaving up to the search's
limits, then every ZeRO stage, sequence-parallel and recomputation option;
:data:`scaleout.layout.RULES` masks them (the same rules :func:`~scaleout.plan.evaluate`
applies to one plan), and the model of one iteration
(:func:`scaleout.plan.step.iteration`) evaluates the rest as numpy arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import catalog, context_parallel, layout, memory, moe
from ..catalog import GPU, ModelSpec
from ..checks import MAX_GPUS, check_bool, check_choice, check_int, check_positive, divisors
from ..collectives import NodeNetwork
from ..layout import RECOMPUTE_MODES, Plan
from ..units import GIB
from .calibration import Calibration
from .evaluate import PlanResult, evaluate, plan_from_arrays, throughput
from .frameworks import Framework
from .network import default_network
from .step import context, iteration

__all__ = ["LONG_SEQUENCE", "MAX_CP", "PLAN_FIELDS", "NoPlanError", "SearchResult", "candidates",
           "default_cp_sizes", "default_ep_sizes", "search"]

#: The fields a search's plans vary (``recompute`` as names), usable in
#: :meth:`SearchResult.best_by` and :meth:`SearchResult.rank_where`.
PLAN_FIELDS = ("tp", "pp", "dp", "micro_batch", "interleave", "zero_stage", "sp", "recompute",
               "zero_shard", "cp", "ep")
#: Rules that judge the split, micro-batch, interleaving and expert parallelism (applied
#: before the options).
_OUTER = ("batch", "tp_heads", "tp_kv_heads", "tp_in_node", "tp_whole_nodes", "pp_layers",
          "interleave_layers", "interleave_micro_batches", "cp_offered", "cp_flash",
          "cp_sequence", "ep_needs_moe", "ep_experts", "ep_fold", "ep_offered", "fp8_gpu",
          "dualpipe_shape", "tp_offered", "pp_offered", "interleave_offered")
#: Sequences from this length on are long: the search tries context parallelism by default
#: (Llama 3's long-context stage ran 131,072 tokens with CP 16; Meta 2024, Sec. 3.3.2).
LONG_SEQUENCE = 32768
#: The largest context-parallel size the search tries by default.
MAX_CP = 32
_INNER = tuple(r.name for r in layout.RULES if r.name not in _OUTER)


class NoPlanError(ValueError):
    """No plan is valid, or none fits: the message says why; ``closest`` is the nearest miss."""

    def __init__(self, message: str, closest: PlanResult | None = None) -> None:
        super().__init__(message)
        self.closest = closest


@dataclass(frozen=True)
class SearchResult:
    """Every valid plan of a search as arrays (one entry per plan), ranked fitting plans first.

    ``arrays`` holds the plan fields (:data:`PLAN_FIELDS`, with ``recompute`` as names, and
    ``flash``) and the model's outputs, each key saying its unit: memory parts
    (``weights_bytes`` ... ``memory_bytes``, ``capacity_bytes``), step parts
    (``forward_s`` ... ``optimizer_s``, ``step_s``), ``tokens_per_s``, ``mfu``, ``hfu``,
    ``micro_batches``. ``order`` indexes the fitting plans, fastest first.
    """

    model: str
    gpu: str
    n_gpus: int
    global_batch: int
    seq_len: int
    network: NodeNetwork
    calibration: Calibration
    recipe: str
    arrays: dict[str, np.ndarray]
    order: np.ndarray
    tokens: float | None = None
    uneven_layers: bool = True
    allow_tp_across_nodes: bool = False
    flash_attention: bool = False
    model_spec: ModelSpec | None = None
    #: The preset's name, or the :class:`Framework` itself when the search was given one
    framework: str | Framework = ""
    switches: tuple[tuple[str, bool], ...] = ()
    reserve_gib: float | None = None

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
        if self.n_fit == 0:
            raise ValueError(f"rank={rank!r}: no plan of this search fits, so none is ranked; "
                             "allow more GPUs, a smaller micro-batch or more sharding")
        i = int(self.order[check_int("rank", rank, minimum=0, maximum=self.n_fit - 1)])
        return plan_from_arrays(self.arrays, i, global_batch=self.global_batch,
                                seq_len=self.seq_len)

    def result(self, rank: int = 0) -> PlanResult:
        """The plan ranked ``rank``, evaluated in full (:func:`~scaleout.plan.evaluate`)."""
        return evaluate(self.model_spec or self.model, self.gpu, self.plan(rank), self.network,
                        calibration=self.calibration, recipe=self.recipe, tokens=self.tokens,
                        uneven_layers=self.uneven_layers,
                        allow_tp_across_nodes=self.allow_tp_across_nodes,
                        framework=self.framework or None, switches=dict(self.switches),
                        reserve_gib=self.reserve_gib)

    def top(self, k: int = 10) -> list[dict[str, Any]]:
        """The ``k`` fastest fitting plans as table rows (plain numbers, units in the keys)."""
        a, rows = self.arrays, []
        best = float(a["step_s"][self.order[0]]) if self.n_fit else float("nan")
        for rank, i in enumerate(self.order[:check_int("k", k)]):
            rows.append({
                "rank": rank + 1, "plan": self.plan(rank).label,
                "tp": int(a["tp"][i]), "pp": int(a["pp"][i]), "dp": int(a["dp"][i]),
                "micro_batch": int(a["micro_batch"][i]), "interleave": int(a["interleave"][i]),
                "zero_stage": int(a["zero_stage"][i]), "zero_shard": int(a["zero_shard"][i]),
                "cp": int(a["cp"][i]), "ep": int(a["ep"][i]),
                "sp": bool(a["sp"][i]),
                "recompute": str(a["recompute"][i]),
                "memory_gib": float(a["memory_bytes"][i] / GIB),
                "step_s": float(a["step_s"][i]),
                "slower_pct": 100 * (float(a["step_s"][i]) / best - 1),
                "tokens_per_s": float(a["tokens_per_s"][i]),
                "mfu_pct": 100 * float(a["mfu"][i]),
            })
        return rows

    def best_by(self, *names: str) -> dict[tuple, int]:
        """For each combination of the plan fields ``names`` (e.g. ``"tp", "pp"``) among the
        fitting plans, the rank of the fastest one."""
        for name in names:
            check_choice("field", name, PLAN_FIELDS)
        columns = [np.asarray(self.arrays[n])[self.order].tolist() for n in names]
        out: dict[tuple, int] = {}
        for rank, key in enumerate(zip(*columns, strict=True)):
            out.setdefault(tuple(key), rank)
        return out

    def best_grid(self, rows: str, cols: str, value: str = "step_s"
                  ) -> tuple[list[int], list[int], np.ndarray]:
        """``value`` of the fastest fitting plan for each pair of the fields ``rows`` and
        ``cols`` (e.g. ``"tp", "pp"``): every value either takes among the valid plans (fitting
        or not) as the grid's rows and columns, NaN where no plan of that pair fits. The heat
        map of notebook 08."""
        for name in (rows, cols):
            check_choice("field", name, PLAN_FIELDS)
        check_choice("value", value, sorted(k for k in self.arrays if k.endswith(
            ("_s", "_bytes", "tokens_per_s", "mfu", "hfu"))))
        r_all, c_all = np.asarray(self.arrays[rows]), np.asarray(self.arrays[cols])
        row_vals, col_vals = np.unique(r_all), np.unique(c_all)
        grid = np.full((row_vals.size, col_vals.size), np.nan)
        # self.order runs fastest first: the first plan of each pair is its best
        i = np.searchsorted(row_vals, r_all[self.order])
        j = np.searchsorted(col_vals, c_all[self.order])
        cell = i * col_vals.size + j
        _, first = np.unique(cell, return_index=True)
        grid.flat[cell[first]] = np.asarray(self.arrays[value], dtype=float)[self.order[first]]
        return row_vals.tolist(), col_vals.tolist(), grid

    def rank_where(self, **conditions: Any) -> int | None:
        """Rank of the fastest fitting plan whose fields equal ``conditions`` (``pp=1``,
        ``recompute="selective"``). None if no fitting plan has them."""
        mask = np.ones(self.order.size, dtype=bool)
        for name, value in conditions.items():
            check_choice("field", name, PLAN_FIELDS)
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


def _splits(n: int, cp_sizes: Iterable[int] = (1,)) -> np.ndarray:
    """Every ``(tp, cp, pp, dp)`` with ``tp × cp × pp × dp = n`` and ``cp`` among
    ``cp_sizes``, tp then cp then pp ascending."""
    rows = [(t, c, p, n // (t * c * p)) for t in divisors(n) for c in sorted(set(cp_sizes))
            if (n // t) % c == 0 for p in divisors(n // (t * c))]
    return np.array(rows, dtype=np.int64).reshape(-1, 4)


def candidates(model: ModelSpec, n: int, global_batch: int, facts: layout.Facts, *,
               max_micro_batch: int, max_interleave: int, zero_stages: Iterable[int],
               recompute: Iterable[str], sp_options: Iterable[bool],
               zero_shards: Iterable[int] = (), cp_sizes: Iterable[int] = (1,),
               ep_sizes: Iterable[int] = (1,)
               ) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Every valid plan of ``n`` GPUs and batch ``global_batch`` as arrays, and how many of
    the ``(tp, cp, pp, dp)`` splits with each expert-parallel size each rule removed (its
    first failing rule; for the message when none is valid).

    Plans are ordered by tp, cp, pp, expert parallelism, micro-batch, interleaving, then the
    options in the order given (ZeRO stage, sequence parallelism, recomputation), each
    sharded plan once over all of ``dp`` and once per size of ``zero_shards`` (hybrid
    sharding) that divides ``dp`` and is smaller.
    """
    splits = _splits(n, cp_sizes)
    eps = np.array(sorted(set(ep_sizes)), dtype=np.int64)
    t, c, p, d = splits.T
    # a micro-batch size divides B/dp, hence B; chunks per GPU are at most the layers
    mb = np.array([x for x in divisors(global_batch) if x <= max_micro_batch], dtype=np.int64)
    vs = np.arange(1, min(max_interleave, model.n_layers) + 1)
    # outer grid: split x expert parallelism x micro-batch x interleave, in that nesting order
    per = len(eps) * len(mb) * len(vs)
    idx = np.arange(len(splits)).repeat(per)
    grid = {"tp": t[idx], "cp": c[idx], "pp": p[idx], "dp": d[idx],
            "ep": np.tile(eps.repeat(len(mb) * len(vs)), len(splits)),
            "micro_batch": np.tile(mb.repeat(len(vs)), len(splits) * len(eps)),
            "interleave": np.tile(vs, len(splits) * len(eps) * len(mb)),
            "global_batch": np.full(idx.size, global_batch)}
    first = layout.failures(grid, facts, only=_OUTER)
    # one per split and expert-parallel size
    plain = first[(grid["micro_batch"] == mb[0]) & (grid["interleave"] == 1)]
    why = {layout.RULES[i].name: int(np.sum(plain == i)) for i in np.unique(plain[plain >= 0])}
    keep = first < 0
    outer = {k: v[keep] for k, v in grid.items() if k != "global_batch"}
    if not keep.any():
        return {}, why
    shards = sorted(set(zero_shards))
    # shard code 0: over all of dp; then each hybrid size (kept where it divides dp)
    inner = np.array([(z, int(s), RECOMPUTE_MODES.index(r), k)
                      for z in zero_stages for k in ([0, *shards] if z else [0])
                      for s in sp_options for r in recompute],
                     dtype=np.int64)
    n_outer = int(keep.sum())
    full = {k: np.repeat(v, len(inner)) for k, v in outer.items()}
    full["zero_stage"] = np.tile(inner[:, 0], n_outer)
    full["sp"] = np.tile(inner[:, 1], n_outer).astype(bool)
    full["rc"] = np.tile(inner[:, 2], n_outer)
    code = np.tile(inner[:, 3], n_outer)
    full["zero_shard"] = np.where(code == 0, full["dp"], code)
    if shards:  # a hybrid size must be a proper divisor of dp
        proper = (code == 0) | ((full["dp"] % np.maximum(code, 1) == 0) & (code < full["dp"]))
        full = {k: v[proper] for k, v in full.items()}
    ok = layout.valid({**full, "global_batch": np.full(full["tp"].size, global_batch)}, facts,
                      only=_INNER)
    return {k: v[ok] for k, v in full.items()}, why


def default_cp_sizes(model: ModelSpec, seq_len: int, framework: Framework,
                     flash_attention: bool = True) -> tuple[int, ...]:
    """The context-parallel sizes a search tries unless told: 1, and from
    :data:`LONG_SEQUENCE` tokens on every size up to :data:`MAX_CP` that load-balanced ring
    attention allows (:func:`scaleout.context_parallel.cp_sizes`), where the framework has
    context parallelism and attention runs block by block (``flash_attention``)."""
    if seq_len < LONG_SEQUENCE or not framework.cp_variant or not flash_attention:
        return (1,)
    return tuple(context_parallel.cp_sizes(seq_len, MAX_CP))


def default_ep_sizes(model: ModelSpec, framework: Framework) -> tuple[int, ...]:
    """The expert-parallel sizes a search tries unless told: every size that splits a mixture
    of experts' experts evenly (:func:`scaleout.moe.ep_sizes`) where the framework has expert
    parallelism; 1 for a dense model."""
    if not model.is_moe or not framework.expert_parallel:
        return (1,)
    return tuple(moe.ep_sizes(model))


def search(
    model: str | ModelSpec,
    gpu: str | GPU,
    n_gpus: int,
    global_batch: int,
    network: NodeNetwork | None = None,
    *,
    seq_len: int | None = None,
    gpus_per_node: int | None = None,
    calibration: Calibration | None = None,
    recipe: str | memory.PrecisionRecipe = "mixed-adam",
    tokens: float | None = None,
    max_micro_batch: int = 16,
    max_interleave: int = 8,
    zero_stages: Iterable[int] = (0, 1, 2, 3),
    recompute: Iterable[str] = RECOMPUTE_MODES,
    sequence_parallel: Iterable[bool] = (False, True),
    flash_attention: bool = False,
    uneven_layers: bool | None = None,
    allow_tp_across_nodes: bool = False,
    framework: str | Framework | None = None,
    switches: Mapping[str, bool] | None = None,
    reserve_gib: float | None = None,
    zero_shards: Iterable[int] = (),
    cp_sizes: Iterable[int] | None = None,
    ep_sizes: Iterable[int] | None = None,
) -> SearchResult:
    """Evaluate every valid plan of ``n_gpus`` GPUs at once and rank the ones that fit.

    Parameters
    ----------
    model, gpu, n_gpus, global_batch
        What to train, on what, and the batch in sequences.
    network
        A :class:`~scaleout.collectives.NodeNetwork`; default :func:`default_network`
        with ``gpus_per_node`` (the NVLink domain; the GPU's usual one if None).
    seq_len, calibration, recipe, tokens
        As in :func:`~scaleout.plan.evaluate`.
    max_micro_batch, max_interleave
        Largest micro-batch size and model chunks per GPU tried.
    zero_stages, recompute, sequence_parallel
        The options tried (all by default; the ZeRO stages the framework offers). With flash
        attention, selective recomputation is the same plan as none (no score matrices are
        stored to drop), so it is not listed twice.
    flash_attention
        Attention kernels that never store the score matrices.
    uneven_layers
        Stages of unequal layer counts where ``pp`` does not divide the layers (allowed by
        default, None; False keeps to divisors).
    allow_tp_across_nodes
        Relaxes the validity rules (:mod:`scaleout.layout`).
    framework, switches, reserve_gib
        As in :func:`~scaleout.plan.evaluate`: the preset (default: Megatron-Core), its
        mechanisms turned off, the fixed memory reserve.
    zero_shards
        Shard-group sizes to try besides sharding over all of ``dp`` (hybrid sharding, for a
        framework that has it): e.g. ``(8,)`` shards model state within each group of eight
        data-parallel ranks (a node's, with ``tp = 1``) and replicates across the groups.
    cp_sizes
        Context-parallel sizes to try (default :func:`default_cp_sizes`: 1, and with flash
        attention, for sequences of :data:`LONG_SEQUENCE` tokens or more, every size up to
        :data:`MAX_CP` that ring attention allows). Context parallelism needs
        ``flash_attention=True``.
    ep_sizes
        Expert-parallel sizes to try (default :func:`default_ep_sizes`: every divisor of a
        mixture of experts' expert count; 1 for a dense model).

    Raises
    ------
    NoPlanError
        (a ``ValueError``) when no layout of ``n_gpus`` is valid, counting the splits each
        rule removed, or when none fits, naming the closest plan and its shortfall.
    """
    m = catalog.model(model)
    g = catalog.gpu(gpu)
    n = check_int("n_gpus", n_gpus)
    B = check_int("global_batch", global_batch)
    if tokens is not None:
        tokens = check_positive("tokens", tokens)
    uneven_layers = True if uneven_layers is None else uneven_layers
    for flag, value in (("flash_attention", flash_attention), ("uneven_layers", uneven_layers),
                        ("allow_tp_across_nodes", allow_tp_across_nodes)):
        check_bool(flag, value)
    if network is None:
        network = default_network(g, gpus_per_node)
    elif gpus_per_node is not None and gpus_per_node != network.gpus_per_node:
        raise ValueError(f"gpus_per_node={gpus_per_node} disagrees with the network's "
                         f"{network.gpus_per_node}; give one of them")
    zs = sorted({check_int("zero_stages", z, minimum=0, maximum=3) for z in zero_stages})
    rcs = [check_choice("recompute", r, RECOMPUTE_MODES) for r in recompute]
    sps = sorted({check_bool("sequence_parallel", x) for x in sequence_parallel})
    if not zs or not rcs or not sps:
        raise ValueError("zero_stages, recompute and sequence_parallel must each offer at "
                         "least one option")
    if flash_attention and "selective" in rcs and len(rcs) > 1:
        rcs = [r for r in rcs if r != "selective"]  # the same plan as "none" under flash
    ctx = context(m, g, network, calibration, recipe, seq_len, B, framework, switches,
                  reserve_gib)
    shards = sorted({check_int("zero_shards", k) for k in zero_shards})
    if shards and not ctx.framework.hybrid_shard:
        raise ValueError(f"zero_shards={shards}: {ctx.framework.name} does not shard in "
                         "groups (hybrid sharding); pytorch-fsdp, torchtitan and megatron-core "
                         "do")
    zs = [z for z in zs if z in ctx.framework.zero_stages]
    if not zs:
        raise ValueError(f"zero_stages: {ctx.framework.name} offers ZeRO stages "
                         f"{', '.join(map(str, ctx.framework.zero_stages))} only")
    facts = layout.Facts.of(m, network.gpus_per_node, uneven_layers=uneven_layers,
                            allow_tp_across_nodes=allow_tp_across_nodes, relaxable=True,
                            framework=ctx.framework, seq_len=ctx.seq_len,
                            flash_attention=flash_attention, recipe=ctx.recipe, gpu=g)
    cps = _sizes("cp_sizes", cp_sizes, default_cp_sizes(m, ctx.seq_len, ctx.framework,
                                                        bool(flash_attention)), facts,
                 ("cp_offered", "cp_flash", "cp_sequence"))
    eps = _sizes("ep_sizes", ep_sizes, default_ep_sizes(m, ctx.framework), facts,
                 ("ep_offered", "ep_needs_moe", "ep_experts"))
    arrays, why = candidates(
        m, n, B, facts, max_micro_batch=check_int("max_micro_batch", max_micro_batch),
        max_interleave=check_int("max_interleave", max_interleave), zero_stages=zs,
        recompute=rcs, sp_options=sps, zero_shards=shards, cp_sizes=cps, ep_sizes=eps)
    if not arrays:
        raise NoPlanError(_no_layout_message(m, n, B, facts, why, cps))
    arrays["flash"] = np.full(arrays["tp"].shape, bool(flash_attention))
    arrays.update(iteration(ctx, arrays, uneven=uneven_layers))
    arrays.update(throughput(ctx, n, arrays["step_s"], arrays["rc"]))
    arrays["recompute"] = np.asarray(RECOMPUTE_MODES)[arrays.pop("rc")]
    fits = arrays["memory_bytes"] <= arrays["capacity_bytes"]
    idx = np.flatnonzero(fits)
    order = idx[np.lexsort((arrays["memory_bytes"][idx], arrays["step_s"][idx]))]
    result = SearchResult(m.name, g.name, n, B, ctx.seq_len, network, ctx.calibration,
                          ctx.recipe.name, arrays, order, tokens, uneven_layers,
                          allow_tp_across_nodes, bool(flash_attention), m,
                          framework if isinstance(framework, Framework) else ctx.framework.name,
                          tuple(sorted((switches or {}).items())), reserve_gib)
    if not order.size:
        i = int(np.argmin(arrays["memory_bytes"]))
        short = (arrays["memory_bytes"][i] - arrays["capacity_bytes"][i]) / GIB
        plan = plan_from_arrays(arrays, i, global_batch=B, seq_len=ctx.seq_len)
        closest = evaluate(m, g, plan, network, calibration=ctx.calibration, recipe=recipe,
                           uneven_layers=uneven_layers,
                           allow_tp_across_nodes=allow_tp_across_nodes,
                           framework=ctx.framework, reserve_gib=reserve_gib)
        raise NoPlanError(
            f"{m.name} fits on none of the {result.n_evaluated:,} valid layouts of {n:,} × "
            f"{g.name} ({g.hbm_gib:g} GiB each): the closest, {plan.label}, needs "
            f"{closest.memory_bytes / GIB:.1f} GiB per GPU, {short:.1f} GiB short. Add GPUs, "
            f"or a GPU with more memory.", closest)
    return result


def _sizes(name: str, given: Iterable[int] | None, default: tuple[int, ...],
           facts: layout.Facts, rules: tuple[str, ...]) -> tuple[int, ...]:
    """The sizes to try of ``cp`` or ``ep``: ``given`` (each checked by the layout rules
    ``rules``, whose sentence a bad one raises) or ``default``."""
    if given is None:
        return default
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise ValueError(f"{name} must be a list of sizes, e.g. (1, 2, 4), got {given!r}")
    field = name.removesuffix("_sizes")
    out = sorted({check_int(name, v, minimum=1, maximum=MAX_GPUS) for v in given})
    if not out:
        raise ValueError(f"{name} must offer at least one size")
    for v in out:
        layout.check(Plan(**{field: v}), facts, only=rules)
    return tuple(out)


def _no_layout_message(m: ModelSpec, n: int, B: int, facts: layout.Facts,
                       why: dict[str, int], cp_sizes: Iterable[int] = (1,)) -> str:
    """Why no plan of ``n`` GPUs is valid: each rule and how many splits it removed, in the
    rule's own words for a whole search (:func:`scaleout.layout.demand`), or, when no
    context-parallel size divides ``n``, that."""
    total = sum(why.values())
    if not total:
        return (f"no layout of n_gpus={n:,} is valid for {m.name}: none of the context-parallel "
                f"sizes cp_sizes={tuple(cp_sizes)} divides {n:,} GPUs; use sizes that divide "
                f"n_gpus (1 always does)")
    reasons = [f"{layout.demand(rule).format(B=B, f=facts, name=facts.framework)} ({count} of "
               f"{total})"
               for rule, count in sorted(why.items(), key=lambda kv: -kv[1])]
    return (f"no layout of n_gpus={n:,} is valid for {m.name} with global_batch={B}: of the "
            f"{total} ways to split {n:,} GPUs into TP × PP × DP"
            + (" (with CP and EP)" if m.is_moe or (facts.seq_len or 0) >= LONG_SEQUENCE
               else "") + ", "
            + "; ".join(reasons) + ". Try a GPU count with more small factors (a multiple of "
            f"{facts.gpus_per_node}) or a global batch divisible by it.")
