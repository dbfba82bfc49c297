"""Memory of every pipeline rank of one plan, not only the busiest.

The pipeline's GPUs do not hold the same bytes (Narayanan et al. 2021, Sec. 2.2; Korthikanti
et al. 2022, Sec. 4.2.3): the first stage holds the input embedding, the last the final norm,
the output layer and the loss's logits; under 1F1B stage ``i`` of ``p`` keeps the activations
of ``p - i`` micro-batches, under interleaved 1F1B ``(2 (p - i - 1) + (v - 1) p + 1)/v``
(:func:`scaleout.pipeline.in_flight_arrays`), under DualPipe every GPU ``p + 1``
(:func:`scaleout.pipeline.dualpipe_in_flight`); an uneven split gives stages different layer
counts, and a mixture of experts' MoE and dense layers sit where the model puts them.

:func:`stage_memory` counts each GPU's layers from the plan's split
(:func:`scaleout.plan.step.stage_split`: ``k`` layers on each stage before the last, ``L`` on
the last; where ``pp - 1`` does not divide the rest, the earlier stages take the extra layer),
from :func:`scaleout.pipeline.layer_assignment` under interleaving (GPU ``d`` holds virtual
stages ``d, d + p, ...``), and pairs stages ``i`` and ``p - 1 - i`` under DualPipe
(DeepSeek-V3 report, Sec. 3.2.1). It then prices each GPU with the same functions as the
planner's busiest GPU (:func:`scaleout.plan.step.memory_parts`): ZeRO model state, Korthikanti
et al.'s activations per layer, :data:`~scaleout.plan.step.RESERVE`.

The planner's search keeps only the first and the last stage (and, for a mixture of experts
or DualPipe, a middle one whose MoE layers are the most any run of ``k`` layers holds, an upper
bound), because under 1F1B a stage between them holds no more layers than the first and fewer
micro-batches; the largest of :func:`stage_memory`'s values equals its figure for dense models
and is at most it for a mixture of experts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import memory, pipeline
from .step import (
    MEMORY_PARTS,
    Context,
    _extras,
    _Shape,
    _stage_bytes,
    _stored_activations,
    mtp_params,
)

__all__ = ["StageMemory", "layers_per_gpu", "stage_memory"]


@dataclass(frozen=True)
class StageMemory:
    """One pipeline rank (GPU) of a plan: what it holds and its bytes per part.

    ``stage`` is the GPU's pipeline rank; ``layers`` and ``moe_layers`` the transformer
    layers it holds (all its model chunks; under DualPipe both its stages); ``embedding`` and
    ``output`` whether it holds the input embedding and the output layer; ``in_flight`` the
    micro-batches of activations it keeps at its peak; ``params`` its parameters (after tensor
    and expert parallelism, before ZeRO). The ``*_bytes`` fields are
    :data:`~scaleout.plan.MEMORY_PARTS`.
    """

    stage: int
    layers: int
    moe_layers: int
    embedding: bool
    output: bool
    in_flight: float
    params: float
    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    reserve_bytes: float

    @property
    def total_bytes(self) -> float:
        """Everything this GPU holds."""
        return float(sum(getattr(self, f"{k}_bytes") for k in MEMORY_PARTS))

    def parts(self) -> dict[str, float]:
        """The :data:`~scaleout.plan.MEMORY_PARTS` as a mapping to bytes."""
        return {k: float(getattr(self, f"{k}_bytes")) for k in MEMORY_PARTS}


def layers_per_gpu(n_layers: int, pp: int, v: int, first_layers: int, last_layers: int
                   ) -> np.ndarray:
    """The pipeline rank (0 to ``pp - 1``) that holds each of ``n_layers`` layers.

    Interleaved (``v > 1``, ``pp`` dividing the layers): :func:`scaleout.pipeline.
    layer_assignment`. Otherwise consecutive blocks: ``last_layers`` on the last rank, the
    rest over the ``pp - 1`` others, at most ``first_layers`` each, the earlier ones full
    (the split of :func:`scaleout.plan.step.stage_split`)."""
    if pp == 1:
        return np.zeros(n_layers, dtype=np.int64)
    if v > 1 and n_layers % pp == 0:
        return np.asarray(pipeline.layer_assignment(n_layers, pp, v).device, dtype=np.int64)
    rest = n_layers - last_layers
    counts = np.full(pp, first_layers - 1, dtype=np.int64)
    counts[: rest - (pp - 1) * (first_layers - 1)] = first_layers
    counts[-1] = last_layers
    if counts.sum() != n_layers or counts.min() < 0:
        raise ValueError(f"no split of {n_layers} layers over pp={pp} stages gives "
                         f"first_layers={first_layers} and last_layers={last_layers}")
    return np.repeat(np.arange(pp), counts)


def _index(x: _Shape, i: int = 0) -> _Shape:
    """The plan at index ``i`` of ``x``'s arrays, as one-element arrays."""
    shape = np.shape(x.tp)
    return _Shape(**{k: np.broadcast_to(getattr(x, k), shape).ravel()[i:i + 1]
                     for k in _Shape.__dataclass_fields__})


def stage_memory(ctx: Context, x: _Shape, first_layers: float, last_layers: float, i: int = 0
                 ) -> tuple[StageMemory, ...]:
    """Memory of every pipeline rank of the plan at index ``i`` of ``x`` (see the module
    docstring), rank 0 first.

    ``first_layers`` and ``last_layers`` are the split :func:`scaleout.plan.step.iteration`
    returned for that plan (its ``first_layers`` and ``last_layers``).
    """
    m, ex = ctx.model, ctx.experts
    x = _index(x, i)
    pp, v, n_mb = int(x.pp[0]), int(x.v[0]), int(x.micro_batches[0])
    owner = layers_per_gpu(m.n_layers, pp, v, int(first_layers), int(last_layers))
    layers = np.bincount(owner, minlength=pp).astype(float)
    is_moe = np.array([m.layer_is_moe(j) for j in range(m.n_layers)], dtype=float)
    moe_n = np.bincount(owner, weights=is_moe, minlength=pp)
    ranks = np.arange(pp)
    parts = ctx.parts if ex is None else ex.nonexpert
    tp, ep = float(x.tp[0]), float(x.ep[0])
    # the stage's own parameters: layers, plus the embedding (first) or output layer (last)
    first = memory.stage_params_arrays(parts, m.n_layers, m.tied_embeddings, tp, pp, layers,
                                       layers, which="first")
    last = memory.stage_params_arrays(parts, m.n_layers, m.tied_embeddings, tp, pp, layers,
                                      layers, which="last")
    middle = parts["layers"] / m.n_layers * layers / tp
    dense = np.where(pp == 1, first, np.where(ranks == 0, first,
                                              np.where(ranks == pp - 1, last, middle)))
    if m.mtp_layers:  # the last stage's MTP modules: a layer like the last and a 2h x h projection
        tail = ranks == pp - 1
        dense = dense + np.where(tail, mtp_params(m, parts, tp), 0.0)
        layers = layers + np.where(tail, m.mtp_layers, 0)
        if m.layer_is_moe(m.n_layers - 1):
            moe_n = moe_n + np.where(tail, m.mtp_layers, 0)
    experts = np.zeros(pp)
    if ex is not None:  # a dense layer holds a dense MLP where an MoE layer holds shared experts
        dense = dense + ((layers - moe_n) - layers * (1 - ex.moe_share)) * ex.dense_extra / tp
        experts = moe_n * ex.routed_per_layer / ep
    embedding, output = ranks == 0, ranks == pp - 1
    act_layers = layers
    if ctx.framework.pipeline_schedule == "dualpipe" and pp > 1:
        pair = pp - 1 - ranks  # GPU i holds stages i and pp - 1 - i
        dense, experts = dense + dense[pair], experts + experts[pair]
        act_layers = (layers + layers[pair]) / 2  # half the micro-batches through each
        layers, moe_n = layers + layers[pair], moe_n + moe_n[pair]
        embedding, output = embedding | embedding[pair], output | output[pair]
        flight = np.full(pp, float(pipeline.dualpipe_in_flight(pp)))
    elif pp > 1:
        flight = pipeline.in_flight_arrays(pp, n_mb, v, ranks)
    else:
        flight = np.ones(1)
    act = _stored_activations(ctx, x)
    logits, zero3 = _extras(ctx, x)
    extra = np.where(output, logits, 0.0) + zero3
    w, g, o, a, reserve, *_ = _stage_bytes(ctx, x, act, dense, experts, act_layers, flight,
                                           extra)
    return tuple(StageMemory(
        stage=int(r), layers=int(layers[r]), moe_layers=int(moe_n[r]),
        embedding=bool(embedding[r]), output=bool(output[r]), in_flight=float(flight[r]),
        params=float(dense[r] + experts[r]), weights_bytes=float(w[r]),
        grads_bytes=float(g[r]), optimizer_bytes=float(o[r]), activations_bytes=float(a[r]),
        reserve_bytes=float(reserve[r])) for r in ranks)
