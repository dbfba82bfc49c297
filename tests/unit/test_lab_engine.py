"""scaleout.lab with real JAX on 8 virtual CPU devices: layouts, compiled collectives against
the workbook's formulas, per-device memory, and the same losses under every sharding.

JAX's persistent compilation cache (scaleout.lab.devices) makes a second run fast; the first
compiles each sharding once (a few seconds each on a laptop).
"""

import subprocess
import sys

import numpy as np
import pytest
from scaleout import memory, tensor_parallel
from scaleout.lab import compare, devices, engine, shardings
from scaleout.lab.model import LabModel, expert_capacity, moe_dispatch_elements

DENSE = LabModel()
MOE = LabModel(n_experts=8)
#: every sharding on its mesh (data × model) over 8 devices, and one smaller mesh
LAYOUTS = [("dp", (8, 1)), ("zero1", (8, 1)), ("zero2", (4, 1)), ("zero3", (8, 1)),
           ("tp", (1, 4)), ("sp", (1, 4)), ("tp_dp", (2, 4)), ("ep", (8, 1))]
#: relative tolerance of the losses: float32 sums in a different order
LOSS_RTOL = 1e-5


def model_of(sharding):
    return MOE if sharding == "ep" else DENSE


@pytest.fixture(scope="module")
def lab():
    assert devices.use_devices(8) >= 8
    return {s: engine.compile_step(model_of(s), s, mesh) for s, mesh in LAYOUTS}


# -- without compiling ------------------------------------------------------------------------
def test_model_parameters_are_the_workbooks_count():
    assert DENSE.param_count() == memory.param_count(DENSE.spec()) == 134_912
    assert MOE.capacity == expert_capacity(32, 8, 2.0) == 8
    assert moe_dispatch_elements(8, 8, 8, 64) == 8 * 8 * 8 * 64


@pytest.mark.parametrize(("sharding", "mesh", "message"), [
    ("dq", (8, 1), "sharding must be one of .*did you mean 'dp'"),
    ("dp", (2, 4), "splits over the data axis only: the mesh must be N × 1, got 2 × 4"),
    ("tp", (2, 1), "splits over the model axis only"),
    ("dp", (3, 1), "mesh 3 × 1 uses 3 devices, which does not divide the 8 devices"),
    ("tp", (1, 16), "uses 16 devices, which does not divide the 8 devices"),
    ("tp", (1, 8), "mesh model axis=8 must divide n_heads=4; allowed: 1, 2, 4"),
    ("tp_dp", (2, 4), None),
    ("sp", (1, 4), None),
    ("ep", (8, 1), "needs a mixture-of-experts layer"),
])
def test_layout_checks(sharding, mesh, message):
    if message is None:
        assert shardings.check_layout(DENSE, sharding, mesh, 8).n_devices == mesh[0] * mesh[1]
    else:
        with pytest.raises(ValueError, match=message):
            shardings.check_layout(DENSE, sharding, mesh, 8)


def test_layout_checks_of_the_model():
    with pytest.raises(ValueError, match="mesh data axis=8 must divide batch=4"):
        shardings.check_layout(LabModel(batch=4), "dp", (8, 1), 8)
    with pytest.raises(ValueError, match="mesh model axis=4 must divide seq_len=30"):
        shardings.check_layout(LabModel(seq_len=30, n_heads=4), "sp", (1, 4), 8)
    with pytest.raises(ValueError, match="does not split a MoE layer by tensor parallelism"):
        shardings.check_layout(MOE, "tp", (1, 4), 8)
    with pytest.raises(ValueError, match="mesh data axis=8 must divide n_experts=4"):
        shardings.check_layout(LabModel(n_experts=4), "ep", (8, 1), 8)
    with pytest.raises(ValueError, match="mesh must look like '2x4'"):
        shardings.parse_mesh("two by four")
    assert shardings.parse_mesh("2 × 4") == (2, 4) == shardings.parse_mesh("2x4")
    assert shardings.mesh_options(DENSE, "tp_dp", 8)[-3:] == ["2 × 4", "4 × 2", "8 × 1"]
    assert shardings.mesh_options(DENSE, "tp", 8) == ["1 × 1", "1 × 2", "1 × 4"]


def test_scaleout_imports_no_engine():
    """import scaleout and every lab module without starting JAX or MPI."""
    code = ("import sys, scaleout; from scaleout import glossary; glossary.library_modules();"
            "print('jax' in sys.modules, 'mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.split() == ["False", "False"]


def test_too_few_devices_is_refused_with_what_to_do():
    code = ("import jax; from scaleout.lab import devices\n"
            "try:\n    devices.use_devices(16, cache=False)\n"
            "except ValueError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, env={"PATH": "/usr/bin:/bin"}).stdout
    assert "sees only 1 CPU device(s)" in out and "Restart the kernel" in out


# -- compiled ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sharding", [s for s, _ in LAYOUTS])
def test_compiled_collectives_against_the_formulas(lab, sharding):
    rows = compare.compare_collectives(lab[sharding])
    assert rows
    for r in rows:
        if r.exact:  # the workbook's formula, to the byte (and count where it gives one)
            assert r.formula_matches, r
        if r.what not in ("weights gathered again in the backward pass",
                          "not in the formulas"):
            assert r.expected_matches, r  # the lab's account of what XLA did
    total = sum(r.measured_bytes for r in rows)
    assert total == pytest.approx(lab[sharding].total_bytes)  # every collective in one row


def test_tensor_parallel_is_four_all_reduces_of_bsh_per_layer(lab):
    step = lab["tp"]
    ars = [c for c in step.collectives if c.kind == "all-reduce"]
    assert len(ars) == tensor_parallel.ALL_REDUCES_PER_LAYER * DENSE.n_layers == 8
    bsh = tensor_parallel.tp_activation_bytes(8, 32, 64, bytes_per_element=4)
    assert all(c.size_bytes == bsh and c.group_size == 4 for c in ars)
    assert len(step.collectives) == 8  # nothing else: embeddings and loss stay replicated


def test_data_parallel_and_zero(lab):
    psi = DENSE.param_count()
    dp = {r.what: r for r in compare.compare_collectives(lab["dp"])}
    assert dp["gradients"].measured_bytes == 4 * psi
    assert dp["the mean loss over the batch"].measured_bytes == 4
    z3 = {r.what: r for r in compare.compare_collectives(lab["zero3"])}
    forward = z3["weights gathered for the forward pass"].measured_bytes
    backward = z3["weights gathered again in the backward pass"].measured_bytes
    layers = memory.param_breakdown(DENSE.spec())["layers"]
    assert forward == 4 * psi
    # the blocks' weights again, less at most one h-vector per block the recomputation skips
    assert 4 * (layers - DENSE.n_layers * DENSE.hidden) <= backward <= 4 * layers
    # on CPU, ZeRO's reduce-scatter of the gradients is an all-reduce of the same size
    assert z3["gradients"].measured_kinds == "all-reduce"


def test_sequence_parallel_turns_each_all_reduce_into_two(lab):
    rows = {r.kind: r for r in compare.compare_collectives(lab["sp"])}
    assert rows["reduce-scatter"].measured_count == 8 and rows["reduce-scatter"].formula_matches
    assert rows["all-gather"].measured_count == 9  # 8 + the output layer's input


def test_expert_parallel_all_to_alls(lab):
    rows = compare.compare_collectives(lab["ep"])
    a2a = next(r for r in rows if r.kind == "all-to-all")
    assert a2a.measured_count == 4 and a2a.instructions == 4
    assert a2a.measured_bytes == 4 * moe_dispatch_elements(8, 8, 8, 64) * 4 / 8


@pytest.mark.parametrize("sharding", [s for s, _ in LAYOUTS])
def test_model_state_per_device(lab, sharding):
    """Weights + Adam moments per device from XLA's argument buffers: exactly ZeRO's
    model_state_breakdown for DP and ZeRO, exactly the lab's own count everywhere; the
    workbook's stage_params (Ψ/t) is a stated underestimate for tensor parallelism."""
    state = compare.compare_memory(lab[sharding])[0]
    assert state.expected_matches, state
    if sharding in ("dp", "zero1", "zero2", "zero3"):
        assert state.formula_matches, state
    elif sharding in ("tp", "sp", "tp_dp"):
        # embeddings, norms and the row-split biases stay whole: Ψ/t leaves out 44 %
        assert -0.5 < state.rel_error < -0.3


def test_zero_stages_shrink_the_state_as_table_1_says(lab):
    psi = DENSE.param_count()
    for sharding, (d, _) in LAYOUTS[:4]:
        stage = lab[sharding].layout.zero_stage
        state = memory.model_state_breakdown(psi, stage, d, "fp32-adam")
        measured = compare.compare_memory(lab[sharding])[0].measured_bytes
        assert measured == state.weights + state.optimizer


@pytest.mark.parametrize("sharding", [s for s, _ in LAYOUTS])
def test_every_sharding_computes_the_same_losses(lab, sharding):
    m = model_of(sharding)
    reference = engine.reference_losses(m, steps=3)
    losses = engine.run_losses(lab[sharding], steps=3)
    assert losses[0] > losses[-1]  # Adam takes the loss down on a fixed batch
    np.testing.assert_allclose(losses, reference, rtol=LOSS_RTOL)


def test_compile_step_refuses_bad_layouts_before_compiling(lab):
    with pytest.raises(ValueError, match="sharding must be one of"):
        engine.compile_step(DENSE, "fsdp", (8, 1))
    with pytest.raises(ValueError, match="does not divide the 8 devices"):
        engine.compile_step(DENSE, "dp", (5, 1))
