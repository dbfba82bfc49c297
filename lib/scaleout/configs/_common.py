"""What the importers and exporters share: findings, the imported run, files read as data.

Nothing here evaluates a configuration: JSON is read with :mod:`json`, TOML with
:mod:`tomllib`, argument files with :mod:`shlex`; a value is only ever compared,
converted to a number or looked up.
"""

from __future__ import annotations

import functools
import json
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalog import DATA_DIR, ModelSpec
from ..checks import close_matches
from ..plan import Plan, PlanResult
from ..units import GIB

__all__ = [
    "ASSUMED",
    "FRAMEWORKS",
    "IGNORED",
    "MAPPING_VERSION",
    "NOT_MODELLED",
    "UNKNOWN",
    "Finding",
    "ImportedRun",
    "UnsupportedPlanError",
    "framework_keys",
    "header_lines",
    "read_text",
]

#: Version of the mapping between the workbook's :class:`~scaleout.plan.Plan` and the
#: frameworks' settings; written into every exported file's header. Raise it when a
#: mapping changes (a flag renamed, a setting newly represented).
MAPPING_VERSION = "scaleout.configs mapping 1 (2026-08)"

#: The frameworks, the versions their settings were read from, and the data file that
#: lists every flag or key the importers and exporters use (``data/frameworks/``).
FRAMEWORKS = ("megatron", "torchtitan", "deepspeed")

ASSUMED = "assumed"
NOT_MODELLED = "recognised but not yet modelled"
IGNORED = "ignored (no effect on memory or time)"
UNKNOWN = "unrecognised"


@dataclass(frozen=True)
class Finding:
    """One setting an importer could not take over as it stands.

    Attributes
    ----------
    key
        The config key or flag (``"num_local_experts"``, ``"--context-parallel-size"``).
    value
        Its value as read (or as assumed).
    status
        :data:`ASSUMED` (the file does not say; the value was taken as shown),
        :data:`NOT_MODELLED` (read, but the planner has no mechanism for it yet),
        :data:`IGNORED` (read; it changes neither memory nor time) or
        :data:`UNKNOWN` (not a key the importer knows).
    note
        What the value means for the prediction, in one sentence.
    blocks_planning
        True when evaluating the plan (or planning the model) without the setting
        would answer a different question; the importer then refuses to plan.
    """

    key: str
    value: Any
    status: str
    note: str = ""
    blocks_planning: bool = False

    def line(self) -> str:
        """``key = value: status; note`` in one line."""
        text = f"{self.key} = {self.value!r}: {self.status}"
        if self.blocks_planning:
            text += " (blocks planning)"
        return text + (f"; {self.note}" if self.note else "")


class UnsupportedPlanError(ValueError):
    """A plan uses a setting the target framework cannot run; the message names both."""


@dataclass(frozen=True)
class ImportedRun:
    """A framework's run settings read into the workbook's terms.

    Attributes
    ----------
    framework
        ``"megatron"``, ``"torchtitan"`` or ``"deepspeed"``.
    source
        The file (or ``"<text>"``) the settings came from.
    settings
        Every setting read, by the workbook's names, including the ones the
        :class:`~scaleout.plan.Plan` has no field for yet (``cp``, ``ep``, ...).
    plan
        The :class:`~scaleout.plan.Plan`, or None when a finding blocks planning
        (:meth:`require_plan` then says which).
    findings
        What could not be represented as it stands (see :class:`Finding`).
    recipe
        The precision recipe of :data:`scaleout.memory.RECIPES` the run uses.
    uneven_layers
        The framework splits the layers unevenly over the stages (evaluate with
        ``uneven_layers=True``).
    model
        A :class:`~scaleout.catalog.ModelSpec` when the settings describe the model
        (Megatron-LM's ``--num-layers``, ``--hidden-size``, ...), else None.
    """

    framework: str
    source: str
    settings: dict[str, Any]
    plan: Plan | None
    findings: tuple[Finding, ...] = ()
    recipe: str = "mixed-adam"
    uneven_layers: bool = False
    model: Any = None

    @property
    def blocking(self) -> tuple[Finding, ...]:
        """The findings that stop the run from being evaluated."""
        return tuple(f for f in self.findings if f.blocks_planning)

    def require_plan(self) -> Plan:
        """The plan, or a ``ValueError`` naming every setting that blocks it."""
        if self.plan is None:
            names = "; ".join(f.line() for f in self.blocking)
            raise ValueError(f"{self.source}: the run cannot be evaluated yet: {names}")
        return self.plan

    def report(self) -> str:
        """The findings as lines (empty when everything was represented)."""
        return "\n".join(f.line() for f in self.findings)


# --------------------------------------------------------------------------- files
def read_text(source: str | Path | Mapping | list, what: str) -> tuple[str, str | None]:
    """``(text, path)`` of a file path or pasted text; a missing file names itself.

    A :class:`str` that names an existing file is read; any other string is taken as
    the text itself (pasted), with ``path`` None.
    """
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                    and len(source) < 4096 and Path(source).suffix
                                    and not source.lstrip().startswith(("{", "-", "["))):
        path = Path(source)
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except FileNotFoundError:
            raise ValueError(f"{path}: {what} file not found") from None
        except UnicodeDecodeError:
            raise ValueError(f"{path}: not a text file (expected {what})") from None
    if not isinstance(source, str):
        raise ValueError(f"{what} must be a file path or its text, got {type(source).__name__}")
    return source, None


def load_json(source: str | Path | Mapping, what: str) -> tuple[dict[str, Any], str]:
    """A JSON object from a path, text or mapping, and a label naming where it came from.

    Full-line comments (``//`` or ``#``, as DeepSpeed's hjson reader allows and the
    exporters write) are skipped; the rest must be strict JSON.
    """
    if isinstance(source, Mapping):
        return dict(source), "<dict>"
    text, path = read_text(source, what)
    label = path or "<text>"
    body = "\n".join("" if line.lstrip().startswith(("//", "#")) else line
                     for line in text.splitlines())
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{label}: not valid JSON ({exc.msg} at line {exc.lineno}, column "
                         f"{exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{label}: a {what} must be a JSON object {{...}}, got "
                         f"{type(data).__name__}")
    return data, label


def load_toml(source: str | Path | Mapping, what: str) -> tuple[dict[str, Any], str]:
    """A TOML document from a path, text or mapping, and a label naming where it came from."""
    if isinstance(source, Mapping):
        return dict(source), "<dict>"
    text, path = read_text(source, what)
    label = path or "<text>"
    try:
        return tomllib.loads(text), label
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{label}: not valid TOML ({exc})") from None


def whole(label: str, key: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, or a ``ValueError`` naming file and key."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ValueError(f"{label}: {key} must be a whole number >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{label}: {key} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def flag(label: str, key: str, value) -> bool:
    """``value`` as a bool, or a ``ValueError`` naming file and key."""
    if not isinstance(value, bool):
        raise ValueError(f"{label}: {key} must be true or false, got {value!r}")
    return value


def choice(label: str, key: str, value, allowed) -> Any:
    """``value`` if it is one of ``allowed``, else a ``ValueError`` with close matches."""
    allowed = list(allowed)
    if value in allowed:
        return value
    near = close_matches(str(value), [str(a) for a in allowed])
    hint = f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""
    raise ValueError(f"{label}: {key} must be one of {', '.join(map(repr, allowed))}; got "
                     f"{value!r}{hint}")


# --------------------------------------------------------------------------- flag lists
@functools.cache
def framework_keys(framework: str) -> dict[str, Any]:
    """``data/frameworks/<framework>.toml``: the source commit and every flag or key used.

    Returns the parsed file: ``source``, ``commit``, ``used`` (name -> where in the
    framework's source it is defined) and, where recorded, ``known`` (every name the
    framework accepts, for telling a typo from a setting the workbook does not read).
    """
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {', '.join(map(repr, FRAMEWORKS))}; got "
                         f"{framework!r}")
    path = DATA_DIR / "frameworks" / f"{framework}.toml"
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    for key in ("source", "commit", "used"):
        if key not in raw:
            raise ValueError(f"{path.name}: missing field {key!r}")
    return raw


def reject_unknown(framework: str, label: str, names: Iterable[str], what: str) -> None:
    """Raise a ValueError for the first of ``names`` that ``framework`` does not accept.

    ``known`` in ``data/frameworks/<framework>.toml`` lists every name the framework accepts;
    the message names the file (``label``), the name, ``what`` it is not (e.g. "a
    torchtitan setting"), and close matches or the file to look in.
    """
    known = set(framework_keys(framework)["known"])
    for name in names:
        if name not in known:
            near = close_matches(name, known)
            hint = (f"did you mean {' or '.join(near)}?" if near
                    else f"see data/frameworks/{framework}.toml")
            raise ValueError(f"{label}: {name} is not {what}; {hint}")


def used(framework: str, name: str) -> str:
    """``name`` if ``data/frameworks/<framework>.toml`` lists it as used; else a ``KeyError``.

    Every flag or key the importers and exporters write or read goes through here, so a
    name that is not in the recorded list (read from the framework's source) fails.
    """
    if name not in framework_keys(framework)["used"]:
        raise KeyError(f"{name!r} is not in data/frameworks/{framework}.toml [used]")
    return name


# --------------------------------------------------------------------------- headers
def header_lines(framework: str, plan: Plan, result: PlanResult | None,
                 notes: list[str] | None = None) -> list[str]:
    """The comment lines an exported file starts with (without comment markers).

    They say what the workbook predicted for the plan (memory per GPU, iteration time,
    MFU), the mapping version and the framework source it was read from.
    """
    keys = framework_keys(framework)
    lines = [f"Written by the Scale-Out Workbook ({MAPPING_VERSION}); flag names read from "
             f"{keys['source']} at {keys['commit'][:12]}.",
             f"Plan: {plan.label}; {plan.n_gpus:,} GPUs = TP {plan.tp} x PP {plan.pp} x "
             f"DP {plan.dp}; global batch {plan.global_batch} sequences of "
             f"{plan.seq_len if plan.seq_len is not None else 'the model default'} tokens."]
    if result is not None:
        lines.append(
            f"Predicted for {result.model} on {result.gpu}: {result.memory_bytes / GIB:.1f} of "
            f"{result.capacity_bytes / GIB:.0f} GiB per GPU (busiest stage), "
            f"{result.step_s:.3g} s per iteration, MFU {100 * result.mfu:.1f}%, "
            f"{result.tokens_per_s:,.0f} tokens/s.")
    else:
        lines.append("No prediction attached (pass result=plan.evaluate(...)).")
    lines += notes or []
    return lines


@dataclass
class _Collector:
    """Findings gathered while reading one file."""

    label: str
    items: list[Finding] = field(default_factory=list)

    def add(self, key: str, value, status: str, note: str = "", blocks: bool = False) -> None:
        self.items.append(Finding(key, value, status, note, blocks))

    @property
    def blocking(self) -> bool:
        return any(f.blocks_planning for f in self.items)

    def expert_parallel(self, key: str, ep: int, model: ModelSpec | None) -> int:
        """The EP degree the planner uses: ``ep``, or 1 (recorded as ignored under ``key``)
        when the model is dense or unknown, on which expert parallelism has no effect."""
        if ep > 1 and not (model is not None and model.is_moe):
            self.add(key, ep, IGNORED, "expert parallelism has no effect on a dense model"
                     if model is not None else "expert parallelism; the model is not known "
                     "here (give model=) and is taken as dense")
            return 1
        return ep

    def expert_tensor_parallel(self, key: str, etp: int, moe_model: bool) -> None:
        """Record tensor parallelism of the experts (degree ``etp``) as not modelled; it
        blocks planning a mixture-of-experts model."""
        self.add(key, etp, NOT_MODELLED, "tensor parallelism of the experts; the planner "
                 "keeps each expert whole on its GPU", blocks=moe_model)

    def plan(self, **fields: Any) -> Plan | None:
        """The :class:`~scaleout.plan.Plan` of the settings read, or None if a finding blocks it.

        A plan the library refuses raises its ValueError with the file's label in front.
        """
        if self.blocking:
            return None
        try:
            return Plan(**fields)
        except ValueError as exc:
            raise ValueError(f"{self.label}: {exc}") from None
