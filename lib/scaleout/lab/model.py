"""A small GPT in plain ``jax.numpy``, an optional mixture-of-experts layer, Adam, a step.

The model is GPT-2's shape at toy size (Radford et al. 2019): learned token and position
embeddings, ``n_layers`` pre-norm blocks of causal multi-head attention and a 4h GeLU MLP,
biases and LayerNorms, a final LayerNorm and an output layer of its own (untied, as in
Llama; a tied one would send the embedding's gradient twice, once per use).
Its parameter count is exactly :func:`scaleout.memory.param_count` of :meth:`LabModel.spec`.

The query, key and value weights are one ``h × 3h`` matrix whose columns run head by head
(Megatron-LM's layout): a column split over ``t`` devices then gives each device whole
heads, and the backward pass needs one all-reduce for the attention input, not three.

With ``n_experts > 0`` the MLP of layer ``moe_layer`` becomes a mixture of experts with
top-1 ("switch") routing (Fedus et al. 2022, arXiv 2101.03961, Sec. 2): a router picks one
expert per token; each expert takes at most ``capacity`` tokens of a group (one sequence),
``capacity = ceil(capacity_factor · s / E)`` (Sec. 2.1); tokens beyond it are dropped
(they pass through the residual connection only). Dispatch and combine are einsums with
one-hot masks, GShard's formulation (Lepikhin et al. 2021, arXiv 2006.16668, Sec. 2.2 and
Algorithm 1): sharding the expert dimension over devices turns the dispatch and the
combine into all-to-alls. The groups are the sequences, so the model computes the same
function however it is sharded.

The sharding hooks (:class:`Hooks`) let :mod:`scaleout.lab.shardings` pin activations
and gather weights at the points Megatron-LM and ZeRO-3 do, without touching the math.
JAX is imported inside the functions only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import catalog
from ..catalog import ModelSpec
from ..checks import check_divides, check_int, check_positive
from .devices import jax_module

__all__ = ["ADAM", "Hooks", "LabModel", "batch", "expert_capacity", "init_opt_state",
           "init_params", "loss", "moe_dispatch_elements", "param_shapes", "train_step"]

#: Adam's hyper-parameters (Kingma & Ba 2015): learning rate, β1, β2, ε.
ADAM = {"lr": 1e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8}
#: Bytes per value: everything is float32 (and the tokens int32) in the lab.
VALUE_BYTES = 4


@dataclass(frozen=True)
class LabModel:
    """The lab's model and batch: a GPT of ``n_layers`` × ``hidden`` with ``n_heads``.

    ``batch`` sequences of ``seq_len`` tokens (plus one, the last target) per step.
    ``n_experts`` > 0 makes the MLP of layer ``moe_layer`` a top-1 mixture of experts
    with ``capacity_factor``.
    """

    n_layers: int = 2
    hidden: int = 64
    n_heads: int = 4
    vocab: int = 256
    seq_len: int = 32
    batch: int = 8
    n_experts: int = 0
    moe_layer: int = -1
    capacity_factor: float = 2.0

    def __post_init__(self) -> None:
        for name in ("n_layers", "hidden", "n_heads", "vocab", "seq_len", "batch"):
            object.__setattr__(self, name, check_int(name, getattr(self, name), maximum=65536))
        check_divides("n_heads", self.n_heads, "hidden", self.hidden)
        object.__setattr__(self, "n_experts", check_int("n_experts", self.n_experts,
                                                        minimum=0, maximum=1024))
        layer = self.moe_layer % self.n_layers if self.moe_layer < 0 else self.moe_layer
        object.__setattr__(self, "moe_layer", check_int("moe_layer", layer, minimum=0,
                                                        maximum=self.n_layers - 1))
        check_positive("capacity_factor", self.capacity_factor)

    @property
    def ffn(self) -> int:
        """MLP width, 4h."""
        return 4 * self.hidden

    @property
    def head_dim(self) -> int:
        """h / a."""
        return self.hidden // self.n_heads

    @property
    def moe(self) -> bool:
        """Whether one layer is a mixture of experts."""
        return self.n_experts > 0

    @property
    def capacity(self) -> int:
        """Tokens each expert takes from one sequence (:func:`expert_capacity`)."""
        return expert_capacity(self.seq_len, max(self.n_experts, 1), self.capacity_factor)

    @property
    def label(self) -> str:
        """``"GPT 2 × 64 (4 heads), V=256, s=32, b=8"`` (+ ``", MoE 8 experts"``)."""
        moe = f", MoE of {self.n_experts} experts in layer {self.moe_layer}" if self.moe else ""
        return (f"GPT {self.n_layers} × {self.hidden} ({self.n_heads} heads), "
                f"V={self.vocab}, s={self.seq_len}, b={self.batch}{moe}")

    def spec(self) -> ModelSpec:
        """The dense model as a catalog :class:`~scaleout.catalog.ModelSpec` (GPT-2 style)."""
        return catalog.model({"name": "lab-gpt", "n_layers": self.n_layers,
                              "hidden": self.hidden, "n_heads": self.n_heads,
                              "vocab": self.vocab, "seq_len": self.seq_len,
                              "tied_embeddings": False,
                              "source": "scaleout.lab.model.LabModel"})

    def param_count(self) -> int:
        """Parameters Ψ, counted from :func:`param_shapes`."""
        return sum(math.prod(shape) for shape in param_shapes(self).values())


def expert_capacity(tokens_per_group: int, n_experts: int, capacity_factor: float) -> int:
    """Tokens one expert takes from a group: ``ceil(capacity_factor · tokens / E)``.

    Switch Transformer (Fedus et al. 2022, arXiv 2101.03961), Sec. 2.1, "expert capacity".
    """
    t = check_int("tokens_per_group", tokens_per_group)
    e = check_int("n_experts", n_experts)
    return math.ceil(check_positive("capacity_factor", capacity_factor) * t / e)


def moe_dispatch_elements(groups: int, n_experts: int, capacity: int, hidden: int) -> int:
    """Values in the dispatched tensor ``[E, G, C, h]`` of one MoE layer: ``E · G · C · h``.

    GShard (Lepikhin et al. 2021, Sec. 2.2, Algorithm 1): each group's tokens go to
    ``C`` slots of each of ``E`` experts. Sharded over ``n`` devices by group before the
    dispatch and by expert after it, every device sends and receives ``1/n`` of it in one
    all-to-all; the combine, and the backward pass of each, is another all-to-all of the
    same size: four per MoE layer and step.
    """
    return (check_int("groups", groups) * check_int("n_experts", n_experts)
            * check_int("capacity", capacity) * check_int("hidden", hidden))


def param_shapes(m: LabModel) -> dict[str, tuple[int, ...]]:
    """Every parameter's shape by path (``"layers.0.wqkv"``), in a fixed order."""
    h, f, V, s = m.hidden, m.ffn, m.vocab, m.seq_len
    shapes: dict[str, tuple[int, ...]] = {"wte": (V, h), "wpe": (s, h)}
    for i in range(m.n_layers):
        p = f"layers.{i}."
        shapes |= {p + "ln1_g": (h,), p + "ln1_b": (h,), p + "wqkv": (h, 3 * h),
                   p + "bqkv": (3 * h,), p + "wo": (h, h), p + "bo": (h,),
                   p + "ln2_g": (h,), p + "ln2_b": (h,)}
        if m.moe and i == m.moe_layer:
            E = m.n_experts
            shapes |= {p + "router": (h, E), p + "ew1": (E, h, f), p + "eb1": (E, f),
                       p + "ew2": (E, f, h), p + "eb2": (E, h)}
        else:
            shapes |= {p + "w1": (h, f), p + "b1": (f,), p + "w2": (f, h), p + "b2": (h,)}
    shapes |= {"lnf_g": (h,), "lnf_b": (h,), "head": (h, V)}
    return shapes


def init_params(m: LabModel, seed: int = 0) -> dict[str, np.ndarray]:
    """Parameters as a flat dict of float32 arrays: weights N(0, 0.02²) (GPT-2), the
    output projections scaled by 1/sqrt(2 l), LayerNorm gains 1, biases 0.

    Drawn with numpy (host arrays: ``jax.device_put`` places them under any sharding),
    so that starting a model compiles nothing.
    """
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    params = {}
    for name, shape in param_shapes(m).items():
        last = name.rsplit(".", 1)[-1]
        if last.endswith("_g"):
            params[name] = np.ones(shape, np.float32)
        elif last.startswith(("b", "eb")) or last.endswith("_b"):
            params[name] = np.zeros(shape, np.float32)
        else:
            scale = 0.02 / math.sqrt(2 * m.n_layers) if last in ("wo", "w2", "ew2") else 0.02
            params[name] = (scale * rng.standard_normal(shape)).astype(np.float32)
    return params


def init_opt_state(params: dict[str, Any]) -> dict[str, Any]:
    """Adam's state: first and second moments (zeros like the parameters) and the step."""
    return {"m": {k: np.zeros_like(v) for k, v in params.items()},
            "v": {k: np.zeros_like(v) for k, v in params.items()},
            "step": np.zeros((), np.int32)}


def batch(m: LabModel, seed: int = 0) -> np.ndarray:
    """``[batch, seq_len + 1]`` int32 tokens: inputs are ``[:, :-1]``, targets ``[:, 1:]``."""
    rng = np.random.default_rng(10_000 + check_int("seed", seed, minimum=0))
    return rng.integers(0, m.vocab, (m.batch, m.seq_len + 1), dtype=np.int32)


def _identity(x, _where: str):
    return x


@dataclass(frozen=True)
class Hooks:
    """Where a sharding pins activations and gathers weights (identity by default).

    ``act(x, where)`` is called on the residual stream (``"residual"``), on a block's
    input to its first matrix multiply (``"block_in"``), on the attention's query, key and
    value heads (``"heads"``: ``[b, s, a, 3, h/a]``), on the input of a block's second
    matrix multiply (``"inner"``: the attention output or the MLP's 4h hidden), on a
    block's output before the residual add (``"block_out"``), on the final hidden state
    (``"head_in"``) and on the MoE layer's ``[E, G, C, h]`` slots, laid out by expert
    (``"dispatch"``, where the experts compute) or by group (``"combine"``, where the
    tokens live). ``weights(layer_params)`` may gather a layer's sharded weights (ZeRO-3);
    ``remat`` recomputes each layer in the backward pass (``jax.checkpoint``), so the
    gathered weights are not kept.
    """


    act: Callable[[Any, str], Any] = _identity
    weights: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda p: p)
    remat: bool = False


def _layer_norm(x, g, b):
    jnp = jax_module().numpy
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * (1.0 / jnp.sqrt(var + 1e-5)) * g + b


def _attention(m: LabModel, p, y, hooks: Hooks):
    jax = jax_module()
    jnp = jax.numpy
    b, s, _ = y.shape
    qkv = hooks.act((y @ p["wqkv"] + p["bqkv"]).reshape(b, s, m.n_heads, 3, m.head_dim),
                    "heads")
    q, k, v = qkv[:, :, :, 0], qkv[:, :, :, 1], qkv[:, :, :, 2]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(m.head_dim)
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    probs = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
    return hooks.act(jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, m.hidden), "inner")


def _mlp(p, y, hooks: Hooks):
    jax = jax_module()
    return hooks.act(jax.nn.gelu(y @ p["w1"] + p["b1"]), "inner") @ p["w2"]


def _moe(m: LabModel, p, y, hooks: Hooks):
    """Top-1 mixture of experts over groups = sequences (GShard's dispatch/combine)."""
    jax = jax_module()
    jnp = jax.numpy
    E, C = m.n_experts, m.capacity
    gates = jax.nn.softmax(y @ p["router"], axis=-1)                  # [G, T, E]
    expert = jnp.argmax(gates, axis=-1)                                 # [G, T]
    onehot = jax.nn.one_hot(expert, E, dtype=y.dtype)                   # [G, T, E]
    position = (jnp.cumsum(onehot, axis=1) - 1.0) * onehot              # slot within expert
    kept = onehot * (position < C)
    slot = jax.nn.one_hot(position.sum(-1).astype(jnp.int32), C, dtype=y.dtype)  # [G, T, C]
    # routing decisions carry no gradient (argmax); only the gate values do, via combine
    kept = jax.lax.stop_gradient(kept)
    dispatch = jax.lax.stop_gradient(kept[..., None] * slot[:, :, None, :])  # [G, T, E, C]
    combine = dispatch * (gates * kept).sum(-1)[..., None, None]
    # each group fills its experts' slots where the group lives ("combine": group-sharded),
    # then the slots move to the experts' devices ("dispatch": expert-sharded)
    x = hooks.act(hooks.act(jnp.einsum("gtec,gth->egch", dispatch, y), "combine"), "dispatch")
    hidden = jax.nn.gelu(jnp.einsum("egch,ehf->egcf", x, p["ew1"]) + p["eb1"][:, None, None])
    out = jnp.einsum("egcf,efh->egch", hidden, p["ew2"]) + p["eb2"][:, None, None]
    out = hooks.act(hooks.act(out, "dispatch"), "combine")
    return jnp.einsum("gtec,egch->gth", combine, out)


def _block(m: LabModel, i: int, p, x, hooks: Hooks):
    p = hooks.weights(p)
    y = hooks.act(_layer_norm(x, p["ln1_g"], p["ln1_b"]), "block_in")
    x = hooks.act(x + hooks.act(_attention(m, p, y, hooks) @ p["wo"], "block_out") + p["bo"],
                  "residual")
    y = hooks.act(_layer_norm(x, p["ln2_g"], p["ln2_b"]), "block_in")
    if m.moe and i == m.moe_layer:
        return hooks.act(x + _moe(m, p, y, hooks), "residual")
    return hooks.act(x + hooks.act(_mlp(p, y, hooks), "block_out") + p["b2"], "residual")


def loss(m: LabModel, params: dict[str, Any], tokens, hooks: Hooks | None = None):
    """Mean next-token cross-entropy of ``tokens`` (``[b, s + 1]``)."""
    jax = jax_module()
    jnp = jax.numpy
    hooks = hooks or Hooks()
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    x = hooks.act(params["wte"][inputs] + params["wpe"], "residual")
    for i in range(m.n_layers):
        prefix = f"layers.{i}."
        layer = {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}

        def block(lp, x, i=i):
            return _block(m, i, lp, x, hooks)

        x = (jax.checkpoint(block) if hooks.remat else block)(layer, x)
    x = hooks.act(_layer_norm(x, params["lnf_g"], params["lnf_b"]), "head_in")
    logits = x @ params["head"]
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


def train_step(m: LabModel, params, opt_state, tokens, hooks: Hooks | None = None,
               shard_update: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
               shard_grads: Callable[[dict[str, Any]], dict[str, Any]] | None = None):
    """One step of Adam (Kingma & Ba 2015, Algorithm 1): ``(params, opt_state, loss)``.

    ``shard_grads`` and ``shard_update`` let ZeRO pin the gradients and the update to
    their shards (reduce-scatter, sharded update, all-gather of the new weights).
    """
    jax = jax_module()
    jnp = jax.numpy
    value, grads = jax.value_and_grad(lambda p: loss(m, p, tokens, hooks))(params)
    if shard_grads is not None:
        grads = shard_grads(grads)
    step = opt_state["step"] + 1
    t = step.astype(jnp.float32)
    lr, b1, b2, eps = ADAM["lr"], ADAM["b1"], ADAM["b2"], ADAM["eps"]
    mom = {k: b1 * opt_state["m"][k] + (1 - b1) * g for k, g in grads.items()}
    var = {k: b2 * opt_state["v"][k] + (1 - b2) * g * g for k, g in grads.items()}
    scale = lr * jnp.sqrt(1 - b2**t) / (1 - b1**t)
    update = {k: scale * mom[k] / (jnp.sqrt(var[k]) + eps) for k in params}
    if shard_update is not None:
        update = shard_update(update)
    new = {k: params[k] - update[k] for k in params}
    return new, {"m": mom, "v": var, "step": step}, value
