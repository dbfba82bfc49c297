"""scaleout.memory against published numbers: ZeRO Table 1, Korthikanti Table 2, Megatron Eq. 2."""

import math

import pytest
from scaleout import catalog, memory, units

ZERO = catalog.published("zero_table1")


def _decimals(printed: float) -> int:
    text = repr(float(printed)).rstrip("0").rstrip(".")
    return len(text.split(".")[1]) if "." in text else 0


def _zero_cells():
    for key, table in ZERO["gb"].items():
        for dp, row in zip(ZERO["dp"], table["rows"], strict=True):
            for stage, printed in zip((1, 2, 3), row, strict=True):
                yield pytest.param(float(key), dp, stage, printed, id=f"{key}-dp{dp}-stage{stage}")


@pytest.mark.parametrize(("params", "dp", "stage", "printed"), list(_zero_cells()))
def test_zero_table1_every_cell(params, dp, stage, printed):
    """Every cell of ZeRO Table 1: the paper rounds small values and truncates large ones,
    so the computed value must lie in [printed - half a last digit, printed + one last digit)."""
    gb = units.bytes_to_gb(memory.model_state_bytes(params, zero_stage=stage, dp=dp))
    ulp = 10.0 ** -_decimals(printed)
    assert printed - ulp / 2 - 1e-9 <= gb < printed + ulp, (gb, printed)


def test_zero_table1_has_all_54_cells():
    assert len(list(_zero_cells())) == 3 * 6 * 3


def test_zero_stage_formulas_closed_form():
    psi, nd = 1e9, 8
    assert memory.model_state_bytes(psi, 0, nd) == 16 * psi
    assert memory.model_state_bytes(psi, 1, nd) == 4 * psi + 12 * psi / nd
    assert memory.model_state_bytes(psi, 2, nd) == 2 * psi + 14 * psi / nd
    assert memory.model_state_bytes(psi, 3, nd) == 16 * psi / nd


@pytest.mark.parametrize(
    ("recipe", "unsharded", "stage1_const", "stage1_sharded"),
    [
        # Megatron-LM distributed optimizer docs: 20 = 4 + 16/d, 18 = 6 + 12/d, 16 = 8 + 8/d
        ("megatron-fp16", 20, 4, 16),
        ("megatron-bf16", 18, 6, 12),
        ("fp32-adam", 16, 8, 8),
        ("mixed-adam", 16, 4, 12),
    ],
)
def test_recipes_match_their_sources(recipe, unsharded, stage1_const, stage1_sharded):
    d = 64
    assert memory.model_state_bytes(1.0, 0, d, recipe) == unsharded
    assert math.isclose(memory.model_state_bytes(1.0, 1, d, recipe),
                        stage1_const + stage1_sharded / d)


def test_gpt3_fp16_weights_are_350_gb():
    assert units.bytes_to_gb(memory.weights_bytes(175e9)) == 350
    assert math.isclose(units.bytes_to_gib(memory.weights_bytes(175e9)), 325.96, abs_tol=0.01)


# --- Korthikanti et al. 2022, Table 2 ----------------------------------------------------
KORTHIKANTI_TABLE2 = {
    # the paper's closed forms, per layer, in bytes (s, b, h, a, t)
    "none": lambda s, b, h, a, t: s * b * h * (34 + 5 * a * s / h),
    "tp": lambda s, b, h, a, t: s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
    "tp_sp": lambda s, b, h, a, t: s * b * h * (34 / t + 5 * a * s / (h * t)),
    "tp_selective": lambda s, b, h, a, t: s * b * h * (10 + 24 / t),
    "tp_sp_selective": lambda s, b, h, a, t: s * b * h * 34 / t,
    "full": lambda s, b, h, a, t: 2 * s * b * h,
}
CALLS = {
    "none": dict(tp=1),
    "tp": dict(sp=False),
    "tp_sp": dict(sp=True),
    "tp_selective": dict(sp=False, recompute="selective"),
    "tp_sp_selective": dict(sp=True, recompute="selective"),
    "full": dict(sp=False, recompute="full"),
}


@pytest.mark.parametrize("row", list(KORTHIKANTI_TABLE2))
@pytest.mark.parametrize("name", ["korthikanti-22b", "korthikanti-175b", "megatron-529.6b",
                                  "megatron-1t"])
def test_korthikanti_table2(row, name):
    m = catalog.model(name)
    kwargs = {"tp": 8, **CALLS[row]}
    t = kwargs["tp"]
    got = memory.activation_bytes_per_layer(m, 1, 2048, **kwargs)
    want = KORTHIKANTI_TABLE2[row](2048, 1, m.hidden, m.n_heads, t)
    assert math.isclose(got, want, rel_tol=1e-12)


def test_korthikanti_table2_is_linear_in_the_micro_batch():
    """Every row of Table 2 is s·b·h times a term free of b: 4 sequences take 4 times one."""
    m = catalog.model("korthikanti-175b")
    for row, kwargs in CALLS.items():
        kwargs = {"tp": 8, **kwargs}
        got = memory.activation_bytes_per_layer(m, 4, 2048, **kwargs)
        want = KORTHIKANTI_TABLE2[row](2048, 4, m.hidden, m.n_heads, kwargs["tp"])
        assert math.isclose(got, want, rel_tol=1e-12), row


# Table 2 without dropout: Korthikanti et al. count two 1-byte sbh masks (after attention and
# after the MLP) and, of the scores' 5as^2b, a 1-byte mask and the 2-byte dropout output; a model
# trained without dropout (Llama, MPT, DeepSeek) keeps none of them.
NO_DROPOUT = {
    "none": lambda s, b, h, a, t: s * b * h * (32 + 2 * a * s / h),
    "tp": lambda s, b, h, a, t: s * b * h * (8 + 24 / t + 2 * a * s / (h * t)),
    "tp_sp": lambda s, b, h, a, t: s * b * h * (32 / t + 2 * a * s / (h * t)),
    "tp_selective": lambda s, b, h, a, t: s * b * h * (8 + 24 / t),
    "tp_sp_selective": lambda s, b, h, a, t: s * b * h * 32 / t,
    "full": lambda s, b, h, a, t: 2 * s * b * h,
}


@pytest.mark.parametrize("row", list(NO_DROPOUT))
def test_without_dropout_the_masks_are_not_stored(row):
    m = catalog.model("korthikanti-175b").replace(dropout=False)
    kwargs = {"tp": 8, **CALLS[row]}
    got = memory.activation_bytes_per_layer(m, 2, 2048, **kwargs)
    want = NO_DROPOUT[row](2048, 2, m.hidden, m.n_heads, kwargs["tp"])
    assert math.isclose(got, want, rel_tol=1e-12)


def test_the_catalog_says_which_models_train_with_dropout():
    assert catalog.model("gpt3-175b").dropout and catalog.model("megatron-1t").dropout
    for name in ("llama3-405b", "deepseek-v3", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b"):
        assert not catalog.model(name).dropout, name
        assert "dropout" in catalog.model(name).sources, name


def test_activation_modes_are_table_2s_rows():
    """The six rows notebook 02 tabulates, each equal to the paper's closed form (t = 8)."""
    m = catalog.model("korthikanti-175b")
    rows = memory.activation_modes(m, 2, 2048, tp=8)
    labels = {"no parallelism": "none", "tensor parallel": "tp",
              "tensor + sequence parallel": "tp_sp", "TP + selective recompute": "tp_selective",
              "TP + SP + selective recompute": "tp_sp_selective", "full recompute": "full"}
    assert list(rows) == list(labels)
    for label, row in labels.items():
        want = KORTHIKANTI_TABLE2[row](2048, 2, m.hidden, m.n_heads, 8)
        assert math.isclose(rows[label], want, rel_tol=1e-12), label


def test_breakdown_in_gib_and_its_verdict():
    """Parts over 2^30 bytes; the verdict rounds the headroom to 0.1 GiB."""
    gib = 2.0**30
    parts = dict(weights=1 * gib, grads=2 * gib, optimizer=3 * gib, activations=4 * gib,
                 params_per_gpu=0.5 * gib, in_flight=1)
    fits = memory.MemoryBreakdown(capacity=80 * gib, **parts)
    assert fits.gib() == {"weights": 1.0, "grads": 2.0, "optimizer": 3.0, "activations": 4.0,
                          "total": 10.0, "capacity": 80.0}
    assert fits.verdict() == "fits, 70.0 GiB to spare"
    tight = memory.MemoryBreakdown(capacity=7.5 * gib, **parts)
    assert not tight.fits and tight.verdict() == "does not fit by 2.5 GiB"


def test_flash_attention_drops_the_score_term_only():
    m = catalog.model("gpt3-175b")
    flash = memory.activation_bytes_per_layer(m, 1, 4096, tp=8, sp=True, flash_attention=True)
    selective = memory.activation_bytes_per_layer(m, 1, 4096, tp=8, sp=True, recompute="selective")
    assert flash == selective


def test_first_stage_holds_pp_microbatches_so_all_layers():
    """Korthikanti Sec. 4.2.3: under 1F1B the first stage stores L layers' worth."""
    m = catalog.model("megatron-1t")
    per_layer = memory.activation_bytes_per_layer(m, 1, 2048, tp=8, sp=True, recompute="selective")
    mem = memory.training_memory(m, "A100", tp=8, pp=64, dp=1, sp=True, recompute="selective")
    assert mem.in_flight == 64
    assert math.isclose(mem.activations, per_layer * m.n_layers)


def test_gqa_and_gated_mlp_generalisation():
    """With kv_heads = a, f = 4h and dropout (GPT-3's) the generalised count is the paper's;
    GQA shrinks it."""
    m = catalog.model("llama3-8b")
    mha = m.replace(n_kv_heads=m.n_heads, ffn_hidden=4 * m.hidden, gated_mlp=False,
                    dropout=True)
    s, h, a = 2048, m.hidden, m.n_heads
    assert math.isclose(memory.activation_bytes_per_layer(mha, 1, s),
                        KORTHIKANTI_TABLE2["none"](s, 1, h, a, 1))
    gqa = mha.replace(n_kv_heads=8)
    # K and V shrink from 2sbh each to 2sbh/4 each: 3 sbh saved
    per_layer = memory.activation_bytes_per_layer
    saved = per_layer(mha, 1, s) - per_layer(gqa, 1, s)
    assert math.isclose(saved, 3 * s * h)


# --- parameters: Megatron-LM Eq. 2 and Table 1 -------------------------------------------
MEGATRON = catalog.published("megatron_lm_table1")


@pytest.mark.parametrize("run", MEGATRON["run"], ids=lambda r: r["model"])
def test_megatron_eq2_reproduces_table1_params(run):
    """Eq. 2 gives each row's count at the printed precision (one decimal, in billions).

    The two smallest rows differ from their printed value by more than 1% only because the
    paper rounds to one decimal (1.652B prints as 1.7B); from 7.5B up the count is within 1%.
    """
    m = catalog.model(run["model"])
    assert (m.n_heads, m.hidden, m.n_layers) == (run["heads"], run["hidden"], run["layers"])
    p = memory.megatron_param_count(m)
    assert abs(p / 1e9 - run["params_b"]) <= 0.05 + 1e-9
    if run["params_b"] >= 7:
        assert abs(p / (run["params_b"] * 1e9) - 1) < 0.01


@pytest.mark.parametrize("name", [r["model"] for r in MEGATRON["run"]] + ["gpt3-175b"])
def test_general_count_equals_eq2_plus_final_norm_for_gpt_models(name):
    m = catalog.model(name)
    assert memory.param_count(m) == pytest.approx(memory.megatron_param_count(m) + 2 * m.hidden,
                                                  rel=1e-12)


@pytest.mark.parametrize(("name", "tol"), [("llama3-8b", 0.001), ("llama3-70b", 0.001),
                                           ("llama3-405b", 0.001), ("gpt2-1.5b", 1e-9),
                                           ("gpt3-175b", 0.005), ("korthikanti-22b", 0.005)])
def test_param_count_matches_published(name, tol):
    m = catalog.model(name)
    assert abs(memory.param_count(m) / m.params_published - 1) < tol


def test_gpt2_xl_exact_count():
    assert memory.param_count("gpt2-1.5b") == 1_557_611_200


# --- the whole GPU ------------------------------------------------------------------------
def test_training_memory_parts_and_verdict():
    mem = memory.training_memory("gpt3-175b", "A100-SXM4-80GB", micro_batch=1, tp=8, pp=8,
                                 dp=16, zero_stage=1, recompute="selective", sp=True)
    params = memory.stage_params("gpt3-175b", 8, 8)
    state = memory.model_state_breakdown(params, 1, 16)
    assert (mem.weights, mem.grads, mem.optimizer) == (state.weights, state.grads, state.optimizer)
    assert mem.total == mem.weights + mem.grads + mem.optimizer + mem.activations
    assert mem.fits and mem.verdict().startswith("fits")
    single = memory.training_memory("gpt3-175b", "A100-SXM4-80GB")
    assert not single.fits
    over_gib = (single.total - 80 * units.GIB) / units.GIB
    assert single.verdict() == f"does not fit by {over_gib:.1f} GiB"


def test_stage_params_split_layers_and_embeddings():
    m = catalog.model("gpt3-175b")
    parts = memory.param_breakdown(m)
    assert memory.stage_params(m) == parts["total"]
    assert memory.stage_params(m, tp=8) == parts["total"] / 8
    first = parts["layers"] / 8 + parts["embedding"] + parts["positions"]
    assert memory.stage_params(m, pp=8) == first
