"""Read a compiled XLA program: every collective it runs, and its memory per device.

JAX's ``jit(f).lower(...).compile()`` gives the optimised, SPMD-partitioned HLO module
of one device (``.as_text()``) and its buffer sizes (``.memory_analysis()``). This module
only parses text, so it works (and is tested) without JAX.

Sizes follow nccl-tests' convention, as :mod:`scaleout.collectives` does: ``size_bytes``
is the buffer each device contributes for an all-reduce, the full (unscattered) input
of a reduce-scatter, the gathered output of an all-gather, and the buffer each device
sends for an all-to-all. A tuple collective (XLA's combiner merges many small ones
into one) counts as one collective whose size is the sum of its parts.

Groups are read from ``replica_groups`` in all three forms XLA prints (explicit lists
``{{0,1},{2,3}}``, iota ``[2,2]<=[4]`` or ``[2,2]<=[2,2]T(1,0)``, and mesh axes
``mesh['a'=2,'b'=2] {'b'}``), as lists of the program's logical device ids.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DTYPE_BYTES", "KINDS", "Collective", "MemoryStats", "collectives_by_kind",
           "memory_stats", "parse_collectives", "parse_replica_groups", "shape_bytes"]

#: Collective kinds, as HLO names them (an async pair ``-start``/``-done`` counts once).
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
#: Bytes per element of HLO's element types.
DTYPE_BYTES = {"pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2, "u16": 2,
               "s32": 4, "u32": 4, "s64": 8, "u64": 8, "f16": 2, "bf16": 2, "f32": 4,
               "f64": 8, "c64": 8, "c128": 16, "f8e4m3fn": 1, "f8e5m2": 1}

_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<type>\(.*?\)|[a-z0-9]+\[[^\]]*\](?:\{[^}]*\})?)"
    r"\s+(?P<op>" + "|".join(KINDS) + r")(?P<start>-start)?\((?P<rest>.*)$")
_ARRAY = re.compile(r"(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[0-9,]*)\]")


@dataclass(frozen=True)
class Collective:
    """One collective of a compiled program, as one device runs it."""

    name: str
    kind: str
    dtype: str
    shapes: tuple[tuple[int, ...], ...]
    size_bytes: float
    groups: tuple[tuple[int, ...], ...]
    #: each part's size (nccl-tests convention) when XLA combined several into a tuple
    part_bytes: tuple[float, ...] = ()
    #: JAX's name of the operation it came from (``metadata={op_name=...}``): ``transpose(``
    #: marks the backward pass, ``rematted_computation`` a recomputed (checkpointed) part
    op_name: str = ""

    @property
    def backward(self) -> bool:
        """Whether it belongs to the backward pass (JAX's ``transpose`` of the forward)."""
        return "transpose(" in self.op_name

    @property
    def group_size(self) -> int:
        """Devices in each group (all groups of one collective have the same size)."""
        return len(self.groups[0]) if self.groups else 1

    @property
    def n_groups(self) -> int:
        """How many groups run it at once."""
        return len(self.groups)

    @property
    def elements(self) -> float:
        """``size_bytes`` in elements of ``dtype``."""
        return self.size_bytes / DTYPE_BYTES.get(self.dtype, 1)

    @property
    def shape_text(self) -> str:
        """``"f32[8,32,64]"`` (tuples as ``"f32[64] + f32[64,256] + ..."``)."""
        return " + ".join(f"{self.dtype}[{','.join(map(str, s))}]" for s in self.shapes)


def shape_bytes(dtype: str, dims: Sequence[int]) -> float:
    """Bytes of one array of ``dtype`` and ``dims``."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown HLO element type {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype] * math.prod(dims)


def _arrays(type_text: str) -> list[tuple[str, tuple[int, ...]]]:
    text = re.sub(r"/\*.*?\*/", "", type_text)
    return [(m["dtype"], tuple(int(d) for d in m["dims"].split(",") if d))
            for m in _ARRAY.finditer(text)]


def _braced(text: str, start: int) -> str:
    """The ``{...}`` group starting at ``text[start]``, braces balanced."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i + 1]
    raise ValueError(f"unbalanced braces in {text[start:start + 80]!r}")


def parse_replica_groups(attrs: str, n_devices: int | None = None) -> tuple[tuple[int, ...], ...]:
    """Device groups from an instruction's attributes (``replica_groups=...``).

    Explicit lists, iota lists and mesh-axes lists are understood; an empty list
    ``{}`` means one group of all ``n_devices``. A collective-permute's
    ``source_target_pairs`` count as groups of two.
    """
    at = attrs.find("replica_groups=")
    if at < 0:
        at = attrs.find("source_target_pairs=")
        if at < 0:
            return ((0,),) if n_devices is None else (tuple(range(n_devices)),)
        body = _braced(attrs, attrs.index("{", at))
        return tuple(tuple(int(x) for x in g.split(",") if x.strip())
                     for g in re.findall(r"\{([0-9,\s]*)\}", body[1:-1]))
    text = attrs[at + len("replica_groups="):]
    if text.startswith("{"):
        body = _braced(text, 0)
        groups = tuple(tuple(int(x) for x in g.split(",") if x.strip())
                       for g in re.findall(r"\{([0-9,\s]*)\}", body[1:-1]))
        if not groups:
            if n_devices is None:
                raise ValueError("replica_groups={} (all devices) needs n_devices")
            return (tuple(range(n_devices)),)
        return groups
    m = re.match(r"\[(\d+),(\d+)\]<=\[([0-9,]+)\](?:T\(([0-9,]+)\))?", text)
    if m:
        n_groups, size = int(m[1]), int(m[2])
        dims = [int(d) for d in m[3].split(",")]
        ids = np.arange(math.prod(dims)).reshape(dims)
        if m[4]:
            ids = ids.transpose([int(p) for p in m[4].split(",")])
        return tuple(tuple(int(x) for x in row) for row in ids.reshape(n_groups, size))
    m = re.match(r"mesh\[(?P<axes>[^\]]*)\]\s*\{(?P<over>[^}]*)\}", text)
    if m:
        axes = re.findall(r"'([^']+)'\s*=\s*(\d+)", m["axes"])
        if not axes:
            raise ValueError(f"cannot read mesh axes in replica_groups={text[:80]!r}")
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        over = re.findall(r"'([^']+)'", m["over"])
        unknown = [a for a in over if a not in names]
        if unknown:
            raise ValueError(f"replica_groups names axes {unknown} not in its mesh {names}")
        keep = [i for i, a in enumerate(names) if a not in over]
        moved = [names.index(a) for a in over]
        ids = np.arange(math.prod(sizes)).reshape(sizes).transpose(keep + moved)
        size = math.prod(sizes[i] for i in moved)
        return tuple(tuple(int(x) for x in row) for row in ids.reshape(-1, size))
    raise ValueError(f"unrecognised replica_groups format: {text[:80]!r}; expected "
                     "{{0,1},...}, [G,S]<=[...] or mesh[...] {...}")


def parse_collectives(hlo_text: str, n_devices: int | None = None) -> list[Collective]:
    """Every collective instruction of an HLO module's text, in program order.

    ``-done`` halves of async pairs are skipped (the ``-start`` half is the collective).
    Collectives inside called computations (a ``while`` body) are listed once: the
    lab's model unrolls its layers, so each appears as often as it runs.
    """
    out = []
    for line in hlo_text.splitlines():
        m = _INSTR.match(line)
        if m is None:
            continue
        kind = m["op"]
        arrays = _arrays(m["type"])
        if m["start"] and kind in ("all-gather", "collective-permute") and len(arrays) >= 2:
            # async forms return (operands..., results..., [u32 contexts]): keep the results
            arrays = arrays[1:2] if kind == "collective-permute" else arrays[len(arrays) // 2:]
        if not arrays:
            raise ValueError(f"collective {m['name']}: cannot read its shape from {m['type']!r}")
        groups = parse_replica_groups(m["rest"], n_devices)
        scale = len(groups[0]) if kind == "reduce-scatter" else 1
        parts = tuple(float(shape_bytes(d, s) * scale) for d, s in arrays)
        dtypes = {d for d, _ in arrays}
        op_name = re.search(r'op_name="([^"]*)"', m["rest"])
        out.append(Collective(m["name"], kind, dtypes.pop() if len(dtypes) == 1 else "mixed",
                              tuple(s for _, s in arrays), float(sum(parts)), groups, parts,
                              op_name[1] if op_name else ""))
    return out


def collectives_by_kind(items: Iterable[Collective]) -> dict[str, dict[str, float]]:
    """Per kind: ``count`` and ``size_bytes`` summed over one program (one step)."""
    out: dict[str, dict[str, float]] = {}
    for c in items:
        row = out.setdefault(c.kind, {"count": 0, "size_bytes": 0.0})
        row["count"] += 1
        row["size_bytes"] += c.size_bytes
    return out


@dataclass(frozen=True)
class MemoryStats:
    """Bytes one device needs for a compiled program (XLA's ``memory_analysis``).

    ``argument_bytes`` are the inputs (here parameters, optimizer state, the batch),
    ``output_bytes`` the results, ``alias_bytes`` the outputs that reuse an input's
    buffer (donation), ``temp_bytes`` everything else live at some point (activations,
    gradients, workspace), as XLA's buffer assignment packs them.
    """

    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_bytes: int

    @property
    def peak_bytes(self) -> int:
        """Arguments + outputs not aliased + temporaries: what the device must hold."""
        return self.argument_bytes + self.output_bytes - self.alias_bytes + self.temp_bytes


def memory_stats(analysis) -> MemoryStats:
    """:class:`MemoryStats` from ``compiled.memory_analysis()``."""
    try:
        return MemoryStats(int(analysis.argument_size_in_bytes),
                           int(analysis.output_size_in_bytes),
                           int(analysis.alias_size_in_bytes),
                           int(analysis.temp_size_in_bytes))
    except AttributeError as exc:
        raise ValueError(f"not an XLA memory analysis: {analysis!r} ({exc})") from None
