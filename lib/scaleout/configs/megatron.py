"""Megatron-LM command lines and argument files <-> the workbook's :class:`~scaleout.plan.Plan`.

The flag names are Megatron-LM's own, read from its source
(``megatron/training/arguments.py`` and the config dataclasses it turns into flags,
``megatron/core/model_parallel_config.py``, ``megatron/core/transformer/transformer_config.py``,
``megatron/training/config/``) at the commit recorded in ``data/frameworks/megatron.toml``;
every flag used here is listed there with the line that defines it.

============================================  =====================================================
Megatron-LM flag                              Plan / model field
============================================  =====================================================
``--tensor-model-parallel-size``              ``tp``
``--pipeline-model-parallel-size``            ``pp``
(world size / (tp pp cp))                     ``dp`` (the world size is torchrun's, not a flag)
``--num-virtual-stages-per-pipeline-rank``    ``interleave`` (or ``--num-layers-per-virtual-``
                                              ``pipeline-stage`` = layers / (pp v))
``--micro-batch-size``                        ``micro_batch``
``--global-batch-size``                       ``global_batch`` (absent: micro_batch x dp)
``--seq-length``                              ``seq_len``
``--sequence-parallel``                       ``sp``
``--recompute-granularity`` full|selective    ``recompute`` (``--recompute-activations``:
                                              selective); ``--recompute-method``/``-num-layers``
                                              recomputing only some layers: not modelled
``--use-distributed-optimizer``               ``zero_stage`` 1
``--use-megatron-fsdp`` +                     ``zero_stage`` 0/1/2/3 for no_shard / optim /
``--data-parallel-sharding-strategy``         optim_grads / optim_grads_params (the default);
                                              ``--use-torch-fsdp2``: 3
``--attention-backend`` flash|fused|auto      ``flash_attention`` True (unfused|local: False;
                                              ``--use-flash-attn``: True; absent: auto, True)
``--bf16`` / ``--fp16``                       recipe ``mixed-adam`` (neither: ``fp32-adam``)
``--context-parallel-size``                   ``cp``
``--expert-model-parallel-size``,             ``ep`` (a mixture of experts only; ignored for
``--expert-tensor-parallel-size``             a dense model); expert TP other than 1: not
                                              modelled (blocks); absent with TP: taken as 1
``--num-layers``, ``--hidden-size``,          the model (:class:`~scaleout.catalog.ModelSpec`):
``--num-attention-heads``, ``--ffn-hidden-``  ``n_layers``, ``hidden``, ``n_heads``,
``size``, ``--group-query-attention``         ``ffn_hidden``, ``n_kv_heads``, ``gated_mlp``,
``--num-query-groups``, ``--swiglu``,         ``tied_embeddings``, ``learned_positions``,
``--untie-embeddings-and-output-weights``,    ``seq_len``, ``biases``, ``vocab``,
``--position-embedding-type``,                ``dropout`` (either dropout flag above 0;
``--max-position-embeddings``,                absent: Megatron-LM's 0.1)
``--disable-bias-linear``, ``--normalization``,
``--attention-dropout``, ``--hidden-dropout``,
``--vocab-size``
``--fp8-format`` + ``--fp8-recipe``            recipe ``fp8-te`` (delayed, the default),
``--fp8-param-gather``                        ``fp8-te-cs`` (tensorwise), ``fp8-te-mx`` (mxfp8),
                                              ``fp8-deepseek`` (blockwise); delayed with
                                              ``--fp8-param-gather``: ``fp8-te-fp8-params``
``--num-experts``, ``--moe-router-topk``,     a mixture of experts / MLA whose shape the flags
``--multi-latent-attention``                  do not give in full: blocks (give ``model=``)
============================================  =====================================================

Every other Megatron-LM flag (``data/frameworks/megatron.toml`` lists all of them) is
reported as ignored; a flag Megatron-LM does not have is an error naming it and the
closest ones.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from ..catalog import ModelSpec
from ..checks import close_matches
from ..plan import Plan, PlanResult
from ._common import (
    ASSUMED,
    IGNORED,
    NOT_MODELLED,
    ImportedRun,
    UnsupportedPlanError,
    _Collector,
    header_lines,
    read_text,
    reject_unknown,
    used,
)

__all__ = ["from_megatron_args", "to_megatron_args"]

_F = "megatron"
_SHARDING = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}
_BACKENDS = {"flash": True, "fused": True, "auto": True, "unfused": False, "local": False}
_LAUNCH_WORLD = ("--nnodes", "--nproc-per-node", "--nproc_per_node")


def _tokens(args: str | Path | Sequence[str]) -> tuple[list[str], str]:
    if isinstance(args, list | tuple):
        if not all(isinstance(a, str) for a in args):
            raise ValueError("Megatron-LM arguments must be strings")
        return list(args), "<list>"
    text, path = read_text(args, "Megatron-LM arguments")
    label = path or "<text>"
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    try:
        return shlex.split(text, comments=True), label
    except ValueError as exc:
        raise ValueError(f"{label}: cannot split the arguments ({exc}); quote values with "
                         f"matching quotes") from None


def _group(tokens: list[str], label: str) -> tuple[dict[str, list[str]], int | None, list[str]]:
    """Flags and their values; the world size a torchrun launcher states; the launcher."""
    start = next((i for i, t in enumerate(tokens) if t.endswith(".py")), None)
    launcher = tokens[:start + 1] if start is not None else []
    rest = tokens[start + 1:] if start is not None else tokens
    world = None
    if launcher:
        nodes = procs = None
        for i, tok in enumerate(launcher):
            key, _, val = tok.partition("=")
            if key in _LAUNCH_WORLD:
                val = val or (launcher[i + 1] if i + 1 < len(launcher) else "")
                if not val.isdigit():
                    continue  # e.g. "--nnodes 1:4" elastic ranges say nothing fixed
                if key == "--nnodes":
                    nodes = int(val)
                else:
                    procs = int(val)
        if procs is not None:
            world = procs * (nodes or 1)
    out: dict[str, list[str]] = {}
    current = None
    for tok in rest:
        if tok.startswith("--"):
            name, eq, val = tok.partition("=")
            if name in out:
                raise ValueError(f"{label}: {name} is given twice")
            out[name] = [val] if eq else []
            current = name
        elif current is None:
            raise ValueError(f"{label}: {tok!r} comes before any flag; expected --flag value ...")
        else:
            out[current].append(tok)
    return out, world, launcher


def _int(label: str, flags: dict, name: str, default=None, minimum: int = 1):
    used(_F, name)
    if name not in flags:
        return default
    vals = flags[name]
    if len(vals) != 1 or not vals[0].lstrip("-").isdigit() or int(vals[0]) < minimum:
        raise ValueError(f"{label}: {name} takes one whole number >= {minimum}, got "
                         f"{' '.join(vals) or 'nothing'}")
    return int(vals[0])


def _probability(label: str, flags: dict, name: str, default: float) -> float:
    """A flag holding one probability in [0, 1) (a dropout rate); ``default`` when absent."""
    used(_F, name)
    if name not in flags:
        return default
    vals = flags[name]
    try:
        value = float(vals[0]) if len(vals) == 1 else float("nan")
    except ValueError:
        value = float("nan")
    if not 0 <= value < 1:
        raise ValueError(f"{label}: {name} takes one probability in [0, 1), got "
                         f"{' '.join(vals) or 'nothing'}")
    return value


def _switch(label: str, flags: dict, name: str) -> bool:
    used(_F, name)
    if name not in flags:
        return False
    if flags[name]:
        raise ValueError(f"{label}: {name} is a switch and takes no value, got "
                         f"{' '.join(flags[name])}")
    return True


def _word(label: str, flags: dict, name: str, allowed) -> str | None:
    used(_F, name)
    if name not in flags:
        return None
    vals = flags[name]
    allowed = list(allowed)
    if len(vals) != 1 or vals[0] not in allowed:
        got = " ".join(vals) or "nothing"
        near = close_matches(got, allowed)
        hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
        raise ValueError(f"{label}: {name} must be one of {', '.join(allowed)}; got {got!r}{hint}")
    return vals[0]


def from_megatron_args(args: str | Path | Sequence[str], *, n_gpus: int | None = None,
                       model: ModelSpec | None = None) -> ImportedRun:
    """Read a Megatron-LM command line or arguments file into an :class:`ImportedRun`.

    Parameters
    ----------
    args
        A file of arguments, the command line as text (a ``torchrun ... pretrain_gpt.py``
        prefix is allowed; ``#`` comments and backslash line continuations too), or a
        list of arguments. Split with :mod:`shlex`; nothing is evaluated.
    n_gpus
        The world size. Megatron-LM takes it from the launcher, not from a flag; it is
        read from ``torchrun --nnodes N --nproc-per-node M`` when the text has them.
    model
        The model, for ``--num-layers-per-virtual-pipeline-stage`` and the layout checks
        when the arguments do not describe it.

    Raises
    ------
    ValueError
        A flag Megatron-LM does not have (with close matches), a malformed value, a
        world size not divisible by tp x pp x cp, a global batch not divisible by
        micro-batch x dp; each names the file and the flag.
    """
    tokens, label = _tokens(args)
    flags, world, launcher = _group(tokens, label)
    reject_unknown(_F, label, flags, "a Megatron-LM flag")
    found = _Collector(label)
    if launcher:
        found.add("launcher", " ".join(launcher), IGNORED, "the launcher and script; only "
                  "torchrun's --nnodes and --nproc-per-node are read (the world size)")
    if n_gpus is None:
        n_gpus = world
    elif world is not None and world != n_gpus:
        raise ValueError(f"{label}: the launcher runs {world} processes but n_gpus={n_gpus}")
    if n_gpus is None:
        raise ValueError(f"{label}: the world size is not in Megatron-LM's flags; give the "
                         f"number of GPUs (n_gpus=, or --gpus on the command line)")
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, int) or n_gpus < 1:
        raise ValueError(f"n_gpus must be a whole number >= 1, got {n_gpus!r}")
    consumed: set[str] = set()

    def take(*names: str) -> None:
        consumed.update(names)

    take("--tensor-model-parallel-size", "--pipeline-model-parallel-size",
         "--context-parallel-size", "--expert-model-parallel-size",
         "--expert-tensor-parallel-size", "--micro-batch-size", "--global-batch-size",
         "--seq-length", "--sequence-parallel", "--recompute-granularity",
         "--recompute-activations", "--recompute-method", "--recompute-num-layers",
         "--use-distributed-optimizer", "--use-megatron-fsdp", "--use-torch-fsdp2",
         "--data-parallel-sharding-strategy", "--attention-backend", "--use-flash-attn",
         "--bf16", "--fp16", "--fp8-format", "--fp8-recipe", "--fp8-param-gather",
         "--num-virtual-stages-per-pipeline-rank",
         "--num-layers-per-virtual-pipeline-stage", "--decoder-first-pipeline-num-layers",
         "--decoder-last-pipeline-num-layers", "--pipeline-model-parallel-layout",
         "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split")
    tp = _int(label, flags, "--tensor-model-parallel-size", 1)
    pp = _int(label, flags, "--pipeline-model-parallel-size", 1)
    cp = _int(label, flags, "--context-parallel-size", 1)
    ep = _int(label, flags, "--expert-model-parallel-size", 1)
    etp = _int(label, flags, "--expert-tensor-parallel-size", None)
    if n_gpus % (tp * pp * cp):
        raise ValueError(f"{label}: the {n_gpus} GPUs are not a multiple of "
                         f"--tensor-model-parallel-size x --pipeline-model-parallel-size x "
                         f"--context-parallel-size = {tp} x {pp} x {cp} = {tp * pp * cp}")
    dp = n_gpus // (tp * pp * cp)
    micro = _int(label, flags, "--micro-batch-size")
    if micro is None:
        raise ValueError(f"{label}: --micro-batch-size is missing (Megatron-LM requires it)")
    batch = _int(label, flags, "--global-batch-size", micro * dp)
    if batch % (micro * dp):
        raise ValueError(f"{label}: --global-batch-size {batch} must be a multiple of "
                         f"--micro-batch-size x dp = {micro} x {dp} = {micro * dp} "
                         f"(dp = {n_gpus} GPUs / (tp {tp} x pp {pp} x cp {cp}))")
    seq = _int(label, flags, "--seq-length", None)
    sp = _switch(label, flags, "--sequence-parallel") and tp > 1
    # ---- recomputation
    gran = _word(label, flags, "--recompute-granularity", ("full", "selective"))
    if _switch(label, flags, "--recompute-activations"):
        gran = gran or "selective"
    method = _word(label, flags, "--recompute-method", ("uniform", "block"))
    n_rec = _int(label, flags, "--recompute-num-layers", None)
    recompute = gran or "none"
    # ---- ZeRO / FSDP
    zero = 1 if _switch(label, flags, "--use-distributed-optimizer") else 0
    strategy = _word(label, flags, "--data-parallel-sharding-strategy", _SHARDING)
    if _switch(label, flags, "--use-megatron-fsdp"):
        zero = _SHARDING[strategy or "optim_grads_params"]
    elif strategy is not None:
        found.add("--data-parallel-sharding-strategy", strategy, IGNORED,
                  "takes effect only with --use-megatron-fsdp")
    if _switch(label, flags, "--use-torch-fsdp2"):
        zero = 3
    # ---- attention, precision
    backend = _word(label, flags, "--attention-backend", _BACKENDS)
    if _switch(label, flags, "--use-flash-attn"):
        backend = backend or "flash"
    if backend is None:
        found.add("--attention-backend", "auto", ASSUMED, "absent: Megatron-LM's default "
                  "'auto' picks a fused kernel that does not store the score matrix")
        backend = "auto"
    flash = _BACKENDS[backend]
    recipe = "mixed-adam"
    if not (_switch(label, flags, "--bf16") or _switch(label, flags, "--fp16")):
        recipe = "fp32-adam"
        found.add("--bf16", False, ASSUMED, "neither --bf16 nor --fp16: fp32 training "
                  "(recipe fp32-adam)")
    fp8 = _word(label, flags, "--fp8-format", ("e4m3", "hybrid"))
    scaling = _word(label, flags, "--fp8-recipe", [*FP8_RECIPES, "custom"])
    fp8_params = _switch(label, flags, "--fp8-param-gather")
    if fp8 is not None and scaling == "custom":
        found.add("--fp8-recipe", scaling, NOT_MODELLED, "a custom quantization recipe (its "
                  "own factory, --fp8-quantizer-factory): its bytes and rates are the "
                  "factory's", blocks=True)
    elif fp8 is not None and recipe != "fp32-adam":
        scaling = scaling or "delayed"
        recipe = FP8_RECIPES[scaling]
        if fp8_params and scaling == "delayed":
            recipe = "fp8-te-fp8-params"
        found.add("--fp8-recipe", scaling, ASSUMED, f"FP8 matrix multiplies with Transformer "
                  f"Engine ({fp8} format, {scaling} scaling): recipe {recipe}")
    # ---- the model the flags describe
    spec, model_flags = _model(label, flags, seq, found)
    consumed |= model_flags
    if spec is None:
        spec = model
    # ---- context and expert parallelism
    moe_model = spec is not None and spec.is_moe
    ep = found.expert_parallel("--expert-model-parallel-size", ep, spec)
    if etp is not None and etp != 1:
        found.expert_tensor_parallel("--expert-tensor-parallel-size", etp, moe_model)
    elif etp is None and moe_model and tp > 1:
        found.add("--expert-tensor-parallel-size", 1, ASSUMED, f"absent: Megatron-Core "
                  f"splits the experts over tp={tp} then; the planner keeps them whole "
                  "(expert tensor parallelism 1)")
    # ---- interleaving and stage layout
    v = _int(label, flags, "--num-virtual-stages-per-pipeline-rank", None)
    per_chunk = _int(label, flags, "--num-layers-per-virtual-pipeline-stage", None)
    if per_chunk is not None:
        if spec is None:
            raise ValueError(f"{label}: --num-layers-per-virtual-pipeline-stage needs the "
                             f"number of layers (--num-layers, or model=)")
        if spec.n_layers % (pp * per_chunk):
            raise ValueError(f"{label}: --num-layers-per-virtual-pipeline-stage {per_chunk} x "
                             f"pp {pp} must divide the {spec.n_layers} layers")
        v_from = spec.n_layers // (pp * per_chunk)
        if v is not None and v != v_from:
            raise ValueError(f"{label}: --num-virtual-stages-per-pipeline-rank {v} disagrees "
                             f"with --num-layers-per-virtual-pipeline-stage ({v_from} chunks)")
        v = v_from
    v = v or 1
    uneven = False
    for name in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"):
        n = _int(label, flags, name, None)
        if n is not None:
            uneven = True
            found.add(name, n, NOT_MODELLED, "a first/last stage of its own size; evaluated "
                      "with the busiest stage holding ceil(layers/pp)")
    used(_F, "--pipeline-model-parallel-layout")
    if "--pipeline-model-parallel-layout" in flags:
        found.add("--pipeline-model-parallel-layout", " ".join(flags[
            "--pipeline-model-parallel-layout"]), NOT_MODELLED, "an explicit layer layout",
            blocks=True)
    for name in ("--account-for-embedding-in-pipeline-split",
                 "--account-for-loss-in-pipeline-split"):
        if _switch(label, flags, name):
            uneven = True
            found.add(name, True, NOT_MODELLED, "the embedding/loss counted as a layer in the "
                      "split; evaluated with ceil(layers/pp) on the busiest stage")
    if method is not None or n_rec is not None:
        full_all = method == "uniform" and n_rec == 1 and gran == "full"
        if not full_all:
            found.add("--recompute-method", f"{method} {n_rec}", NOT_MODELLED,
                      "recomputing only some layers; the planner recomputes all or none",
                      blocks=gran == "full")
    for name, vals in flags.items():
        if name not in consumed:
            found.add(name, " ".join(vals) if vals else True, IGNORED)
    settings = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "etp": etp,
                "micro_batch": micro, "global_batch": batch, "zero_stage": zero, "sp": sp,
                "recompute": recompute, "interleave": v, "flash_attention": flash,
                "seq_len": seq, "n_gpus": n_gpus, "fp8": fp8}
    plan = found.plan(tp=tp, pp=pp, dp=dp, micro_batch=micro, global_batch=batch,
                      zero_stage=zero, sp=sp, recompute=recompute, interleave=v,
                      flash_attention=flash, seq_len=seq, cp=cp, ep=ep)
    return ImportedRun(_F, label, settings, plan, tuple(found.items), recipe, uneven, spec)


def _model(label: str, flags: dict, seq: int | None, found: _Collector
           ) -> tuple[ModelSpec | None, set[str]]:
    names = ("--num-layers", "--hidden-size", "--num-attention-heads", "--ffn-hidden-size",
             "--group-query-attention", "--num-query-groups", "--swiglu",
             "--untie-embeddings-and-output-weights", "--position-embedding-type",
             "--max-position-embeddings", "--disable-bias-linear", "--normalization",
             "--vocab-size", "--num-experts", "--moe-router-topk", "--multi-latent-attention",
             "--kv-channels", "--attention-dropout", "--hidden-dropout")
    for n in names:
        used(_F, n)
    experts = _int(label, flags, "--num-experts", None)
    if experts is not None:
        found.add("--num-experts", experts, NOT_MODELLED, "a mixture of experts whose shape "
                  "the flags do not give in full (expert width, shared experts, dense layers): "
                  "give the model (a catalog name or its config.json)", blocks=True)
        topk = _int(label, flags, "--moe-router-topk", None)
        if topk is not None:
            found.add("--moe-router-topk", topk, NOT_MODELLED, "experts per token", blocks=True)
    if _switch(label, flags, "--multi-latent-attention"):
        found.add("--multi-latent-attention", True, NOT_MODELLED, "MLA, whose widths the flags "
                  "do not give: give the model (a catalog name or its config.json)",
                  blocks=True)
    layers = _int(label, flags, "--num-layers", None)
    hidden = _int(label, flags, "--hidden-size", None)
    heads = _int(label, flags, "--num-attention-heads", None)
    if layers is None or hidden is None or heads is None:
        return None, set(names)
    kv = _int(label, flags, "--num-query-groups", None) if _switch(
        label, flags, "--group-query-attention") else None
    kv_channels = _int(label, flags, "--kv-channels", None)
    if kv_channels is not None and kv_channels * heads != hidden:
        found.add("--kv-channels", kv_channels, NOT_MODELLED, "heads x kv channels differs "
                  "from the hidden size", blocks=True)
    pos = _word(label, flags, "--position-embedding-type",
                ("learned_absolute", "rope", "yarn", "mrope", "relative", "none"))
    learned = pos in (None, "learned_absolute")
    max_pos = _int(label, flags, "--max-position-embeddings", None)
    if seq is None and max_pos is None:
        raise ValueError(f"{label}: neither --seq-length nor --max-position-embeddings is given")
    vocab = _int(label, flags, "--vocab-size", None)
    if vocab is None:
        vocab = 0
        found.add("--vocab-size", None, ASSUMED, "absent: the vocabulary comes from the "
                  "tokenizer; give the model (config.json or catalog name) for it",
                  blocks=False)
    norm = _word(label, flags, "--normalization", ("LayerNorm", "RMSNorm"))
    no_bias = _switch(label, flags, "--disable-bias-linear")
    if (norm == "RMSNorm") != no_bias:
        found.add("--normalization", norm or "LayerNorm", NOT_MODELLED, "biases and the norm "
                  "type are one switch in the catalog (GPT style or Llama style)")
    try:
        spec = ModelSpec(name="megatron-args", n_layers=layers, hidden=hidden, n_heads=heads,
                         n_kv_heads=kv, vocab=vocab or 1, seq_len=seq or max_pos,
                         ffn_hidden=_int(label, flags, "--ffn-hidden-size", None),
                         gated_mlp=_switch(label, flags, "--swiglu"),
                         tied_embeddings=not _switch(label, flags,
                                                     "--untie-embeddings-and-output-weights"),
                         learned_positions=learned, biases=not no_bias,
                         # Megatron-LM's defaults: 0.1 each (megatron/training/arguments.py)
                         dropout=max(_probability(label, flags, "--attention-dropout", 0.1),
                                     _probability(label, flags, "--hidden-dropout", 0.1)) > 0,
                         source=f"Megatron-LM arguments ({label})")
    except ValueError as exc:
        raise ValueError(f"{label}: {str(exc).split(': ', 1)[-1]}") from None
    return (spec if vocab else None), set(names)


#: Megatron-LM's ``--fp8-recipe`` (megatron/training/arguments.py) and the recipe of
#: :data:`scaleout.memory.RECIPES` each one is: Transformer Engine's DelayedScaling,
#: Float8CurrentScaling, MXFP8BlockScaling and Float8BlockScaling (1x128 / 128x128 blocks,
#: DeepSeek-V3's fine-grained FP8).
FP8_RECIPES = {"delayed": "fp8-te", "tensorwise": "fp8-te-cs", "mxfp8": "fp8-te-mx",
               "blockwise": "fp8-deepseek"}


def _precision_flags(recipe: str) -> list[tuple[str, object]]:
    """Megatron-LM's precision flags for a recipe of :data:`scaleout.memory.RECIPES`:
    ``--bf16`` (none for an fp32 recipe, ``--fp16`` for megatron-fp16; ``--optimizer sgd``
    for SGD; 8-bit Adam refused), and for an FP8
    recipe ``--fp8-format`` (hybrid: E4M3 forward, E5M2 gradients, Transformer Engine's
    default; e4m3 for the block-scaled recipes, as TE requires) with its ``--fp8-recipe``."""
    from .. import memory

    rec = memory.get_recipe(recipe)
    if rec.name == "mixed-adam-8bit":
        raise UnsupportedPlanError(f"recipe {rec.name!r}: Megatron-LM has no 8-bit Adam (its "
                                   "--optimizer: adam, sgd; moments in fp32 or bf16)")
    if rec.name == "fp32-sgd-momentum":
        return [("--optimizer", "sgd")]
    if rec.name.startswith("fp32"):
        return []
    flags: list[tuple[str, object]] = [("--fp16" if rec.name == "megatron-fp16" else "--bf16",
                                        None)]
    if rec.fp8:
        scaling = {v: k for k, v in FP8_RECIPES.items()}.get(rec.name, "delayed")
        if rec.name not in FP8_RECIPES.values() and rec.name != "fp8-te-fp8-params":
            raise UnsupportedPlanError(f"recipe {rec.name!r}: Megatron-LM has no FP8 recipe "
                                       f"for it (its --fp8-recipe: {', '.join(FP8_RECIPES)})")
        block = scaling in ("mxfp8", "blockwise")
        flags += [("--fp8-format", "e4m3" if block else "hybrid"), ("--fp8-recipe", scaling)]
        if rec.name == "fp8-te-fp8-params":
            flags.append(("--fp8-param-gather", None))
    return flags


def to_megatron_args(plan: Plan, model: ModelSpec | None = None, *,
                     result: PlanResult | None = None, recipe: str = "mixed-adam") -> str:
    """The plan as Megatron-LM arguments, one flag per line after a ``#`` header.

    Parameters
    ----------
    plan
        The plan (:func:`scaleout.plan.search` or :func:`scaleout.plan.evaluate`).
    model
        The model: when given, its shape flags are written too (``--num-layers`` ...).
    result
        The plan evaluated; its prediction goes into the header.
    recipe
        The precision recipe the plan was priced with (:data:`scaleout.memory.RECIPES`):
        its precision flags (:data:`FP8_RECIPES`).

    The world size (``tp x pp x dp``) is the launcher's (torchrun), stated in the header.
    Every plan the planner can return can be written: Megatron-LM has all its settings.
    """
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a scaleout.plan.Plan, got {type(plan).__name__}")
    lines: list[tuple[str, object]] = []

    def add(name: str, value: object = None) -> None:
        lines.append((used(_F, name), value))

    if model is not None:
        add("--num-layers", model.n_layers)
        add("--hidden-size", model.hidden)
        add("--num-attention-heads", model.n_heads)
        add("--ffn-hidden-size", model.ffn)
        if model.kv_heads != model.n_heads:
            add("--group-query-attention")
            add("--num-query-groups", model.kv_heads)
        if model.gated_mlp:
            add("--swiglu")
        if not model.tied_embeddings:
            add("--untie-embeddings-and-output-weights")
        add("--position-embedding-type", "learned_absolute" if model.learned_positions
            else "rope")
        add("--max-position-embeddings", plan.seq_len or model.seq_len)
        if not model.biases:
            add("--disable-bias-linear")
            add("--normalization", "RMSNorm")
        if not model.dropout:  # Megatron-LM drops out 10% by default
            add("--attention-dropout", 0.0)
            add("--hidden-dropout", 0.0)
        add("--vocab-size", model.vocab)
    if model is not None and model.is_moe:
        add("--num-experts", model.experts)
        add("--moe-router-topk", model.top_k)
    add("--tensor-model-parallel-size", plan.tp)
    add("--pipeline-model-parallel-size", plan.pp)
    if plan.cp > 1:
        add("--context-parallel-size", plan.cp)
    if plan.ep > 1:
        add("--expert-model-parallel-size", plan.ep)
    if model is not None and model.is_moe and plan.tp > 1:
        add("--expert-tensor-parallel-size", 1)
    if plan.interleave > 1:
        add("--num-virtual-stages-per-pipeline-rank", plan.interleave)
    if plan.sp:
        add("--sequence-parallel")
    add("--micro-batch-size", plan.micro_batch)
    add("--global-batch-size", plan.global_batch)
    seq = plan.seq_len if plan.seq_len is not None else (model.seq_len if model else None)
    if seq is not None:
        add("--seq-length", seq)
    if plan.recompute != "none":
        add("--recompute-granularity", plan.recompute)
        if plan.recompute == "full":
            add("--recompute-method", "uniform")
            add("--recompute-num-layers", 1)
    if plan.zero_stage == 1:
        add("--use-distributed-optimizer")
    elif plan.zero_stage >= 2:
        add("--use-megatron-fsdp")
        add("--data-parallel-sharding-strategy",
            "optim_grads" if plan.zero_stage == 2 else "optim_grads_params")
    add("--attention-backend", "flash" if plan.flash_attention else "unfused")
    for flag, value in _precision_flags(recipe):
        add(flag, value)
    notes = [f"World size: {plan.n_gpus} processes (torchrun --nnodes x --nproc-per-node); "
             "Megatron-LM derives dp from it.",
             *(["The mixture of experts' other shape flags (expert width, shared experts, "
                "dense layers, MLA) are the model's own: take them from its recipe."]
               if model is not None and (model.is_moe or model.is_mla) else []),
             "Megatron-LM pads the vocabulary to a multiple of "
             "--make-vocab-size-divisible-by x tp (the tokenizer sets the real size)."]
    if plan.recompute == "full":
        notes.append("Full recomputation of every layer (uniform, 1 layer per unit), as the "
                     "planner models it (Korthikanti et al. 2022 Sec. 5).")
    head = "\n".join("# " + line for line in header_lines(_F, plan, result, notes))
    body = "\n".join(name if value is None else f"{name} {shlex.quote(str(value))}"
                     for name, value in lines)
    return head + "\n" + body + "\n"
