"""Every notebook's parameters: what each one accepts, and how they must agree.

Each notebook starts with a cell tagged ``parameters`` (papermill overrides it). This module
says, once, what every one of those parameters may hold: its type, its range, the catalog
or list of options it names, and the rules that tie several together (a tensor-parallel size
that divides the heads, GPUs per node that divide the GPU count, a layout that exists).
Two callers use it, so a bad value fails the same way everywhere, before any work:

* ``./workbook report NB -p NAME VALUE`` (:func:`scaleout.report.check_parameters`) refuses
  a bad value with one line and exit status 2, before a kernel starts;
* each notebook's first code cell calls :func:`check` on its own parameters, so a value
  edited by hand in the notebook fails there, with the same sentence.

The tests draw random values inside every rule (:attr:`Rule.examples`) and run the notebooks
with them: whatever a rule accepts, the notebook must run with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import checks

__all__ = [
    "SPECS",
    "CatalogName",
    "Choice",
    "Currency",
    "Flag",
    "Int",
    "LinkName",
    "ListOf",
    "Number",
    "Rule",
    "Spec",
    "Text",
    "check",
    "spec",
]


# =========================================================================== rules
@dataclass(frozen=True)
class Rule:
    """What one parameter may hold. Subclasses implement :meth:`check`."""

    doc: str = field(default="", kw_only=True)

    def check(self, name: str, value: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Int(Rule):
    """A whole number from ``low`` to ``high``, a multiple of ``step`` (or one of ``among``)."""

    low: int = 1
    high: int = 10**7
    among: tuple[int, ...] = ()
    step: int = 1

    def check(self, name: str, value: Any) -> int:
        if self.among:
            if isinstance(value, bool):
                raise ValueError(f"{name} must be one of {_few(self.among)}, got {value!r}")
            return checks.check_choice(name, value, self.among)
        x = checks.check_int(name, value, minimum=self.low, maximum=self.high)
        if x % self.step:
            raise ValueError(f"{name} must be a multiple of {self.step} from {self.low} to "
                             f"{self.high}, got {value!r}")
        return x


@dataclass(frozen=True)
class Number(Rule):
    """A finite number from ``low`` to ``high`` (``low`` excluded when ``open_low``)."""

    low: float = 0.0
    high: float = 1e30
    open_low: bool = False

    def check(self, name: str, value: Any) -> float:
        x = checks.check_range(name, value, self.low, self.high)
        if self.open_low and x == self.low:
            raise ValueError(f"{name} must be a number > {self.low:g} and at most "
                             f"{self.high:g}, got {value!r}")
        return x


@dataclass(frozen=True)
class Flag(Rule):
    """``True`` or ``False`` (nothing else: ``"False"`` is not false)."""

    def check(self, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
        return value


@dataclass(frozen=True)
class Text(Rule):
    """Any text of at most ``max_len`` characters (``empty`` allows "")."""

    max_len: int = 200
    empty: bool = True

    def check(self, name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"{name} must be text, got {value!r}")
        if len(value) > self.max_len or (not value and not self.empty):
            raise ValueError(f"{name} must be text of {'1' if not self.empty else '0'} to "
                             f"{self.max_len} characters, got {len(value)}")
        return value


@dataclass(frozen=True)
class Currency(Rule):
    """An ISO 4217 currency code (``"USD"``, ``"EUR"``, ``"KRW"``), as
    :func:`scaleout.formatting.money` accepts."""

    def check(self, name: str, value: Any) -> str:
        from . import formatting

        if not isinstance(value, str):
            raise ValueError(f"{name} must be text, got {value!r}")
        try:
            formatting.money(0, value)
        except ValueError:
            raise ValueError(f"{name} must be a three-letter ISO 4217 code such as 'USD', "
                             f"'EUR' or 'KRW', got {value!r}") from None
        return value


@dataclass(frozen=True)
class Choice(Rule):
    """One of a list of names; ``options`` is a function so catalogs load only when checked.

    A near miss is refused with the closest names (``checks.check_choice``); matching is
    exact, so a name never silently means another entry.
    """

    options: Callable[[], Sequence[Any]] = tuple
    empty: bool = False

    def check(self, name: str, value: Any) -> Any:
        if self.empty and value == "":
            return value
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ValueError(f"{name} must be one of {_few(self.options())}, got {value!r}")
        return checks.check_choice(name, value, list(self.options()))


@dataclass(frozen=True)
class ListOf(Rule):
    """A list of ``min_len`` to ``max_len`` items, each checked by ``item``."""

    item: Rule = field(default_factory=Rule)
    min_len: int = 1
    max_len: int = 16
    unique: bool = False

    def check(self, name: str, value: Any) -> list:
        if not isinstance(value, list):
            raise ValueError(f"{name} must be a list, got {value!r}")
        if not self.min_len <= len(value) <= self.max_len:
            raise ValueError(f"{name} must hold {self.min_len} to {self.max_len} items, "
                             f"got {len(value)}")
        out = [self.item.check(f"{name}[{i}]", v) for i, v in enumerate(value)]
        if self.unique and len(set(out)) != len(out):
            raise ValueError(f"{name} holds the same item twice: {value!r}")
        return out


@dataclass(frozen=True)
class CatalogName(Rule):
    """The name (or an alias) of an entry of one catalog: ``"model"`` or ``"gpu"``.

    The catalog's own lookup decides (exact names and declared aliases only; a near miss
    is refused with the closest names).
    """

    kind: str = "model"

    def check(self, name: str, value: Any) -> str:
        from . import catalog

        if not isinstance(value, str):
            raise ValueError(f"{name} must be the name of a {self.kind}, got {value!r}")
        getattr(catalog, self.kind)(value)
        return value

    def options(self) -> list[str]:
        """The catalog's names."""
        from . import catalog

        return getattr(catalog, f"{self.kind}_names")()


@dataclass(frozen=True)
class LinkName(Rule):
    """The name of a catalog link of one ``scope`` ("scale-up", "scale-out"; "" for any),
    and, when ``rdma`` is set, only RDMA (True) or only kernel-TCP (False) ports.

    A link of another kind is refused with what it is and the links that would do.
    """

    scope: str = ""
    empty: bool = False
    rdma: bool | None = None

    def _accepts(self, link: Any) -> bool:
        return ((not self.scope or link.scope == self.scope)
                and (self.rdma is None or link.rdma == self.rdma))

    def _kind(self) -> str:
        kind = {None: "", True: "RDMA ", False: "kernel-TCP "}[self.rdma]
        return f"{kind}{self.scope} link" if self.scope else f"{kind}link"

    def check(self, name: str, value: Any) -> str:
        from . import catalog

        if self.empty and value == "":
            return value
        if not isinstance(value, str):
            raise ValueError(f"{name} must be the name of a link, got {value!r}")
        allowed = self.options()
        if value in allowed:
            return value
        other = {x.name: x for x in catalog.links()}
        if value in other:
            link = other[value]
            what = (f"{'an RDMA' if link.rdma else 'a kernel-TCP'} network port"
                    if link.scope == "scale-out" else f"a {link.scope} link")
            raise ValueError(f"{name}={value!r} is {what}; choose a {self._kind()}: "
                             f"{', '.join(allowed)}")
        return checks.check_choice(name, value, allowed)

    def options(self) -> list[str]:
        """The links this rule accepts."""
        from . import catalog

        return [x.name for x in catalog.links() if self._accepts(x)]


def _few(options: Sequence[Any], n: int = 12) -> str:
    shown = ", ".join(map(repr, list(options)[:n]))
    return shown + (", ..." if len(options) > n else "")


# =========================================================================== specs
@dataclass(frozen=True)
class Spec:
    """A notebook's parameters: a rule per name, then rules that tie them together.

    ``agree`` receives the checked values (a dict) and raises ``ValueError`` when they do
    not fit together; it calls the library (a layout, a fabric, a search) rather than
    restating its rules.
    """

    rules: dict[str, Rule]
    agree: Callable[[dict[str, Any]], None] | None = None


def check(notebook: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """Check a notebook's parameter values; return them as checked (ints as ints, ...).

    ``notebook`` is the notebook's path stem under ``notebooks/`` (``"02_gpu_memory_math"``,
    ``"reports/cluster_plan"``); ``values`` holds at least every parameter of its spec (a
    notebook passes ``globals()``). Names outside the spec are ignored.

    Raises
    ------
    ValueError
        One sentence naming the first parameter that is wrong, its value and what is allowed.
    """
    rules = spec(notebook)
    missing = [name for name in rules.rules if name not in values]
    if missing:
        raise ValueError(f"{notebook}: parameters {', '.join(missing)} are missing")
    out = {name: rule.check(name, values[name]) for name, rule in rules.rules.items()}
    if rules.agree is not None:
        rules.agree(out)
    return out


def spec(notebook: str) -> Spec:
    """The :class:`Spec` of a notebook (by path stem); an unknown one is a ``ValueError``."""
    if notebook not in SPECS:
        near = checks.close_matches(notebook, SPECS)
        hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
        raise ValueError(f"no parameter rules for notebook {notebook!r}{hint}")
    return SPECS[notebook]


# =========================================================================== the catalogs
def _models() -> list[str]:
    from . import catalog

    return catalog.model_names()


def _recipes() -> list[str]:
    from . import memory

    return list(memory.RECIPES)


def _recompute() -> list[str]:
    from . import memory

    return list(memory.RECOMPUTE_MODES)


def _switches() -> list[str]:
    from . import fabric

    return [x.name for x in fabric.switch_chips()]


def _studies() -> list[str]:
    from . import reliability

    return reliability.study_names()


def _figures(*units: str) -> Callable[[], list[str]]:
    """Names of the published reliability figures in one of ``units`` (data/failures.toml)."""
    def names() -> list[str]:
        from . import reliability

        return [x.name for x in reliability.figures() if x.unit in units]

    return names


def _frameworks() -> list[str]:
    from .plan import frameworks

    return frameworks.framework_names()


def _mpi_algorithms() -> list[str]:
    from .lab import mpibench

    return list(mpibench.OMPI_ALGORITHMS)


def _log_names() -> list[str]:
    from . import calibration

    return calibration.log_names()


def _supernodes() -> list[str]:
    """Scale-up domains whose chassis are joined by optics (notebook 12 prices them)."""
    from . import synthesis

    return [d.name for d in synthesis.scaleup_domains() if d.outer_medium == "optical"]


def _optics_choices() -> list[str]:
    from . import optics

    return list(optics.CHOICES)


MODEL = CatalogName("model", doc="a catalog model: scaleout.catalog.model_names()")
GPU = CatalogName("gpu", doc="a catalog GPU: scaleout.catalog.gpu_names()")
RECIPE = Choice(_recipes, doc="bytes-per-parameter convention: scaleout.memory.RECIPES")
RECOMPUTE = Choice(_recompute, doc="activation recomputation: none, selective or full")
SCALE_UP = LinkName("scale-up", doc="a scale-up link of the catalog")
SCALE_OUT = LinkName("scale-out", doc="a network port (a scale-out link)")
OPTIONAL_PORT = LinkName("scale-out", empty=True, doc='a network port, or "" for the usual one')
ANY_LINK = LinkName(doc="any link of the catalog")
RDMA_PORT = LinkName("scale-out", rdma=True, doc="an RDMA network port (InfiniBand, RoCE)")
TCP_PORT = LinkName("scale-out", rdma=False, doc="a kernel-TCP network port")
TFLOPS = Number(10.0, 2000.0, doc="achieved dense TFLOP/s per GPU")
#: The largest cluster any notebook accepts (ten million GPUs): far beyond any built.
MAX_GPUS = 10**7
POW2_GPUS = tuple(2**k for k in range(17))  # 1 .. 65,536


# =========================================================================== agreement rules
def _agree_01(p: dict[str, Any]) -> None:
    from . import catalog

    peak = catalog.gpu(p["gpu_name"]).bf16_dense_tflops
    if p["achieved_tflops"] > peak:
        raise ValueError(f"achieved_tflops={p['achieved_tflops']:g} is above the peak of "
                         f"{p['gpu_name']} ({peak:g} TFLOP/s dense BF16)")
    if p["achieved_tflops"] < 1.0:
        raise ValueError(f"achieved_tflops must be at least 1, got {p['achieved_tflops']:g}")


def _agree_02(p: dict[str, Any]) -> None:
    from . import memory

    memory.training_memory(p["model_name"], p["gpu_name"], micro_batch=p["micro_batch"],
                           seq_len=p["seq_len"], tp=p["tp"], pp=p["pp"], dp=p["dp"],
                           zero_stage=p["zero_stage"], recipe=p["recipe"],
                           recompute=p["recompute"], sp=p["sp"])


def _agree_04(p: dict[str, Any]) -> None:
    from . import catalog

    heads = catalog.model(p["model_name"]).n_heads
    checks.check_divides("tp", p["tp"], f"the heads of {p['model_name']}", heads)


def _agree_05(p: dict[str, Any]) -> None:
    from . import catalog, memory, pipeline

    model = catalog.model(p["model_name"])
    if p["m"] % p["p"]:
        raise ValueError(f"m={p['m']} must be a multiple of p={p['p']} (the interleaved "
                         "schedule, compared in this notebook, needs it)")
    if p["p"] * p["v"] > model.n_layers:
        raise ValueError(f"p x v = {p['p'] * p['v']} model chunks, but {model.name} has only "
                         f"{model.n_layers} layers")
    checks.check_divides("tp", p["tp"], f"the heads of {model.name}", model.n_heads)
    pipeline.simulate(p["schedule"], p["p"], p["m"],
                      p["v"] if p["schedule"] == "interleaved" else 1,
                      n_layers=model.n_layers)
    memory.activation_bytes_per_layer(model, p["micro_batch"], p["seq_len"], p["tp"], p["sp"],
                                      p["recompute"])


def _agree_06(p: dict[str, Any]) -> None:
    from . import memory

    memory.training_memory(p["model_name"], p["gpu_name"], dp=p["dp"],
                           zero_stage=p["zero_stage"], micro_batch=p["micro_batch"],
                           recompute=p["recompute"], recipe=p["recipe"])


def _agree_07(p: dict[str, Any]) -> None:
    checks.check_divides("gpus_per_node", p["gpus_per_node"], "n_gpus", p["n_gpus"])


def _agree_08(p: dict[str, Any]) -> None:
    from . import plan

    network = plan.default_network(p["gpu_name"], p["gpus_per_node"], p["network_name"] or None)
    plan.search(p["model_name"], p["gpu_name"], p["n_gpus"], p["global_batch"], network,
                seq_len=p["seq_len"], flash_attention=p["flash_attention"],
                uneven_layers=p["uneven_layers"], framework=p["framework"])
    # the three "when the rule breaks" cases run searches of their own
    for domain in (8, 72):
        plan.search(p["rack_model_name"], p["rack_gpu_name"], p["rack_gpus"], p["rack_batch"],
                    gpus_per_node=domain, seq_len=p["seq_len"])
    plan.search(p["small_model_name"], p["gpu_name"], p["small_gpus"], p["small_batch"],
                seq_len=p["seq_len"])
    plan.search(p["tiny_batch_model_name"], p["gpu_name"], p["tiny_batch_gpus"],
                p["tiny_batch"], seq_len=p["seq_len"])
    # section 9: a mixture of experts under a framework with expert parallelism, a long sequence
    fw = plan.framework(p["moe_framework"])
    if not fw.expert_parallel:
        have = [n for n in plan.framework_names() if plan.framework(n).expert_parallel]
        raise ValueError(f"moe_framework={p['moe_framework']!r} has no expert parallelism; "
                         f"allowed: {', '.join(have)}")
    plan.search(p["moe_model_name"], p["moe_gpu_name"], p["moe_gpus"], p["moe_batch"],
                seq_len=p["moe_seq_len"], recipe=p["moe_recipe"], framework=fw,
                flash_attention=True)
    plan.search(p["long_model_name"], p["long_gpu_name"], p["long_gpus"], p["long_batch"],
                seq_len=p["long_seq_len"], flash_attention=True)


def _agree_09(p: dict[str, Any]) -> None:
    from . import fabric

    fabric.size_multiplane(p["n_gpus"], p["port_gbps"] * p["planes"], p["planes"],
                           radix=p["radix"], oversubscription=p["oversubscription"])
    chip = fabric.switch_chip(p["switch_name"])
    for planes in (1, p["flat_planes"]):
        fabric.size_multiplane(p["n_gpus"], p["nic_gbps"], planes,
                               switch_gbps=chip.capacity_gbps)


def _agree_10(p: dict[str, Any]) -> None:
    from . import optics
    from .widgets.optics import cluster_groups

    optics.choose(p["long_link_m"], p["port_gbps"], lane_gbps=p["lane_gbps"])
    # the notebook prices the cluster's three link lengths at its own speed and at 800G and
    # 1.6T: some module must reach each of them at each
    for speed, lanes in ((p["port_gbps"], p["lane_gbps"]), (800, 112), (1600, 224)):
        for name in ("endpoint_leaf_m", "leaf_spine_m", "spine_core_m"):
            try:
                optics.choose(p[name], speed, lane_gbps=lanes)
            except ValueError as exc:
                raise ValueError(f"{name}={p[name]:g}: {exc}") from None
    _, groups = cluster_groups(p["cluster_gpus"], p["port_gbps"], p["switch_name"],
                               p["endpoint_leaf_m"], p["leaf_spine_m"], p["spine_core_m"])
    optics.fabric_bill(groups, p["technology"], lane_gbps=p["lane_gbps"])


def _agree_11(p: dict[str, Any]) -> None:
    checks.check_divides("tp x pp", p["tp"] * p["pp"], "n_gpus", p["n_gpus"])


def _agree_12(p: dict[str, Any]) -> None:
    from . import catalog, synthesis

    if p["design_domain"] not in p["domain_sizes"]:
        raise ValueError(f"design_domain={p['design_domain']} must be one of domain_sizes "
                         f"{p['domain_sizes']}")
    gpu = catalog.gpu(p["gpu_name"])
    if not (p["network_name"] or gpu.scaleout_link):
        raise ValueError(f"network_name: {gpu.name} has no usual network port in "
                         "data/gpus.toml; name a scale-out link")
    for d in p["domain_sizes"]:
        checks.check_divides("each of domain_sizes", d, "n_gpus", p["n_gpus"])
    synthesis.scaleout_fabric(p["n_gpus"], p["network_name"] or gpu.scaleout_link,
                              planes=p["planes"], optics_choice=p["optics_choice"])


def _agree_15(p: dict[str, Any]) -> None:
    from . import calibration, plan
    from .lab import calibrate, mpibench, shardings
    from .lab.model import LabModel

    dims = dict(n_layers=p["n_layers"], hidden=p["hidden"], n_heads=p["n_heads"],
                vocab=p["vocab"], seq_len=p["seq_len"], batch=p["batch"])
    model, moe = LabModel(**dims), LabModel(**dims, n_experts=p["n_experts"])
    n = p["n_devices"]
    for name, mesh in (("dp", (p["dp"], 1)), ("zero3", (p["dp"], 1)), ("tp", (1, p["tp"])),
                       ("sp", (1, p["tp"])), ("tp_dp", p["tp_dp_mesh"])):
        shardings.check_layout(model, name, mesh, n)
    shardings.check_layout(moe, "ep", (p["dp"], 1), n)
    for name in p["mpi_algorithms"]:
        checks.check_choice("mpi_algorithms", name, mpibench.OMPI_ALGORITHMS)
    mpibench.message_sizes(8, p["mpi_max_bytes"], 4)
    # Part 3 fits the logs and re-plans the cluster on the datasheet links and on the measured
    # network (a few tens of milliseconds): logs of two clusters, or a cluster no layout fits,
    # are refused here rather than in the notebook's last section
    try:
        measured = calibrate.fit_logs([calibration.LOGS_DIR / f"{name}.txt"
                                       for name in p["log_names"]])
    except ValueError as exc:
        raise ValueError(f"log_names={p['log_names']}: {exc}") from None
    cluster = (f"plan_model={p['plan_model']!r} on plan_gpus={p['plan_gpus']} x "
               f"plan_gpu={p['plan_gpu']!r} with plan_batch={p['plan_batch']}")
    try:
        for network, cal in ((plan.default_network(p["plan_gpu"]), None),
                             (measured.fabric(p["plan_gpu"]), measured.plan_calibration())):
            plan.search(p["plan_model"], p["plan_gpu"], p["plan_gpus"], p["plan_batch"],
                        network, calibration=cal)
    except ValueError as exc:
        raise ValueError(f"{cluster}: {exc}") from None


def _moe_models() -> list[str]:
    from . import catalog

    return [m.name for m in catalog.models() if m.is_moe]


def _agree_13(p: dict[str, Any]) -> None:
    from . import catalog, memory, moe

    model = catalog.model(p["model_name"])
    moe.check_ep(model, p["ep"])
    memory.check_precision(p["recipe"], p["gpu_name"])
    for d in p["domain_sizes"]:
        checks.check_int("each of domain_sizes", d, maximum=1024)
    # the Mixtral section's layout must exist and divide, and some layout must fit
    from . import plan

    if p["mixtral_gpus"] % p["mixtral_pp"]:
        raise ValueError(f"mixtral_pp={p['mixtral_pp']} must divide mixtral_gpus="
                         f"{p['mixtral_gpus']}; allowed: "
                         f"{', '.join(map(str, checks.divisors(p['mixtral_gpus'])[:12]))}")
    layout = plan.Plan(pp=p["mixtral_pp"], dp=p["mixtral_gpus"] // p["mixtral_pp"],
                       ep=p["mixtral_ep"], global_batch=p["mixtral_batch"],
                       seq_len=p["mixtral_seq_len"], zero_stage=1, flash_attention=True)
    plan.evaluate(p["mixtral_name"], p["mixtral_gpu_name"], layout, recipe="megatron-bf16")
    plan.search(p["mixtral_name"], p["mixtral_gpu_name"], p["mixtral_gpus"], p["mixtral_batch"],
                seq_len=p["mixtral_seq_len"], recipe="megatron-bf16", flash_attention=True)


def _agree_14(p: dict[str, Any]) -> None:
    from . import catalog, context_parallel, memory

    model = catalog.model(p["model_name"])
    checks.check_divides("tp", p["tp"], f"the heads of {model.name}", model.n_heads)
    context_parallel.check_cp(p["seq_len"], p["cp"], variant=p["variant"], model=model)
    memory.check_precision(p["recipe"], p["gpu_name"])
    pp = max(d for d in range(1, 17) if model.n_layers % d == 0)  # the notebook's memory table
    memory.training_memory(model, None, tp=p["tp"], pp=pp, dp=8, recompute=p["recompute"],
                           sp=True, flash_attention=True)
    if model.n_heads % (p["tp"] * p["cp"]) and p["cp"] > 1:
        raise ValueError(f"tp x cp = {p['tp'] * p['cp']} must divide the {model.n_heads} heads "
                         f"of {model.name} (the notebook compares CP with a TP that large)")


def _agree_cluster_plan(p: dict[str, Any]) -> None:
    from . import memory, synthesis
    from .report import REPORTS_DIR

    if p["model_name"] == "custom":
        for name in ("custom_layers", "custom_hidden", "custom_heads", "custom_vocab"):
            checks.check_int(name, p[name])
        checks.check_divides("custom_heads", p["custom_heads"], "custom_hidden",
                             p["custom_hidden"])
    memory.check_precision(p["recipe"], p["gpu_name"])
    # a measured network or a model's config.json named relative to the report's folder,
    # where its kernel runs
    for name in ("network_file", "model_config"):
        if p.get(name) and not Path(p[name]).is_absolute():
            p = {**p, name: str((REPORTS_DIR / p[name]).resolve())}
    # the report's whole cluster (tens of milliseconds): a cluster no layout can use, a model
    # that fits nowhere, a fabric that cannot be built, is refused here, not half-way through
    synthesis.report_cluster(p)


# =========================================================================== the notebooks
SPECS: dict[str, Spec] = {
    "00_start_here": Spec({
        "search_term": Text(max_len=80, empty=False, doc="a word to look up in the glossary"),
        "nic_gbps": Number(0.001, 1e6, open_low=True, doc="a port's rate, Gb/s per direction"),
        "nvlink_bidir_gbytes_s": Number(0.001, 1e6, open_low=True,
                                        doc="a datasheet figure, GB/s, both directions"),
        "size_gb": Number(0.001, 1e9, open_low=True, doc="a memory size in decimal GB"),
    }, lambda p: _glossary_hit(p["search_term"])),
    "01_scale_up_limits": Spec({
        "model_name": MODEL, "gpu_name": GPU, "recipe": RECIPE,
        "tokens": Number(1e6, 1e15, doc="training tokens"),
        "n_gpus": Int(1, MAX_GPUS), "achieved_tflops": Number(1.0, 1e4),
        "full_recompute": Flag(),
    }, _agree_01),
    "02_gpu_memory_math": Spec({
        "model_name": MODEL, "gpu_name": GPU, "recipe": RECIPE,
        "micro_batch": Int(1, 256), "seq_len": Int(128, 1_048_576),
        "tp": Int(1, 1024), "pp": Int(1, 1024), "dp": Int(1, MAX_GPUS),
        "zero_stage": Int(0, 3), "recompute": RECOMPUTE, "sp": Flag(),
    }, _agree_02),
    "03_data_parallelism": Spec({
        "model_name": MODEL, "gpu_name": GPU, "network": SCALE_OUT,
        "gpus_per_node": Int(among=(1, 2, 4, 8, 16)),
        "n_gpus": Int(among=POW2_GPUS, doc="a power of two from 1 to 65,536"),
        "batch_per_gpu": Int(1, 64),
        "bucket_mib": Choice(lambda: (0.25, 1, 5, 25, 100, 400, 1600, 6400)),
        "achieved_tflops": TFLOPS, "recipe": RECIPE,
    }),
    "04_tensor_parallelism": Spec({
        "model_name": MODEL, "tp": Int(among=(1, 2, 4, 8, 16, 32, 64)),
        "micro_batch": Int(1, 16),
        "seq_len": Int(among=tuple(2**k for k in range(9, 16))),
        "gpus_per_node": Int(among=(2, 4, 8, 16, 72)),
        "intra_link": SCALE_UP, "network": SCALE_OUT, "achieved_tflops": TFLOPS,
    }, _agree_04),
    "05_pipeline_parallelism": Spec({
        "model_name": MODEL, "gpu_name": GPU,
        "schedule": Choice(lambda: ("gpipe", "1f1b", "interleaved", "zb-h1")),
        "p": Int(2, 64), "m": Int(2, 512), "v": Int(1, 8),
        "t_forward_ms": Number(0.001, 1e4), "p2p_ms": Number(0.0, 1e4),
        "micro_batch": Int(1, 64), "seq_len": Int(128, 131_072), "tp": Int(1, 64),
        "recompute": RECOMPUTE, "sp": Flag(), "link_name": ANY_LINK,
        "achieved_tflops": TFLOPS,
    }, _agree_05),
    "06_zero_stages": Spec({
        "model_name": MODEL, "gpu_name": GPU,
        "dp": Int(among=tuple(2**k for k in range(15))),
        "zero_stage": Int(0, 3), "network": SCALE_OUT,
        "gpus_per_node": Int(among=(1, 2, 4, 8, 16)), "micro_batch": Int(1, 16),
        "recompute": RECOMPUTE, "recipe": RECIPE, "achieved_tflops": TFLOPS,
    }, _agree_06),
    "07_all_reduce_cost": Spec({
        "n_gpus": Int(2, MAX_GPUS), "message_bytes": Number(1.0, 1e13),
        "link_name": ANY_LINK, "intra_link_name": ANY_LINK,
        "gpus_per_node": Int(1, 1024), "model_name": MODEL,
        "log_name": Choice(_log_names),
        "weighting": Choice(lambda: ("robust", "relative", "absolute")),
        "tcp_link_name": TCP_PORT,
        "rdma_link_names": ListOf(RDMA_PORT, 1, 8, unique=True),
        "cpu_core_ghz": Number(0.1, 10.0),
    }, _agree_07),
    "08_3d_parallelism_planner": Spec({
        "model_name": MODEL, "gpu_name": GPU, "n_gpus": Int(1, MAX_GPUS),
        "global_batch": Int(1, 10**7), "seq_len": Int(128, 1_048_576),
        "gpus_per_node": Int(1, 1024), "network_name": OPTIONAL_PORT,
        "tokens": Number(1e6, 1e15), "flash_attention": Flag(), "uneven_layers": Flag(),
        "framework": Choice(_frameworks),
        "rack_model_name": MODEL, "rack_gpu_name": GPU, "rack_gpus": Int(1, MAX_GPUS),
        "rack_batch": Int(1, 10**7), "small_model_name": MODEL,
        "small_gpus": Int(1, MAX_GPUS),
        "small_batch": Int(1, 10**7), "tiny_batch_model_name": MODEL,
        "tiny_batch_gpus": Int(1, MAX_GPUS), "tiny_batch": Int(1, 10**7),
        "moe_model_name": Choice(_moe_models, doc="a catalog mixture-of-experts model"),
        "moe_gpu_name": GPU, "moe_gpus": Int(1, MAX_GPUS), "moe_batch": Int(1, 10**7),
        "moe_seq_len": Int(128, 1_048_576), "moe_recipe": RECIPE,
        "moe_framework": Choice(_frameworks, doc="a framework preset with expert parallelism"),
        "long_model_name": MODEL, "long_gpu_name": GPU, "long_gpus": Int(1, MAX_GPUS),
        "long_batch": Int(1, 10**7),
        "long_seq_len": Int(32768, 1_048_576, doc="a long sequence: 32,768 tokens or more"),
    }, _agree_08),
    "09_clos_fabrics": Spec({
        "n_gpus": Int(2, MAX_GPUS), "radix": Int(4, 2048, step=2), "port_gbps": Number(1.0, 1e5),
        "oversubscription": Number(1.0, 64.0), "planes": Int(1, 64),
        "switch_name": Choice(_switches), "nic_gbps": Number(1.0, 1e5),
        "flat_planes": Int(1, 64), "switch_latency_ns": Number(1.0, 1e6),
        "gpus_per_node": Int(1, 72), "n_flows": Int(1, 1024), "n_paths": Int(1, 64),
        "path_slowdown": Number(0.0, 0.99), "skew_us": Number(0.0, 1e6),
        "slow_paths": Int(0, 64), "slow_factor": Number(0.05, 1.0),
        "flowlet_packets": Number(1.0, 1e6),
        "seed": Int(0, 2**31 - 1), "tcp_link_name": TCP_PORT,
        "rdma_link_names": ListOf(RDMA_PORT, 1, 8, unique=True),
        "incast_senders": Int(2, 128), "xoff_kb": Number(1.0, 1e5),
    }, _agree_09),
    "10_optical_modules": Spec({
        "port_gbps": Int(among=(400, 800, 1600)), "lane_gbps": Int(among=(112, 224)),
        "cluster_gpus": Int(2, MAX_GPUS), "switch_name": Choice(_switches),
        "endpoint_leaf_m": Number(0.1, 1e4), "leaf_spine_m": Number(0.1, 1e4),
        "spine_core_m": Number(0.1, 1e5), "technology": Choice(_optics_choices),
        "long_link_m": Number(0.1, 1e5), "gpu_name": GPU, "scaleup_link_name": SCALE_UP,
        "scaleout_link_name": SCALE_OUT, "pue": Number(1.0, 3.0),
        "module_price": Number(0.0, 1e6), "price_per_gpu": Number(0.0, 1e7),
        "price_per_switch": Number(0.0, 1e7), "lifetime_years": Number(0.1, 50.0),
        "price_per_kwh": Number(0.0, 100.0), "price_per_gpu_hour": Number(0.0, 1e4),
    }, _agree_10),
    "11_fault_tolerance": Spec({
        "n_gpus": Int(1, MAX_GPUS), "study_name": Choice(_studies), "model_name": MODEL,
        "tp": Int(1, 64), "pp": Int(1, 256), "recipe": RECIPE,
        "storage_figure": Choice(_figures("GB/s")), "writer_gbps": Number(0.1, 1e5),
        "detect_figure": Choice(_figures("s")), "init_figure": Choice(_figures("s")),
        "replace_h": Number(0.0, 1e4, open_low=True), "repair_h": Number(0.0, 1e4, open_low=True),
        "run_days": Number(1.0, 3650.0), "reps": Int(10, 100_000), "seed": Int(0, 2**31 - 1),
        "jitter": Number(0.0, 1.0),
    }, _agree_11),
    "12_scale_up_vs_scale_out": Spec({
        "model_name": MODEL, "gpu_name": GPU, "n_gpus": Int(8, MAX_GPUS),
        "global_batch": Int(1, 10**7), "tokens": Number(1e6, 1e15),
        "domain_sizes": ListOf(Int(1, 1024), 1, 8, unique=True), "design_domain": Int(1, 1024),
        "network_name": OPTIONAL_PORT,
        "semantics_link_names": ListOf(ANY_LINK, 1, 8, unique=True),
        "message_bytes": Number(1.0, 1e12), "optics_choice": Choice(_optics_choices),
        "planes": Int(1, 16), "storage_gbytes_s": Number(0.0, 1e7),
        "supernode_name": Choice(_supernodes),
        "site_distances_km": ListOf(Number(0.001, 20_000.0), 1, 8),
        "deadline_days": Number(0.01, 3650.0),
        "design_gpu_counts": ListOf(Int(8, MAX_GPUS), 1, 8, unique=True),
        "pue": Number(1.0, 3.0), "price_per_gpu_hour": Number(0.0, 1e4),
        "price_per_gpu": Number(0.0, 1e7), "price_per_switch": Number(0.0, 1e7),
        "module_price": Number(0.0, 1e6), "lifetime_years": Number(0.1, 50.0),
        "price_per_kwh": Number(0.0, 100.0),
    }, _agree_12),
    "15_measure_it_yourself": Spec({
        "n_devices": Int(1, 64), "n_layers": Int(1, 16), "hidden": Int(8, 1024, step=8),
        "n_heads": Int(1, 64), "vocab": Int(16, 65_536), "seq_len": Int(4, 4096),
        "batch": Int(1, 256), "n_experts": Int(1, 64), "dp": Int(1, 64), "tp": Int(1, 64),
        "tp_dp_mesh": Text(max_len=16, empty=False, doc="data × model devices, e.g. 2x4"),
        "loss_steps": Int(1, 20), "run_mpi": Flag(), "mpi_ranks": Int(2, 64),
        "mpi_algorithms": ListOf(Choice(_mpi_algorithms), 1, 6, unique=True),
        "mpi_max_bytes": Int(8, 2**30), "mpi_timeout_s": Number(1.0, 3600.0),
        "log_names": ListOf(Choice(_log_names), 1, 6, unique=True),
        "plan_model": MODEL, "plan_gpu": GPU, "plan_gpus": Int(1, MAX_GPUS),
        "plan_batch": Int(1, 10**7),
    }, _agree_15),
    "13_mixture_of_experts": Spec({
        "model_name": Choice(_moe_models, doc="a catalog mixture-of-experts model"),
        "gpu_name": GPU, "ep": Int(1, 4096, doc="expert-parallel size (divides the experts)"),
        "tokens_per_gpu": Int(256, 1_048_576, doc="tokens per GPU in one micro-batch"),
        "network_name": SCALE_OUT, "domain_sizes": ListOf(Int(1, 1024), 1, 8, unique=True),
        "recipe": Choice(lambda: ("megatron-bf16", "fp8-te", "fp8-deepseek")),
        "skew": Number(0.0, 1.5, doc="the router's skew (0: balanced)"),
        "capacity_factor": Number(1.0, 8.0), "seed": Int(0, 2**31 - 1),
        "mixtral_name": Choice(_moe_models), "mixtral_gpu_name": GPU,
        "mixtral_gpus": Int(1, 1_000_000), "mixtral_batch": Int(1, 10**6),
        "mixtral_pp": Int(1, 64), "mixtral_ep": Int(1, 256),
        "mixtral_seq_len": Int(512, 131_072),
    }, _agree_13),
    "14_long_context_and_precision": Spec({
        "model_name": MODEL, "gpu_name": GPU,
        "seq_len": Int(among=tuple(2**k for k in range(12, 21)),
                       doc="a power of two from 4,096 to 1,048,576"),
        "tp": Int(among=(1, 2, 4, 8, 16)), "cp": Int(among=(1, 2, 4, 8, 16, 32)),
        "variant": Choice(lambda: ("ring", "all-to-all")),
        "recipe": Choice(lambda: ("fp8-te", "fp8-te-fp8-params", "fp8-deepseek"),
                         doc="the FP8 recipe compared with BF16"),
        "recompute": RECOMPUTE, "roofline_gpu_name": GPU,
        "micro_batch": Int(1, 64), "dp": Int(2, MAX_GPUS),
    }, _agree_14),
    "reports/cluster_plan": Spec({
        "model_name": Choice(lambda: [*MODEL.options(), "custom"]),
        "custom_layers": Int(0, 10**6), "custom_hidden": Int(0, 10**6),
        "custom_heads": Int(0, 10**6), "custom_vocab": Int(0, 10**7),
        "seq_len": Int(0, 1_048_576), "tokens": Number(1e6, 1e15, open_low=True),
        "gpu_name": GPU, "n_gpus": Int(1, MAX_GPUS), "gpus_per_node": Int(0, 1024),
        "global_batch": Int(1, 10**7), "flash_attention": Flag(), "uneven_layers": Flag(),
        "recipe": RECIPE, "model_config": Text(max_len=4096),
        "framework": Choice(_frameworks), "network_file": Text(max_len=4096),
        "network_name": OPTIONAL_PORT, "planes": Int(1, 64),
        "oversubscription": Number(1.0, 64.0), "switch_name": Choice(_switches, empty=True),
        "optics_choice": Choice(_optics_choices), "storage_gbytes_s": Number(0.0, 1e7),
        "failure_study": Choice(_studies), "price_per_gpu_hour": Number(0.0, 1e4),
        "price_per_kwh": Number(0.0, 100.0), "module_price": Number(0.0, 1e6),
        "currency": Currency(), "pue": Number(1.0, 3.0), "price_per_gpu": Number(0.0, 1e7),
        "price_per_switch": Number(0.0, 1e7), "lifetime_years": Number(0.1, 50.0),
        "summary_path": Text(max_len=4096),
    }, _agree_cluster_plan),
}


def _glossary_hit(term: str) -> None:
    from . import glossary

    glossary.search(term)  # ValueError with close terms if nothing matches
