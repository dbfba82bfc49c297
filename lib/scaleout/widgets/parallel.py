"""Explorers of notebooks 03, 04 and 06: data parallelism, tensor parallelism, ZeRO.

* :class:`DataParallelExplorer` (``03_data_parallelism``): scaling efficiency
  against the number of GPUs for a model, a network, a bucket size, with and
  without overlap; whether the model even fits with data parallelism alone.
* :class:`TensorParallelExplorer` (``04_tensor_parallelism``): one layer's
  compute and tensor-parallel communication for t = 1 to 64, inside the
  NVLink domain and across the network; activations with sequence parallelism.
* :class:`ZeroExplorer` (``06_zero_stages``): memory per GPU under each ZeRO
  stage and each stage's communication per step on a fabric.

All three draw SVG (:mod:`scaleout.svgchart`), computed only by
:mod:`scaleout.data_parallel`, :mod:`scaleout.tensor_parallel`,
:mod:`scaleout.zero` and :mod:`scaleout.memory`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import (
    catalog,
    collectives,
    data_parallel,
    memory,
    plotting,
    svgchart,
    tensor_parallel,
    units,
    zero,
)
from .. import formatting as fmt
from ..render import html_table
from .common import Explorer, gpu_menu, model_menu

__all__ = [
    "BUCKET_MIB_CHOICES",
    "COMPARE_LINKS",
    "DP_SIZES",
    "GPU_COUNTS",
    "NODE_SIZES",
    "NVLINK_DOMAINS",
    "SEQ_LENS",
    "TP_SIZES",
    "DataParallelExplorer",
    "TensorParallelExplorer",
    "ZeroExplorer",
]

_WIDE = {"style": {"description_width": "110px"}, "layout": W.Layout(width="290px")}
#: The menus of the explorers (notebooks validate their parameters against them).
GPU_COUNTS = tuple(2**k for k in range(17))  # 1 .. 65,536 data-parallel replicas
DP_SIZES = tuple(2**k for k in range(15))  # 1 .. 16,384 (ZeRO explorer)
BUCKET_MIB_CHOICES = (0.25, 1, 5, 25, 100, 400, 1600, 6400)
NODE_SIZES = (1, 2, 4, 8, 16)
NVLINK_DOMAINS = (2, 4, 8, 16, 72)
SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)
#: Networks every data-parallel chart compares the chosen one against.
COMPARE_LINKS = ("InfiniBand NDR", "RoCE v2 400GbE", "TCP/IP 100GbE")


def _links(scope: str | None = None) -> list[str]:
    return [x.name for x in catalog.links() if scope is None or x.scope == scope]


def _n_options(values) -> list[tuple[str, int]]:
    return [(f"{n:,}", n) for n in values]


# =========================================================================== 03: data parallel
class DataParallelExplorer(Explorer):
    """Weak-scaling efficiency of data parallelism against GPU count, per network.

    Controls: ``model``, ``gpu`` (for the memory check), ``link`` (the network
    between nodes), ``gpus_per_node`` (joined by the GPU's NVLink), ``hierarchical``
    (two-level all-reduce or one flat ring), ``n_gpus`` (powers of two),
    ``bucket_mib`` (DDP bucket size in MiB), ``overlap`` (bucket all-reduces
    during the backward pass), ``batch_per_gpu`` (sequences, fixed per GPU),
    ``achieved_tflops``. ``result`` holds the chosen :class:`~scaleout.data_parallel.DPStep`
    (``"step"``), the curves (``"curves"``: ``{label: weak_scaling dict}``) and
    the memory of one replica without ZeRO (``"memory"``).
    """

    title = "Data parallelism: how much of n GPUs do you get?"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": model_menu("gpt2-1.5b", _WIDE),
            "gpu": gpu_menu("H100-SXM5-80GB", _WIDE),
            "link": W.Dropdown(options=_links(), value="InfiniBand NDR",
                               description="network", **_WIDE),
            "gpus_per_node": W.Dropdown(options=NODE_SIZES, value=8,
                                        description="GPUs per node", **_WIDE),
            "hierarchical": W.Checkbox(value=True, description="hierarchical all-reduce",
                                       indent=False),
            "overlap": W.Checkbox(value=True, description="overlap with backward", indent=False),
            "n_gpus": W.SelectionSlider(options=_n_options(GPU_COUNTS), value=1024,
                                        description="GPUs", continuous_update=False, **_WIDE),
            "bucket_mib": W.SelectionSlider(options=BUCKET_MIB_CHOICES, value=25,
                                            description="bucket (MiB)",
                                            continuous_update=False, **_WIDE),
            "batch_per_gpu": W.IntSlider(value=8, min=1, max=64, description="seqs per GPU",
                                         continuous_update=False, **_WIDE),
            "achieved_tflops": W.IntSlider(value=400, min=10, max=2000, step=10,
                                           description="TFLOP/s achieved",
                                           continuous_update=False, **_WIDE),
        }

    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        step_kw = {
            "batch_per_gpu": v["batch_per_gpu"],
            "achieved_tflops": v["achieved_tflops"],
            "bucket_bytes": v["bucket_mib"] * units.MIB,
        }
        gpu = catalog.gpu(v["gpu"])
        intra = gpu.scaleup_link

        def fabric(link: str) -> collectives.NodeNetwork:
            return collectives.NodeNetwork(intra=intra, inter=link,
                                        gpus_per_node=v["gpus_per_node"],
                                        hierarchical=v["hierarchical"])

        chosen = fabric(v["link"])
        step = data_parallel.dp_step(v["model"], v["n_gpus"], fabric=chosen,
                                     overlap=v["overlap"], **step_kw)
        ns = [n for n in GPU_COUNTS if n <= v["gpus_per_node"] or n % v["gpus_per_node"] == 0]
        links = list(dict.fromkeys([*COMPARE_LINKS, v["link"]]))
        curves = {link: data_parallel.weak_scaling(v["model"], ns, fabric=fabric(link),
                                                   overlap=v["overlap"], **step_kw)
                  for link in links}
        other = "no overlap" if v["overlap"] else "with overlap"
        curves[f"{v['link']}, {other}"] = data_parallel.weak_scaling(
            v["model"], ns, fabric=chosen, overlap=not v["overlap"], **step_kw)
        mem = memory.training_memory(v["model"], gpu, micro_batch=v["batch_per_gpu"],
                                     dp=v["n_gpus"], zero_stage=0, recompute="selective")
        return {"step": step, "curves": curves, "memory": mem, "fabric": chosen,
                "model": catalog.model(v["model"]), "gpu": gpu}

    def _render(self, r: dict[str, Any]) -> str:
        step: data_parallel.DPStep = r["step"]
        v = self.values()
        names = list(r["curves"])
        colors = plotting.link_colors(names[:-1])
        colors[names[-1]] = colors[v["link"]]
        series = {k: (c["n_gpus"], 100 * c["efficiency"]) for k, c in r["curves"].items()}
        self.image.value = svgchart.line_chart(
            series, colors, logx=True, y_range=(0, 100), dashed=[names[-1]],
            highlight=v["link"], marker_x=v["n_gpus"],
            marker_label=f"{fmt.plural(v['n_gpus'], 'GPU')}: {fmt.percent(step.efficiency)}",
            points={v["link"]: (v["n_gpus"], 100 * step.efficiency)},
            xlabel="GPUs (data-parallel replicas), fixed batch per GPU",
            ylabel="scaling efficiency (%)",
            title=(f"{r['model'].name}: gradient all-reduce, {fmt.sig(v['bucket_mib'])} MiB "
                   f"buckets, overlap {'on' if v['overlap'] else 'off'}"),
        )
        per_bucket = step.comm_s / step.n_buckets
        mem = r["memory"]
        fits = ("fits" if mem.fits else "does NOT fit: needs model parallelism or ZeRO")
        table = html_table(["", "value"], [
            ("gradients per GPU", fmt.bytes_si(step.grad_bytes)),
            ("buckets", fmt.count(step.n_buckets)),
            ("all-reduce per bucket", fmt.duration(per_bucket)),
            ("all-reduce, all buckets", fmt.duration(step.comm_s)),
            ("compute (forward + backward)", fmt.duration(step.compute_s)),
            ("exposed communication", fmt.duration(step.exposed_comm_s)),
            ("step", fmt.duration(step.step_s)),
            ("scaling efficiency", fmt.percent(step.efficiency)),
            ("GPUs' worth of throughput",
             f"{fmt.count(step.effective_gpus)} of {fmt.count(step.n_gpus)}"),
        ], align=["left", "right"])
        cls = "so-status-ok" if mem.fits else "so-status-bad"
        return (f"{table}<p>{r['fabric'].label}</p>"
                f'<p class="{cls}">One replica on a {r["gpu"].name} without ZeRO '
                f"({fmt.bytes_iec(mem.total)} of {fmt.bytes_iec(mem.capacity)}): {fits}</p>")


# =========================================================================== 04: tensor parallel
class TensorParallelExplorer(Explorer):
    """One layer's compute and tensor-parallel communication for t = 1 to 64.

    Controls: ``model``, ``t`` (the chosen size, highlighted), ``intra`` (the
    scale-up link inside the NVLink domain), ``inter`` (the network beyond it),
    ``gpus_per_node`` (NVLink domain size), ``micro_batch``, ``seq_len``,
    ``achieved_tflops``, ``sp`` (sequence parallelism). ``result`` holds the
    sweep (``"sweep"``, arrays per t), the chosen :class:`~scaleout.tensor_parallel.TPLayer`
    (``"layer"``) and activations per layer with and without SP (``"act"``).
    """

    title = "Tensor parallelism: one layer's compute vs communication"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": model_menu("gpt3-175b", _WIDE),
            "t": W.Dropdown(options=TP_SIZES, value=8, description="TP size t", **_WIDE),
            "intra": W.Dropdown(options=_links("scale-up"), value="NVLink 4",
                                description="inside node", **_WIDE),
            "inter": W.Dropdown(options=_links("scale-out"), value="InfiniBand NDR",
                                description="across nodes", **_WIDE),
            "gpus_per_node": W.Dropdown(options=NVLINK_DOMAINS, value=8,
                                        description="NVLink domain", **_WIDE),
            "sp": W.Checkbox(value=False, description="sequence parallelism", indent=False),
            "micro_batch": W.IntSlider(value=1, min=1, max=16, description="micro-batch",
                                       continuous_update=False, **_WIDE),
            "seq_len": W.Dropdown(options=SEQ_LENS, value=2048, description="sequence",
                                  **_WIDE),
            "achieved_tflops": W.IntSlider(value=400, min=10, max=2000, step=10,
                                           description="TFLOP/s achieved",
                                           continuous_update=False, **_WIDE),
        }

    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        fab = collectives.NodeNetwork(intra=v["intra"], inter=v["inter"],
                                   gpus_per_node=v["gpus_per_node"])
        kw = {"micro_batch": v["micro_batch"], "seq_len": v["seq_len"], "fabric": fab,
              "achieved_tflops": v["achieved_tflops"], "sp": v["sp"]}
        model = catalog.model(v["model"])
        sweep = tensor_parallel.tp_sweep(model, list(TP_SIZES), **kw)
        layer = tensor_parallel.tp_layer(model, v["t"], **kw)
        act = {sp: memory.activation_bytes_per_layer(model, v["micro_batch"], v["seq_len"],
                                                     v["t"], sp=sp, recompute="selective")
               for sp in (False, True)}
        return {"sweep": sweep, "layer": layer, "act": act, "model": model, "fabric": fab}

    def _render(self, r: dict[str, Any]) -> str:
        sw, layer = r["sweep"], r["layer"]
        v = self.values()
        ms = 1e3
        rows = {}
        for t, comp, comm, net in zip(sw["t"], sw["compute_s"], sw["comm_s"],
                                      sw["crosses_network"], strict=True):
            key = "comm over the network" if net else "comm over NVLink"
            rows[f"t = {t}"] = {"compute": comp * ms, key: comm * ms}
        self.image.value = svgchart.stacked_hbars(
            rows, plotting.TIME_COLORS, xlabel="milliseconds per layer per micro-batch",
            title=(f"{r['model'].name}, b={v['micro_batch']}, s={fmt.count(v['seq_len'])}: "
                   f"{v['gpus_per_node']} GPUs per NVLink domain"),
            highlight=f"t = {v['t']}",
        )
        where = v["inter"] if layer.crosses_network else v["intra"]
        size = tensor_parallel.tp_activation_bytes(v["micro_batch"], v["seq_len"],
                                                   r["model"].hidden)
        table = html_table(["", "value"], [
            ("all-reduce size (b·s·h · 2 B)", fmt.bytes_iec(size)),
            ("sent per GPU per layer", fmt.bytes_iec(layer.traffic_bytes)),
            ("collectives", "4 reduce-scatter + 4 all-gather" if layer.sp else "4 all-reduce"),
            ("runs over", where),
            ("communication", fmt.duration(layer.comm_s)),
            ("compute", fmt.duration(layer.compute_s)),
            ("communication share", fmt.percent(layer.comm_fraction)),
            ("activations per layer, TP", fmt.bytes_iec(r["act"][False])),
            ("activations per layer, TP + SP", fmt.bytes_iec(r["act"][True])),
        ], align=["left", "right"])
        cls = "so-status-bad" if layer.crosses_network else "so-status-ok"
        note = ("t is larger than the NVLink domain: every all-reduce crosses the network"
                if layer.crosses_network else "t fits in the NVLink domain")
        return f'{table}<p class="{cls}">{note}</p>'


# =========================================================================== 06: ZeRO
#: Colours of the ZeRO communication bars, one per collective.
ZERO_COMM_COLORS = {
    "all-reduce (gradients)": "#d62728",
    "reduce-scatter (gradients)": "#ff7f0e",
    "all-gather (weights)": "#1f77b4",
    "all-gather (weights again, backward)": "#17becf",
}
_ZERO_LEGEND = {"all-reduce (gradients)": "all-reduce", "reduce-scatter (gradients)":
                "reduce-scatter", "all-gather (weights)": "all-gather",
                "all-gather (weights again, backward)": "2nd all-gather (ZeRO-3)"}


class ZeroExplorer(Explorer):
    """Memory per GPU and communication per step under ZeRO stages 0-3.

    Controls: ``model``, ``gpu``, ``zero_stage`` (highlighted), ``dp`` (powers
    of two), ``link`` (network between nodes), ``gpus_per_node``,
    ``micro_batch``, ``recompute``, ``recipe``, ``achieved_tflops``. ``result``
    holds ``"memory"`` and ``"comm"`` (``{stage: MemoryBreakdown}``, ``{stage: ZeroComm}``), the
    parameters ``"params"``, the lowest stage that fits (``"lowest"``, None if
    none) and the step's compute time (``"compute_s"``).
    """

    title = "ZeRO: memory per GPU against communication per step"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": model_menu("gpt3-175b", _WIDE),
            "gpu": gpu_menu("H100-SXM5-80GB", _WIDE),
            "zero_stage": W.Dropdown(options=[0, 1, 2, 3], value=3, description="ZeRO stage",
                                     **_WIDE),
            "dp": W.SelectionSlider(options=_n_options(DP_SIZES), value=64,
                                    description="DP size", continuous_update=False, **_WIDE),
            "link": W.Dropdown(options=_links(), value="InfiniBand NDR", description="network",
                               **_WIDE),
            "gpus_per_node": W.Dropdown(options=NODE_SIZES, value=8,
                                        description="GPUs per node", **_WIDE),
            "micro_batch": W.IntSlider(value=1, min=1, max=16, description="micro-batch",
                                       continuous_update=False, **_WIDE),
            "recompute": W.Dropdown(options=list(memory.RECOMPUTE_MODES), value="full",
                                    description="recompute", **_WIDE),
            "recipe": W.Dropdown(options=list(memory.RECIPES), value="mixed-adam",
                                 description="recipe", **_WIDE),
            "achieved_tflops": W.IntSlider(value=400, min=10, max=2000, step=10,
                                           description="TFLOP/s achieved",
                                           continuous_update=False, **_WIDE),
        }

    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        model = catalog.model(v["model"])
        gpu = catalog.gpu(v["gpu"])
        kw = {"micro_batch": v["micro_batch"], "recompute": v["recompute"],
              "recipe": v["recipe"]}
        mem = {z: memory.training_memory(model, gpu, dp=v["dp"], zero_stage=z, **kw)
               for z in range(4)}
        fab = collectives.NodeNetwork(intra=gpu.scaleup_link, inter=v["link"],
                                   gpus_per_node=v["gpus_per_node"])
        params = memory.stage_params(model)
        comm = {z: zero.zero_comm(params, z, v["dp"], fab, v["recipe"]) for z in range(4)}
        lowest = next((z for z in range(4) if mem[z].fits), None)
        compute_s = data_parallel.compute_time(model, v["micro_batch"] * model.seq_len,
                                               v["achieved_tflops"])
        return {"memory": mem, "comm": comm, "params": params, "lowest": lowest,
                "compute_s": compute_s, "model": model, "gpu": gpu, "fabric": fab}

    def _render(self, r: dict[str, Any]) -> str:
        z = self.controls["zero_stage"].value
        dp = self.controls["dp"].value
        mem, comm = r["memory"], r["comm"]
        label = {s: f"ZeRO-{s}" for s in range(4)}
        top = plotting.memory_bars_svg(
            {label[s]: mem[s] for s in range(4)}, highlight=label[z],
            title=f"{r['model'].name} on {fmt.count(dp)} × {r['gpu'].name}: memory per GPU")
        bottom = svgchart.stacked_hbars(
            {label[s]: {_ZERO_LEGEND[k]: t * 1e3 for k, t in comm[s].parts_s.items()}
             for s in range(4)},
            {_ZERO_LEGEND[k]: c for k, c in ZERO_COMM_COLORS.items()},
            xlabel="communication per step (ms), one collective after another",
            title=f"communication per step: {fmt.plural(dp, 'GPU')}, "
                  f"{self.controls['link'].value} between nodes", highlight=label[z],
            row_height=30)
        self.image.value = svgchart.vstack([top, bottom])
        psi = r["params"]
        chosen, c = mem[z], comm[z]
        lowest = r["lowest"]
        best = (f"lowest stage that fits: ZeRO-{lowest}" if lowest is not None
                else "no stage fits at this DP size: add tensor or pipeline parallelism")
        table = html_table(["", "value"], [
            ("parameters Ψ", fmt.large_count(psi, 4)),
            ("stage shards", zero.STAGE_SHARDS[z]),
            ("memory per GPU", fmt.bytes_iec(chosen.total)),
            ("traffic per GPU per step",
             f"{zero.zero_comm_elements(psi, z) / psi:g}Ψ elements, "
             f"{fmt.bytes_si(c.bytes_sent)}"),
            ("communication per step", fmt.duration(c.total_s)),
            ("compute per micro-batch", fmt.duration(r["compute_s"])),
        ], align=["left", "right"])
        cls = "so-status-ok" if chosen.fits else "so-status-bad"
        return (f'{table}<p class="{cls}">ZeRO-{z}: {chosen.verdict()}</p>'
                f"<p>{best}</p>")
