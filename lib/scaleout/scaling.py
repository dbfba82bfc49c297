"""Scale-up limits: how many GPUs it takes merely to *hold* a model, and what one domain holds.

A model's bytes must sit in GPU memory (HBM) before any training step can run.
This module counts the GPUs that takes: a lower bound on any cluster, before
activations, buffers and the network are considered.

Sources
-------
* Bytes of model state: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations
  Toward Training Trillion Parameter Models" (arXiv 1910.02054), Sec. 3.1:
  mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes per parameter; the paper's
  own example is a 1.5B-parameter GPT-2 needing 24 GB of model state, more than
  a 32 GB V100 can spare. Computed by :func:`scaleout.memory.model_state_breakdown`.
* Capacities: each GPU's HBM and each system's GPU count come from the
  vendors' datasheets cited entry by entry in ``data/gpus.toml`` and
  ``data/systems.toml``.

Taught in ``notebooks/01_scale_up_limits.ipynb``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import catalog, memory
from .catalog import GPU, ModelSpec, System
from .checks import MAX_GPUS, check_choice, check_positive, check_range

__all__ = [
    "LANDMARKS",
    "HoldingPlan",
    "gpus_to_hold",
    "holding_plan",
    "landmark_models",
    "largest_gpu_by",
    "largest_system",
    "model_params",
    "scaleup_domain_bytes",
    "system_hbm_bytes",
]

#: Milestones of model size (catalog names): the largest dense models of their years.
LANDMARKS = ("gpt2-1.5b", "gpt3-175b", "megatron-1t", "llama3-405b")

def model_params(model: str | ModelSpec) -> float:
    """The parameter count used for a model: the one its source states, else our count.

    Published counts (``params_published`` in ``data/models.toml``, e.g. 175e9 for
    GPT-3) are what papers and people quote; models without one are counted by
    :func:`scaleout.memory.param_count` (Megatron-LM Eq. 2, generalised).
    """
    m = catalog.model(model)
    return float(m.params_published) if m.params_published else float(memory.param_count(m))


def gpus_to_hold(n_bytes: float, gpu: str | GPU, usable_fraction: float = 1.0) -> int:
    """The fewest GPUs whose HBM together holds ``n_bytes``: ``ceil(n_bytes / capacity)``.

    A counting (pigeonhole) bound with the capacity from the GPU's datasheet
    (``data/gpus.toml``): the bytes must be *somewhere*, and no GPU holds more
    than its HBM. It is a lower bound for training, because it ignores
    activations, communication buffers, the CUDA context and fragmentation
    (ZeRO, arXiv 1910.02054, Sec. 3.2 calls these the "residual states").

    Parameters
    ----------
    n_bytes
        Bytes to hold, e.g. :func:`scaleout.memory.weights_bytes` of a model.
    gpu
        A catalog name (``"A100"``) or a :class:`~scaleout.catalog.GPU`.
    usable_fraction
        Share of the HBM available to the model (0 < f <= 1), for a what-if
        such as "the framework keeps 10 % for itself" (0.9).

    Examples
    --------
    GPT-3's fp16 weights, 350e9 bytes, on 80 GiB A100s: 350e9 / 85.9e9 = 4.07,
    so 5 GPUs.
    """
    check_positive("n_bytes", n_bytes)
    if check_range("usable_fraction", usable_fraction, 0.0, 1.0) == 0:
        raise ValueError("usable_fraction must be a number > 0 and <= 1, got 0")
    capacity = catalog.gpu(gpu).hbm_bytes * usable_fraction
    if n_bytes / capacity > MAX_GPUS:
        raise ValueError(f"n_bytes={n_bytes:.3g} at usable_fraction={usable_fraction:g} would need "
                         f"{n_bytes / capacity:.3g} GPUs, more than the workbook's range "
                         f"(scaleout.checks.MAX_GPUS = {MAX_GPUS:,})")
    count = max(1, math.ceil(n_bytes / capacity))
    # the division may round up past a whole number (by one ulp at most): exactly k GPUs'
    # worth needs k GPUs; one correction step, so the cost is O(1) at any size
    if count > 1 and (count - 1) * capacity >= n_bytes:
        count -= 1
    return count


def scaleup_domain_bytes(gpu: str | GPU) -> float:
    """HBM of one scale-up domain as usually built: ``scaleup_domain_gpus x hbm_bytes``.

    8 GPUs for an HGX/DGX board, 72 for a GB200 NVL72 rack (``data/gpus.toml``).
    """
    g = catalog.gpu(gpu)
    return g.scaleup_domain_gpus * g.hbm_bytes


def system_hbm_bytes(system: str | System) -> float:
    """Total HBM of a scale-up system: its GPU count times one GPU's HBM.

    DGX H100: 8 x 80 GiB = 640 GiB; GB200 NVL72: 72 x 186 GiB = 13,392 GiB, which
    NVIDIA's datasheet prints as "13.4 TB" (its HBM "GB" are GiB, see
    ``data/gpus.toml``). Figures from ``data/systems.toml`` and ``data/gpus.toml``.
    """
    s = catalog.system(system)
    return s.gpus * catalog.gpu(s.gpu).hbm_bytes


def largest_system() -> System:
    """The catalog system with the most HBM in one scale-up domain (GB200 NVL72 today)."""
    return max(catalog.systems(), key=system_hbm_bytes)


def largest_gpu_by(year: int) -> GPU:
    """The catalog GPU with the most HBM available in or before ``year``.

    Raises
    ------
    ValueError
        If the catalog holds no GPU that old.
    """
    found = [g for g in catalog.gpus() if g.year <= year]
    if not found:
        first = min(g.year for g in catalog.gpus())
        raise ValueError(f"year must be >= {first} (the catalog's oldest GPU), got {year!r}")
    return max(found, key=lambda g: (g.hbm_gib, g.year))


def landmark_models(names: tuple[str, ...] | list[str] = LANDMARKS) -> list[ModelSpec]:
    """Milestone models with a year and a published parameter count, oldest first.

    By default :data:`LANDMARKS`: GPT-2 1.5B (2019), GPT-3 175B (2020),
    Megatron-LM's 1T configuration (2021) and Llama 3 405B (2024), each from
    ``data/models.toml`` with its source.

    Raises
    ------
    ValueError
        For an unknown name, or a model without ``year`` or ``params_published``.
    """
    found: dict[str, ModelSpec] = {}
    for name in names:
        m = catalog.model(name)
        if m.year is None or m.params_published is None:
            raise ValueError(
                f"model {m.name!r} needs a year and params_published to be a landmark"
            )
        found[m.name] = m
    return sorted(found.values(), key=lambda m: (m.year, m.params_published))


@dataclass(frozen=True)
class HoldingPlan:
    """What it takes to hold one model on one kind of GPU (bytes and GPU counts).

    ``weights`` alone is what inference needs at the recipe's weight precision;
    ``state`` adds gradients and optimizer state (ZeRO's "model states"),
    what training needs before activations.
    """

    model: ModelSpec
    gpu: GPU
    recipe: memory.PrecisionRecipe
    params: float
    weights: float
    grads: float
    optimizer: float
    gpus_for_weights: int
    gpus_for_state: int

    @property
    def state(self) -> float:
        """Weights + gradients + optimizer state, bytes."""
        return self.weights + self.grads + self.optimizer

    @property
    def domain_gpus(self) -> int:
        """GPUs in this GPU's usual scale-up domain (8, or 72 for GB200 NVL72)."""
        return self.gpu.scaleup_domain_gpus

    @property
    def domain_bytes(self) -> float:
        """HBM of that scale-up domain, bytes (:func:`scaleup_domain_bytes`)."""
        return scaleup_domain_bytes(self.gpu)

    @property
    def weights_fit_gpu(self) -> bool:
        """Whether one GPU holds the weights."""
        return self.gpus_for_weights == 1

    @property
    def state_fits_gpu(self) -> bool:
        """Whether one GPU holds the whole training state."""
        return self.gpus_for_state == 1

    @property
    def weights_fit_domain(self) -> bool:
        """Whether one scale-up domain holds the weights."""
        return self.gpus_for_weights <= self.domain_gpus

    @property
    def state_fits_domain(self) -> bool:
        """Whether one scale-up domain holds the whole training state."""
        return self.gpus_for_state <= self.domain_gpus


def holding_plan(
    model: str | ModelSpec,
    gpu: str | GPU,
    recipe: str | memory.PrecisionRecipe = "mixed-adam",
) -> HoldingPlan:
    """Bytes and GPUs to hold a model's weights, and its full training state, on one GPU kind.

    Parameters come from :func:`model_params`; the bytes from
    :func:`scaleout.memory.model_state_breakdown` without sharding (ZeRO
    stage 0, one replica: the whole model state, ZeRO Sec. 3.1); the GPU
    counts from :func:`gpus_to_hold`. For GPT-3 with ``"mixed-adam"`` on an
    80 GiB A100: 350 GB of weights (5 GPUs), 2.8 TB of state (33 GPUs).
    """
    m = catalog.model(model)
    g = catalog.gpu(gpu)
    if isinstance(recipe, memory.PrecisionRecipe):
        r = recipe
    else:
        r = memory.RECIPES[check_choice("recipe", recipe, memory.RECIPES)]
    params = model_params(m)
    state = memory.model_state_breakdown(params, zero_stage=0, dp=1, recipe=r)
    return HoldingPlan(
        model=m,
        gpu=g,
        recipe=r,
        params=params,
        weights=state.weights,
        grads=state.grads,
        optimizer=state.optimizer,
        gpus_for_weights=gpus_to_hold(state.weights, g),
        gpus_for_state=gpus_to_hold(state.total, g),
    )
