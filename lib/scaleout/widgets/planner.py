"""3D-parallel planner explorer (notebook 08): the best layouts for a model, GPU and GPU count.

Pick a model (from the catalog, or ``custom`` with its layers, hidden size and heads), a
GPU, the GPU count, the GPUs per NVLink domain, the global batch, the sequence length and
a token budget; see the ranked plans that fit as a table, the best plans' memory and
step-time breakdowns as charts, the winner's training time, and in words why it wins.
All numbers come from :func:`scaleout.plan.search`; charts are SVG
(:func:`scaleout.plotting.plan_bars_svg`).

A Hugging Face ``config.json`` (pasted, or uploaded as a file) becomes the model with
"load" (:func:`scaleout.configs.load_model`, read as data only), and the best plan is
shown as a framework's settings to copy (:func:`scaleout.configs.export_plan`).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import catalog, configs, plan, plotting, units
from .. import formatting as fmt
from ..render import html_table
from .common import Explorer

__all__ = ["CONFIG_PREFIX", "CUSTOM", "EXPORTS", "GPU_COUNTS", "USUAL", "PlannerExplorer"]

CUSTOM = "custom"
#: Model menu entries of loaded configs start with this.
CONFIG_PREFIX = "config: "
#: "Copy as" menu: (label, :data:`scaleout.configs.FRAMEWORKS` name).
EXPORTS = (("Megatron-LM", "megatron"), ("torchtitan", "torchtitan"), ("DeepSpeed", "deepspeed"))
_EXPORT_STYLE = """
<style>
.so-config-row, .so-export-row {gap:6px 12px; align-items:flex-start; max-width:100%;
  margin:4px 0; box-sizing:border-box}
.so-config-row > .so-config-text {flex:1 1 320px; min-width:0; max-width:720px}
.so-config-row .so-config-text textarea {font-family:monospace; font-size:12px}
.so-export-box {max-width:100%; min-width:0; box-sizing:border-box}
.so-export-box textarea.so-export-text {width:100%; max-width:100%; box-sizing:border-box;
  font-family:monospace; font-size:12px; line-height:1.35; white-space:pre-wrap;
  overflow-wrap:anywhere; resize:vertical; background:#fafafa; border:1px solid #ccc;
  padding:4px 6px}
.so-export-box .so-export-note {margin:2px 0; color:#555}
</style>
"""
#: Network menu entry for the GPU's usual port (``scaleout.plan.default_network``).
USUAL = "the GPU's usual port"
#: GPU counts offered: powers of two, the counts of published runs, and whole NVL72 racks.
GPU_COUNTS = tuple(sorted({8, 16, 32, 64, 128, 256, 280, 512, 1024, 1536, 1920, 2048, 2520, 3072,
                           4096, 6144, 8192, 12288, 16384, 24576, 32768,
                           72, 144, 288, 576, 1152, 2304, 4608, 9216, 18432}))
_WIDE = {"style": {"description_width": "110px"}, "layout": W.Layout(width="300px")}
_TOP = 8


class PlannerExplorer(Explorer):
    """The fastest layouts that fit, for one model, GPU and cluster.

    Controls: ``model`` (catalog name or ``"custom"``), ``custom_layers``,
    ``custom_hidden``, ``custom_heads`` (used by ``"custom"``:
    :func:`scaleout.catalog.custom_model`), ``gpu``, ``n_gpus``, ``gpus_per_node``,
    ``global_batch``
    (sequences), ``seq_len``, ``tokens_b`` (training budget, billions of tokens) and
    ``flash_attention``, ``network`` (:data:`USUAL` or a scale-out link of
    ``data/links.toml``, one port per GPU) and ``framework`` (a preset of
    :mod:`scaleout.plan.frameworks`: which collectives run and what they overlap).
    ``result`` is the :class:`scaleout.plan.SearchResult`;
    ``best`` the winner's :class:`scaleout.plan.PlanResult`.

    ``measured`` (a :class:`scaleout.lab.calibrate.MeasuredNetwork`, from
    ``./workbook calibrate``) adds a network entry "measured: ..." that uses its fitted
    links (inside and between nodes, at the GPUs per node chosen) and collectives at the
    measured rate.

    Load a config: ``config_text`` (a pasted Hugging Face ``config.json``) and
    ``load_button`` call :meth:`load_config`; ``config_upload`` (a ``.json`` file) fills the
    text box and loads it at once. The model menu gains ``"config: <name>"``; ``configs``
    holds each loaded spec and its :class:`scaleout.configs.ModelImport`. Copy as:
    ``export_choice`` (:data:`EXPORTS`) picks the framework; ``export_text`` is the best
    plan in its terms (:func:`scaleout.configs.export_plan`), or the one sentence saying
    why it cannot run the plan, shown read-only in ``export_box`` on every redraw.
    """

    def __init__(self, measured=None, **initial: Any) -> None:
        self.measured = measured
        #: loaded configs by model-menu entry: (spec, :class:`scaleout.configs.ModelImport`)
        self.configs: dict[str, tuple[catalog.ModelSpec, configs.ModelImport]] = {}
        self.export_text = ""
        self._build_config_and_export()
        super().__init__(**initial)
        head, grid, *rest = self.view.children
        self.view.children = (head, grid, self.config_row, *rest, self.export_row,
                              self.export_box)

    def _build_config_and_export(self) -> None:
        """The "load a config" row and the "copy as" menu and box (outside the search's
        controls: neither changes the plans by itself)."""
        self.config_text = W.Textarea(
            placeholder="paste a Hugging Face config.json here, then press load",
            rows=3, layout=W.Layout(width="auto"))
        self.config_upload = W.FileUpload(accept=".json", multiple=False,
                                          description="upload .json",
                                          layout=W.Layout(width="auto"))
        self.load_button = W.Button(description="load", button_style="primary",
                                    tooltip="plan the model of the pasted config.json",
                                    layout=W.Layout(width="auto"))
        self.config_text.add_class("so-config-text")
        self.config_upload.add_class("so-config-upload")
        self.load_button.add_class("so-config-load")
        self.load_button.on_click(lambda _button: self.load_config())
        self.config_upload.observe(self._on_upload, names="value")
        self.config_row = W.Box(
            [W.HTML("<b>load a config</b>"), self.config_text, self.config_upload,
             self.load_button],
            layout=W.Layout(display="flex", flex_flow="row wrap"))
        self.config_row.add_class("so-config-row")
        self.export_choice = W.ToggleButtons(options=list(EXPORTS), value="megatron",
                                             style={"button_width": "auto"})
        self.export_choice.add_class("so-export-choice")
        self.export_choice.observe(lambda _change: self._show_export(), names="value")
        self.export_row = W.Box([W.HTML(_EXPORT_STYLE + "<b>copy the best plan as</b>"),
                                 self.export_choice],
                                layout=W.Layout(display="flex", flex_flow="row wrap"))
        self.export_row.add_class("so-export-row")
        self.export_box = W.HTML(layout=W.Layout(width="auto"))
        self.export_box.add_class("so-export-box")

    @property
    def measured_label(self) -> str | None:
        """The network menu's entry for the measured network (None without one)."""
        return None if self.measured is None else f"measured: {self.measured.name}"

    title = "Which layout trains fastest? The 3D-parallel planner"
    image_format = "svg+xml"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": W.Dropdown(options=[*catalog.model_names(), CUSTOM], value="gpt3-175b",
                                description="model", **_WIDE),
            "custom_layers": W.BoundedIntText(value=48, min=0, max=1000,
                                              description="custom layers", **_WIDE),
            "custom_hidden": W.BoundedIntText(value=6144, min=0, max=200_000, step=128,
                                              description="custom hidden", **_WIDE),
            "custom_heads": W.BoundedIntText(value=48, min=0, max=1024,
                                             description="custom heads", **_WIDE),
            "gpu": W.Dropdown(options=catalog.gpu_names(), value="A100-SXM4-80GB",
                              description="GPU", **_WIDE),
            "n_gpus": W.Dropdown(options=list(GPU_COUNTS), value=1024, description="GPUs",
                                 **_WIDE),
            "gpus_per_node": W.Dropdown(options=[1, 2, 4, 8, 16, 32, 36, 64, 72], value=8,
                                        description="GPUs per node", **_WIDE),
            "global_batch": W.BoundedIntText(value=1536, min=0, max=10_000_000,
                                             description="global batch", **_WIDE),
            "seq_len": W.Dropdown(options=[512, 1024, 2048, 4096, 8192, 16384, 32768],
                                  value=2048, description="sequence", **_WIDE),
            "tokens_b": W.BoundedFloatText(value=300.0, min=0.0, max=1e6,
                                           description="tokens (B)", **_WIDE),
            "network": W.Dropdown(options=[USUAL, *(lk.name for lk in catalog.links()
                                                   if lk.scope == "scale-out"),
                                           *([self.measured_label] if self.measured else [])],
                                  value=USUAL, description="network", **_WIDE),
            "framework": W.Dropdown(options=[(f.label, f.name) for f in
                                             plan.FRAMEWORKS.values()],
                                    value=plan.DEFAULT_FRAMEWORK, description="framework",
                                    **_WIDE),
            "flash_attention": W.Checkbox(value=False, description="flash attention",
                                          **_WIDE),
        }

    # -- loading a config -------------------------------------------------------------------
    def _on_upload(self, change: Mapping[str, Any]) -> None:
        files = change["new"]
        if not files:
            return
        upload = files[0] if isinstance(files, list | tuple) else next(iter(files.values()))
        try:
            text = bytes(upload["content"]).decode("utf-8")
        except UnicodeDecodeError as exc:
            self._fail(f"config not loaded: {upload.get('name', 'the file')} is not UTF-8 "
                       f"text ({exc.reason})")
            return
        self.config_text.value = text
        self.config_upload.value = ()  # the same file may be chosen again
        stem = str(upload.get("name", "")).removesuffix(".json").removesuffix(".config")
        self.load_config(name=stem or None)

    def load_config(self, text: str | None = None, name: str | None = None) -> None:
        """Plan the model of a ``config.json``'s text (default: the text box's).

        The model menu gains ``"config: <name>"`` and selects it; the readout lists the
        values the importer assumed. A malformed, unsupported or unplannable config
        leaves everything as it was and shows the library's message in the status line.
        """
        text = self.config_text.value if text is None else text
        try:
            if not text.strip().startswith("{"):
                raise ValueError("config: paste the text of a Hugging Face config.json (a "
                                 "JSON object, starting with '{'), or upload the file")
            spec, imported = configs.load_model(text, seq_len=self.controls["seq_len"].value)
        except ValueError as exc:
            self._fail(f"config not loaded: {exc}")
            return
        if name:
            spec = dataclasses.replace(spec, name=name)
        label = f"{CONFIG_PREFIX}{spec.name}"
        self.configs[label] = (spec, imported)
        menu = self.controls["model"]
        if label not in menu.options:
            menu.unobserve(self._on_change, names="value")
            try:
                current = menu.value
                menu.options = [*menu.options, label]
                menu.value = current
            finally:
                menu.observe(self._on_change, names="value")
        if menu.value == label:
            self.refresh()
        else:
            menu.value = label  # redraws
        if self.error is None:
            self.status.value = (f'<div class="so-status-ok">✓ loaded {html.escape(label)} '
                                 f"({imported.architecture})</div>")

    # -- library calls only -----------------------------------------------------------------
    def _model(self, v: Mapping[str, Any]):
        if v["model"] in self.configs:
            return self.configs[v["model"]][0]
        if v["model"] != CUSTOM:
            return catalog.model(v["model"])
        return catalog.custom_model(v["custom_layers"], v["custom_hidden"], v["custom_heads"],
                                    seq_len=v["seq_len"])

    def _compute(self, v: Mapping[str, Any]) -> plan.SearchResult:
        tokens = float(v["tokens_b"]) * 1e9
        if tokens <= 0:
            raise ValueError(f"tokens (B) must be > 0 billion tokens, got {v['tokens_b']!r}")
        key = (*(value for name, value in sorted(v.items()) if name != "tokens_b"),
               self.configs.get(v["model"]))
        if key == getattr(self, "_key", None):  # only the budget changed: keep the search
            result = dataclasses.replace(self.result, tokens=tokens)
        else:
            calibration = None
            if self.measured is not None and v["network"] == self.measured_label:
                network = self.measured.fabric(v["gpu"], v["gpus_per_node"])
                calibration = self.measured.plan_calibration()
            else:
                inter = None if v["network"] == USUAL else v["network"]
                network = plan.default_network(v["gpu"], v["gpus_per_node"], inter)
            result = plan.search(self._model(v), v["gpu"], v["n_gpus"], v["global_batch"],
                                 network, seq_len=v["seq_len"], tokens=tokens,
                                 flash_attention=v["flash_attention"], calibration=calibration,
                                 framework=v["framework"])
        self.best = result.result(0)
        self._key = key
        self._spec = self._model(v)
        return result

    def _export(self) -> tuple[str, bool]:
        """The best plan in the "copy as" framework's terms, or why it cannot run there
        (and whether it can)."""
        try:
            return configs.export_plan(self.export_choice.value, self.best.plan, self._spec,
                                       result=self.best), True
        except configs.UnsupportedPlanError as exc:  # one sentence naming framework and setting
            return (str(exc) if str(exc).endswith(".") else f"{exc}."), False

    def _show_export(self) -> None:
        if getattr(self, "best", None) is None:
            return
        self.export_text, runs = self._export()
        rows = min(max(self.export_text.count("\n") + 1, 2), 18)
        label = dict((v, k) for k, v in EXPORTS)[self.export_choice.value]
        note = (f"{label} settings of the best plan (select the text and copy it):" if runs
                else f"No {label} settings for the best plan:")
        self.export_box.value = (
            f'<p class="so-export-note">{html.escape(note)}</p>'
            f'<textarea class="so-export-text" readonly rows="{rows}" spellcheck="false">'
            f"{html.escape(self.export_text)}</textarea>")

    # -- drawing ----------------------------------------------------------------------------
    def _config_note(self) -> str:
        """What the readout says of a loaded config: where the model came from, its size
        and the values the importer assumed."""
        entry = self.configs.get(self.controls["model"].value)
        if entry is None:
            return ""
        spec, imported = entry
        counted = f"{fmt.large_count(imported.params_total)} parameters"
        if imported.params_active != imported.params_total:
            counted += f", {fmt.large_count(imported.params_active)} per token"
        assumed = [f for f in imported.findings if f.status == configs.ASSUMED]
        others = [f for f in imported.findings
                  if f.status in (configs.NOT_MODELLED, configs.UNKNOWN)]
        text = (f"<p>Model from a config.json: <b>{html.escape(spec.name)}</b> "
                f"({html.escape(imported.architecture)}, {counted}).")
        if assumed:
            text += " Assumed (the file does not say): " + "; ".join(
                f"{html.escape(f.key)} = {html.escape(repr(f.value))}" for f in assumed) + "."
        if others:
            text += " Not taken over: " + "; ".join(
                f"{html.escape(f.key)} ({html.escape(f.status)})" for f in others) + "."
        return text + "</p>"

    def _render(self, r: plan.SearchResult) -> str:
        self._show_export()
        self.image.value = plotting.plan_bars_svg(
            r, k=5, title=f"{r.model} on {fmt.count(r.n_gpus)} × {r.gpu}: memory of the best plans")
        best = self.best
        table = html_table(
            ["#", "plan", "GiB per GPU", "s per iteration", "vs best", "MFU"],
            [(row["rank"], row["plan"], fmt.sig(row["memory_gib"]),
              fmt.sig(row["step_s"]), fmt.percent(row["slower_pct"] / 100, signed=True),
              fmt.percent(row["mfu_pct"] / 100)) for row in r.top(_TOP)],
            align=["right", "left", "right", "right", "right", "right"],
            col_styles=["", "min-width:12em", "", "", "", ""])
        why = "<br>".join(html.escape(line) for line in plan.explain(r, k=3).splitlines())
        return (
            self._config_note() +
            f"<p><b>{fmt.count(r.n_fit)}</b> of {fmt.count(r.n_evaluated)} valid plans fit in "
            f"{fmt.bytes_iec(best.capacity_bytes)}. Best: <b>{html.escape(best.plan.label)}"
            f"</b>: {fmt.duration(best.step_s)} per iteration, "
            f"{fmt.large_count(best.tokens_per_s)} tokens/s, MFU {fmt.percent(best.mfu)}, "
            f"{fmt.flop_rate(best.model_tflops_per_gpu * 1e12)} per GPU.</p>"
            f"<p>Memory: {fmt.sig(best.memory_bytes / units.GIB)} of "
            f"{fmt.sig(best.capacity_bytes / units.GIB)} GiB, "
            f"{fmt.sig(best.headroom_gib)} GiB free"
            + (" <b>⚠ tight</b>: above 90% of HBM, fragmentation and peaks the model does not "
               "see may push it over" if best.tight else "")
            + f". Framework: {html.escape(best.framework_label)}.</p>"
            f"<p>{fmt.tokens(r.tokens)}: "
            f"<b>{fmt.duration(units.days_to_seconds(best.training_days))}</b>, "
            f"{fmt.large_count(best.gpu_hours)} GPU-hours.</p>"
            f"{table}<p>{why}</p>"
        )
