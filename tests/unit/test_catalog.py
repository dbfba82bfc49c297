"""scaleout.catalog: every entry loads with its source; bad files fail naming file, entry, field."""

import dataclasses

import pytest
from scaleout import catalog
from scaleout.catalog import GPU, ModelSpec, load_entries
from support import write_toml

REQUIRED_GPUS = ["A100 40GB", "A100 80GB", "H100 SXM", "H200", "B200", "GB200", "MI300X"]
REQUIRED_MODELS = ["gpt3-175b", "megatron-1t", "llama3-8b", "llama3-70b", "llama3-405b"]


@pytest.mark.parametrize("name", REQUIRED_GPUS)
def test_required_gpus_present(name):
    g = catalog.gpu(name)
    assert g.source.strip()
    assert g.hbm_gib > 0 and g.bf16_dense_tflops > 0 and g.scaleup_gbytes_s > 0


@pytest.mark.parametrize("name", REQUIRED_MODELS)
def test_required_models_present(name):
    assert catalog.model(name).source.strip()


def test_megatron_table1_models_all_present():
    runs = catalog.published("megatron_lm_table1")["run"]
    assert len(runs) == 10
    for run in runs:
        assert catalog.model(run["model"]).family == "Megatron-LM Table 1"


def test_nvl72_domain():
    nvl72 = catalog.system("NVL72")
    assert nvl72.gpus == 72 and catalog.gpu(nvl72.gpu).scaleup_domain_gpus == 72


def test_every_entry_has_a_source_and_known_per_field_sources():
    for obj in [*catalog.gpus(), *catalog.models(), *catalog.systems()]:
        assert obj.source.strip(), obj.name
        names = {f.name for f in dataclasses.fields(obj)}
        assert set(obj.sources) <= names, obj.name


def test_datasheet_semantics_dense_and_per_direction():
    """Dense FLOP/s are half the sparse figure the datasheet prints; NVLink per direction."""
    h100 = catalog.gpu("H100")
    assert h100.bf16_dense_tflops == 989  # datasheet: 1,979* with sparsity
    assert h100.scaleup_gbytes_s == 450  # datasheet: 900 GB/s both directions
    assert "sparsity" in h100.source and "both directions" in h100.source


def test_aliases_and_case_insensitive_lookup():
    assert catalog.gpu("h100-sxm") is catalog.gpu("H100-SXM5-80GB")
    assert catalog.model("Llama 3 70B") is catalog.model("llama3-70b")


def test_user_defined_specs_accepted_everywhere():
    g = catalog.gpu({"name": "my-gpu", "vendor": "me", "year": 2030, "hbm_gib": 512,
                     "hbm_gbytes_s": 20000, "bf16_dense_tflops": 5000, "scaleup_gbytes_s": 1800,
                     "scaleup_link": "NVLink 7", "scaleup_domain_gpus": 576, "tdp_w": 2000})
    assert catalog.gpu(g) is g and g.source == "user-defined"
    m = catalog.model({"name": "tiny", "n_layers": 2, "hidden": 64, "n_heads": 4, "vocab": 100,
                       "seq_len": 32})
    assert isinstance(m, ModelSpec) and catalog.model(m) is m


def test_listing_functions():
    assert catalog.gpu_names()[0] == "V100-SXM2-32GB"  # oldest first
    assert "gpt3-175b" in catalog.model_names()
    assert "GB200 NVL72" in catalog.system_names()


# --- malformed files ---------------------------------------------------------------------
GOOD = """
[[gpu]]
name = "G1"
vendor = "V"
year = 2024
hbm_gib = 80
hbm_gbytes_s = 3000
bf16_dense_tflops = 900
scaleup_gbytes_s = 450
scaleup_link = "NVLink 4"
scaleup_domain_gpus = 8
tdp_w = 700
source = "a datasheet"
"""


def _write(tmp_path, text):
    return write_toml(tmp_path, "gpus.toml", text)


def test_good_file_loads(tmp_path):
    assert list(load_entries(_write(tmp_path, GOOD), "gpu", GPU)) == ["G1"]


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda t: t.replace('source = "a datasheet"\n', ""),
         r"gpus.toml: \[\[gpu\]\] entry 1 \('G1'\): missing field 'source'"),
        (lambda t: t.replace("hbm_gib = 80", "hbm_gb = 80"),
         r"entry 1 \('G1'\): unknown field 'hbm_gb' \(did you mean 'hbm_gib'\?\)"),
        (lambda t: t.replace("hbm_gib = 80", 'hbm_gib = "80"'),
         r"entry 1 \('G1'\): field 'hbm_gib' must be float or int, got '80'"),
        (lambda t: t.replace("tdp_w = 700", "tdp_w = -700"),
         r"entry 1 \('G1'\): field 'tdp_w' must be a finite number > 0, got -700"),
        (lambda t: t.replace('source = "a datasheet"', 'source = "  "'),
         r"entry 1 \('G1'\): field 'source' must not be empty"),
        (lambda t: t + t, r"entry 2 \('G1'\): duplicate name 'G1'"),
        (lambda t: t.replace("[[gpu]]", "[[gpu]"), r"gpus.toml: not valid TOML"),
        (lambda t: t.replace("[[gpu]]", "[[gpus]]"), r"expected one or more \[\[gpu\]\] entries"),
        (lambda t: t + 'sources = { hbm = "x" }\n',
         r"entry 1 \('G1'\): sources names unknown field 'hbm'"),
    ],
)
def test_malformed_file_names_file_entry_field(tmp_path, mutate, pattern):
    with pytest.raises(ValueError, match=pattern):
        load_entries(_write(tmp_path, mutate(GOOD)), "gpu", GPU)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="catalog file not found"):
        load_entries(tmp_path / "nope.toml", "gpu", GPU)


def test_moe_layer_count_is_the_layers_that_have_experts():
    import dataclasses

    models = [catalog.model(n) for n in catalog.model_names()]
    base = catalog.model("qwen3-30b-a3b")
    # shapes the catalog lacks: dense starts of 0 to 45 layers, MoE every 1st, 2nd, 3rd layer
    models += [dataclasses.replace(base, first_dense_layers=f, moe_layer_step=k)
               for f in (0, 3, 10, 45) for k in (1, 2, 3)]
    for m in models:
        loop = sum(1 for i in range(m.n_layers) if m.layer_is_moe(i))  # the plain reference
        assert m.moe_layers == loop, m.name
        assert m.dense_layers == m.n_layers - loop
    assert catalog.model("deepseek-v3").moe_layers == 58  # 61 layers, the first 3 dense
