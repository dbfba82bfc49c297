"""Ways to shard the lab's model over a device mesh of ``data × model`` devices.

Each sharding says, for every parameter, optimizer state, the batch and a few
activations, which mesh axis splits which dimension (a ``PartitionSpec``); JAX's SPMD
partitioner (the GSPMD compiler, Xu et al. 2021, arXiv 2105.04663) then inserts the
collectives. The layouts are the textbook ones:

=========  ==================================================================================
name       what is split
=========  ==================================================================================
``dp``     the batch over ``data``; every device holds everything else (data parallelism)
``zero1``  as ``dp``, and Adam's moments over ``data`` (ZeRO stage 1, ``P_os``)
``zero2``  as ``zero1``, and the gradients over ``data`` (ZeRO stage 2, ``P_os+g``)
``zero3``  as ``zero2``, and the weights over ``data``, gathered layer by layer and again
           in the backward pass (ZeRO stage 3, ``P_os+g+p``; PyTorch FSDP)
``tp``     Megatron-LM: QKV and the first MLP matrix by columns, the attention output and
           the second MLP matrix by rows, over ``model`` (Shoeybi et al. 2019, Sec. 3)
``sp``     ``tp``, and the residual stream, norms and dropouts by sequence over ``model``
           (Korthikanti et al. 2022, Sec. 4.2.2)
``tp_dp``  2-D: ``tp`` over ``model`` and the batch over ``data`` (Narayanan et al. 2021)
``ep``     expert parallelism: the experts of the MoE layer over ``data``, the batch over
           ``data``, the rest replicated (GShard, Lepikhin et al. 2021, Sec. 2.2)
=========  ==================================================================================

Rules a mesh must follow are checked by :func:`check_layout` with a message that names
what is wrong and what is allowed. JAX is imported inside :func:`build` only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..checks import check_choice, check_int
from .model import Hooks, LabModel, param_shapes

__all__ = ["AXES", "SHARDINGS", "Layout", "check_layout", "mesh_options", "parse_mesh",
           "per_device_params"]

#: The mesh's two axes: data parallelism (and ZeRO, experts), then tensor parallelism.
AXES = ("data", "model")

#: Every sharding and what it splits.
SHARDINGS = {
    "dp": "data parallel: the batch split, everything else replicated",
    "zero1": "ZeRO-1: data parallel, Adam's moments sharded",
    "zero2": "ZeRO-2: data parallel, moments and gradients sharded",
    "zero3": "ZeRO-3 / FSDP: moments, gradients and weights sharded; weights gathered per layer",
    "tp": "Megatron tensor parallel: column- then row-split matrix multiplies",
    "sp": "Megatron tensor + sequence parallel: the rest split by sequence",
    "tp_dp": "2-D: tensor parallel inside, data parallel across",
    "ep": "expert parallel: the MoE layer's experts split, tokens sent by all-to-all",
}
#: Shardings that use only the ``data`` axis, only the ``model`` axis, or both.
DATA_ONLY = ("dp", "zero1", "zero2", "zero3", "ep")
MODEL_ONLY = ("tp", "sp")
ZERO_STAGE = {"dp": 0, "zero1": 1, "zero2": 2, "zero3": 3}
# Megatron's split: columns of QKV and the first MLP matrix (and their biases), rows of the
# attention output and the second MLP matrix
_TP_SPLIT = {"wqkv": 1, "bqkv": 0, "w1": 1, "b1": 0, "wo": 0, "w2": 0}
_EXPERT_PARAMS = ("ew1", "eb1", "ew2", "eb2")


@dataclass(frozen=True)
class Layout:
    """A sharding on a mesh of ``data × model`` devices."""

    sharding: str
    data: int
    model: int

    @property
    def n_devices(self) -> int:
        """``data × model``."""
        return self.data * self.model

    @property
    def mesh_label(self) -> str:
        """``"2 × 4"`` (data × model)."""
        return f"{self.data} × {self.model}"

    @property
    def label(self) -> str:
        """``"tp_dp on 2 × 4 (data × model)"``."""
        return f"{self.sharding} on {self.mesh_label} (data × model)"

    @property
    def zero_stage(self) -> int | None:
        """The ZeRO stage of ``dp`` and ``zero1-3``; None for the others."""
        return ZERO_STAGE.get(self.sharding)


def parse_mesh(mesh) -> tuple[int, int]:
    """``(data, model)`` from ``"2x4"``, ``"2 × 4"``, ``(2, 4)`` or a single count ``8``
    (all on ``data``)."""
    if isinstance(mesh, str):
        parts = [p for p in re.split(r"\s*[x×*,]\s*", mesh.strip()) if p]
        if len(parts) in (1, 2) and all(p.isdigit() for p in parts):
            nums = [int(p) for p in parts]
            return (nums[0], 1) if len(nums) == 1 else (nums[0], nums[1])
        raise ValueError(f"mesh must look like '2x4' (data × model devices), got {mesh!r}")
    if isinstance(mesh, tuple | list) and len(mesh) == 2:
        return (check_int("mesh data axis", mesh[0]), check_int("mesh model axis", mesh[1]))
    if isinstance(mesh, int) and not isinstance(mesh, bool):
        return (check_int("mesh", mesh), 1)
    raise ValueError(f"mesh must be 'DATAxMODEL' such as '2x4', a pair (2, 4) or a count, "
                     f"got {mesh!r}")


def _zero_dim(shape: tuple[int, ...], n: int) -> int | None:
    """The dimension ZeRO splits a parameter along: the first one ``n`` divides."""
    return next((d for d, size in enumerate(shape) if size % n == 0), None)


def check_layout(m: LabModel, sharding: str, mesh, n_devices: int | None = None) -> Layout:
    """Check a sharding and mesh against the model and the devices; returns the :class:`Layout`.

    Raises
    ------
    ValueError
        An unknown sharding (with close names); a mesh that uses the wrong axes for the
        sharding, that does not divide the devices (``n_devices``) or a dimension it must
        split (batch, heads, sequence, experts, a parameter under ZeRO); a MoE model under
        tensor parallelism, or ``ep`` without experts.
    """
    sharding = check_choice("sharding", sharding, SHARDINGS)
    data, model = parse_mesh(mesh)
    layout = Layout(sharding, data, model)
    shown = layout.mesh_label
    if sharding in DATA_ONLY and model != 1:
        raise ValueError(f"sharding {sharding!r} splits over the data axis only: the mesh must "
                         f"be N × 1, got {shown}; use 'tp_dp' for two axes")
    if sharding in MODEL_ONLY and data != 1:
        raise ValueError(f"sharding {sharding!r} splits over the model axis only: the mesh "
                         f"must be 1 × N, got {shown}; use 'tp_dp' for two axes")
    if n_devices is not None:
        n = check_int("n_devices", n_devices)
        if layout.n_devices > n or n % layout.n_devices:
            fits = [k for k in range(1, n + 1) if n % k == 0]
            raise ValueError(f"mesh {shown} uses {layout.n_devices} devices, which does not "
                             f"divide the {n} devices JAX sees; allowed device counts: "
                             f"{', '.join(map(str, fits))}")
    _check_divides("mesh data axis", data, "batch", m.batch)
    if sharding in ("tp", "sp", "tp_dp"):
        if m.moe:
            raise ValueError(f"sharding {sharding!r}: the lab does not split a MoE layer by "
                             "tensor parallelism; use 'ep' (or 'dp', 'zero1-3') for a MoE model")
        _check_divides("mesh model axis", model, "n_heads", m.n_heads)
    if sharding == "sp":
        _check_divides("mesh model axis", model, "seq_len", m.seq_len)
    if sharding == "ep":
        if not m.moe:
            raise ValueError("sharding 'ep' needs a mixture-of-experts layer: a model with "
                             "n_experts > 0")
        _check_divides("mesh data axis", data, "n_experts", m.n_experts)
    if sharding in ("zero1", "zero2", "zero3"):
        for name, shape in param_shapes(m).items():
            if _zero_dim(shape, data) is None:
                raise ValueError(f"sharding {sharding!r}: mesh data axis {data} divides no "
                                 f"dimension of parameter {name} {shape}; choose a data axis "
                                 f"that divides {math.gcd(*shape)}")
    return layout


def _check_divides(name: str, n: int, what: str, total: int) -> None:
    if total % n:
        allowed = [k for k in range(1, total + 1) if total % k == 0]
        raise ValueError(f"{name}={n} must divide {what}={total}; allowed: "
                         f"{', '.join(map(str, allowed))}")


def mesh_options(m: LabModel, sharding: str, n_devices: int) -> list[str]:
    """Meshes (``"2 × 4"``) on which ``sharding`` is valid for ``m`` with ``n_devices``."""
    out = []
    for k in range(1, n_devices + 1):
        if n_devices % k:
            continue
        for data in (d for d in range(1, k + 1) if k % d == 0):
            try:
                out.append(check_layout(m, sharding, (data, k // data), n_devices).mesh_label)
            except ValueError:
                continue
    return out


def param_spec(layout: Layout, m: LabModel, name: str, shape: tuple[int, ...],
               zero_sharded: bool) -> tuple:
    """A parameter's partition as a tuple of axis names (or None) per dimension."""
    spec: list[str | None] = [None] * len(shape)
    last = name.rsplit(".", 1)[-1]
    if layout.sharding in ("tp", "sp", "tp_dp") and last in _TP_SPLIT:
        spec[_TP_SPLIT[last]] = "model"
    elif layout.sharding == "ep" and last in _EXPERT_PARAMS:
        spec[0] = "data"
    elif zero_sharded:
        dim = _zero_dim(shape, layout.data)
        if dim is not None and layout.data > 1:
            spec[dim] = "data"
    return tuple(spec)


def per_device_params(m: LabModel, layout: Layout) -> dict[str, float]:
    """Parameters one device holds under ``layout``: ``held`` in total, of which ``split``
    (divided over an axis) and ``replicated`` (a full copy on every device)."""
    held = split = replicated = 0.0
    for name, shape in param_shapes(m).items():
        spec = param_spec(layout, m, name, shape, layout.sharding == "zero3")
        size = math.prod(shape)
        ways = math.prod({"data": layout.data, "model": layout.model}[a] for a in spec if a)
        held += size / ways
        if ways > 1:
            split += size / ways
        else:
            replicated += size
    return {"held": held, "split": split, "replicated": replicated}


@dataclass(frozen=True)
class Built:
    """A layout made concrete for JAX: the mesh, the shardings of every input, the hooks."""

    layout: Layout
    mesh: Any
    params: dict[str, Any]
    opt_state: dict[str, Any]
    tokens: Any
    replicated: Any
    hooks: Hooks
    shard_grads: Any
    shard_update: Any


def build(m: LabModel, layout: Layout) -> Built:
    """Mesh, ``NamedSharding`` s and hooks for ``layout`` (imports JAX)."""
    from .devices import jax_module

    jax = jax_module()
    import numpy as np
    from jax.sharding import AxisType, Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices("cpu")
    if layout.n_devices > len(devices):
        raise ValueError(f"mesh {layout.mesh_label} needs {layout.n_devices} devices; JAX sees "
                         f"{len(devices)} (scaleout.lab.devices.use_devices)")
    grid = np.array(devices[:layout.n_devices]).reshape(layout.data, layout.model)
    mesh = Mesh(grid, AXES, axis_types=(AxisType.Auto, AxisType.Auto))

    def named(spec: tuple) -> Any:
        return NamedSharding(mesh, P(*spec))

    s = layout.sharding
    shapes = param_shapes(m)
    zero_w, zero_os = s == "zero3", s in ("zero1", "zero2", "zero3")
    params = {k: named(param_spec(layout, m, k, sh, zero_w)) for k, sh in shapes.items()}
    state = {k: named(param_spec(layout, m, k, sh, zero_os)) for k, sh in shapes.items()}
    rep = named(())
    opt = {"m": state, "v": dict(state), "step": rep}
    tokens = named(("data", None))

    def pin(x, spec: tuple):
        return jax.lax.with_sharding_constraint(x, named(spec))

    act_specs: dict[str, tuple] = {}
    if s in ("tp", "tp_dp", "sp"):
        # Megatron: heads and the MLP's hidden split over "model"; the partial sums of the
        # row-split multiplies all-reduced (tp) or reduce-scattered by sequence (sp)
        seq = "model" if s == "sp" else None
        act_specs = {"residual": ("data", seq, None), "block_in": ("data", None, None),
                     "heads": ("data", None, "model", None, None),
                     "inner": ("data", None, "model"), "block_out": ("data", seq, None),
                     "head_in": ("data", None, None)}
    elif s == "ep":
        act_specs = {"residual": ("data", None, None), "dispatch": ("data", None, None, None),
                     "combine": (None, "data", None, None)}

    def act(x, where: str):
        spec = act_specs.get(where)
        return x if spec is None else pin(x, spec)

    def gather(p: dict[str, Any]) -> dict[str, Any]:
        return {k: pin(v, ()) for k, v in p.items()}

    hooks = Hooks(act=act, weights=gather if zero_w else (lambda p: p), remat=zero_w)

    def to_state(tree: dict[str, Any]) -> dict[str, Any]:
        return {k: pin(v, param_spec(layout, m, k, shapes[k], True)) for k, v in tree.items()}

    return Built(layout, mesh, params, opt, tokens, rep, hooks,
                 shard_grads=to_state if s in ("zero2", "zero3") else None,
                 shard_update=to_state if zero_os else None)
