"""Bad input gets a ValueError that names the parameter, the value and what is allowed."""

import pytest
from scaleout import catalog, compute, memory


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: memory.model_state_bytes(-1), r"params must be a finite number > 0, got -1"),
        (lambda: memory.model_state_bytes(0), r"params must be a finite number > 0, got 0"),
        (lambda: memory.model_state_bytes(1e9, zero_stage=4),
         r"zero_stage must be a whole number from 0 to 3, got 4"),
        (lambda: memory.model_state_bytes(1e9, zero_stage=-1),
         r"zero_stage must be a whole number from 0 to 3, got -1"),
        (lambda: memory.model_state_bytes(1e9, dp=0), r"dp must be a whole number >= 1, got 0"),
        (lambda: memory.model_state_bytes(1e9, dp=2.5), r"dp must be a whole number >= 1, got 2.5"),
        (lambda: memory.model_state_bytes(1e9, recipe="adam"),
         r"recipe must be one of .*got 'adam' \(did you mean"),
        (lambda: memory.activation_bytes_per_layer("gpt3-175b", 1, tp=5),
         r"tp=5 must divide n_heads=96; allowed: 1, 2, 3, 4, 6, 8"),
        (lambda: memory.activation_bytes_per_layer("gpt3-175b", 0),
         r"micro_batch must be a whole number >= 1, got 0"),
        (lambda: memory.activation_bytes_per_layer("gpt3-175b", 1, seq_len=-5),
         r"seq_len must be a whole number >= 1, got -5"),
        (lambda: memory.activation_bytes_per_layer("gpt3-175b", 1, recompute="partial"),
         r"recompute must be one of 'none', 'selective', 'full'; got 'partial'"),
        (lambda: memory.activation_bytes("gpt3-175b", 1, pp=7), r"pp=7 must divide n_layers=96"),
        (lambda: memory.training_memory("gpt3-175b", "A100", tp=0), r"tp must be a whole number"),
        (lambda: memory.training_memory("gpt3-175b", "A100", dp=-2), r"dp must be a whole number"),
        (lambda: memory.weights_bytes(float("nan")),
         r"params must be a finite number > 0, got nan"),
        (lambda: compute.training_days(175e9, 300e9, 0, 140),
         r"n_gpus must be a whole number >= 1"),
        (lambda: compute.training_days(175e9, -1, 8, 140), r"tokens must be a finite number > 0"),
        (lambda: compute.megatron_iteration_flops("gpt3-175b", 0), r"global_batch must be"),
        (lambda: catalog.gpu("H1OO"), r"gpu 'H1OO' is not in the catalog; did you mean 'H100'"),
        (lambda: catalog.model("gtp3-175b"),
         r"model 'gtp3-175b' is not in the catalog; did you mean 'gpt3-175b'"),
        (lambda: catalog.model("llama-4-9000b"), r"model 'llama-4-9000b' is not in the catalog"),
        (lambda: catalog.model({"n_layers": 2, "hidden": 100, "n_heads": 3, "vocab": 10,
                                "seq_len": 8}),
         r"hidden=100 must be a multiple of n_heads=3"),
        (lambda: catalog.model({"n_layers": 0, "hidden": 64, "n_heads": 4, "vocab": 10,
                                "seq_len": 8}),
         r"field 'n_layers' must be a finite number > 0, got 0"),
        (lambda: catalog.gpu({"name": "x", "vendor": "y", "year": 2024, "hbm_gib": -80,
                              "hbm_gbytes_s": 1, "bf16_dense_tflops": 1, "scaleup_gbytes_s": 1,
                              "scaleup_link": "z", "scaleup_domain_gpus": 8, "tdp_w": 1}),
         r"field 'hbm_gib' must be a finite number > 0, got -80"),
        (lambda: catalog.published("zero_table9"), r"table must be one of .*did you mean"),
    ],
)
def test_bad_input_names_parameter_value_and_allowed(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_bool_is_not_a_number():
    with pytest.raises(ValueError, match="dp must be a whole number"):
        memory.model_state_bytes(1e9, dp=True)
