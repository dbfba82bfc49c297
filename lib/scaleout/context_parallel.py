"""Context parallelism: one sequence split over GPUs, for long contexts.

Beyond a few tens of thousands of tokens, a layer's activations no longer fit on a GPU
even at micro-batch 1, and tensor parallelism alone cannot help past the node: its
all-reduces leave NVLink. *Context parallelism* (CP) splits the **sequence** over ``cp``
GPUs. Every layer but attention works token by token, so it needs nothing from the other
GPUs; attention needs every earlier key and value. Two ways to provide them:

* **Ring attention** (Liu, Zaharia & Abbeel 2023, "Ring Attention with Blockwise
  Transformers for Near-Infinite Context", arXiv 2310.01889; Megatron-Core's CP):
  each GPU keeps its queries and passes its key/value block around a ring, ``cp - 1``
  steps, computing attention against the block it holds while the next one travels. The
  transfer hides behind the compute when a block's attention takes longer than its
  transfer (:func:`ring_attention_time`). A causal mask leaves later blocks idle, so
  Megatron-Core gives each GPU two chunks, ``i`` and ``2cp - 1 - i``, to balance the work:
  the sequence must split into ``2 cp`` equal chunks (:func:`check_cp`).
* **All-to-all** (Jacobs et al. 2023, "DeepSpeed Ulysses", arXiv 2309.14509, Sec. 3):
  an all-to-all turns sequence-split queries, keys and values into head-split ones (each
  GPU holds the whole sequence for ``a/cp`` heads), attention runs locally, and a second
  all-to-all turns the output back: four all-to-alls of ``s b h / cp`` values per layer,
  nothing overlapped, and ``cp`` may not exceed the key/value heads
  (:func:`ulysses_time`).

Activations are split ``cp`` ways (:func:`activation_bytes_per_gpu`); the weights are
not (CP replicates them like data parallelism, and its GPUs join the gradient
reduction).

Taught in ``notebooks/14_long_context_and_precision.ipynb``.
"""

from __future__ import annotations

import numpy as np

from . import catalog, collectives, memory
from .catalog import ModelSpec
from .checks import check_array, check_bool, check_choice, check_divides, check_int, divisors

__all__ = [
    "VARIANTS",
    "activation_bytes_per_gpu",
    "attention_block_flops",
    "attention_rate",
    "check_cp",
    "compare_cp_tp",
    "cp_divides",
    "cp_problem",
    "cp_sizes",
    "kv_block_bytes",
    "ring_attention_time",
    "ring_schedule",
    "ulysses_time",
]

#: The two ways of exchanging keys and values.
VARIANTS = ("ring", "all-to-all")


def _out(value):
    return float(value) if np.ndim(value) == 0 else value


def cp_divides(seq_len, cp, *, variant: str = "ring", load_balanced: bool = True,
               kv_heads: int | None = None):
    """True where ``cp`` can split a sequence of ``seq_len`` tokens (array-friendly, arguments
    unchecked; the condition :func:`check_cp` and the planner's rule share).

    Ring attention with causal load balancing cuts the sequence into ``2 cp`` chunks (``cp``
    without balancing; one GPU needs no cut); the all-to-all variant splits the sequence
    ``cp`` ways and the ``kv_heads`` key/value heads too.
    """
    s, c = np.asarray(seq_len), np.asarray(cp)
    if variant == "ring":
        chunks = np.where((c > 1) & bool(load_balanced), 2 * c, c)
        return s % chunks == 0
    ok = s % c == 0
    return ok if kv_heads is None else ok & (kv_heads % c == 0)


def cp_problem(seq_len: int, cp: int, *, variant: str = "ring", load_balanced: bool = True,
               kv_heads: int | None = None, model_name: str = "") -> str | None:
    """Why ``cp`` cannot split a sequence of ``seq_len`` tokens (a sentence naming the sizes
    allowed), or None when it can (:func:`cp_divides`)."""
    s, cp = int(seq_len), int(cp)
    if bool(cp_divides(s, cp, variant=variant, load_balanced=load_balanced,
                       kv_heads=kv_heads)):
        return None
    if variant == "ring":
        chunks = 2 * cp if load_balanced and cp > 1 else cp
        allowed = [c for c in divisors(s) if (s % (2 * c) == 0 or not load_balanced)]
        shown = ", ".join(map(str, allowed[:12])) + (", ..." if len(allowed) > 12 else "")
        what = (f"2 x cp = {chunks} (two chunks per GPU balance the causal work)"
                if load_balanced else f"cp={cp}")
        return f"cp={cp}: {what} must divide seq_len={s}; allowed: {shown}"
    try:
        check_divides("cp", cp, "seq_len", s)
        if kv_heads is not None:
            check_divides("cp", cp, f"key/value heads of {model_name or 'the model'} (the "
                          "all-to-all splits heads)", kv_heads)
    except ValueError as e:
        return str(e)
    return None


def check_cp(seq_len: int, cp: int, *, variant: str = "ring", load_balanced: bool = True,
             model: str | ModelSpec | None = None) -> int:
    """``cp`` if it can split a sequence of ``seq_len`` tokens (:func:`cp_divides`).

    Ring attention with causal load balancing cuts the sequence into ``2 cp`` chunks, so
    ``2 cp`` must divide ``seq_len`` (``cp`` without balancing); the all-to-all variant
    splits the sequence ``cp`` ways and the key/value heads too, so ``cp`` must divide
    both (``model`` gives the heads).

    Raises
    ------
    ValueError
        ``cp=3 must divide seq_len=4096 ...``, naming the allowed sizes.
    """
    s = check_int("seq_len", seq_len)
    cp = check_int("cp", cp)
    check_choice("variant", variant, VARIANTS)
    check_bool("load_balanced", load_balanced)
    m = catalog.model(model) if model is not None and variant != "ring" else None
    problem = cp_problem(s, cp, variant=variant, load_balanced=load_balanced,
                         kv_heads=m.kv_heads if m is not None else None,
                         model_name=m.name if m is not None else "")
    if problem:
        raise ValueError(problem)
    return cp


def cp_sizes(seq_len: int, max_cp: int = 64) -> list[int]:
    """Context-parallel sizes up to ``max_cp`` that load-balanced ring attention allows."""
    s = check_int("seq_len", seq_len)
    return [c for c in range(1, check_int("max_cp", max_cp) + 1)
            if s % (2 * c if c > 1 else 1) == 0]


def ring_schedule(cp: int) -> np.ndarray:
    """Which key/value block each GPU holds at each step of ring attention.

    ``out[step, gpu]`` is the block (the GPU it came from): GPU ``g`` starts with its
    own block and receives from ``g - 1`` each step, so at step ``t`` it holds block
    ``(g - t) mod cp``; after ``cp - 1`` sends every GPU has seen every block once.
    """
    cp = check_int("cp", cp, maximum=4096)
    steps = np.arange(cp)[:, None]
    gpus = np.arange(cp)[None, :]
    return (gpus - steps) % cp


def kv_block_bytes(model: str | ModelSpec, seq_len: int, cp: int, micro_batch: int = 1,
                   bytes_per_value: float = 2.0) -> float:
    """Bytes of one GPU's key and value block: ``2 × b (s/cp) × a_kv d × bytes``.

    Grouped-query attention sends only the key/value heads; MLA rebuilds keys and values
    per head from its latent, so Megatron-Core passes the full heads
    (``a (d_qk + d_v)``) around the ring.
    """
    m = catalog.model(model)
    s, cp, b = check_int("seq_len", seq_len), check_int("cp", cp), check_int("micro_batch",
                                                                            micro_batch)
    width = (m.n_heads * (m.qk_head_dim + m.head_dim) if m.is_mla
             else 2 * m.kv_heads * m.head_dim)
    return b * s / cp * width * float(bytes_per_value)


def attention_block_flops(model: str | ModelSpec, seq_len: int, cp: int,
                          micro_batch: int = 1) -> float:
    """Forward FLOPs one GPU spends on one step of causal ring attention, one layer.

    A whole sequence's causal attention costs ``2 b s^2 a (d_qk + d_v) / 2`` forward
    (:func:`scaleout.compute.attention_flops_per_token` with ``causal=True``, times
    ``b s``); load balancing spreads it evenly over ``cp`` GPUs and ``cp`` steps.
    """
    from .compute import attention_flops_per_token

    m = catalog.model(model)
    s, cp, b = check_int("seq_len", seq_len), check_int("cp", cp), check_int("micro_batch",
                                                                            micro_batch)
    per_layer = attention_flops_per_token(m, s, causal=True) / m.n_layers * b * s
    return per_layer / cp / cp


def ring_attention_time(model: str | ModelSpec, seq_len: int, cp: int, link, *,
                        micro_batch: int = 1, tp: int = 1, attention_flops_per_s: float,
                        bytes_per_value: float = 2.0) -> dict[str, float]:
    """Seconds of one layer's ring attention on one GPU: compute, transfers, and what shows.

    Forward: ``cp`` blocks of attention (:func:`attention_block_flops` at
    ``attention_flops_per_s``, the rate the attention kernel reaches), and ``cp - 1`` sends of
    a key/value block (:func:`kv_block_bytes`, ``α + bytes/B`` over ``link``) that overlap
    the block being computed: each step shows ``max(0, send - compute)``. Backward: twice
    the compute, and the block travels with its gradients (``dK``, ``dV``): twice the
    bytes. With tensor parallelism beside CP (``tp``) each GPU computes and sends its
    ``1/tp`` of the heads (of the key/value heads, while ``tp`` does not exceed them).
    Returns ``compute_s``, ``comm_s`` (all transfers), ``exposed_s`` (what overlap
    does not hide) and ``total_s`` (compute + exposed), forward and backward together.
    """
    ab = collectives._link(link)
    m = catalog.model(model)
    rate = float(check_array("attention_flops_per_s", attention_flops_per_s, allow_zero=False))
    cp, tp = check_int("cp", cp), check_int("tp", tp)
    kv_split = tp if m.is_mla else min(tp, m.kv_heads)
    block = attention_block_flops(m, seq_len, cp, micro_batch) / tp / rate
    send = ab.latency_s + kv_block_bytes(m, seq_len, cp, micro_batch,
                                         bytes_per_value) / kv_split / ab.bandwidth_bytes_s
    steps = cp - 1
    compute = 3 * cp * block  # forward 1, backward 2
    comm = steps * 3 * send if cp > 1 else 0.0  # forward 1 (K, V), backward 2 (with dK, dV)
    exposed = steps * (max(0.0, send - block) + max(0.0, 2 * send - 2 * block))
    return {"compute_s": compute, "comm_s": comm, "exposed_s": exposed,
            "total_s": compute + exposed, "block_compute_s": block, "send_s": send}


def ulysses_time(model: str | ModelSpec, seq_len: int, cp: int, gpus_per_node: int,
                 intra, inter, *, micro_batch: int = 1, attention_flops_per_s: float,
                 bytes_per_value: float = 2.0) -> dict[str, float]:
    """Seconds of one layer's all-to-all (Ulysses) context parallelism on one GPU.

    Forward: all-to-alls of the queries, keys, values (``b s/cp`` tokens × their widths)
    and of the output (``b s/cp × a d_v``); backward the same four in reverse. Each is
    :func:`scaleout.moe.all_to_all_time` (point-to-point over NVLink and the network);
    none overlaps. Attention itself runs on the whole sequence for ``a/cp`` heads: the
    same FLOPs per GPU as the ring's.
    """
    from .moe import all_to_all_time

    m = catalog.model(model)
    s, b = check_int("seq_len", seq_len), check_int("micro_batch", micro_batch)
    check_cp(s, cp, variant="all-to-all", model=m)
    rate = float(check_array("attention_flops_per_s", attention_flops_per_s, allow_zero=False))
    widths = (m.n_heads * m.qk_head_dim + m.kv_heads * (m.qk_head_dim + m.head_dim)
              + m.n_heads * m.head_dim)
    size = b * s / cp * widths * float(bytes_per_value)
    comm = 2 * float(all_to_all_time(size, cp, gpus_per_node, intra, inter)) if cp > 1 else 0.0
    compute = 3 * cp * attention_block_flops(m, s, cp, b) / rate
    return {"compute_s": compute, "comm_s": comm, "exposed_s": comm,
            "total_s": compute + comm}


def activation_bytes_per_gpu(model: str | ModelSpec, seq_len, *, micro_batch: int = 1,
                             tp: int = 1, cp: int = 1, sp: bool = True,
                             recompute: str = "selective",
                             recipe: str | memory.PrecisionRecipe = "mixed-adam",
                             per_layer: bool = False):
    """Activation bytes per GPU for one micro-batch of all layers (or one, ``per_layer``).

    Korthikanti et al. 2022's per-layer bytes (:func:`scaleout.memory.
    activation_per_layer_arrays`) for the ``s/cp`` tokens a GPU holds, with flash
    attention (context parallelism always computes attention blockwise, so no ``s × s``
    score matrices are stored). Linear in ``s``: doubling the context doubles the bytes;
    ``cp`` divides them. Array-friendly in ``seq_len``.
    """
    m = catalog.model(model)
    s = check_array("seq_len", seq_len, integer=True, minimum=1)
    b, tp, cp = (check_int("micro_batch", micro_batch), check_int("tp", tp),
                 check_int("cp", cp))
    check_bool("sp", sp)
    check_bool("per_layer", per_layer)
    code = memory.recompute_code(recompute)
    r = memory.get_recipe(recipe)
    layer = memory.activation_per_layer_arrays(
        s / cp, b, m.hidden, m.n_heads, tp, sp, code, True,
        gemm_input_bytes=r.gemm_input_bytes, **memory.activation_shape(m))
    return _out(layer if per_layer else layer * m.n_layers)


def attention_rate(model: str | ModelSpec, gpu, seq_len: int, *, tp: int = 1, cp: int = 1,
                   micro_batch: int = 1, calibration=None) -> float:
    """FLOP/s a GPU's attention (and matrix multiplies) reach here: the planner's
    ``η(min(h/tp, b s/cp)) × peak`` (:class:`scaleout.plan.Calibration`, BF16 peak)."""
    from .plan.calibration import DEFAULT_CALIBRATION

    m = catalog.model(model)
    g = catalog.gpu(gpu)
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    tokens = check_int("micro_batch", micro_batch) * check_int("seq_len", seq_len) / check_int(
        "cp", cp)
    return float(cal.matmul_efficiency(min(m.hidden / check_int("tp", tp), tokens))
                 ) * g.bf16_dense_flops


def compare_cp_tp(model: str | ModelSpec, gpu, seq_lens, *, base_tp: int = 8,
                  factor: int = 2, gpus_per_node: int | None = None, inter=None,
                  micro_batch: int = 1, recompute: str = "selective",
                  calibration=None) -> dict[str, np.ndarray]:
    """One layer's time and activations per GPU: a larger TP (``base_tp × factor``) against
    context parallelism (``tp = base_tp``, ``cp = factor``), over sequence lengths.

    Both spread the layer over ``base_tp × factor`` GPUs. Compared per layer and micro-batch:

    * **compute** at the planner's matrix-multiply rate ``η(x) × peak`` with
      ``x = min(h/tp, b s/cp)`` (:class:`scaleout.plan.Calibration`; thin tensor-parallel
      shards run slower, Narayanan et al. 2021 Sec. 3.3);
    * **tensor-parallel traffic**: four all-reduces of ``2 b (s/cp) h`` bytes over the TP
      group (:class:`scaleout.collectives.NodeNetwork`, hierarchical when the group
      leaves the node), not overlapped;
    * **context-parallel traffic**: ring attention's exposed transfers
      (:func:`ring_attention_time`), over NVLink when the CP group fits in the node
      beside TP, else over the network;
    * **activations** per GPU (:func:`activation_bytes_per_gpu`).

    Returns arrays over ``seq_lens``: ``tp_only_s``, ``cp_s``, their parts, and
    ``tp_only_act_bytes``, ``cp_act_bytes``.
    """
    from .compute import forward_flops
    from .plan.calibration import DEFAULT_CALIBRATION
    from .plan.network import default_network

    m = catalog.model(model)
    g = catalog.gpu(gpu)
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    seqs = check_array("seq_lens", seq_lens, integer=True, minimum=2)
    base_tp, factor = check_int("base_tp", base_tp), check_int("factor", factor)
    net = default_network(g, gpus_per_node, inter)
    eff = cal.collective_efficiency
    intra = collectives.AlphaBeta(collectives._link(net.intra).latency_s,
                                  collectives._link(net.intra).bandwidth_bytes_s * eff)
    inter_ab = collectives.AlphaBeta(collectives._link(net.inter).latency_s,
                                     collectives._link(net.inter).bandwidth_bytes_s * eff)
    derated = collectives.NodeNetwork(intra, inter_ab, net.gpus_per_node)
    big_tp = base_tp * factor
    for t in (base_tp, big_tp):
        check_divides("tp", t, f"the heads of {m.name}", m.n_heads)
    layer_weights = memory.layers_params(m, active=True) / m.n_layers
    out = {k: np.zeros(seqs.shape) for k in (
        "tp_only_s", "tp_only_compute_s", "tp_only_comm_s", "cp_s", "cp_compute_s",
        "cp_tp_comm_s", "cp_exposed_s", "tp_only_act_bytes", "cp_act_bytes")}
    for i, s in np.ndenumerate(seqs):
        s = int(s)
        for name, tp, cp in (("tp_only", big_tp, 1), ("cp", base_tp, factor)):
            tokens = micro_batch * s / cp
            rate = float(cal.matmul_efficiency(min(m.hidden / tp, tokens))) * g.bf16_dense_flops
            dense = float(forward_flops(tokens, layer_weights, 0, m.hidden, s)) / tp
            ring = None
            if cp > 1:
                check_cp(s, cp)
                cp_link = intra if tp * cp <= net.gpus_per_node else inter_ab
                ring = ring_attention_time(m, s, cp, cp_link, micro_batch=micro_batch,
                                           tp=tp, attention_flops_per_s=rate)
                attn = ring["compute_s"]
            else:
                attn = 3 * attention_block_flops(m, s, 1, micro_batch) / tp / rate
            compute = 3 * dense / rate + attn
            size = 2.0 * tokens * m.hidden
            tp_comm = 4 * float(derated.time("all_reduce", size, tp, name="tp")) if tp > 1 \
                else 0.0
            exposed = ring["exposed_s"] if ring else 0.0
            out[f"{name}_s" if name == "cp" else "tp_only_s"][i] = compute + tp_comm + exposed
            if name == "cp":
                out["cp_compute_s"][i], out["cp_tp_comm_s"][i] = compute, tp_comm
                out["cp_exposed_s"][i] = exposed
            else:
                out["tp_only_compute_s"][i], out["tp_only_comm_s"][i] = compute, tp_comm
            out[f"{name}_act_bytes"][i] = activation_bytes_per_gpu(
                m, s, micro_batch=micro_batch, tp=tp, cp=cp, recompute=recompute)
    return {k: _out(v) for k, v in out.items()}
