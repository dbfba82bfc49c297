"""scaleout.configs: model configs and framework settings in, framework settings out."""

from __future__ import annotations

import ast
import functools
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scaleout import catalog, compute, configs, memory, plan
from scaleout.__main__ import main
from scaleout.configs import UnsupportedPlanError
from scaleout.layout import Plan

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "data" / "configs"
LIB = Path(configs.__file__).parent  # the package imported (in a scratch copy too)


def _hf(name: str, **kw) -> configs.ModelImport:
    return configs.from_hf_config(CONFIGS / f"{name}.config.json", **kw)


def _rounds_to(value: float, printed: float, step: float) -> bool:
    """``value`` printed to ``step`` (0.01 for "8.03B") gives ``printed``."""
    return math.isclose(round(value / step) * step, printed, rel_tol=1e-9)


def _truncates_to(value: float, printed: float, step: float) -> bool:
    return math.isclose(math.floor(value / step + 1e-9) * step, printed, rel_tol=1e-9)


def _printed_as(value: float, printed: float, step: float) -> bool:
    """The model cards print to ``step`` but not all the same way: Qwen2.5-7B's 7.6156B is
    printed 7.61 (truncated), Qwen3-8B's 8.1907B 8.2 (rounded). Either reading of the last
    printed digit is accepted; nothing looser."""
    return _rounds_to(value, printed, step) or _truncates_to(value, printed, step)


# =========================================================================== parameter counts
def test_llama31_8b_counts_the_released_weights_and_matches_the_catalog_shape():
    m = _hf("Llama-3.1-8B")
    assert m.params_total == 8_030_261_248  # the released checkpoint (model card: 8.03B)
    assert _rounds_to(m.params_total / 1e9, 8.03, 0.01)
    ref = catalog.model("llama3-8b")
    for field in ("n_layers", "hidden", "n_heads", "kv_heads", "ffn", "vocab", "gated_mlp",
                  "tied_embeddings", "learned_positions", "biases", "dropout"):
        assert getattr(m.spec, field) == getattr(ref, field), field
    assert m.plannable and m.spec.seq_len == 8192  # rope_scaling's original context


@pytest.mark.parametrize("name, total_b, total_step, non_embedding_b", [
    ("Qwen2.5-7B", 7.61, 0.01, 6.53),   # model card: 7.61B, 6.53B non-embedding (7.6156B)
    ("Qwen3-8B", 8.2, 0.1, 6.95),       # model card: 8.2B, 6.95B non-embedding
])
def test_qwen_dense_counts_match_the_model_cards(name, total_b, total_step, non_embedding_b):
    m = _hf(name)
    assert _printed_as(m.params_total / 1e9, total_b, total_step)
    embeddings = 2 * m.spec.vocab * m.spec.hidden  # untied input and output
    assert _printed_as((m.params_total - embeddings) / 1e9, non_embedding_b, 0.01)
    assert m.plannable
    # the biases/norms the catalog cannot describe are counted and flagged, not dropped
    extra = [f for f in m.findings if f.status == configs.NOT_MODELLED]
    assert extra and m.params_total > memory.param_count(m.spec)


def test_qwen3_moe_counts_total_and_active_and_is_plannable():
    m = _hf("Qwen3-30B-A3B")
    # model card: 30.5B total, 3.3B activated, 29.9B non-embedding; the card truncates the
    # activated count (3.35B by the shape)
    assert _rounds_to(m.params_total / 1e9, 30.5, 0.1)
    assert _truncates_to(m.params_active / 1e9, 3.3, 0.1)
    assert _rounds_to((m.params_total - 2 * m.spec.vocab * m.spec.hidden) / 1e9, 29.9, 0.1)
    assert m.spec.experts == 128 and m.spec.top_k == 8 and m.spec.moe_layers == 48
    assert m.spec.expert_ffn_hidden == 768 and m.spec.head_dim == 128
    # the config maps onto the catalog's entry, field by field (the catalog leaves out the
    # per-head q/k norms, 2 x 128 per layer)
    ref = catalog.model("qwen3-30b-a3b")
    for field in ("n_layers", "hidden", "n_heads", "kv_heads", "head_dim", "vocab", "experts",
                  "top_k", "shared_experts", "expert_ffn_hidden", "moe_layers", "ffn"):
        assert getattr(m.spec, field) == getattr(ref, field), field
    assert m.params_total - memory.param_count(ref) == 48 * 2 * 128
    # the planner searches expert parallelism: a mixture of experts is plannable, its
    # findings say what is left out (routing imbalance, capacity)
    assert m.plannable and not m.blocking
    moe_notes = {f.key: f.note for f in m.findings}
    assert "balanced" in moe_notes["num_experts"] and "num_experts_per_tok" in moe_notes
    assert configs.load_model(CONFIGS / "Qwen3-30B-A3B.config.json")[0].experts == 128


def test_deepseek_v3_counts_from_the_published_shape():
    run = catalog.published("deepseek_v3")["run"][0]
    cfg = {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": run["hidden"],
           "num_hidden_layers": run["layers"], "num_attention_heads": run["heads"],
           "vocab_size": run["vocab"], "q_lora_rank": run["q_lora_rank"],
           "kv_lora_rank": run["kv_lora_rank"], "qk_nope_head_dim": run["head_dim"],
           "qk_rope_head_dim": run["qk_rope_head_dim"], "v_head_dim": run["head_dim"],
           "intermediate_size": run["dense_ffn"], "moe_intermediate_size": run["expert_ffn"],
           "n_routed_experts": run["experts"], "n_shared_experts": run["shared_experts"],
           "num_experts_per_tok": run["top_k"], "first_k_dense_replace": run["dense_layers"],
           "num_nextn_predict_layers": run["mtp_depth"], "max_position_embeddings": 163840}
    m = configs.from_hf_config(cfg, seq_len=run["seq_len"])
    assert _rounds_to(m.params_total / 1e9, run["params_total_b"], 1)     # 671B
    assert _truncates_to(m.params_active / 1e9, run["params_active_b"], 1)  # 37B (37.55)
    assert m.params_mtp > 0 and m.plannable
    assert "kv_lora_rank" in {f.key for f in m.findings} and not m.blocking
    # the same model as the catalog's entry, counted the same way
    ref = catalog.model("deepseek-v3")
    assert (m.params_total, m.params_active) == (memory.param_count(ref),
                                                 compute.active_params(ref))
    assert m.spec.is_mla and m.spec.kv_lora_rank == 512 and m.spec.first_dense_layers == 3
    # the report's one MTP module (Sec. 4.2: "the number of MTP depth D to 1") is planned
    assert m.spec.mtp_layers == ref.mtp_layers == run["mtp_depth"] == 1


def test_gpt2_xl_counts_the_released_checkpoint():
    ref = catalog.model("gpt2-1.5b")
    cfg = {"architectures": ["GPT2LMHeadModel"], "n_layer": ref.n_layers, "n_embd": ref.hidden,
           "n_head": ref.n_heads, "vocab_size": ref.vocab, "n_positions": ref.seq_len,
           "n_ctx": ref.seq_len, "activation_function": "gelu_new"}
    m = configs.from_hf_config(cfg)
    assert m.params_total == ref.params_published == 1_557_611_200
    assert any(f.key == "tie_word_embeddings" and f.status == configs.ASSUMED
               for f in m.findings)


def test_dropout_is_read_from_the_config_and_its_class_defaults():
    """Dropout's masks are stored activations; a config's dropout probabilities say whether
    there are any. Llama 3.1's config.json has attention_dropout 0.0; GPT2Config's defaults are
    0.1 for resid_pdrop, embd_pdrop and attn_pdrop (transformers' GPT2Config)."""
    assert _hf("Llama-3.1-8B").spec.dropout is False
    ref = catalog.model("gpt2-1.5b")
    cfg = {"architectures": ["GPT2LMHeadModel"], "n_layer": ref.n_layers, "n_embd": ref.hidden,
           "n_head": ref.n_heads, "vocab_size": ref.vocab, "n_positions": ref.seq_len}
    absent = configs.from_hf_config(cfg)
    assert absent.spec.dropout is True
    assumed = {f.key for f in absent.findings if f.status == configs.ASSUMED}
    assert {"resid_pdrop", "embd_pdrop", "attn_pdrop"} <= assumed
    off = configs.from_hf_config(cfg | {"resid_pdrop": 0.0, "embd_pdrop": 0, "attn_pdrop": 0.0})
    assert off.spec.dropout is False
    one = configs.from_hf_config(cfg | {"resid_pdrop": 0.0, "embd_pdrop": 0, "attn_pdrop": 0.1})
    assert one.spec.dropout is True
    raw = json.loads((CONFIGS / "Llama-3.1-8B.config.json").read_text())
    assert configs.from_hf_config(raw | {"attention_dropout": 0.1}).spec.dropout is True
    with pytest.raises(ValueError, match=r"'attention_dropout' must be a probability.*1\.5"):
        configs.from_hf_config(raw | {"attention_dropout": 1.5})


def test_every_key_is_accounted_for():
    raw = json.loads((CONFIGS / "Llama-3.1-8B.config.json").read_text())
    raw["my_new_knob"] = 3
    m = configs.from_hf_config(raw)
    statuses = {f.key: f.status for f in m.findings}
    assert statuses["my_new_knob"] == configs.UNKNOWN
    assert statuses["rope_theta"] == configs.IGNORED


# =========================================================================== bad input
@pytest.mark.parametrize("text, match", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ('{"architectures": ["BertForMaskedLM"], "hidden_size": 768}',
     "not supported.*LlamaForCausalLM"),
    ('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}',
     "'num_attention_heads' is missing"),
    ('{"architectures": ["LlamaForCausalLM"], "hidden_size": "4096", "num_hidden_layers": 2,'
     ' "num_attention_heads": 32}', "'hidden_size' must be a whole number"),
    ('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 2,'
     ' "num_attention_heads": 32, "num_key_value_heads": 5, "vocab_size": 10,'
     ' "intermediate_size": 10, "max_position_embeddings": 8}', "n_kv_heads=5"),
])
def test_bad_configs_name_the_file_and_field(tmp_path, text, match):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=match) as info:
        configs.from_hf_config(path)
    assert str(path) in str(info.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.json: model config"):
        configs.from_hf_config(tmp_path / "nope.json")


# =========================================================================== Megatron-LM
RUN = """# a run
torchrun --nnodes 8 --nproc-per-node 8 pretrain_gpt.py \\
  --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --ffn-hidden-size 14336 \\
  --group-query-attention --num-query-groups 8 --swiglu --untie-embeddings-and-output-weights \\
  --position-embedding-type rope --disable-bias-linear --normalization RMSNorm \\
  --vocab-size 128256 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \\
  --num-layers-per-virtual-pipeline-stage 4 --micro-batch-size 1 --global-batch-size 256 \\
  --seq-length 8192 --sequence-parallel --recompute-granularity selective \\
  --use-distributed-optimizer --bf16 --lr 3e-4 --train-iters 1000
"""


def test_megatron_command_line_reads_world_model_and_plan():
    run = configs.from_megatron_args(RUN)
    p = run.require_plan()
    assert (p.tp, p.pp, p.dp, p.interleave, p.zero_stage, p.sp, p.recompute) == (
        2, 2, 16, 4, 1, True, "selective")
    assert p.global_batch == 256 and p.seq_len == 8192 and p.flash_attention
    assert run.model.kv_heads == 8 and run.model.ffn == 14336 and not run.model.tied_embeddings
    assert memory.param_count(run.model) == memory.param_count("llama3-8b")
    ignored = {f.key for f in run.findings if f.status == configs.IGNORED}
    assert {"--lr", "--train-iters", "launcher"} <= ignored
    result = plan.evaluate(run.model, "H100-SXM5-80GB", p)
    assert result.step_s > 0
    # Megatron-LM drops out 10% unless told otherwise (TransformerConfig: hidden_dropout and
    # attention_dropout 0.1); a Llama recipe sets both to 0
    assert run.model.dropout is True
    off = configs.from_megatron_args(RUN.replace("--bf16", "--bf16 --attention-dropout 0.0 "
                                                 "--hidden-dropout 0"))
    assert off.model.dropout is False
    with pytest.raises(ValueError, match=r"--hidden-dropout takes one probability.*1\.5"):
        configs.from_megatron_args(RUN.replace("--bf16", "--bf16 --hidden-dropout 1.5"))
    args = configs.to_megatron_args(p, catalog.model("llama3-8b"))
    assert "--attention-dropout 0.0" in args and "--hidden-dropout 0.0" in args


def test_megatron_context_and_expert_parallelism_and_fp8_become_the_plans():
    run = configs.from_megatron_args(RUN.replace("--bf16", "--bf16 --context-parallel-size 2"))
    p = run.require_plan()
    assert (p.cp, p.dp, p.n_gpus) == (2, 8, 64) and run.settings["cp"] == 2
    assert plan.evaluate(run.model, "H100-SXM5-80GB", p).step["cp_comm"] >= 0
    # expert parallelism: a plan's ep for a mixture of experts, ignored for a dense model
    moe_run = configs.from_megatron_args(
        RUN.replace("--bf16", "--bf16 --expert-model-parallel-size 8 --fp8-format hybrid"),
        model=catalog.model("mixtral-8x7b"))
    ignored = {f.key for f in moe_run.findings if f.status == configs.IGNORED}
    assert "--expert-model-parallel-size" in ignored and moe_run.plan.ep == 1  # flags: dense
    assert moe_run.recipe == "fp8-te"
    text = configs.to_megatron_args(Plan(tp=2, pp=2, cp=2, dp=4, ep=8, sp=True, global_batch=64,
                                         flash_attention=True), catalog.model("mixtral-8x7b"))
    for flag in ("--context-parallel-size 2", "--expert-model-parallel-size 8",
                 "--expert-tensor-parallel-size 1", "--num-experts 8", "--moe-router-topk 2"):
        assert flag in text, flag
    back = configs.from_megatron_args(text.replace("--num-experts 8\n", "").replace(
        "--moe-router-topk 2\n", ""), n_gpus=64, model=catalog.model("mixtral-8x7b"))
    assert back.plan is None or back.plan.cp == 2


@pytest.mark.parametrize("change, match", [
    (("--bf16", "--bf16 --tensor-model-paralel-size 2"), "not a Megatron-LM flag.*did you mean"),
    (("--micro-batch-size 1", "--micro-batch-size one"), "--micro-batch-size takes one whole"),
    (("--global-batch-size 256", "--global-batch-size 100"), "multiple of --micro-batch-size"),
    (("--nnodes 8 --nproc-per-node 8", "--nnodes 1 --nproc-per-node 6"), "not a multiple of"),
    (("--sequence-parallel", "--sequence-parallel yes"), "is a switch"),
    (("--recompute-granularity selective", "--recompute-granularity some"), "full, selective"),
])
def test_megatron_bad_input(change, match):
    with pytest.raises(ValueError, match=match):
        configs.from_megatron_args(RUN.replace(*change))


def test_megatron_world_size_must_be_known():
    with pytest.raises(ValueError, match="world size"):
        configs.from_megatron_args(["--micro-batch-size", "1"])


# =========================================================================== torchtitan
TT = """
[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 8
[training]
local_batch_size = 2
seq_len = 8192
[activation_checkpoint]
mode = "full"
"""


def test_torchtitan_fsdp_tp_reads_as_zero3_with_sequence_parallelism():
    run = configs.from_torchtitan_toml(TT, n_gpus=512)
    p = run.require_plan()
    assert (p.tp, p.dp, p.zero_stage, p.sp, p.recompute, p.micro_batch) == (
        8, 64, 3, True, "full", 2)
    assert p.global_batch == 128 and p.flash_attention


@pytest.mark.parametrize("text, match", [
    (TT.replace("tensor_parallel_degree", "tensor_paralel_degree"), "did you mean"),
    (TT + "\n[bogus]\nx = 1\n", "not a torchtitan setting"),
    ("[parallelism\n", "not valid TOML"),
    (TT.replace("local_batch_size = 2", 'local_batch_size = "2"'), "whole number"),
])
def test_torchtitan_bad_input(text, match):
    with pytest.raises(ValueError, match=match):
        configs.from_torchtitan_toml(text, n_gpus=512)


def test_torchtitan_shard_minus_one_needs_the_gpu_count():
    with pytest.raises(ValueError, match="n_gpus"):
        configs.from_torchtitan_toml(TT)


@pytest.mark.parametrize("extra, key", [
    ("data_parallel_replicate_degree = 2\n", "parallelism.data_parallel_replicate_degree"),
    ("pipeline_parallel_degree = 2\npipeline_parallel_schedule = \"GPipe\"\n",
     "parallelism.pipeline_parallel_schedule"),
])
def test_torchtitan_unmodelled_settings_block(extra, key):
    text = TT.replace("[parallelism]\n", "[parallelism]\n" + extra)
    run = configs.from_torchtitan_toml(text, n_gpus=512)
    assert run.plan is None and key in {f.key for f in run.blocking}


def test_torchtitan_context_and_expert_parallelism_round_trip():
    text = TT.replace("[parallelism]\n", "[parallelism]\ncontext_parallel_degree = 2\n")
    run = configs.from_torchtitan_toml(text, n_gpus=512)
    assert run.plan.cp == 2 and run.plan.n_gpus == 512
    mixtral = catalog.model("mixtral-8x7b")
    p = Plan(tp=2, cp=2, dp=8, ep=8, sp=True, zero_stage=3, global_batch=16,
             flash_attention=True, seq_len=4096)
    back = configs.from_torchtitan_toml(configs.to_torchtitan_toml(p, mixtral), n_gpus=32,
                                        model=mixtral)
    assert (back.plan.cp, back.plan.ep, back.plan.dp) == (2, 8, 8)
    dense = configs.from_torchtitan_toml(configs.to_torchtitan_toml(p, mixtral), n_gpus=32)
    assert dense.plan.ep == 1 and "parallelism.expert_parallel_degree" in {
        f.key for f in dense.findings if f.status == configs.IGNORED}
    with pytest.raises(UnsupportedPlanError, match="DeepSpeed cannot run cp=2"):
        configs.to_deepspeed_json(Plan(cp=2, dp=8, global_batch=8, flash_attention=True))


# =========================================================================== DeepSpeed
DS = {"train_batch_size": 512, "train_micro_batch_size_per_gpu": 2,
      "gradient_accumulation_steps": 4, "zero_optimization": {"stage": 3, "overlap_comm": True},
      "bf16": {"enabled": True}, "optimizer": {"type": "AdamW"}}


def test_deepspeed_zero3_reads_dp_from_the_batch():
    run = configs.from_deepspeed_json(DS, n_gpus=64, seq_len=4096)
    p = run.require_plan()
    assert (p.dp, p.zero_stage, p.micro_batch, p.micro_batches) == (64, 3, 2, 4)
    assert run.recipe == "mixed-adam"
    assumed = {f.key for f in run.findings if f.status == configs.ASSUMED}
    assert {"seq_len", "flash_attention"} <= assumed


@pytest.mark.parametrize("cfg, match", [
    ({**DS, "train_micro_batch_size_per_gpus": 2}, "did you mean 'train_micro_batch_size_per_gpu'"),
    ({**DS, "train_batch_size": 500}, "multiple of"),
    ({**DS, "zero_optimization": {"stage": 5}}, "0, 1, 2 or 3"),
    ({**DS, "bf16": {"enabled": "yes"}}, "true or false"),
])
def test_deepspeed_bad_input(cfg, match):
    with pytest.raises(ValueError, match=match):
        configs.from_deepspeed_json(cfg, n_gpus=64)


def test_deepspeed_gpu_count_must_agree():
    with pytest.raises(ValueError, match="not 128"):
        configs.from_deepspeed_json(DS, n_gpus=128)


def test_deepspeed_json_with_comments_reads(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text("// a comment\n" + json.dumps(DS))
    assert configs.from_deepspeed_json(path, n_gpus=64).plan.dp == 64


# =========================================================================== export
def test_export_refusals_name_the_setting_and_the_framework():
    p = plan.Plan(tp=8, pp=4, dp=4, micro_batch=1, global_batch=64, zero_stage=1, sp=True,
                  recompute="selective", interleave=2, flash_attention=True, seq_len=4096)
    with pytest.raises(UnsupportedPlanError, match="DeepSpeed cannot run interleave=2"):
        configs.to_deepspeed_json(p)
    with pytest.raises(UnsupportedPlanError, match="torchtitan cannot run zero_stage=1"):
        configs.to_torchtitan_toml(p, catalog.model("llama3-70b"))
    z2pp = plan.Plan(tp=1, pp=2, dp=4, micro_batch=1, global_batch=8, zero_stage=2)
    with pytest.raises(UnsupportedPlanError, match=r"zero_stage=2 with pp=2.*incompatible"):
        configs.to_deepspeed_json(z2pp)
    noflash = plan.Plan(tp=1, pp=1, dp=8, zero_stage=3, seq_len=2048)
    with pytest.raises(UnsupportedPlanError, match="torchtitan cannot run flash_attention=False"):
        configs.to_torchtitan_toml(noflash)


def test_export_header_states_the_prediction_and_the_mapping():
    m = catalog.model("llama3-70b")
    p = plan.Plan(tp=8, pp=4, dp=16, micro_batch=1, global_batch=512, zero_stage=1, sp=True,
                  recompute="selective", interleave=5, flash_attention=True, seq_len=8192)
    r = plan.evaluate(m, "H100-SXM5-80GB", p)
    text = configs.to_megatron_args(p, m, result=r)
    head = [line for line in text.splitlines() if line.startswith("#")]
    assert configs.MAPPING_VERSION in head[0]
    assert configs.framework_keys("megatron")["commit"][:12] in head[0]
    assert f"{r.step_s:.3g} s per iteration" in text and f"MFU {100 * r.mfu:.1f}%" in text
    assert "GiB per GPU" in text
    back = configs.from_megatron_args(text, n_gpus=p.n_gpus)
    assert back.plan == p and back.model.n_layers == 80


@functools.cache
def _searches() -> list[tuple[catalog.ModelSpec, plan.SearchResult]]:
    out = []
    for model, gpu, n, batch, seq, flash in (
            ("llama3-8b", "H100-SXM5-80GB", 64, 256, 8192, True),
            ("llama3-70b", "H100-SXM5-80GB", 512, 512, 8192, False),
            ("gpt3-175b", "A100-SXM4-80GB", 1024, 1536, 2048, True),
            ("megatron-7.5b", "A100-SXM4-80GB", 96, 192, 2048, False)):
        spec = catalog.model(model)
        out.append((spec, plan.search(spec, gpu, n, batch, seq_len=seq, flash_attention=flash)))
    return out


def _round_trip(framework: str, spec, p: plan.Plan) -> bool:
    """True if exported and read back equal; False if the framework refused the plan."""
    try:
        text = configs.export_plan(framework, p, spec)
    except UnsupportedPlanError as exc:
        name = {"megatron": "Megatron-LM", "torchtitan": "torchtitan", "deepspeed": "DeepSpeed"}
        assert str(exc).startswith(f"{name[framework]} cannot run ")
        return False
    back = configs.import_run(framework, text, n_gpus=p.n_gpus, model=spec, seq_len=p.seq_len,
                              flash_attention=p.flash_attention)
    assert back.plan == p, (framework, p, back.plan, back.report())
    return True


@settings(max_examples=60, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, 3), position=st.floats(0, 1))
def test_round_trip_for_every_plan_the_search_returns(which, position):
    spec, result = _searches()[which]
    rank = min(result.n_fit - 1, int(position * result.n_fit))
    p = result.plan(rank)
    for framework in configs.FRAMEWORKS:
        _round_trip(framework, spec, p)
    assert _round_trip("megatron", spec, p)  # Megatron-LM has every setting of a plan


def test_each_framework_exports_some_searched_plans():
    exported = dict.fromkeys(configs.FRAMEWORKS, 0)
    for spec, result in _searches():
        for rank in range(0, result.n_fit, max(1, result.n_fit // 40)):
            for framework in configs.FRAMEWORKS:
                exported[framework] += _round_trip(framework, spec, result.plan(rank))
    assert all(exported.values()), exported


# =========================================================================== flag lists
def _literals(module: str) -> set[str]:
    tree = ast.parse((LIB / f"{module}.py").read_text())
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}


def test_every_megatron_flag_used_is_recorded_from_the_source():
    keys = configs.framework_keys("megatron")
    flags = {s for s in _literals("megatron") if s.startswith("--") and len(s) > 2 and " " not in s}
    torchrun = {"--nnodes", "--nproc-per-node", "--nproc_per_node"}  # the launcher's flags
    assert flags - torchrun <= set(keys["used"]), flags - torchrun - set(keys["used"])
    assert set(keys["used"]) <= flags  # no stale entries
    assert set(keys["used"]) <= set(keys["known"])
    assert len(keys["commit"]) == 40


@pytest.mark.parametrize("framework", ["torchtitan", "deepspeed"])
def test_every_key_used_is_recorded_from_the_source(framework):
    keys = configs.framework_keys(framework)
    literals = _literals(framework)
    for key in keys["used"]:  # every recorded key is one the module reads or writes
        assert key in literals or key.split(".", 1)[-1] in literals, key
    if "known" in keys:
        assert set(keys["used"]) <= set(keys["known"])
    text = (LIB / f"{framework}.py").read_text()
    tree = ast.parse(text)
    for node in ast.walk(tree):  # every used(...)/_sub(...) call names a recorded key
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("used", "_sub"):
            arg = node.args[-1]
            if isinstance(arg, ast.Constant):
                assert arg.value in keys["used"], arg.value


def test_an_unrecorded_name_fails():
    with pytest.raises(KeyError, match="not in data/frameworks"):
        configs._common.used("deepspeed", "made_up_key")


# =========================================================================== command line
def test_cli_plans_compares_and_exports(tmp_path, capsys):
    run = tmp_path / "run.txt"
    run.write_text(RUN.replace("--nnodes 8", "--nnodes 8"))
    out = tmp_path / "best.toml"
    status = main(["plan", "--model", str(CONFIGS / "Llama-3.1-8B.config.json"), "--gpu",
                   "H100-SXM5-80GB", "--gpus", "64", "--batch", "256", "--seq", "8192",
                   "--from-run", str(run), "--export", "torchtitan", "-o", str(out)])
    text = capsys.readouterr().out
    assert status == 0
    assert "Current run (megatron): TP2 PP2 DP16" in text and "as fast" in text
    back = configs.from_torchtitan_toml(out, n_gpus=64, model=catalog.model("llama3-8b"))
    assert back.plan is not None and back.plan.global_batch == 256


@pytest.mark.parametrize("args, match", [
    (["--model", "no-such-model"], "not in the catalog"),
    (["--model", "data/configs/Qwen3-30B-A3B.config.json", "--gpus", "1"],
     "Qwen3-30B-A3B fits on none of the .* layouts of 1 × H100"),
    (["--from-run", "data/configs/Qwen3-8B.config.json"], "train_micro_batch_size_per_gpu"),
])
def test_cli_bad_input_exits_2_with_one_line(args, match, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    base = {"--model": "llama3-8b", "--gpu": "H100", "--gpus": "64", "--batch": "256",
            "--seq": "8192"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    status = main(["plan", *[x for kv in base.items() for x in kv]])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1
    assert err.startswith("scaleout plan: error:") and __import__("re").search(match, err)


def test_mixtral_config_maps_onto_the_catalog_entry():
    """A Mixtral config.json (the paper's Table 1 shape) lands on the catalog's fields and
    counts: 46.7B total, 12.9B active."""
    ref = catalog.model("mixtral-8x7b")
    cfg = {"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2,
           "vocab_size": 32000, "max_position_embeddings": 32768, "tie_word_embeddings": False}
    m = configs.from_hf_config(cfg, seq_len=32768)
    for field in ("experts", "top_k", "expert_ffn_hidden", "moe_layers", "n_kv_heads", "vocab"):
        assert getattr(m.spec, field) == getattr(ref, field), field
    assert (m.params_total, m.params_active) == (memory.param_count(ref),
                                                 compute.active_params(ref))
    assert _rounds_to(m.params_total / 1e9, 46.7, 0.1) and _rounds_to(m.params_active / 1e9,
                                                                      12.9, 0.1)
    assert m.plannable


def test_load_model_takes_a_catalog_mixture_of_experts_by_name():
    assert configs.load_model("deepseek-v3")[0].is_moe
    assert configs.load_model("llama3-8b")[0].name == "llama3-8b"


def test_each_framework_preset_names_the_exporter_that_runs_it():
    from scaleout import configs
    from scaleout.plan import frameworks

    # Megatron's presets write Megatron-LM arguments, torchtitan a TOML, DeepSpeed a JSON;
    # PyTorch FSDP has no configuration format and HAI-LLM is not public
    want = {"megatron-lm-2021": "megatron", "megatron-lm-2023": "megatron",
            "megatron-core": "megatron",
            "torchtitan": "torchtitan", "deepspeed-2021": "deepspeed",
            "pytorch-fsdp": None, "deepseek-hai-llm": None}
    assert set(want) == set(frameworks.framework_names())
    assert {name: configs.exporter_for(name) for name in want} == want
    with pytest.raises(ValueError, match="framework"):
        configs.exporter_for("megatron-2019")


# =========================================================================== precision
FP8_FLAGS = {  # Megatron-LM's --fp8-format / --fp8-recipe (megatron/training/arguments.py)
    "fp8-te": ("--fp8-format hybrid", "--fp8-recipe delayed"),
    "fp8-te-cs": ("--fp8-format hybrid", "--fp8-recipe tensorwise"),
    "fp8-te-mx": ("--fp8-format e4m3", "--fp8-recipe mxfp8"),
    "fp8-deepseek": ("--fp8-format e4m3", "--fp8-recipe blockwise"),
    "fp8-te-fp8-params": ("--fp8-format hybrid", "--fp8-recipe delayed", "--fp8-param-gather"),
}
DENSE = Plan(tp=2, pp=2, dp=4, sp=True, global_batch=64, flash_attention=True, seq_len=8192)


@pytest.mark.parametrize("recipe", sorted(FP8_FLAGS))
def test_megatron_writes_and_reads_each_fp8_recipe(recipe):
    """The recipe a plan was priced with becomes Megatron-LM's precision flags, and reading
    them back gives the same recipe."""
    m = catalog.model("llama3-8b")
    text = configs.to_megatron_args(DENSE, m, recipe=recipe)
    lines = text.splitlines()
    for flag in FP8_FLAGS[recipe]:
        assert flag in lines, (recipe, flag)
    assert "--bf16" in lines
    assert configs.from_megatron_args(text, n_gpus=16).recipe == recipe


def test_megatron_precision_flags_without_fp8():
    m = catalog.model("llama3-8b")
    fp32 = configs.to_megatron_args(DENSE, m, recipe="fp32-adam").splitlines()
    assert "--bf16" not in fp32 and not any(x.startswith("--fp8") for x in fp32)
    assert configs.from_megatron_args("\n".join(fp32), n_gpus=16).recipe == "fp32-adam"
    assert "--fp16" in configs.to_megatron_args(DENSE, m, recipe="megatron-fp16").splitlines()
    sgd = configs.to_megatron_args(DENSE, m, recipe="fp32-sgd-momentum").splitlines()
    assert "--optimizer sgd" in sgd and "--bf16" not in sgd
    with pytest.raises(UnsupportedPlanError, match="no 8-bit Adam"):
        configs.to_megatron_args(DENSE, m, recipe="mixed-adam-8bit")
    custom = configs.from_megatron_args(RUN.replace("--bf16", "--bf16 --fp8-format e4m3 "
                                                    "--fp8-recipe custom"))
    assert custom.plan is None and "--fp8-recipe" in {f.key for f in custom.blocking}
    with pytest.raises(ValueError, match=r"--fp8-recipe must be one of .*did you mean .tensorwise"):
        configs.from_megatron_args(RUN.replace("--bf16", "--bf16 --fp8-format hybrid "
                                               "--fp8-recipe tensorwize"))


def test_torchtitan_writes_its_fp8_converters_and_refuses_the_others():
    """torchao's float8 Linear (tensor-wise dynamic scales: current scaling) and MX Linear
    (MXFP8 blocks); delayed scaling and DeepSeek's blocks have no torchtitan setting."""
    m = catalog.model("llama3-8b")
    p = Plan(dp=8, zero_stage=3, global_batch=16, flash_attention=True, seq_len=8192)
    for recipe, converter, name in (("fp8-te-cs", "quantize.linear.float8", "tensorwise"),
                                    ("fp8-te-mx", "quantize.linear.mx", "mxfp8_cublas")):
        text = configs.to_torchtitan_toml(p, m, recipe=recipe)
        assert f'converters = ["{converter}"]' in text and f'recipe_name = "{name}"' in text
        assert f"[{converter}]" in text and 'mixed_precision_param = "bfloat16"' in text
        assert configs.from_torchtitan_toml(text, n_gpus=8).recipe == recipe
    assert 'mixed_precision_param = "float32"' in configs.to_torchtitan_toml(
        p, m, recipe="fp32-adam")
    for recipe in ("fp8-te", "fp8-deepseek", "fp8-te-fp8-params", "mixed-adam-8bit"):
        with pytest.raises(UnsupportedPlanError, match=f"torchtitan cannot run recipe {recipe}"):
            configs.to_torchtitan_toml(p, m, recipe=recipe)


def test_deepspeed_precision_follows_the_recipe():
    p = Plan(dp=8, zero_stage=3, global_batch=16, flash_attention=True, seq_len=4096)
    assert json.loads(_json_body(configs.to_deepspeed_json(p, recipe="fp32-adam")))[
        "bf16"]["enabled"] is False
    assert json.loads(_json_body(configs.to_deepspeed_json(p)))["bf16"]["enabled"] is True
    with pytest.raises(UnsupportedPlanError, match="DeepSpeed cannot run recipe fp8-te-cs"):
        configs.to_deepspeed_json(p, recipe="fp8-te-cs")
    with pytest.raises(ValueError, match="recipe"):
        configs.export_plan("megatron", p, recipe="fp9")


def _json_body(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("//"))
