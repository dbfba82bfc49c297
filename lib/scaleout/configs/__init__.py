"""Speak the frameworks' language: model configs and run settings in, runnable settings out.

* :func:`from_hf_config` reads a Hugging Face ``config.json`` into the catalog's
  :class:`~scaleout.catalog.ModelSpec` (:mod:`scaleout.configs.hf` has the table per
  architecture), counting every parameter, including the mixture-of-experts and MLA
  parts the planner does not model yet.
* :func:`from_megatron_args`, :func:`from_torchtitan_toml`, :func:`from_deepspeed_json`
  read an existing run's settings into a :class:`~scaleout.plan.Plan` (an
  :class:`ImportedRun`, with every setting the plan cannot hold yet reported), so that
  :func:`scaleout.plan.evaluate` says what the run costs and :func:`scaleout.plan.search`
  what would be faster.
* :func:`to_megatron_args`, :func:`to_torchtitan_toml`, :func:`to_deepspeed_json` write a
  plan back as the framework's settings, headed by the workbook's prediction and the
  mapping version; a plan the framework cannot run is refused
  (:class:`UnsupportedPlanError`, naming the setting and the framework).

Flag and key names come from the frameworks' source at the commits recorded in
``data/frameworks/*.toml``. Files are parsed as data (:mod:`json`, :mod:`tomllib`,
:mod:`shlex`); nothing in them is ever evaluated.

Taught in ``notebooks/08_3d_parallelism_planner.ipynb``; ``./workbook plan`` is the
command line.
"""

from __future__ import annotations

from pathlib import Path

from .. import catalog
from ..catalog import ModelSpec
from ..plan import Plan, PlanResult
from ._common import (
    ASSUMED,
    FRAMEWORKS,
    IGNORED,
    MAPPING_VERSION,
    NOT_MODELLED,
    UNKNOWN,
    Finding,
    ImportedRun,
    UnsupportedPlanError,
    framework_keys,
)
from .deepspeed import check_deepspeed, from_deepspeed_json, to_deepspeed_json
from .hf import SUPPORTED_ARCHITECTURES, ModelImport, from_hf_config
from .megatron import from_megatron_args, to_megatron_args
from .torchtitan import check_torchtitan, from_torchtitan_toml, to_torchtitan_toml

__all__ = [
    "ASSUMED",
    "FRAMEWORKS",
    "IGNORED",
    "MAPPING_VERSION",
    "NOT_MODELLED",
    "PRESET_EXPORTERS",
    "SUPPORTED_ARCHITECTURES",
    "UNKNOWN",
    "Finding",
    "ImportedRun",
    "ModelImport",
    "UnsupportedPlanError",
    "check_deepspeed",
    "check_torchtitan",
    "export_plan",
    "exporter_for",
    "framework_keys",
    "from_deepspeed_json",
    "from_hf_config",
    "from_megatron_args",
    "from_torchtitan_toml",
    "import_run",
    "load_model",
    "to_deepspeed_json",
    "to_megatron_args",
    "to_torchtitan_toml",
]

_EXPORTERS = {"megatron": to_megatron_args, "torchtitan": to_torchtitan_toml,
              "deepspeed": to_deepspeed_json}

#: The exporter whose settings run each of the planner's framework presets
#: (:data:`scaleout.plan.frameworks.FRAMEWORKS`); PyTorch FSDP (no configuration format of its
#: own) and DeepSeek's HAI-LLM (not public) have none.
PRESET_EXPORTERS = {"megatron-lm-2021": "megatron", "megatron-lm-2023": "megatron",
                    "megatron-core": "megatron",
                    "torchtitan": "torchtitan", "deepspeed-2021": "deepspeed"}


def exporter_for(preset: str) -> str | None:
    """The exporter (``"megatron"``, ``"torchtitan"``, ``"deepspeed"``) for a planner framework
    preset, or None when the preset has no public configuration format."""
    from ..plan import frameworks

    return PRESET_EXPORTERS.get(frameworks.framework(preset).name)


def _framework(name: str) -> str:
    from ..checks import check_choice

    return check_choice("framework", name, FRAMEWORKS)


def export_plan(framework: str, plan: Plan, model: ModelSpec | None = None, *,
                result: PlanResult | None = None) -> str:
    """The plan in ``framework``'s terms (``"megatron"``, ``"torchtitan"``, ``"deepspeed"``).

    What a "copy as ..." button shows; raises :class:`UnsupportedPlanError` when the
    framework cannot run the plan.
    """
    return _EXPORTERS[_framework(framework)](plan, model, result=result)


def import_run(framework: str, source, *, n_gpus: int | None = None,
               model: ModelSpec | None = None, seq_len: int | None = None,
               flash_attention: bool = False) -> ImportedRun:
    """A run's settings (a file path or pasted text) in ``framework``'s format, read.

    ``seq_len`` and ``flash_attention`` are used only for DeepSpeed, whose configuration
    does not state them.
    """
    framework = _framework(framework)
    if framework == "megatron":
        return from_megatron_args(source, n_gpus=n_gpus, model=model)
    if framework == "torchtitan":
        return from_torchtitan_toml(source, n_gpus=n_gpus, model=model)
    return from_deepspeed_json(source, n_gpus=n_gpus, seq_len=seq_len,
                               flash_attention=flash_attention)


def load_model(source: str | Path | ModelSpec, *, seq_len: int | None = None
               ) -> tuple[ModelSpec, ModelImport | None]:
    """A model from a catalog name, a ``config.json`` path or pasted config text.

    Returns the spec and, for a config, its :class:`ModelImport` (None for a catalog
    name). A config with a setting the planner cannot plan (a blocking finding, e.g.
    heads whose width differs from the hidden size) raises a ``ValueError`` naming the
    keys, with its parameters counted.
    """
    if isinstance(source, ModelSpec):
        return source, None
    text = str(source)
    if isinstance(source, Path) or text.endswith(".json") or text.lstrip().startswith("{"):
        imported = from_hf_config(source, seq_len=seq_len)
        return imported.require_plannable(), imported
    return catalog.model(text), None
