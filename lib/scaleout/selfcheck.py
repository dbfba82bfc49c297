"""Every notebook's closing self-checks: quiet when they pass, loud about what failed.

A notebook ends by recomputing what it taught and comparing it with independent
values. Each check is a sentence that says what must hold, mapped to whether it
holds::

    from scaleout import selfcheck
    selfcheck.report({
        "GPT-3's fp16 weights are 350 GB": memory.weights_bytes(175e9) == 350e9,
        "ZeRO-3 divides the model state by N_d": math.isclose(s[3] * dp, s[0]),
    })

When every check holds, one line says so (nothing at all in Voilà, where a lecture
audience has no use for it); when one fails, an ``AssertionError`` lists the sentences
that failed, so papermill, nbval and the reader see which claim broke.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["SelfCheckResult", "in_voila", "report"]


@dataclass(frozen=True)
class SelfCheckResult:
    """How a notebook's self-checks went: how many ran, and the sentences that failed."""

    total: int
    failed: tuple[str, ...]

    @property
    def passed(self) -> int:
        """Number of checks that held."""
        return self.total - len(self.failed)

    @property
    def ok(self) -> bool:
        """True when every check held."""
        return not self.failed

    def as_dict(self) -> dict[str, object]:
        """``{"total", "passed", "failed"}`` for a JSON summary."""
        return {"total": self.total, "passed": self.passed, "failed": list(self.failed)}

    def _ipython_display_(self) -> None:
        """Nothing: a notebook's closing ``selfcheck.report(...)`` adds no ``SelfCheckResult(...)``
        line under the one :func:`report` printed (or, in Voila, under nothing)."""


def in_voila() -> bool:
    """True inside a kernel started by Voilà (it sets ``VOILA_KERNEL_ID``)."""
    return "VOILA_KERNEL_ID" in os.environ


def _truth(sentence: str, value: object) -> bool:
    """A check's value as a bool; anything but a bool (a list, an array) is a defect."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ValueError(f"self-check {sentence!r} must be True or False, got "
                     f"{type(value).__name__} {value!r:.80}: compare it to something "
                     "(a non-empty list or an array would pass whatever it holds)")


def report(checks: Mapping[str, object], *, quiet: bool | None = None) -> SelfCheckResult:
    """Evaluate ``{sentence: bool}``; say so in one line when all hold, raise when not.

    Parameters
    ----------
    checks
        One entry per claim of the notebook: a sentence saying what must hold, and
        whether it does (``True``/``False``, numpy's bool too).
    quiet
        Print nothing when every check holds. ``None`` (the default) is quiet in Voilà
        and prints one line elsewhere.

    Returns
    -------
    SelfCheckResult
        When every check holds.

    Raises
    ------
    AssertionError
        Listing every sentence that failed, when at least one did.
    ValueError
        When ``checks`` is empty, a sentence is blank, or a value is not a bool.
    """
    if not isinstance(checks, Mapping) or not checks:
        raise ValueError("checks must be a non-empty mapping {sentence: True/False}, got "
                         f"{checks!r:.80}")
    failed = []
    for sentence, value in checks.items():
        if not isinstance(sentence, str) or not sentence.strip():
            raise ValueError(f"every self-check needs a sentence saying what it checks, "
                             f"got {sentence!r}")
        if not _truth(sentence, value):
            failed.append(sentence)
    result = SelfCheckResult(total=len(checks), failed=tuple(failed))
    if failed:
        lines = "\n".join(f"  ✗ {s}" for s in failed)
        raise AssertionError(f"{len(failed)} of {result.total} self-checks failed:\n{lines}")
    if not (in_voila() if quiet is None else quiet):
        print(f"✓ all {result.total} self-checks passed")
    return result
