"""Compile the lab's training step under a sharding, read what XLA made of it, run it.

:func:`compile_step` builds the sharded step (:mod:`scaleout.lab.shardings`), lowers and
compiles it with ``jax.jit``, and keeps the program's collectives and memory
(:mod:`scaleout.lab.hlo`). :func:`run_losses` runs a few real steps and returns the
losses, so every sharding can be checked to compute the same thing. Compiled steps are
kept per (model, layout) for the life of the process; JAX's persistent cache
(:func:`scaleout.lab.devices.use_devices`) keeps them across processes.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks import check_int
from . import hlo, model, shardings
from .devices import jax_module
from .model import LabModel
from .shardings import Layout

__all__ = ["CompiledStep", "compile_step", "reference_losses", "run_losses"]


@dataclass(frozen=True, eq=False)
class CompiledStep:
    """A compiled, sharded training step and what XLA put in it."""

    model: LabModel
    layout: Layout
    collectives: tuple[hlo.Collective, ...]
    memory: hlo.MemoryStats
    compile_s: float
    hlo_text: str = field(repr=False)
    _run: Any = field(repr=False)

    @property
    def by_kind(self) -> dict[str, dict[str, float]]:
        """Count and bytes per collective kind (:func:`scaleout.lab.hlo.collectives_by_kind`)."""
        return hlo.collectives_by_kind(self.collectives)

    @property
    def total_bytes(self) -> float:
        """Bytes of every collective of one step (nccl-tests sizes, summed)."""
        return float(sum(c.size_bytes for c in self.collectives))

    def axis_of(self, c: hlo.Collective) -> str:
        """Which mesh axis a collective's groups run along: ``"data"``, ``"model"``,
        ``"all"`` (both), ``"none"`` (groups of one) or ``"other"``."""
        d, t = self.layout.data, self.layout.model
        ids = np.arange(d * t).reshape(d, t)
        groups = {tuple(sorted(g)) for g in c.groups}
        along = {"data": {tuple(col) for col in ids.T}, "model": {tuple(row) for row in ids},
                 "all": {tuple(range(d * t))}}
        if all(len(g) == 1 for g in groups):
            return "none"
        for name in ("model", "data", "all"):
            if groups == along[name]:
                return name
        return "other"


_CACHE: dict[tuple[LabModel, Layout], CompiledStep] = {}


def compile_step(m: LabModel, layout: Layout | str, mesh=None, *, seed: int = 0) -> CompiledStep:
    """Compile one training step of ``m`` under ``layout`` (or a sharding name and ``mesh``).

    The layout is checked first (:func:`scaleout.lab.shardings.check_layout`) against the
    devices JAX sees; a bad one is a ``ValueError`` before anything compiles.
    """
    jax = jax_module()
    n = len(jax.devices("cpu"))
    if isinstance(layout, str):
        layout = shardings.check_layout(m, layout, mesh if mesh is not None else (n, 1), n)
    else:
        layout = shardings.check_layout(m, layout.sharding, (layout.data, layout.model), n)
    key = (m, layout)
    if key in _CACHE:
        return _CACHE[key]
    built = shardings.build(m, layout)

    def step(params, opt_state, tokens):
        return model.train_step(m, params, opt_state, tokens, built.hooks,
                                shard_update=built.shard_update, shard_grads=built.shard_grads)

    jitted = jax.jit(step, in_shardings=(built.params, built.opt_state, built.tokens),
                     out_shardings=(built.params, built.opt_state, built.replicated))
    params = model.init_params(m, seed)
    opt = model.init_opt_state(params)
    tokens = model.batch(m, seed)
    start = time.perf_counter()
    compiled = jitted.lower(params, opt, tokens).compile()
    seconds = time.perf_counter() - start
    text = compiled.as_text()
    result = CompiledStep(m, layout, tuple(hlo.parse_collectives(text, layout.n_devices)),
                          hlo.memory_stats(compiled.memory_analysis()), seconds, text,
                          (compiled, built))
    _CACHE[key] = result
    return result


def run_losses(step: CompiledStep, steps: int = 3, *, seed: int = 0) -> np.ndarray:
    """Run ``steps`` real training steps on one fixed batch; the loss before each step."""
    jax = jax_module()
    steps = check_int("steps", steps, maximum=1000)
    compiled, built = step._run
    m = step.model
    start = model.init_params(m, seed)
    params = jax.device_put(start, built.params)
    opt = jax.device_put(model.init_opt_state(start), built.opt_state)
    tokens = jax.device_put(model.batch(m, seed), built.tokens)
    losses = []
    for _ in range(steps):
        params, opt, value = compiled(params, opt, tokens)
        losses.append(float(value))
    return np.array(losses)


@functools.lru_cache(maxsize=32)
def _reference(m: LabModel, steps: int, seed: int) -> tuple[float, ...]:
    return tuple(run_losses(compile_step(m, "dp", (1, 1), seed=seed), steps, seed=seed))


def reference_losses(m: LabModel, steps: int = 3, *, seed: int = 0) -> np.ndarray:
    """The losses of the same steps on one device, unsharded: what every sharding must match
    (computed once per model, steps and seed)."""
    return np.array(_reference(m, check_int("steps", steps, maximum=1000),
                               check_int("seed", seed, minimum=0)))
