"""Hugging Face ``config.json`` -> the catalog's :class:`~scaleout.catalog.ModelSpec`.

A model's ``config.json`` (a file, pasted text or a ``dict``; never downloaded) is read
as data with :mod:`json` and mapped key by key. The tables below say which key becomes
which field; every value the file does not state and that had to be assumed is
reported as a :class:`~scaleout.configs.Finding`, and so is every key that is read but
not (or not fully) modelled (routing imbalance of a mixture of experts, MLA's latent
caching, biases on the query/key/value projections, per-head norms, sliding windows).
Nothing is dropped silently: keys with no effect on memory or time are listed as ignored, keys the
importer does not know as unrecognised.

Where the meaning of a key comes from: the model classes of Hugging Face Transformers
(``modeling_gpt2.py``, ``modeling_llama.py``, ``modeling_mistral.py``,
``modeling_mixtral.py``, ``modeling_qwen2.py``, ``modeling_qwen3.py``,
``modeling_qwen3_moe.py``, ``modeling_deepseek_v3.py``), whose weight shapes the
parameter counts below follow.

GPT-2 (``GPT2LMHeadModel``)
---------------------------
=======================  ===================  =============================================
config key               ModelSpec field      note
=======================  ===================  =============================================
``n_layer``              ``n_layers``
``n_embd``               ``hidden``
``n_head``               ``n_heads``          no GQA (``n_kv_heads`` = ``n_heads``)
``vocab_size``           ``vocab``
``n_positions``          ``seq_len``          and the learned position table
``n_inner``              ``ffn_hidden``       null means 4h
``tie_word_embeddings``  ``tied_embeddings``  absent: true (GPT-2 ties them)
(fixed)                  ``biases``           true: LayerNorm and linear layers with biases
``resid_pdrop``,         ``dropout``          any above 0: masks stored; absent: 0.1 each
``embd_pdrop``,                               (GPT2Config's defaults, assumed)
``attn_pdrop``
(fixed)                  ``gated_mlp``        false: GeLU MLP of two matrices
=======================  ===================  =============================================

Llama 2/3, Mistral, Qwen2, Qwen3
--------------------------------
(``LlamaForCausalLM``, ``MistralForCausalLM``, ``Qwen2ForCausalLM``, ``Qwen3ForCausalLM``)
===========================  ===================  ===========================================
config key                   ModelSpec field      note
===========================  ===================  ===========================================
``num_hidden_layers``        ``n_layers``
``hidden_size``              ``hidden``
``num_attention_heads``      ``n_heads``
``num_key_value_heads``      ``n_kv_heads``       absent: = heads (assumed; Llama 2 7B/13B)
``intermediate_size``        ``ffn_hidden``
``vocab_size``               ``vocab``
``tie_word_embeddings``      ``tied_embeddings``  absent: false (assumed; the classes' default)
``max_position_embeddings``  ``seq_len``          assumed; ``rope_scaling.original_max_posi``
                                                  ``tion_embeddings`` first when present
``head_dim``                 (checked)            must equal hidden/heads, else not modelled
                                                  (blocks planning)
``hidden_act``               ``gated_mlp``        true: gate, up and down projections
(fixed)                      ``biases``           false: RMSNorm, no biases
``attention_dropout``        ``dropout``          above 0: masks stored; absent: 0 (assumed)
(fixed)                      ``learned_positions``  false: rotary positions
===========================  ===================  ===========================================

A ``head_dim`` other than ``hidden/heads`` (Qwen3-MoE) becomes the spec's
``attention_head_dim`` (counted exactly; flagged, since the planner's attention terms
assume ``heads × head_dim = hidden``). Not modelled, with their parameters counted in
:attr:`ModelImport.params_total`: ``attention_bias`` / ``mlp_bias`` (Llama), the
query/key/value biases every Qwen2 layer has (``h + 2 h_kv`` per layer, not a config
key), the per-head query/key RMSNorms of Qwen3 (``2 d_head`` per layer), a
``sliding_window`` that is in use.

Mixtral and Qwen3-MoE (``MixtralForCausalLM``, ``Qwen3MoeForCausalLM``)
---------------------------------------------------------------------
As the dense table for attention, plus the catalog's mixture-of-experts fields:

==========================================  =======================  ======================
config key                                  ModelSpec field          note
==========================================  =======================  ======================
``num_local_experts`` / ``num_experts``     ``experts``              E
``num_experts_per_tok``                     ``top_k``                k
``intermediate_size`` (Mixtral)             ``expert_ffn_hidden``    every layer is MoE
``moe_intermediate_size`` (Qwen3-MoE)       ``expert_ffn_hidden``
``intermediate_size`` (Qwen3-MoE)           ``ffn_hidden``           the dense layers' MLP
``mlp_only_layers``                         ``first_dense_layers``   a leading run only
``decoder_sparse_step``                     ``moe_layer_step``
==========================================  =======================  ======================

DeepSeek-V3 (``DeepseekV3ForCausalLM``)
--------------------------------------
Multi-head latent attention (MLA): ``q_lora_rank``, ``kv_lora_rank``,
``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim`` become the fields of the same
names; ``first_k_dense_replace`` → ``first_dense_layers`` (dense MLPs of
``intermediate_size`` → ``ffn_hidden``), ``n_routed_experts`` → ``experts``,
``n_shared_experts`` → ``shared_experts``, ``moe_intermediate_size`` →
``expert_ffn_hidden``, ``num_experts_per_tok`` → ``top_k``, ``moe_layer_freq`` →
``moe_layer_step`` (1 only), the routing bias → ``router_bias``;
``num_nextn_predict_layers`` → ``mtp_layers`` (planned as trained, on the last stage), their
parameters counted apart (:attr:`ModelImport.params_mtp`: DeepSeek's 671B excludes them, the
released weights' 685B includes them).

A mixture of experts or MLA is described in full by the spec (every expert's weights
in :func:`scaleout.memory.param_count`, the active ones in
:func:`scaleout.compute.active_params`) and planned: the planner searches expert
parallelism and prices the all-to-alls. The findings say what it still leaves out (routing
imbalance and capacity limits; MLA's latent-only caching).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..catalog import ModelSpec
from ..checks import close_matches
from ..compute import active_params
from ..memory import layer_params, param_count
from ._common import ASSUMED, IGNORED, NOT_MODELLED, UNKNOWN, Finding, _Collector, load_json

__all__ = ["SUPPORTED_ARCHITECTURES", "ModelImport", "from_hf_config"]

#: ``architectures[0]`` values the importer reads, and their family.
SUPPORTED_ARCHITECTURES: dict[str, str] = {
    "GPT2LMHeadModel": "GPT-2",
    "LlamaForCausalLM": "Llama",
    "MistralForCausalLM": "Mistral",
    "Qwen2ForCausalLM": "Qwen2",
    "Qwen3ForCausalLM": "Qwen3",
    "MixtralForCausalLM": "Mixtral",
    "Qwen3MoeForCausalLM": "Qwen3-MoE",
    "DeepseekV3ForCausalLM": "DeepSeek-V3",
}
_MODEL_TYPES = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM",
                "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
                "qwen3": "Qwen3ForCausalLM", "mixtral": "MixtralForCausalLM",
                "qwen3_moe": "Qwen3MoeForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM"}

#: Keys read but without effect on memory or time (token ids, initialisation, norms'
#: epsilon, RoPE's base frequency, inference caches, dtypes of released weights).
_IGNORED_KEYS = frozenset({
    "_name_or_path", "architectures", "model_type", "bos_token_id", "eos_token_id",
    "pad_token_id", "torch_dtype", "dtype", "transformers_version", "use_cache",
    "initializer_range", "rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", "rope_theta",
    "rope_scaling", "rope_parameters", "summary_activation", "summary_first_dropout",
    "summary_proj_to_labels", "summary_type", "summary_use_proj", "task_specific_params",
    "pretraining_tp", "max_window_layers", "use_mrope", "output_router_logits",
    "router_aux_loss_coef", "router_jitter_noise", "gradient_checkpointing", "n_ctx",
    "activation_function", "hidden_act", "scale_attn_weights", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "auto_map", "quantization_config", "norm_topk_prob",
    "routed_scaling_factor", "scoring_func", "topk_method", "n_group", "topk_group",
    "aux_loss_alpha", "seq_aux", "ep_size", "tie_word_embeddings", "layer_types",
    "use_sliding_window", "sliding_window", "head_dim", "mlp_only_layers",
    "decoder_sparse_step", "attention_bias", "mlp_bias",
})


@dataclass(frozen=True)
class ModelImport:
    """A ``config.json`` read into the workbook's terms.

    Attributes
    ----------
    spec
        The catalog's :class:`~scaleout.catalog.ModelSpec` (a mixture of experts and MLA
        included, see the module docstring).
    architecture, family
        ``architectures[0]`` and its family (:data:`SUPPORTED_ARCHITECTURES`).
    params_total
        Every parameter of the model, including the parts the catalog cannot describe
        yet (experts, MLA, extra biases and norms); multi-token-prediction layers apart.
    params_active
        Parameters one token uses (= ``params_total`` for a dense model).
    params_mtp
        Parameters of DeepSeek's multi-token-prediction layers (0 elsewhere).
    findings
        Assumed values, keys not yet modelled, ignored and unrecognised keys.
    source
        The file (or ``"<text>"``) read.
    """

    spec: ModelSpec
    architecture: str
    family: str
    params_total: int
    params_active: int
    findings: tuple[Finding, ...]
    source: str
    params_mtp: int = 0

    @property
    def plannable(self) -> bool:
        """Whether the planner can plan this model as it stands (no blocking finding)."""
        return not any(f.blocks_planning for f in self.findings)

    @property
    def blocking(self) -> tuple[Finding, ...]:
        """The findings that stop the model from being planned."""
        return tuple(f for f in self.findings if f.blocks_planning)

    def require_plannable(self) -> ModelSpec:
        """The spec, or a ``ValueError`` naming every key that is not yet modelled."""
        if not self.plannable:
            keys = ", ".join(f"{f.key}={f.value!r}" for f in self.blocking)
            raise ValueError(
                f"{self.source}: {self.architecture} is recognised, but the planner does not "
                f"model it yet ({keys}); its parameters are counted ({self.params_total:,} in "
                f"total, {self.params_active:,} per token), planning it is not")
        return self.spec

    def report(self) -> str:
        """One line per finding."""
        return "\n".join(f.line() for f in self.findings)


# =========================================================================== reading
class _Reader:
    """Typed access to a config's keys, recording which were read."""

    def __init__(self, raw: dict[str, Any], label: str) -> None:
        self.raw, self.label, self.read = raw, label, set()

    def has(self, key: str) -> bool:
        return key in self.raw and self.raw[key] is not None

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        self.read.add(key)
        if key not in self.raw or self.raw[key] is None:
            if default is None:
                raise ValueError(f"{self.label}: field {key!r} is missing (a whole number >= "
                                 f"{minimum} is needed)")
            return default
        value = self.raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{self.label}: field {key!r} must be a whole number >= {minimum}, "
                             f"got {value!r}")
        return value

    def probability(self, key: str, default: float) -> float:
        """A probability in [0, 1) (a dropout rate); ``default`` where the key is absent."""
        self.read.add(key)
        value = self.raw.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise ValueError(f"{self.label}: field {key!r} must be a probability in [0, 1), "
                             f"got {value!r}")
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        self.read.add(key)
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValueError(f"{self.label}: field {key!r} must be true or false, got {value!r}")
        return value


#: Each architecture's dropout keys and the class defaults that apply when a key is absent
#: (transformers' GPT2Config: 0.1 each; LlamaConfig and the others: attention_dropout 0.0).
_DROPOUT_KEYS = {"GPT2LMHeadModel": {"resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}}
_NO_DROPOUT = {"attention_dropout": 0.0}


def _dropout(r: _Reader, arch: str, found: _Collector) -> bool:
    """Whether the model trains with dropout (any dropout probability above 0): its masks are
    stored for the backward pass (:func:`scaleout.memory.activation_per_layer_arrays`)."""
    on = False
    for key, default in _DROPOUT_KEYS.get(arch, _NO_DROPOUT).items():
        if key not in r.raw:
            found.add(key, default, ASSUMED, f"absent: the class default {default}")
        on = on or r.probability(key, default) > 0
    for key in ("hidden_dropout", "attention_dropout"):  # read where a config has them too
        if key in r.raw:
            on = on or r.probability(key, 0.0) > 0
    return on


def _architecture(raw: dict[str, Any], label: str) -> str:
    archs = raw.get("architectures")
    if archs is not None:
        if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
            raise ValueError(f"{label}: field 'architectures' must be a list of class names, "
                             f"got {archs!r}")
        name = archs[0]
    elif isinstance(raw.get("model_type"), str) and raw["model_type"] in _MODEL_TYPES:
        name = _MODEL_TYPES[raw["model_type"]]
    else:
        raise ValueError(f"{label}: neither 'architectures' nor a known 'model_type' says which "
                         f"model this is; supported: {', '.join(SUPPORTED_ARCHITECTURES)}")
    if name not in SUPPORTED_ARCHITECTURES:
        near = close_matches(name, SUPPORTED_ARCHITECTURES)
        hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
        raise ValueError(f"{label}: architecture {name!r} is not supported{hint}; supported: "
                         f"{', '.join(SUPPORTED_ARCHITECTURES)}")
    return name


def _seq_len(r: _Reader, seq_len: int | None, found: _Collector) -> int:
    if seq_len is not None:
        return seq_len
    scaling = r.raw.get("rope_scaling")
    if isinstance(scaling, dict) and isinstance(scaling.get("original_max_position_embeddings"),
                                                int):
        value = scaling["original_max_position_embeddings"]
        found.add("seq_len", value, ASSUMED, "the training sequence length is not in a "
                  "config.json; taken as rope_scaling.original_max_position_embeddings (the "
                  "context before long-context extension); pass seq_len= to choose")
        return value
    value = r.int("max_position_embeddings")
    found.add("seq_len", value, ASSUMED, "the training sequence length is not in a config.json; "
              "taken as max_position_embeddings; pass seq_len= to choose")
    return value


def from_hf_config(config: str | Path | Mapping, *, name: str | None = None,
                   seq_len: int | None = None) -> ModelImport:
    """Read a Hugging Face ``config.json`` (path, pasted text or dict) into a :class:`ModelImport`.

    Parameters
    ----------
    config
        The file, its text, or the parsed dict. Read as data with :mod:`json` only.
    name
        The catalog name to give the spec (default: the file's stem, or
        ``_name_or_path``, or the architecture).
    seq_len
        The training sequence length (a config.json states only the longest context).

    Raises
    ------
    ValueError
        Malformed JSON, an unsupported architecture (the supported ones listed), a
        missing or mistyped field, or a shape the catalog rejects (heads not dividing
        the width...), each naming the file and the field.
    """
    raw, label = load_json(config, "model config (config.json)")
    if seq_len is not None and (isinstance(seq_len, bool) or not isinstance(seq_len, int)
                                or seq_len < 1):
        raise ValueError(f"seq_len must be a whole number >= 1, got {seq_len!r}")
    arch = _architecture(raw, label)
    family = SUPPORTED_ARCHITECTURES[arch]
    r = _Reader(raw, label)
    found = _Collector(label)
    if name is None:
        if label not in ("<text>", "<dict>"):
            name = Path(label).name.removesuffix(".json").removesuffix(".config")
        else:
            name = str(raw.get("_name_or_path") or family)
    if arch == "GPT2LMHeadModel":
        out = _gpt2(r, name, seq_len, found)
    elif arch == "DeepseekV3ForCausalLM":
        out = _deepseek_v3(r, name, seq_len, found)
    else:
        out = _llama_like(r, arch, name, seq_len, found)
    spec, total, active, mtp = out
    for key in raw:
        if key in r.read:
            continue
        if key in _IGNORED_KEYS:
            found.add(key, raw[key], IGNORED)
        else:
            found.add(key, raw[key], UNKNOWN, "not a key the importer knows for "
                      f"{arch}; it is not used")
    return ModelImport(spec=spec, architecture=arch, family=family, params_total=total,
                       params_active=active, findings=tuple(found.items), source=label,
                       params_mtp=mtp)


def _spec(label: str, **fields) -> ModelSpec:
    try:
        return ModelSpec(**fields)
    except ValueError as exc:
        detail = str(exc).split(": ", 1)[-1]
        raise ValueError(f"{label}: {detail}") from None


def _gpt2(r: _Reader, name, seq_len, found):
    h = r.int("n_embd")
    positions = r.int("n_positions")
    ffn = r.int("n_inner", default=4 * h)
    if not r.has("n_inner"):
        r.read.add("n_inner")
    tied = r.bool("tie_word_embeddings", True)
    if "tie_word_embeddings" not in r.raw:
        found.add("tie_word_embeddings", True, ASSUMED, "GPT-2 ties the output layer to the "
                  "input embedding")
    spec = _spec(r.label, name=name, n_layers=r.int("n_layer"), hidden=h, n_heads=r.int("n_head"),
                 vocab=r.int("vocab_size"), seq_len=seq_len or positions, ffn_hidden=ffn,
                 gated_mlp=False, tied_embeddings=tied, learned_positions=True, biases=True,
                 dropout=_dropout(r, "GPT2LMHeadModel", found), family="GPT-2",
                 source=f"Hugging Face config.json ({r.label})")
    if seq_len is not None and seq_len != positions:
        found.add("n_positions", positions, NOT_MODELLED, f"the position table has {positions} "
                  f"rows; the spec's seq_len={seq_len} sizes it in the count instead",
                  blocks=seq_len > positions)
    total = param_count(spec)
    if seq_len is not None and seq_len != positions:
        total += (positions - seq_len) * h
    return spec, total, total, 0


def _llama_like(r: _Reader, arch: str, name, seq_len, found):
    label = r.label
    h = r.int("hidden_size")
    a = r.int("num_attention_heads")
    layers = r.int("num_hidden_layers")
    if r.has("num_key_value_heads"):
        kv = r.int("num_key_value_heads")
    else:
        r.read.add("num_key_value_heads")
        kv = a
        found.add("num_key_value_heads", a, ASSUMED, "absent: one key/value head per query "
                  "head (no grouped-query attention)")
    vocab = r.int("vocab_size")
    tied = r.bool("tie_word_embeddings", False)
    if "tie_word_embeddings" not in r.raw:
        found.add("tie_word_embeddings", False, ASSUMED, "absent: the Transformers class's "
                  "default, an untied output layer")
    head_dim = h // a if h % a == 0 else None
    if r.has("head_dim"):
        head_dim = r.int("head_dim")
    else:
        r.read.add("head_dim")
    if head_dim is None:
        raise ValueError(f"{label}: hidden_size={h} must be a multiple of "
                         f"num_attention_heads={a} (or give head_dim)")
    act = r.raw.get("hidden_act", "silu")
    r.read.add("hidden_act")
    s = _seq_len(r, seq_len, found)
    r.read.add("max_position_embeddings")
    r.read.add("rope_scaling")
    extra = 0  # parameters the spec cannot describe, per layer
    # ---- attention extras
    q_dim, kv_dim = a * head_dim, kv * head_dim
    head_field = None
    if q_dim != h or h % a:
        head_field = head_dim  # the spec's attention_head_dim: counted and planned
    if arch == "LlamaForCausalLM" or arch == "Qwen3ForCausalLM":
        if r.bool("attention_bias", False):
            n = q_dim + 2 * kv_dim + h
            extra += n
            found.add("attention_bias", True, NOT_MODELLED, f"biases on q, k, v and o "
                      f"({n:,} per layer) are counted in params_total only")
    if arch == "LlamaForCausalLM" and r.bool("mlp_bias", False):
        f = r.int("intermediate_size")
        found.add("mlp_bias", True, NOT_MODELLED, f"MLP biases ({2 * f + h:,} per layer) are "
                  "counted in params_total only")
        extra += 2 * f + h
    if arch == "Qwen2ForCausalLM":
        n = q_dim + 2 * kv_dim
        extra += n
        found.add("qkv_bias", True, NOT_MODELLED, f"Qwen2's q, k and v projections carry biases "
                  f"(not a config key; {n:,} per layer), counted in params_total only")
    if arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM"):
        extra += 2 * head_dim
        found.add("q_norm/k_norm", 2 * head_dim, NOT_MODELLED, "Qwen3 normalises queries and "
                  "keys per head (RMSNorm of head_dim each, not a config key), counted in "
                  "params_total only")
    window = r.raw.get("sliding_window")
    r.read.add("sliding_window")
    r.read.add("use_sliding_window")
    uses_window = (window is not None and arch in ("MistralForCausalLM", "MixtralForCausalLM")
                   ) or (window is not None and r.raw.get("use_sliding_window") is True)
    if uses_window:
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            raise ValueError(f"{label}: field 'sliding_window' must be a whole number >= 1 or "
                             f"null, got {window!r}")
        found.add("sliding_window", window, NOT_MODELLED, "attention over a sliding window; "
                  f"the planner attends over the whole sequence (same for s <= {window})",
                  blocks=s > window)
    # ---- MLP / experts
    common = dict(name=name, n_layers=layers, hidden=h, n_heads=a, n_kv_heads=kv, vocab=vocab,
                  seq_len=s, gated_mlp=True, tied_embeddings=tied, learned_positions=False,
                  biases=False, dropout=_dropout(r, arch, found), attention_head_dim=head_field,
                  family=SUPPORTED_ARCHITECTURES[arch],
                  source=f"Hugging Face config.json ({label})")
    if arch not in ("MixtralForCausalLM", "Qwen3MoeForCausalLM"):
        spec = _spec(label, ffn_hidden=r.int("intermediate_size"), **common)
        if act not in ("silu", "swish", "gelu", "gelu_pytorch_tanh"):
            found.add("hidden_act", act, NOT_MODELLED, "an activation other than SiLU/GeLU "
                      "(the gated MLP's FLOPs are the same)")
        total = param_count(spec) + layers * extra
        return spec, total, total, 0
    if arch == "MixtralForCausalLM":
        f_e = r.int("intermediate_size")
        moe = dict(experts=r.int("num_local_experts"), top_k=r.int("num_experts_per_tok"),
                   expert_ffn_hidden=f_e, ffn_hidden=f_e)
        key = "num_local_experts"
    else:
        step = r.int("decoder_sparse_step", default=1)
        only = r.raw.get("mlp_only_layers") or []
        r.read.add("mlp_only_layers")
        if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                 and 0 <= i < layers for i in only):
            raise ValueError(f"{label}: field 'mlp_only_layers' must be a list of layer "
                             f"indices from 0 to {layers - 1}, got {only!r}")
        if sorted(set(only)) != list(range(len(set(only)))):
            raise ValueError(f"{label}: field 'mlp_only_layers' = {only!r}: the catalog "
                             "describes dense layers as a leading run (layers 0, 1, ...) "
                             "followed by every decoder_sparse_step-th layer; allowed: "
                             "[] or [0, ..., n-1]")
        moe = dict(experts=r.int("num_experts"), top_k=r.int("num_experts_per_tok"),
                   expert_ffn_hidden=r.int("moe_intermediate_size"),
                   ffn_hidden=r.int("intermediate_size"), first_dense_layers=len(set(only)),
                   moe_layer_step=step)
        key = "num_experts"
    spec = _spec(label, **common, **moe)
    total = param_count(spec) + layers * extra
    active = active_params(spec) + layers * extra
    _flag_moe(found, spec, key)
    return spec, total, active, 0


def _flag_moe(found: _Collector, spec: ModelSpec, key: str) -> None:
    note = (f"a mixture of experts: {spec.experts} experts of width {spec.expert_ffn_hidden} "
            f"in {spec.moe_layers} layers, {spec.top_k} per token"
            + (f", {spec.shared_experts} shared" if spec.shared_experts else "")
            + "; planned with expert parallelism (FLOPs from the active experts, memory "
              "from all, the all-to-alls priced); routing is taken as balanced and dropless "
              "(no load imbalance, no capacity limit)")
    found.add(key, spec.experts, NOT_MODELLED, note)
    found.add("num_experts_per_tok", spec.top_k, NOT_MODELLED, "experts per token (top-k): "
              "the routed copies of each token in the all-to-all and the activations")


def _deepseek_v3(r: _Reader, name, seq_len, found):
    label = r.label
    h = r.int("hidden_size")
    a = r.int("num_attention_heads")
    layers = r.int("num_hidden_layers")
    vocab = r.int("vocab_size")
    tied = r.bool("tie_word_embeddings", False)
    r.read.add("num_key_value_heads")  # MLA has no key/value heads to group
    q_lora = r.int("q_lora_rank", default=0, minimum=0) if r.has("q_lora_rank") else 0
    r.read.add("q_lora_rank")
    kv_lora = r.int("kv_lora_rank")
    nope = r.int("qk_nope_head_dim")
    rope = r.int("qk_rope_head_dim")
    v = r.int("v_head_dim")
    dense_ffn = r.int("intermediate_size")
    f_e = r.int("moe_intermediate_size")
    experts = r.int("n_routed_experts")
    shared = r.int("n_shared_experts", default=0, minimum=0)
    k = r.int("num_experts_per_tok")
    first_dense = r.int("first_k_dense_replace", default=0, minimum=0)
    freq = r.int("moe_layer_freq", default=1)
    mtp = r.int("num_nextn_predict_layers", default=0, minimum=0)
    s = _seq_len(r, seq_len, found)
    r.read.update({"max_position_embeddings", "rope_scaling"})
    if freq != 1:
        raise ValueError(f"{label}: field 'moe_layer_freq' = {freq}: only 1 (every layer after "
                         "the first_k_dense_replace dense ones is MoE) is described; allowed: 1")
    spec = _spec(label, name=name, n_layers=layers, hidden=h, n_heads=a, vocab=vocab,
                 seq_len=s, ffn_hidden=dense_ffn, gated_mlp=True, tied_embeddings=tied,
                 learned_positions=False, biases=False, dropout=_dropout(r, "", found),
                 kv_lora_rank=kv_lora,
                 q_lora_rank=q_lora, qk_nope_head_dim=nope, qk_rope_head_dim=rope,
                 v_head_dim=v, experts=experts, top_k=k, shared_experts=shared,
                 expert_ffn_hidden=f_e, first_dense_layers=first_dense, router_bias=True,
                 mtp_layers=mtp, family="DeepSeek-V3",
                 source=f"Hugging Face config.json ({label})")
    total, active = param_count(spec), active_params(spec)
    # one MTP module (DeepSeek-V3 report Sec. 2.2): a MoE layer plus two norms, a 2h x h
    # projection and a final norm
    p = layer_params(spec)
    layer = p["attention"] + p["norms"] + (experts + shared) * p["expert"] + p["router"]
    mtp_params = mtp * (layer + 2 * h + 2 * h * h + h)
    found.add("kv_lora_rank", kv_lora, NOT_MODELLED, "multi-head latent attention (MLA: "
              f"q rank {q_lora}, kv rank {kv_lora}, head dims {nope}+{rope}/{v}); its "
              "parameters and FLOPs are counted and its up-projected heads stored as "
              "activations (recomputing them from the latent is not modelled)")
    _flag_moe(found, spec, "n_routed_experts")
    if mtp:
        found.add("num_nextn_predict_layers", mtp, ASSUMED, f"multi-token prediction trained "
                  f"with the model ({mtp} module(s) on the last pipeline stage, DeepSeek-V3 "
                  f"Sec. 2.2; {mtp_params:,} parameters, params_mtp, not in params_total)")
    return spec, total, active, mtp_params
