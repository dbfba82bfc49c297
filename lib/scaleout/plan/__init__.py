"""The parallelism planner: a step-time model of a parallel layout, and a vectorised search.

A *plan* splits the training of one model over ``n = tp × cp × pp × dp`` GPUs:
tensor parallelism (``tp``) splits every matrix, context parallelism (``cp``) every
sequence, pipeline parallelism (``pp``) splits the layers into stages, data parallelism
(``dp``) copies the result and splits the batch; a mixture of experts spreads its experts
over ``ep`` GPUs of each stage (expert parallelism, folded over ``tp × cp × dp``); ZeRO
shards the optimizer state (and more) over the copies;
sequence parallelism, activation recomputation, micro-batch size and the
interleaved schedule trade memory for time. :func:`evaluate` predicts one plan's
memory per GPU and iteration time; :func:`search` evaluates every valid plan at
once, as numpy arrays, and ranks those that fit.

The model of one iteration (busiest pipeline stage, ``m = B / (dp b)`` micro-batches)
-----------------------------------------------------------------------------------
* **Compute**: the FLOPs of :func:`scaleout.compute.forward_flops` (PaLM App. B:
  ``2N + 4lhs`` per token forward, backward twice that) for the stage's layers,
  divided by ``tp``, at a matrix-multiply rate ``η(x) × peak`` where
  ``η(x) = η_max x / (x + x_half)`` and ``x`` is the smaller large dimension of the
  sharded matrix multiplies, ``min(h/tp, b s)``: thin shards run slower
  (Narayanan et al. 2021, Sec. 3.3: "a high degree of model parallelism can
  create small matrix multiplications"). The last stage also runs the output layer.
* **Memory-bound work** (norms, softmax, dropout, GeLU, residuals): the HBM
  traffic of a forward + backward pass is ``κ`` times the activation bytes the
  layer stores (Korthikanti et al. 2022, Table 2, :mod:`scaleout.memory`), at the
  GPU's HBM bandwidth.
* **Recomputation** (Korthikanti et al. 2022, Sec. 5): full recompute repeats the
  forward pass; selective recompute repeats the attention core (``4bs²h`` FLOPs and
  its ``5as²b`` stored bytes).
* **Tensor-parallel communication** (Narayanan et al. 2021, Sec. 3.3; Korthikanti
  Sec. 4.2.2): four all-reduces of ``2bsh`` bytes per layer per micro-batch (two
  forward, two backward; six with full recompute); sequence parallelism turns each
  into a reduce-scatter + all-gather pair of the same cost. Not overlapped.
* **Pipeline**: ``m`` micro-batches at the busiest stage's pace plus the bubble,
  ``(pp - 1)/v`` of an average stage's micro-batch time (:mod:`scaleout.pipeline`,
  Narayanan Sec. 2.2); point-to-point sends of ``2bsh/tp`` bytes (scatter/gather,
  Sec. 4.1), two per micro-batch per model chunk, on the critical path.
* **Data parallelism and ZeRO** (:func:`scaleout.zero.stage_collectives`): an
  all-reduce of the gradients (stage 0), reduce-scatter + all-gather (1, 2), and for
  stage 3 the weights gathered again for every micro-batch's forward and backward;
  hierarchical across nodes (:class:`scaleout.collectives.NodeNetwork`). Exposed
  except for ``Calibration.dp_overlap``.
* **Optimizer step**: Adam reads and writes its state once, memory-bound.
* **Mixtures of experts, context parallelism, FP8, DualPipe**: see
  :mod:`scaleout.plan.step` (active-parameter FLOPs, the all-to-alls of
  :func:`scaleout.moe.layer_comm_time`, ring attention's exposed exchange, the recipe's
  FP8 share at the FP8 peak, DeepSeek-V3's schedule).

Collectives run at ``Calibration.collective_efficiency`` of the links' line rates
(``data/links.toml``). The four numbers of :class:`Calibration` are fitted once,
by :func:`fit_calibration`, to the 18 published measurements :func:`validate` checks
(Korthikanti et al. 2022, Table 5; Narayanan et al. 2021, Table 1) and are then the
same for every model, GPU and layout.

Validity
--------
One table, :data:`scaleout.layout.RULES`, says which layouts are valid: :func:`search`
masks its candidates with it, :func:`evaluate` raises the first rule a plan breaks.

The package
-----------
=================  ==========================================================
``calibration``    :class:`Calibration`, the four fitted efficiencies
``frameworks``     presets: what Megatron, DeepSpeed, FSDP, torchtitan issue and overlap
``network``        :func:`default_network`; derated links; cached collective costs
``step``           the model of one iteration, part by part (:func:`step.iteration`)
``evaluate``       one plan: :func:`evaluate`, :class:`PlanResult`
``stages``         memory of every pipeline rank of one plan: :class:`StageMemory`
``search``         every valid plan at once: :func:`search`, :class:`SearchResult`
``explain``        why the best plan wins, in sentences
``published``      published training runs as cases (model, layout, framework, quantity)
``validation``     :func:`validate`, :func:`fit_calibration`, :func:`cross_validation`,
                   :func:`step_gaps`, :func:`memory_checks`
=================  ==========================================================

Taught in ``notebooks/08_3d_parallelism_planner.ipynb``.
"""

from __future__ import annotations

from ..layout import RECOMPUTE_MODES, Plan
from .calibration import DEFAULT_CALIBRATION, Calibration
from .evaluate import PlanResult, evaluate, plan_from_arrays
from .explain import PART_WORDS, bound, explain
from .frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS, Framework, framework, framework_names
from .network import default_network
from .published import TRAINING
from .search import PLAN_FIELDS, NoPlanError, SearchResult, search
from .stages import StageMemory
from .step import (
    ACTIVATION_BYTES,
    ADAM_TRAFFIC_BYTES_PER_PARAM,
    MEMORY_PARTS,
    RESERVE,
    STEP_PARTS,
    TIGHT_SHARE,
)
from .validation import (
    CrossValidation,
    MemoryCheck,
    StepGap,
    ValidationRow,
    cross_validation,
    fit_calibration,
    memory_checks,
    scaling_series,
    step_gaps,
    validate,
    validation_summary,
    validation_table,
)

__all__ = [
    "ACTIVATION_BYTES",
    "ADAM_TRAFFIC_BYTES_PER_PARAM",
    "DEFAULT_CALIBRATION",
    "DEFAULT_FRAMEWORK",
    "FRAMEWORKS",
    "MEMORY_PARTS",
    "PART_WORDS",
    "PLAN_FIELDS",
    "RECOMPUTE_MODES",
    "RESERVE",
    "STEP_PARTS",
    "TIGHT_SHARE",
    "TRAINING",
    "Calibration",
    "CrossValidation",
    "Framework",
    "MemoryCheck",
    "NoPlanError",
    "Plan",
    "PlanResult",
    "SearchResult",
    "StageMemory",
    "StepGap",
    "ValidationRow",
    "bound",
    "cross_validation",
    "default_network",
    "evaluate",
    "explain",
    "fit_calibration",
    "framework",
    "framework_names",
    "memory_checks",
    "plan_from_arrays",
    "scaling_series",
    "search",
    "step_gaps",
    "validate",
    "validation_summary",
    "validation_table",
]
