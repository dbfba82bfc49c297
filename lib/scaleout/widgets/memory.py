"""Memory-anatomy explorer (notebook 02): what one GPU holds for a model and a parallel layout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import catalog, formatting, memory, plotting
from .common import Explorer, gpu_menu

__all__ = ["CUSTOM", "MemoryExplorer"]

#: The model dropdown's entry for user-set dimensions.
CUSTOM = "custom"
_DIMS = ("n_layers", "hidden", "n_heads")
_SEQ_LENS = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
_WIDE = {"style": {"description_width": "110px"}, "layout": W.Layout(width="260px")}


def _int_box(description: str, value: int, maximum: int = 1_000_000) -> W.BoundedIntText:
    return W.BoundedIntText(value=value, min=0, max=maximum, description=description, **_WIDE)


class MemoryExplorer(Explorer):
    """Weights, gradients, optimizer state and activations per GPU against its capacity.

    Controls: a model preset (or ``"custom"`` dimensions), GPU, training recipe,
    micro-batch, sequence length, recompute mode, sequence parallelism, flash
    attention, TP/PP/DP sizes and ZeRO stage. The chart shows the chosen layout
    under each ZeRO stage, so the effect of sharding is visible at a glance.
    Editing a dimension while a preset is chosen switches to ``"custom"``; a
    custom model takes its other fields (vocabulary, MLP, KV heads, ...) from
    the ``base`` control ("custom from"), which follows the preset last chosen
    and can be changed while ``"custom"`` is on. The result is a function of the
    controls alone: an explorer given the same control values shows the same.
    ``result`` is a dict: ``{"chosen": MemoryBreakdown, "by_stage": {0: ..., 3: ...},
    "model": ModelSpec, "gpu": GPU, "n_gpus": int}``.
    """

    title = "Memory per GPU: what fits?"

    def __init__(self, **initial: Any) -> None:
        self._filling = False
        model_name = initial.pop("model", "gpt3-175b")
        super().__init__()
        self._filling = True
        try:
            self.controls["model"].value = (CUSTOM if model_name == CUSTOM
                                            else catalog.model(model_name).name)
            self._fill_dims(self.controls["model"].value)
            self.set_values(**initial)
        finally:
            self._filling = False
        self.refresh()

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        names = [*catalog.model_names(), CUSTOM]
        return {
            "model": W.Dropdown(options=names, value="gpt3-175b", description="model", **_WIDE),
            "n_layers": _int_box("layers", 96),
            "hidden": _int_box("hidden size", 12288),
            "n_heads": _int_box("heads", 96),
            "base": W.Dropdown(options=catalog.model_names(), value="gpt3-175b",
                               description="custom from", disabled=True, **_WIDE),
            "gpu": gpu_menu("A100-SXM4-80GB", _WIDE),
            "recipe": W.Dropdown(options=list(memory.RECIPES), value="mixed-adam",
                                 description="recipe", **_WIDE),
            "micro_batch": W.IntSlider(value=1, min=1, max=32, description="micro-batch",
                                       continuous_update=False, **_WIDE),
            "seq_len": W.Dropdown(options=_SEQ_LENS, value=2048, description="sequence",
                                  **_WIDE),
            "recompute": W.Dropdown(options=list(memory.RECOMPUTE_MODES), value="selective",
                                    description="recompute", **_WIDE),
            "sp": W.Checkbox(value=True, description="sequence parallel", indent=False),
            "flash_attention": W.Checkbox(value=False, description="flash attention",
                                          indent=False),
            "zero_stage": W.Dropdown(options=[0, 1, 2, 3], value=1, description="ZeRO stage",
                                     **_WIDE),
            "tp": _int_box("TP size", 8, 4096),
            "pp": _int_box("PP size", 8, 4096),
            "dp": _int_box("DP size", 16, 1_000_000),
        }

    # -- model presets vs custom dimensions ------------------------------------------------
    def _fill_dims(self, name: str) -> None:
        """A preset sets the dimensions and the base of a later custom model; custom, nothing."""
        self.controls["base"].disabled = name != CUSTOM
        if name == CUSTOM:
            return
        spec = catalog.model(name)
        for dim in _DIMS:
            self.controls[dim].value = getattr(spec, dim)
        self.controls["base"].value = spec.name

    def _on_change(self, change: Mapping[str, Any]) -> None:
        if self._filling:
            return
        owner = change.get("owner")
        self._filling = True
        try:
            if owner is self.controls["model"]:
                self._fill_dims(change["new"])
            elif owner in [self.controls[d] for d in _DIMS]:
                if self.controls["model"].value != CUSTOM:
                    self.controls["model"].value = CUSTOM  # base already holds the preset
                    self._fill_dims(CUSTOM)
        finally:
            self._filling = False
        self.refresh()

    def refresh(self) -> None:
        """Recompute unless the constructor is still filling in the controls."""
        if not self._filling:
            super().refresh()

    def _model_spec(self, v: Mapping[str, Any]) -> catalog.ModelSpec:
        if v["model"] != CUSTOM:
            return catalog.model(v["model"])
        return catalog.custom_model(*(v[d] for d in _DIMS), base=v["base"], name=CUSTOM)

    # -- model calls only ---------------------------------------------------------------
    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        spec = self._model_spec(v)
        kwargs = {
            "micro_batch": v["micro_batch"], "seq_len": v["seq_len"], "tp": v["tp"],
            "pp": v["pp"], "dp": v["dp"], "recipe": v["recipe"], "recompute": v["recompute"],
            "sp": v["sp"], "flash_attention": v["flash_attention"],
        }
        by_stage = {z: memory.training_memory(spec, v["gpu"], zero_stage=z, **kwargs)
                    for z in (0, 1, 2, 3)}
        return {
            "chosen": by_stage[v["zero_stage"]],
            "by_stage": by_stage,
            "model": spec,
            "gpu": catalog.gpu(v["gpu"]),
            "n_gpus": v["tp"] * v["pp"] * v["dp"],
            "params": memory.param_count(spec),
        }

    def _render(self, r: dict[str, Any]) -> str:
        chosen = r["chosen"]
        z = self.controls["zero_stage"].value
        rows = {f"ZeRO-{s}": b for s, b in r["by_stage"].items()}
        self.image.value = plotting.memory_bars_svg(
            rows, title=f"{r['model'].name} on {r['gpu'].name}, ZeRO-{z}: {chosen.verdict()}",
            highlight=f"ZeRO-{z}")
        cls = "so-status-ok" if chosen.fits else "so-status-bad"
        parts = {"weights": chosen.weights, "gradients": chosen.grads,
                 "optimizer state": chosen.optimizer, "activations": chosen.activations,
                 "total": chosen.total, "capacity": chosen.capacity}
        lines = "".join(f"<tr><th>{k}</th><td>{formatting.bytes_iec(v)}</td></tr>"
                        for k, v in parts.items())
        return (
            f"<table>{lines}"
            f"<tr><th>parameters</th><td>{formatting.large_count(r['params'], 4)}</td></tr>"
            f"<tr><th>parameters per GPU</th>"
            f"<td>{formatting.large_count(chosen.params_per_gpu, 4)}</td></tr>"
            f"<tr><th>GPUs</th><td>{formatting.count(r['n_gpus'])}</td></tr>"
            "<tr><th>in flight</th><td>"
            f"{formatting.plural(chosen.in_flight, 'micro-batch', 'micro-batches')}</td></tr>"
            "</table>"
            f'<p class="{cls}">ZeRO-{z}: {chosen.verdict()}</p>'
        )
