"""Catalog: GPUs, scale-up systems and models, loaded from ``data/*.toml``.

Every figure in ``data/`` carries its source (an entry's ``source``, and
``sources.<field>`` where one field comes from elsewhere) and its meaning is
fixed by the field's name and the unit documented on the dataclass below:
FLOP/s are *dense* (no 2:4 sparsity), bandwidths are *per direction*,
capacities are in GiB.

Loading validates every entry and fails with a ``ValueError`` that names the
file, the entry and the field. Functions that take a GPU or a model accept
either a catalog name (``"H100"``, ``"gpt3-175b"``; close matches are
suggested on a typo) or a user-defined :class:`GPU` / :class:`ModelSpec`
(or a ``dict`` of their fields).

Taught in ``notebooks/01_scale_up_limits.ipynb``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .checks import check_choice, check_int, close_matches

__all__ = [
    "CUSTOM_VOCAB",
    "DATA_DIR",
    "GPU",
    "GPU_ARCHITECTURES",
    "Entry",
    "Link",
    "ModelSpec",
    "System",
    "cached_entries",
    "check_fields",
    "custom_model",
    "entries_where",
    "field_of",
    "gpu",
    "gpu_names",
    "gpus",
    "link",
    "link_names",
    "links",
    "load_entries",
    "lookup",
    "model",
    "model_names",
    "models",
    "published",
    "read_toml",
    "system",
    "system_names",
    "systems",
    "table_entries",
]

#: Where the catalogs live (``<repo>/data``); the package is installed editable from ``lib/``.
DATA_DIR = Path(__file__).resolve().parents[2] / "data"
#: An entry class of a catalog (:func:`cached_entries`).
E = TypeVar("E")


#: GPU architectures the catalog knows (a GPU's ``architecture`` field).
GPU_ARCHITECTURES = ("Volta", "Ampere", "Hopper", "Blackwell", "CDNA 3")


def field_of(unit: str, doc: str, *, allow_zero: bool = False,
             choices: tuple[str, ...] = (), **kw) -> Any:
    """A dataclass field that documents its unit and meaning (read by the loader).

    Numeric fields must be finite and > 0, or >= 0 with ``allow_zero`` (the
    elements of a tuple of numbers too); a text field with ``choices`` must be
    one of them.
    """
    meta = {"unit": unit, "doc": doc, "allow_zero": allow_zero, "choices": choices}
    return field(metadata=meta, **kw)


@dataclass(frozen=True, kw_only=True)
class Entry:
    """Fields every catalog entry has besides its figures: other names, remarks, sources."""

    aliases: tuple[str, ...] = field_of("", "other names this entry is found by", default=())
    notes: str = field_of("", "what a reader should know about these figures", default="")
    sources: dict[str, str] = field_of("", "per-field sources where they differ",
                                       default_factory=dict)

    def __post_init__(self) -> None:
        _validate(self, type(self).__name__)


@dataclass(frozen=True)
class GPU(Entry):
    """One accelerator, as its vendor's datasheet describes it."""

    name: str = field_of("", "catalog name")
    vendor: str = field_of("", "maker")
    year: int = field_of("year", "year of general availability")
    hbm_gib: float = field_of("GiB",
                              "HBM capacity as marketed (vendors' 'GB' for HBM are binary GiB)")
    hbm_gbytes_s: float = field_of("GB/s", "HBM bandwidth, 10**9 bytes per second")
    bf16_dense_tflops: float = field_of("TFLOP/s",
                                        "peak dense BF16/FP16 tensor-core rate (no sparsity)")
    scaleup_gbytes_s: float = field_of(
        "GB/s", "scale-up link (NVLink, Infinity Fabric) per GPU, per direction"
    )
    scaleup_link: str = field_of("", "scale-up link technology, e.g. 'NVLink 4'")
    scaleup_domain_gpus: int = field_of("GPUs",
                                        "GPUs in one scale-up (NVLink) domain as usually built")
    tdp_w: float = field_of("W", "maximum board power")
    source: str = field_of("", "where these figures come from")
    fp8_dense_tflops: float | None = field_of(
        "TFLOP/s", "peak dense FP8 tensor-core rate; None if unsupported", default=None
    )
    scaleout_link: str | None = field_of(
        "", "network port per GPU in the usual server, a name in links.toml; None if not "
        "recorded", default=None
    )
    mamf_bf16_tflops: float | None = field_of(
        "TFLOP/s", "maximum achievable BF16 matmul rate, measured (MAMF); None if unpublished",
        default=None)
    mamf_fp8_tflops: float | None = field_of(
        "TFLOP/s", "maximum achievable FP8 matmul rate, measured (MAMF); None if unpublished",
        default=None)
    architecture: str = field_of("", "GPU architecture (NVIDIA Volta, Ampere, Hopper, "
                                 "Blackwell; AMD CDNA 3): which of NCCL's tuning constants "
                                 "apply", default="", choices=("", *GPU_ARCHITECTURES))

    @property
    def hbm_bytes(self) -> float:
        """HBM capacity in bytes."""
        from .units import GIB

        return self.hbm_gib * GIB

    @property
    def bf16_dense_flops(self) -> float:
        """Peak dense BF16 FLOP/s."""
        return self.bf16_dense_tflops * 1e12

    def achievable_share(self, fmt: str = "bf16") -> float | None:
        """The measured maximum achievable matmul rate over the datasheet's peak in ``fmt``
        (``"bf16"`` or ``"fp8"``), or None where no measurement is recorded (MAMF,
        stas00/ml-engineering's comparison table: ``mamf_*_tflops / *_dense_tflops``)."""
        if fmt == "fp8":
            if self.mamf_fp8_tflops is None or self.fp8_dense_tflops is None:
                return None
            return self.mamf_fp8_tflops / self.fp8_dense_tflops
        if fmt != "bf16":
            raise ValueError(f"fmt must be 'bf16' or 'fp8', got {fmt!r}")
        if self.mamf_bf16_tflops is None:
            return None
        return self.mamf_bf16_tflops / self.bf16_dense_tflops


@dataclass(frozen=True)
class ModelSpec(Entry):
    """A decoder-only transformer's shape, dense or a mixture of experts.

    ``n_kv_heads`` < ``n_heads`` is grouped-query attention; ``gated_mlp`` is a
    SwiGLU-style MLP with three weight matrices; ``biases`` and
    ``learned_positions`` describe GPT-2/3-style models.

    **Mixture of experts** (``experts > 0``): every MoE layer replaces the dense MLP
    by ``experts`` routed experts, each an MLP of width ``expert_ffn_hidden``, of
    which a router picks ``top_k`` per token, plus ``shared_experts`` experts every
    token uses (DeepSeekMoE, Dai et al. 2024, arXiv 2401.06066). The first
    ``first_dense_layers`` layers keep a dense MLP of width ``ffn_hidden``; after
    them every ``moe_layer_step``-th layer is MoE (:attr:`layer_is_moe`).

    **Multi-head latent attention** (MLA, ``kv_lora_rank`` set; DeepSeek-V2, arXiv
    2405.04434, Sec. 2.1): keys and values are rebuilt from a shared latent of width
    ``kv_lora_rank`` (queries from one of width ``q_lora_rank``, 0 = none); each head's
    query and key have ``qk_nope_head_dim + qk_rope_head_dim`` channels (the rotary part
    of the key shared by all heads), its value ``v_head_dim``.

    ``attention_head_dim`` sets a head's width where ``n_heads × head_dim`` differs
    from ``hidden`` (Qwen3, gpt-oss).
    """

    name: str = field_of("", "catalog name")
    n_layers: int = field_of("", "transformer layers l")
    hidden: int = field_of("", "model width h")
    n_heads: int = field_of("", "attention heads a")
    vocab: int = field_of("tokens", "vocabulary size V")
    seq_len: int = field_of("tokens", "training sequence length s")
    source: str = field_of("", "where the shape comes from")
    n_kv_heads: int | None = field_of("", "key/value heads (GQA); None means n_heads", default=None)
    ffn_hidden: int | None = field_of("", "dense MLP inner width; None means 4h", default=None)
    gated_mlp: bool = field_of("", "SwiGLU-style MLP (three matrices) instead of two",
                               default=False)
    tied_embeddings: bool = field_of("", "output layer shares the input embedding", default=True)
    learned_positions: bool = field_of("", "learned position embedding of s x h", default=True)
    biases: bool = field_of("", "linear layers and norms carry biases (GPT-2/3 style)",
                            default=True)
    dropout: bool = field_of("", "trained with dropout (GPT-2/3, Megatron): its 1-byte masks are "
                             "stored for the backward pass", default=True)
    family: str = field_of("", "model family", default="")
    year: int | None = field_of("year", "year the model was published", default=None)
    params_published: float | None = field_of(
        "parameters", "parameter count stated by the source", default=None
    )
    # -- attention beyond the h x h default
    attention_head_dim: int | None = field_of(
        "channels", "width of one attention head; None means hidden / n_heads", default=None)
    attention_biases: bool = field_of(
        "", "q, k, v and output projections carry biases, norms do not (gpt-oss)",
        default=False)
    sliding_window: int | None = field_of(
        "tokens", "tokens a windowed layer attends to; None: every layer sees the whole "
        "sequence", default=None)
    full_attention_every: int | None = field_of(
        "layers", "with a sliding window, every n-th layer attends to the whole sequence "
        "(gpt-oss: 2); None: every layer is windowed", default=None)
    # -- multi-head latent attention (MLA)
    kv_lora_rank: int | None = field_of(
        "channels", "MLA: width of the compressed key/value latent; None: ordinary attention",
        default=None)
    q_lora_rank: int = field_of(
        "channels", "MLA: width of the compressed query latent; 0: queries not compressed",
        default=0, allow_zero=True)
    qk_nope_head_dim: int | None = field_of(
        "channels", "MLA: query/key channels per head without rotary positions", default=None)
    qk_rope_head_dim: int | None = field_of(
        "channels", "MLA: query/key channels per head with rotary positions (the key's "
        "shared by all heads)", default=None)
    v_head_dim: int | None = field_of("channels", "MLA: value channels per head", default=None)
    # -- mixture of experts
    experts: int = field_of("experts", "routed experts per MoE layer E; 0 for a dense model",
                            default=0, allow_zero=True)
    top_k: int = field_of("experts", "routed experts each token is sent to, k <= E",
                          default=0, allow_zero=True)
    shared_experts: int = field_of("experts", "experts every token uses besides its k "
                                   "routed ones (DeepSeekMoE)", default=0, allow_zero=True)
    expert_ffn_hidden: int | None = field_of(
        "channels", "MLP inner width of one expert f_e (routed and shared)", default=None)
    first_dense_layers: int = field_of(
        "layers", "leading layers whose MLP stays dense (DeepSeek-V3: 3)", default=0,
        allow_zero=True)
    moe_layer_step: int = field_of(
        "layers", "after the dense ones, every n-th layer is MoE (1: all of them)", default=1)
    router_bias: bool = field_of("", "the router carries a bias per expert (DeepSeek-V3's "
                                 "load-balancing bias, gpt-oss)", default=False)
    expert_biases: bool = field_of("", "each expert's linear layers carry biases (gpt-oss)",
                                   default=False)
    max_nodes_per_token: int | None = field_of(
        "nodes", "node-limited routing: a token's routed experts lie on at most this many "
        "nodes (DeepSeek-V3: 4); None: no limit", default=None)
    mtp_layers: int = field_of(
        "modules", "multi-token-prediction modules trained with the model (DeepSeek-V3: 1; "
        "each a transformer layer, a 2h x h projection and a pass through the shared output "
        "layer); not in the parameter counts", default=0, allow_zero=True)
    params_active_published: float | None = field_of(
        "parameters", "parameters per token (activated) stated by the source", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        kv = self.n_kv_heads if self.n_kv_heads is not None else self.n_heads
        label = f"model {self.name!r}"
        if self.hidden % self.n_heads and self.attention_head_dim is None and not self.is_mla:
            raise ValueError(
                f"{label}: hidden={self.hidden} must be a multiple of "
                f"n_heads={self.n_heads} (or give attention_head_dim)"
            )
        if self.n_heads % kv:
            raise ValueError(
                f"{label}: n_kv_heads={kv} must divide n_heads={self.n_heads}"
            )
        self._check_moe(label)
        self._check_mla(label)
        if self.full_attention_every is not None and self.sliding_window is None:
            raise ValueError(f"{label}: full_attention_every={self.full_attention_every} "
                             "needs a sliding_window")

    def _check_moe(self, label: str) -> None:
        if self.experts == 0:
            moe_only = {"top_k": self.top_k, "shared_experts": self.shared_experts,
                        "first_dense_layers": self.first_dense_layers,
                        "expert_ffn_hidden": self.expert_ffn_hidden,
                        "max_nodes_per_token": self.max_nodes_per_token}
            for key, value in moe_only.items():
                if value not in (0, None):
                    raise ValueError(f"{label}: {key}={value} describes a mixture of experts, "
                                     "but experts=0 (a dense model); set experts > 0")
            if self.router_bias or self.expert_biases or self.moe_layer_step != 1:
                raise ValueError(f"{label}: router_bias, expert_biases and moe_layer_step "
                                 "describe a mixture of experts, but experts=0")
            return
        if not 1 <= self.top_k <= self.experts:
            raise ValueError(f"{label}: top_k={self.top_k} must be from 1 to "
                             f"experts={self.experts} (experts a token is sent to)")
        if self.expert_ffn_hidden is None:
            raise ValueError(f"{label}: a mixture of experts needs expert_ffn_hidden (the "
                             "MLP width of one expert)")
        if self.first_dense_layers >= self.n_layers:
            raise ValueError(f"{label}: first_dense_layers={self.first_dense_layers} must be "
                             f"below n_layers={self.n_layers} (some layer must be MoE)")
        if self.moe_layer_step > self.n_layers - self.first_dense_layers:
            raise ValueError(f"{label}: moe_layer_step={self.moe_layer_step} leaves no MoE "
                             f"layer in {self.n_layers - self.first_dense_layers} layers")

    def _check_mla(self, label: str) -> None:
        dims = {"qk_nope_head_dim": self.qk_nope_head_dim,
                "qk_rope_head_dim": self.qk_rope_head_dim, "v_head_dim": self.v_head_dim}
        if self.kv_lora_rank is None:
            given = [k for k, v in dims.items() if v is not None]
            if given or self.q_lora_rank:
                raise ValueError(f"{label}: {', '.join(given) or 'q_lora_rank'} describe "
                                 "multi-head latent attention; set kv_lora_rank too")
            return
        missing = [k for k, v in dims.items() if v is None]
        if missing:
            raise ValueError(f"{label}: multi-head latent attention (kv_lora_rank="
                             f"{self.kv_lora_rank}) needs {', '.join(missing)}")
        if self.attention_head_dim is not None:
            raise ValueError(f"{label}: attention_head_dim does not apply to MLA; its head "
                             "widths are qk_nope_head_dim, qk_rope_head_dim and v_head_dim")

    @property
    def kv_heads(self) -> int:
        """Key/value heads (equal to ``n_heads`` without GQA)."""
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    @property
    def ffn(self) -> int:
        """Dense MLP inner width (4h unless the model says otherwise)."""
        return self.ffn_hidden if self.ffn_hidden is not None else 4 * self.hidden

    @property
    def head_dim(self) -> int:
        """Width of one attention head: ``attention_head_dim``, else h / a (MLA: the value's)."""
        if self.is_mla:
            return int(self.v_head_dim)
        if self.attention_head_dim is not None:
            return self.attention_head_dim
        return self.hidden // self.n_heads

    @property
    def qk_head_dim(self) -> int:
        """Channels of one head's query and key (MLA: no-rope + rope part)."""
        if self.is_mla:
            return int(self.qk_nope_head_dim) + int(self.qk_rope_head_dim)
        return self.head_dim

    @property
    def is_mla(self) -> bool:
        """Whether attention is multi-head latent attention."""
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        """Whether the model is a mixture of experts."""
        return self.experts > 0

    def layer_is_moe(self, layer: int) -> bool:
        """Whether layer ``layer`` (0-based) has experts: after the ``first_dense_layers``,
        every ``moe_layer_step``-th layer (Qwen3-MoE's ``decoder_sparse_step`` and Llama 4's
        ``interleave_moe_layer_step`` count the same way)."""
        if not self.is_moe or layer < self.first_dense_layers:
            return False
        return (layer + 1 - self.first_dense_layers) % self.moe_layer_step == 0

    @property
    def moe_layers(self) -> int:
        """Layers with experts: every ``moe_layer_step``-th of those after the
        ``first_dense_layers`` (the count of :meth:`layer_is_moe`, in O(1))."""
        if not self.is_moe:
            return 0
        return max(self.n_layers - self.first_dense_layers, 0) // self.moe_layer_step

    @property
    def dense_layers(self) -> int:
        """Layers with a dense MLP."""
        return self.n_layers - self.moe_layers

    @property
    def token_ffn(self) -> float:
        """MLP width one token passes through, averaged over the layers: ``ffn`` in a dense
        layer, ``(top_k + shared_experts) × expert_ffn_hidden`` in an MoE layer."""
        moe = (self.top_k + self.shared_experts) * (self.expert_ffn_hidden or 0)
        return (self.dense_layers * self.ffn + self.moe_layers * moe) / self.n_layers

    def attends_to(self, layer: int, seq_len: int) -> int:
        """Tokens a query attends to at most in layer ``layer`` (the window, or the sequence)."""
        if self.sliding_window is None:
            return seq_len
        every = self.full_attention_every
        if every is not None and (layer + 1) % every == 0:
            return seq_len
        return min(seq_len, self.sliding_window)

    def replace(self, **changes) -> ModelSpec:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class System(Entry):
    """A scale-up domain as sold: GPUs joined by one NVLink (or Infinity Fabric) fabric."""

    name: str = field_of("", "catalog name")
    gpu: str = field_of("", "the GPU's catalog name")
    gpus: int = field_of("GPUs", "GPUs in the scale-up domain")
    year: int = field_of("year", "year of general availability")
    source: str = field_of("", "where the figures come from")
    power_w: float | None = field_of(
        "W", "maximum power of the whole system as sold (GPUs, CPUs, memory, NICs, fans, power "
        "conversion); None if unpublished", default=None)

    @property
    def power_per_gpu_w(self) -> float | None:
        """The system's maximum power per GPU, watts (None if unpublished)."""
        return None if self.power_w is None else self.power_w / self.gpus


@dataclass(frozen=True)
class Link(Entry):
    """A link or network port as the α-β model sees it: one-direction bandwidth and latency."""

    name: str = field_of("", "catalog name")
    technology: str = field_of("", "e.g. 'NVLink 4', 'InfiniBand NDR', 'RoCE v2', 'TCP/IP'")
    scope: str = field_of("",
                          "'scale-up' (inside an NVLink domain), 'scale-out' (network) or 'host'")
    gbytes_s: float = field_of("GB/s", "bandwidth per GPU (scale-up) or per port, ONE direction")
    latency_us: float = field_of("us", "one-way small-message latency, end to end, as measured")
    rdma: bool = field_of("", "data moves by DMA without the kernel (RDMA, NVLink loads/stores)")
    cpu_ghz_per_gbps: float = field_of("GHz per Gb/s",
                                       "host CPU spent per unit of throughput; 0 if "
                                 "offloaded", allow_zero=True)
    year: int = field_of("year", "year of general availability")
    source: str = field_of("", "where the figures come from")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.scope not in ("scale-up", "scale-out", "host"):
            raise ValueError(
                f"Link {self.name!r}: field 'scope' must be 'scale-up', 'scale-out' or 'host', "
                f"got {self.scope!r}"
            )

    @property
    def latency_s(self) -> float:
        """α in seconds."""
        return self.latency_us * 1e-6

    @property
    def bandwidth_bytes_s(self) -> float:
        """B in bytes per second, one direction."""
        return self.gbytes_s * 1e9


# --------------------------------------------------------------------------- validation
_NUMERIC = (int, float)


def _expected_types(tp) -> tuple[type, ...]:
    text = str(tp)
    kinds: list[type] = []
    if "bool" in text:
        kinds.append(bool)
    if "int" in text:
        kinds.append(int)
    if "float" in text:
        kinds.extend([int, float])
    if "str" in text and "dict" not in text and "tuple" not in text:
        kinds.append(str)
    if "tuple" in text:
        kinds.extend([tuple, list])
    if "dict" in text:
        kinds.append(dict)
    return tuple(kinds)


def _check_number(label: str, name: str, value, allow_zero: bool) -> None:
    """A catalog figure must be finite and > 0 (>= 0 with ``allow_zero``): no NaN, no inf."""
    bound = ">= 0" if allow_zero else "> 0"
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{label}: field {name!r} must be a finite number {bound}, "
                         f"got {value!r}")


def _validate(obj, kind: str) -> None:
    """Check types, signs and choices of a spec's fields; raise ``ValueError`` naming the field."""
    label = f"{kind} {getattr(obj, 'name', '?')!r}"
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None and "None" in str(f.type):
            continue
        expected = _expected_types(f.type)
        ok = isinstance(value, expected) and not (
            isinstance(value, bool) and bool not in expected
        )
        if not ok:
            names = sorted({t.__name__ for t in expected})
            raise ValueError(
                f"{label}: field {f.name!r} must be {' or '.join(names)}, got {value!r}"
            )
        allow_zero = bool(f.metadata.get("allow_zero"))
        if isinstance(value, _NUMERIC) and not isinstance(value, bool):
            _check_number(label, f.name, value, allow_zero)
        if isinstance(value, tuple | list):
            _validate_items(label, f, value)
        if isinstance(value, dict):
            bad = [(k, v) for k, v in value.items()
                   if not isinstance(k, str) or not isinstance(v, str) or not v.strip()]
            if bad:
                raise ValueError(f"{label}: field {f.name!r} must map field names to non-empty "
                                 f"text, got {bad[0][0]!r} = {bad[0][1]!r}")
        choices = f.metadata.get("choices")
        if choices and value not in choices:
            near = close_matches(str(value), choices)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"{label}: field {f.name!r} must be one of "
                             f"{', '.join(map(repr, choices))}; got {value!r}{hint}")
        if f.name in ("name", "source") and not str(value).strip():
            raise ValueError(f"{label}: field {f.name!r} must not be empty")
    if isinstance(obj.aliases, list):
        object.__setattr__(obj, "aliases", tuple(obj.aliases))


def _validate_items(label: str, f: dataclasses.Field, items) -> None:
    """The elements of a list field: text (aliases) or numbers (ports, speeds), as declared."""
    text = str(f.type)
    if "str" in text:
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise ValueError(f"{label}: field {f.name!r} must be a list of non-empty "
                                 f"strings, got {list(items)!r}")
        return
    kinds = (int,) if "int" in text and "float" not in text else _NUMERIC
    for item in items:
        if isinstance(item, bool) or not isinstance(item, kinds):
            noun = "whole numbers" if kinds == (int,) else "numbers"
            raise ValueError(f"{label}: field {f.name!r} must be a list of {noun}, "
                             f"got {list(items)!r}")
        _check_number(label, f.name, item, bool(f.metadata.get("allow_zero")))


def read_toml(path: Path | str, what: str = "catalog") -> dict[str, Any]:
    """Parse a TOML data file; a missing or malformed file is a ``ValueError`` naming it."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: {what} file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None


def table_entries(raw: dict[str, Any], table: str, path: Path | str) -> list[dict[str, Any]]:
    """The ``[[table]]`` entries of a parsed file; none is a ``ValueError`` naming the file."""
    entries = raw.get(table)
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{Path(path).name}: expected one or more [[{table}]] entries")
    return entries


def check_fields(entry: dict[str, Any], known: set[str], required: set[str], where: str) -> None:
    """Raise for the first unknown field (suggesting a close one) or missing required field."""
    unknown = sorted(set(entry) - known)
    if unknown:
        near = close_matches(unknown[0], known)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"{where}: unknown field {unknown[0]!r}{hint}")
    missing = sorted(required - set(entry))
    if missing:
        raise ValueError(f"{where}: missing field {missing[0]!r}")


def load_entries(path: Path | str, table: str, cls: type) -> dict[str, Any]:
    """Load ``[[table]]`` entries of a TOML file into ``cls`` instances, keyed by name.

    Raises
    ------
    ValueError
        Naming the file, the entry and the field: a missing or unknown field,
        a wrong type, a non-positive figure, a duplicate name, malformed TOML.
    """
    path = Path(path)
    entries = table_entries(read_toml(path), table, path)
    known = {f.name for f in dataclasses.fields(cls)}
    required = {
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    out: dict[str, Any] = {}
    taken: dict[str, str] = {}  # normalised name or alias -> the entry it finds
    for i, entry in enumerate(entries, start=1):
        where = f"{path.name}: [[{table}]] entry {i} ({entry.get('name', '<no name>')!r})"
        check_fields(entry, known, required, where)
        for key, src in entry.get("sources", {}).items():
            if key not in known:
                raise ValueError(f"{where}: sources names unknown field {key!r}")
            if not isinstance(src, str) or not src.strip():
                raise ValueError(f"{where}: sources.{key} must be a non-empty string")
        try:
            obj = cls(**{k: tuple(v) if k == "aliases" and isinstance(v, list) else v
                         for k, v in entry.items()})
        except ValueError as exc:
            detail = str(exc).split(": ", 1)[-1]
            raise ValueError(f"{where}: {detail}") from None
        if obj.name in out:
            raise ValueError(f"{where}: duplicate name {obj.name!r}")
        for alias in (obj.name, *obj.aliases):
            owner = taken.get(_norm(alias))
            if owner is not None and owner != obj.name:
                field_name = "name" if alias == obj.name else "aliases"
                raise ValueError(f"{where}: field {field_name!r}: {alias!r} is already a name "
                                 f"or alias of entry {owner!r}; a lookup would be ambiguous")
            taken[_norm(alias)] = obj.name
        out[obj.name] = obj
    return out


# --------------------------------------------------------------------------- lookups
def cached_entries(file: str, table: str, cls: type[E]) -> Callable[[], dict[str, E]]:
    """A loader of ``data/<file>``'s ``[[table]]`` entries as ``cls`` (:func:`load_entries`),
    read once: the first call reads and validates the file, later calls return the same dict
    (``.cache_clear()`` forgets it)."""
    @functools.cache
    def entries() -> dict[str, E]:
        return load_entries(DATA_DIR / file, table, cls)

    return entries


@functools.cache
def _gpus() -> dict[str, GPU]:
    found = load_entries(DATA_DIR / "gpus.toml", "gpu", GPU)
    links_ = _links()
    for i, g in enumerate(found.values(), start=1):
        if g.scaleout_link is not None and g.scaleout_link not in links_:
            near = close_matches(g.scaleout_link, links_)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"gpus.toml: [[gpu]] entry {i} ({g.name!r}): field 'scaleout_link' "
                             f"names {g.scaleout_link!r}, which is not in links.toml{hint}")
    return found


_models = cached_entries("models.toml", "model", ModelSpec)
_links = cached_entries("links.toml", "link", Link)


@functools.cache
def _systems() -> dict[str, System]:
    found = load_entries(DATA_DIR / "systems.toml", "system", System)
    for s in found.values():
        if s.gpu not in _gpus():
            raise ValueError(f"systems.toml: system {s.name!r}: gpu {s.gpu!r} is not in gpus.toml")
    return found


def _norm(text: str) -> str:
    """A name as lookups compare it: case and runs of whitespace ignored, nothing else.

    Dots, dashes and slashes stay significant: ``"megatron-17b"`` is not
    ``"megatron-1.7b"``, and ``"400GbE"`` is not ``"4.00GbE"``.
    """
    return " ".join(text.split()).casefold()


def lookup(kind: str, table: dict, key, param: str | None = None):
    """The entry whose name or alias is ``key`` (see :func:`_norm`); else close matches.

    Every catalog of the library looks its names up with this (GPUs, models, links,
    systems, switch chips, optical modules, scale-up domains): ``table`` maps names to
    :class:`Entry` subclasses.

    ``param`` is the caller's parameter, named in the message when it is not ``kind``
    (``inter: link 'x' is not in the catalog``).
    """
    lead = f"{param}: " if param and param != kind else ""
    if not isinstance(key, str):
        raise ValueError(f"{lead}{kind} must be a catalog name (text), got {key!r}")
    index: dict[str, str] = {}
    for name, obj in table.items():
        for alias in (name, *obj.aliases):
            index.setdefault(_norm(alias), name)
    hit = index.get(_norm(key))
    if hit is not None:
        return table[hit]
    choices = [alias for obj in table.values() for alias in (obj.name, *obj.aliases)]
    near = close_matches(str(key), choices)
    hint = f"did you mean {' or '.join(map(repr, near))}?" if near else f"known: {', '.join(table)}"
    raise ValueError(f"{lead}{kind} {key!r} is not in the catalog; {hint}")


def entries_where(table: dict, field_name: str, value: str | None) -> list:
    """The entries of ``table`` in file order; with ``value``, only those whose field
    ``field_name`` is ``value``.

    A ``value`` no entry has raises a ValueError naming ``field_name`` and the values the
    entries have (:func:`scaleout.checks.check_choice`).
    """
    found = list(table.values())
    if value is None:
        return found
    check_choice(field_name, value, sorted({getattr(e, field_name) for e in found}))
    return [e for e in found if getattr(e, field_name) == value]


def gpu(spec: str | GPU | dict, *, param: str | None = None) -> GPU:
    """A GPU by catalog name or alias (``"H100"``, ``"a100-80gb"``), or a user-defined one.

    Parameters
    ----------
    spec
        A name, a :class:`GPU`, or a ``dict`` of :class:`GPU` fields.

    Raises
    ------
    ValueError
        For an unknown name, with close matches suggested.
    """
    if isinstance(spec, GPU):
        return spec
    if isinstance(spec, dict):
        return GPU(**{"source": "user-defined", **spec})
    return lookup("gpu", _gpus(), spec, param)


def model(spec: str | ModelSpec | dict, *, param: str | None = None) -> ModelSpec:
    """A model by catalog name or alias (``"gpt3-175b"``, ``"llama3-70b"``), or user-defined.

    ``param`` (here and in the other lookups): the caller's parameter name, for messages.
    """
    if isinstance(spec, ModelSpec):
        return spec
    if isinstance(spec, dict):
        return ModelSpec(**{"source": "user-defined", "name": "custom", **spec})
    return lookup("model", _models(), spec, param)


#: The vocabulary of a custom GPT-shaped model: Megatron-LM's 51,200 (GPT-2's 50,257 padded to
#: a multiple of 1,024; Narayanan et al. 2021, Table 1's setting).
CUSTOM_VOCAB = 51_200


def custom_model(n_layers: int, hidden: int, n_heads: int, *, vocab: int = CUSTOM_VOCAB,
                 seq_len: int = 2048, base: str | ModelSpec | None = None,
                 name: str = "custom") -> ModelSpec:
    """A user-defined model of ``n_layers`` layers, width ``hidden`` and ``n_heads`` heads.

    Without ``base`` it is GPT-shaped, as Megatron-LM's Table 1 models are: a 4h MLP of two
    matrices, as many KV heads as heads, learned positions, biases, tied embeddings, and a
    vocabulary of :data:`CUSTOM_VOCAB`. With ``base`` (a catalog model) every other field
    (vocabulary, MLP width and gating, KV heads, norms) is the base's, and ``vocab`` and
    ``seq_len`` are ignored: the memory explorer's "custom from" control. The one way every
    explorer and report builds a custom model.
    """
    dims = {"n_layers": n_layers, "hidden": hidden, "n_heads": n_heads}
    for key, value in dims.items():
        check_int(key, value)
    if base is None:
        return model({"name": name, **dims, "vocab": check_int("vocab", vocab),
                      "seq_len": check_int("seq_len", seq_len)})
    return model(base).replace(name=name, source="user-defined", aliases=(),
                               params_published=None, params_active_published=None, **dims)


def link(spec: str | Link | dict, *, param: str | None = None) -> Link:
    """A link or network port (``"NVLink 4"``, ``"InfiniBand NDR"``, ``"TCP 100GbE"``)."""
    if isinstance(spec, Link):
        return spec
    if isinstance(spec, dict):
        return Link(**{"source": "user-defined", "name": "custom", "year": 2025, **spec})
    return lookup("link", _links(), spec, param)


def links() -> list[Link]:
    """Every catalog link, in file order."""
    return list(_links().values())


def link_names() -> list[str]:
    """Catalog link names, in file order."""
    return [x.name for x in links()]


def system(spec: str | System) -> System:
    """A scale-up system (``"DGX H100"``, ``"GB200 NVL72"``) by name or alias."""
    if isinstance(spec, System):
        return spec
    return lookup("system", _systems(), spec)


def published(table: str) -> dict[str, Any]:
    """A published table as printed, from ``data/published/<table>.toml`` (with its ``source``).

    These are the numbers the tests (and the notebooks' comparisons) reproduce:
    ``"zero_table1"``, ``"megatron_lm_table1"``, ``"korthikanti_table5"``.
    """
    names = sorted(p.stem for p in (DATA_DIR / "published").glob("*.toml"))
    path = DATA_DIR / "published" / f"{check_choice('table', table, names)}.toml"
    raw = read_toml(path, "published table")
    if not str(raw.get("source", "")).strip():
        raise ValueError(f"{path.name}: missing field 'source'")
    return raw


def gpus() -> list[GPU]:
    """Every catalog GPU, oldest first."""
    return sorted(_gpus().values(), key=lambda g: (g.year, g.name))


def models() -> list[ModelSpec]:
    """Every catalog model, in file order."""
    return list(_models().values())


def systems() -> list[System]:
    """Every catalog scale-up system, oldest first."""
    return sorted(_systems().values(), key=lambda s: (s.year, s.name))


def gpu_names() -> list[str]:
    """Catalog GPU names, oldest first."""
    return [g.name for g in gpus()]


def model_names() -> list[str]:
    """Catalog model names, in file order."""
    return [m.name for m in models()]


def dense_model_names() -> list[str]:
    """The catalog's dense models (no mixture of experts), in file order: the planner's."""
    return [m.name for m in models() if not m.is_moe]


def system_names() -> list[str]:
    """Catalog system names."""
    return [s.name for s in systems()]
