"""The compiled program next to the workbook's formulas: collectives and memory per device.

For each sharding, :func:`compare_collectives` lists what the workbook says one training
step sends (each figure from the library function that teaches it), what XLA's compiled
program actually contains, and what the lab predicts XLA does once the layout's details
are counted (embeddings kept whole, a loss averaged over devices, ...). Where the
textbook formula is exact the three agree to the byte; where the compiler or the layout
differs, the row says how and why. :func:`compare_memory` does the same for the bytes of
model state each device holds.

What the workbook's formulas give (fp32 values and Adam here, the ``"fp32-adam"`` recipe)
-----------------------------------------------------------------------------------------
* data parallelism: one all-reduce of the gradients, ``Ψ`` values
  (:func:`scaleout.data_parallel.gradient_bytes`, notebook 03);
* ZeRO stages 1-2: a reduce-scatter of the gradients and an all-gather of the weights;
  stage 3: the weights gathered in the forward and again in the backward pass and the
  gradients reduce-scattered, ``3Ψ`` (:func:`scaleout.zero.stage_collectives`, notebook 06);
* Megatron tensor parallelism: four all-reduces of ``b·s·h`` per layer
  (:data:`scaleout.tensor_parallel.ALL_REDUCES_PER_LAYER`,
  :func:`~scaleout.tensor_parallel.tp_activation_bytes`, notebook 04); with sequence
  parallelism each becomes a reduce-scatter and an all-gather of the same size;
* expert parallelism: four all-to-alls of the dispatched slots per MoE layer
  (:func:`scaleout.lab.model.moe_dispatch_elements`, GShard);
* model state per device: :func:`scaleout.memory.model_state_breakdown` (notebook 02), with
  the parameters a tensor-parallel rank holds from :func:`scaleout.memory.stage_params`.

Where XLA differs (and the rows say so)
---------------------------------------
* XLA's CPU compiler has no pass that turns "all-reduce, then each device keeps its slice"
  into a reduce-scatter (the GPU compiler's ``ReduceScatterCreator``, in
  ``xla/service/gpu/transforms/``, does): on CPU a
  reduce-scatter of ZeRO or of sequence parallelism shows up as an all-reduce of the same
  size. The bytes of the buffer are the formula's; a ring all-reduce moves twice what a
  reduce-scatter moves per device.
* ZeRO-3 regathers a layer's weights in the backward pass only if that layer is recomputed
  (``jax.checkpoint``): the lab recomputes every transformer block, so their weights are
  gathered twice, as ZeRO-3 and FSDP do; the embedding, positions, final norm and output
  layer sit outside the blocks and are gathered once (FSDP likewise keeps its root
  module's parameters gathered between forward and backward).
* The mean loss over a batch split across devices costs one 4-byte all-reduce.
* The lab keeps embeddings, norms and the row-split layers' biases whole on every
  tensor-parallel rank (Megatron-LM splits the embedding by vocabulary): a rank holds, and
  data parallelism all-reduces, more than ``Ψ / t``.
* With sequence parallelism the parts outside the layers need a few collectives of their
  own (the final hidden state gathered for the output layer, the gradients of norms and
  embeddings summed over the sequence shards, the position embedding regathered).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import data_parallel, memory, tensor_parallel, zero
from ..checks import check_choice
from .engine import CompiledStep
from .model import VALUE_BYTES, moe_dispatch_elements, param_shapes
from .shardings import per_device_params

__all__ = ["RECIPE", "CollectiveRow", "MemoryRow", "compare_collectives", "compare_memory",
           "summary_rows"]

#: The workbook's recipe that matches the lab: fp32 weights and gradients, Adam's two
#: fp32 moments (4 + 4 + 8 bytes per parameter).
RECIPE = "fp32-adam"

_SHORT = {"all_reduce": "all-reduce", "reduce_scatter": "reduce-scatter",
          "all_gather": "all-gather", "all_to_all": "all-to-all"}
_CPU_RS = ("XLA's CPU compiler sums with an all-reduce of the same size and each device "
           "keeps its slice; XLA's GPU compiler rewrites that pattern into a reduce-scatter "
           "(its ReduceScatterCreator pass), which moves half as much per device")


@dataclass(frozen=True)
class Part:
    """One logical collective: a tuple part of an instruction XLA combined from several
    (an all-to-all's tuple of one piece per device is one collective)."""

    kind: str
    axis: str
    shape: tuple[int, ...]
    size_bytes: float
    instruction: str
    backward: bool
    recomputed: bool


@dataclass(frozen=True)
class CollectiveRow:
    """One kind of traffic of a step: the formula, the compiled program, the lab's prediction.

    ``formula_bytes`` is the workbook's figure (None where no formula covers it),
    ``measured_bytes`` the sum over the compiled program, ``expected_bytes`` what the lab
    predicts once the layout's details are counted (NaN for the row of what no formula
    covers). ``exact`` says that the formula claims
    the measured figure to the byte. Counts are logical collectives (tuple parts);
    ``instructions`` how many collective instructions XLA emitted for them.
    """

    what: str
    kind: str
    axis: str
    formula: str
    formula_bytes: float | None
    formula_count: int | None
    measured_bytes: float
    measured_count: int
    measured_kinds: str
    expected_bytes: float
    exact: bool
    note: str = ""
    instructions: int = 0

    @property
    def formula_matches(self) -> bool:
        """Whether the formula equals the compiled program (bytes, and count if given)."""
        return (self.formula_bytes is not None
                and math.isclose(self.formula_bytes, self.measured_bytes, rel_tol=1e-12)
                and (self.formula_count is None or self.formula_count == self.measured_count))

    @property
    def expected_matches(self) -> bool:
        """Whether the lab's prediction equals the compiled program."""
        return math.isclose(self.expected_bytes, self.measured_bytes, rel_tol=1e-12,
                            abs_tol=0.5)


def _parts(step: CompiledStep) -> list[Part]:
    out = []
    for c in step.collectives:
        axis = step.axis_of(c)
        flags = (c.backward, "rematted_computation" in c.op_name)
        if c.kind == "all-to-all":
            out.append(Part(c.kind, axis, c.shapes[0], c.size_bytes, c.name, *flags))
            continue
        for shape, size in zip(c.shapes, c.part_bytes or (c.size_bytes,), strict=False):
            out.append(Part(c.kind, axis, shape, size, c.name, *flags))
    return out


class _Picker:
    """Takes parts off a list as rows claim them, so that nothing is counted twice."""

    def __init__(self, parts: list[Part]) -> None:
        self.left = list(parts)

    def take(self, kinds: tuple[str, ...], axis: str, pred=lambda p: True) -> list[Part]:
        got = [p for p in self.left if p.kind in kinds and p.axis == axis and pred(p)]
        self.left = [p for p in self.left if p not in got]
        return got


def _row(what, kind, axis, formula, formula_bytes, formula_count, parts, expected, exact,
         note="") -> CollectiveRow:
    kinds = sorted({p.kind for p in parts})
    return CollectiveRow(what, kind, axis, formula, formula_bytes, formula_count,
                         float(sum(p.size_bytes for p in parts)), len(parts),
                         " + ".join(kinds) if kinds else "none", float(expected), exact, note,
                         len({p.instruction for p in parts}))


def _is_scalar(p: Part) -> bool:
    return math.prod(p.shape) == 1


def compare_collectives(step: CompiledStep) -> list[CollectiveRow]:
    """Rows of formula vs compiled program for the step's sharding (see the module docstring).

    Every collective of the program lands in exactly one row; whatever no formula covers is
    in a last row "not in the formulas" with the reason.
    """
    m, lay = step.model, step.layout
    sharding = check_choice("sharding", lay.sharding, ("dp", "zero1", "zero2", "zero3", "tp",
                                                       "sp", "tp_dp", "ep"))
    pick = _Picker(_parts(step))
    psi = m.param_count()
    spec = m.spec()
    recipe = memory.get_recipe(RECIPE)
    rows: list[CollectiveRow] = []
    b_local = m.batch // lay.data
    bsh = tensor_parallel.tp_activation_bytes(b_local, m.seq_len, m.hidden, VALUE_BYTES)

    def loss_row() -> None:
        got = pick.take(("all-reduce",), "data", _is_scalar)
        if lay.data > 1:
            rows.append(_row("the mean loss over the batch", "all-reduce", "data", "—", None,
                             None, got, VALUE_BYTES, False,
                             "the batch is split, so its mean loss is summed over devices"))

    if sharding in ("dp", "zero1", "zero2", "zero3"):
        stage = lay.zero_stage or 0
        grads = data_parallel.gradient_bytes(psi, recipe)
        weights = memory.weights_bytes(psi, recipe.weight_bytes)
        for op, what in zero.stage_collectives(stage):
            kind = _SHORT[op]
            if what == "gradients":
                got = pick.take(("all-reduce", "reduce-scatter"), "data",
                                lambda p: not _is_scalar(p))
                note = _CPU_RS if op == "reduce_scatter" and any(
                    p.kind == "all-reduce" for p in got) else ""
                rows.append(_row("gradients", kind, "data",
                                 "Ψ × grad bytes: data_parallel.gradient_bytes", grads, None,
                                 got, grads, True, note))
            elif what == "weights again, backward":
                got = pick.take(("all-gather",), "data", lambda p: p.backward)
                layers = memory.param_breakdown(spec)["layers"]
                rows.append(_row("weights gathered again in the backward pass", kind, "data",
                                 "Ψ × weight bytes: zero.stage_collectives(3)", weights, None,
                                 got, layers * recipe.weight_bytes, False,
                                 "only the blocks are recomputed (jax.checkpoint), so only "
                                 "their weights are gathered again; the embedding, positions, "
                                 "final norm and output layer stay gathered from the forward "
                                 "pass (FSDP keeps its root module's too), and XLA skips a "
                                 "weight the recomputation does not need"))
            elif what == "weights":
                got = pick.take(("all-gather",), "data", lambda p: not p.backward)
                if stage == 3:
                    rows.append(_row("weights gathered for the forward pass", kind, "data",
                                     "Ψ × weight bytes: zero.stage_collectives(3)", weights,
                                     None, got, weights, True))
                else:
                    rows.append(_row("updated weights", kind, "data",
                                     "Ψ × weight bytes: zero.stage_collectives", weights,
                                     None, got, weights, True))
        loss_row()
    if sharding in ("tp", "sp", "tp_dp"):
        n_ar = tensor_parallel.ALL_REDUCES_PER_LAYER * m.n_layers
        layer_shape = (b_local, m.seq_len, m.hidden)
        if sharding == "sp":
            got = pick.take(("all-reduce", "reduce-scatter"), "model",
                            lambda p: p.shape == layer_shape)
            rows.append(_row("reduce-scatters of b·s·h (one per all-reduce of TP)",
                             "reduce-scatter", "model",
                             "ALL_REDUCES_PER_LAYER × l × tp_activation_bytes(b, s, h)",
                             n_ar * bsh, n_ar, got, n_ar * bsh, True,
                             _CPU_RS if any(p.kind == "all-reduce" for p in got) else ""))
            got = pick.take(("all-gather",), "model", lambda p: p.shape == layer_shape)
            rows.append(_row("all-gathers of b·s·h (one per all-reduce of TP)", "all-gather",
                             "model",
                             "ALL_REDUCES_PER_LAYER × l × tp_activation_bytes(b, s, h)",
                             n_ar * bsh, n_ar, got, (n_ar + 1) * bsh, False,
                             "one more: the final hidden state, split by sequence, is "
                             "gathered for the output layer (outside the layers)"))
        else:
            got = pick.take(("all-reduce",), "model", lambda p: p.shape == layer_shape)
            rows.append(_row("all-reduces of b·s·h, two forward and two backward per layer",
                             "all-reduce", "model",
                             "ALL_REDUCES_PER_LAYER × l × tp_activation_bytes(b, s, h)",
                             n_ar * bsh, n_ar, got, n_ar * bsh, True))
        if sharding == "tp_dp":
            held = per_device_params(m, lay)["held"]
            formula = data_parallel.gradient_bytes(memory.stage_params(spec, tp=lay.model),
                                                   recipe)
            got = pick.take(("all-reduce",), "data", lambda p: not _is_scalar(p))
            rows.append(_row("gradients of one tensor-parallel rank", "all-reduce", "data",
                             "gradient_bytes(memory.stage_params(model, tp))", formula, None,
                             got, held * recipe.grad_bytes, False,
                             "stage_params divides every parameter by t; the lab keeps "
                             "embeddings, norms and the row-split layers' biases whole on "
                             f"each rank, which holds {held:,.0f} of Ψ = {psi:,}"))
            loss_row()
    if sharding == "ep":
        n = lay.data
        per_device = moe_dispatch_elements(m.batch, m.n_experts, m.capacity, m.hidden) \
            * VALUE_BYTES / n
        got = pick.take(("all-to-all",), "data")
        rows.append(_row("all-to-alls of the expert slots: dispatch and combine, forward "
                         "and backward", "all-to-all", "data",
                         "4 × moe_dispatch_elements(G, E, C, h) / n", 4 * per_device, 4,
                         got, 4 * per_device, True))
        replicated = sum(math.prod(s) for k, s in param_shapes(m).items()
                         if k.rsplit(".", 1)[-1] not in ("ew1", "eb1", "ew2", "eb2"))
        grads = data_parallel.gradient_bytes(replicated, recipe)
        got = pick.take(("all-reduce",), "data", lambda p: not _is_scalar(p))
        rows.append(_row("gradients of the replicated (non-expert) parameters", "all-reduce",
                         "data", "data_parallel.gradient_bytes(Ψ − experts)", grads, None, got,
                         grads, True, "each expert's gradient stays on its device"))
        loss_row()
    if pick.left:
        left = pick.left
        rows.append(CollectiveRow(
            "not in the formulas", "various", "/".join(sorted({p.axis for p in left})), "—",
            None, None, float(sum(p.size_bytes for p in left)), len(left),
            " + ".join(sorted({p.kind for p in left})), math.nan, False,
            _extras_note(sharding), len({p.instruction for p in left})))
    return rows


def _extras_note(sharding: str) -> str:
    if sharding == "sp":
        return ("outside the layers, split by sequence: the norms' and embeddings' gradients "
                "summed over the shards, the position embedding and its Adam moments "
                "regathered, token indices exchanged for the embedding lookup")
    return "collectives no formula of the workbook covers"


@dataclass(frozen=True)
class MemoryRow:
    """Model state one device holds: the formula, XLA's buffers, the lab's count."""

    what: str
    formula: str
    formula_bytes: float
    measured_bytes: float
    expected_bytes: float
    exact: bool
    note: str = ""

    @property
    def formula_matches(self) -> bool:
        """Whether the formula equals XLA's figure to the byte."""
        return math.isclose(self.formula_bytes, self.measured_bytes, rel_tol=1e-12)

    @property
    def expected_matches(self) -> bool:
        """Whether the lab's count equals XLA's figure."""
        return math.isclose(self.expected_bytes, self.measured_bytes, rel_tol=1e-12)

    @property
    def rel_error(self) -> float:
        """``formula / measured − 1``."""
        return self.formula_bytes / self.measured_bytes - 1.0


def compare_memory(step: CompiledStep) -> list[MemoryRow]:
    """Weights and Adam's moments per device (XLA's argument buffers less the batch and the
    step counter) against :func:`scaleout.memory.model_state_breakdown`, and the rest."""
    m, lay = step.model, step.layout
    recipe = memory.get_recipe(RECIPE)
    psi = m.param_count()
    tokens = m.batch // lay.data * (m.seq_len + 1) * VALUE_BYTES
    measured = step.memory.argument_bytes - tokens - VALUE_BYTES
    stage = lay.zero_stage
    if stage is not None:
        state = memory.model_state_breakdown(psi, stage, lay.data, recipe)
        formula = state.weights + state.optimizer
        text = f"model_state_breakdown(Ψ, zero_stage={stage}, dp={lay.data}): weights + Adam"
        rows = [MemoryRow("weights + Adam moments", text, formula, measured, formula, True,
                          "gradients are not an input of the step: they live among the "
                          "temporaries (and ZeRO-2 shards them there)")]
    else:
        held = per_device_params(m, lay)["held"]
        per_param = recipe.weight_bytes + recipe.optimizer_bytes
        if lay.sharding == "ep":
            formula = psi * per_param
            text = "model_state_breakdown(Ψ): the whole model (no formula splits experts)"
            note = "each device holds 1/n of the experts and all of the rest"
        else:
            formula = memory.stage_params(m.spec(), tp=lay.model) * per_param
            text = f"stage_params(model, tp={lay.model}) × (weight + Adam bytes)"
            note = ("stage_params divides every parameter by t; embeddings, norms and the "
                    "row-split layers' biases stay whole here")
        rows = [MemoryRow("weights + Adam moments", text, formula, measured, held * per_param,
                          lay.model == 1 and lay.sharding != "ep", note)]
    rows.append(MemoryRow("temporaries: activations, gradients, workspace",
                          "— (XLA packs buffers that are not live at once)", math.nan,
                          step.memory.temp_bytes, step.memory.temp_bytes, False,
                          "notebook 02's activation formula counts 16-bit values and "
                          "Megatron's kernels; not comparable to the byte"))
    return rows


def summary_rows(step: CompiledStep) -> list[list[str]]:
    """:func:`compare_collectives` as table cells (human-formatted) for notebooks and widgets."""
    out = []
    for r in compare_collectives(step):
        formula = "—" if r.formula_bytes is None else _kib(r.formula_bytes)
        if r.formula_count is not None:
            formula += f" ({r.formula_count}×)"
        verdict = ("= formula" if r.formula_matches else
                   "no formula" if r.formula_bytes is None else
                   "= lab's count" if r.expected_matches else "differs")
        out.append([r.what, r.axis, formula,
                    f"{_kib(r.measured_bytes)} ({r.measured_count}× {r.measured_kinds})",
                    verdict, r.note])
    return out


def _kib(n_bytes: float) -> str:
    return f"{n_bytes:,.0f} B" if n_bytes < 1024 else f"{n_bytes / 1024:,.1f} KiB"
