"""Random parameter values inside a notebook's rules (scaleout.parameters), for the tests.

Values are drawn from a seeded ``numpy`` generator so the notebook runs they drive are the
same on every machine: numbers log-uniformly across their range (and sometimes at an end),
whole numbers likewise, names uniformly from their options.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scaleout import parameters as P


def draw(rule: P.Rule, rng: np.random.Generator) -> Any:
    """One value that ``rule`` accepts."""
    if isinstance(rule, P.Flag):
        return bool(rng.integers(2))
    if isinstance(rule, P.Int):
        if rule.among:
            return int(rng.choice(rule.among))
        x = int(_log_uniform(max(rule.low, 0), rule.high, rng, whole=True))
        return max(rule.low, x - x % rule.step)
    if isinstance(rule, P.Number):
        x = _log_uniform(rule.low, rule.high, rng)
        return float(x if not (rule.open_low and x == rule.low) else rule.high)
    if isinstance(rule, P.Choice | P.LinkName | P.CatalogName):
        options = list(rule.options()) + ([""] if getattr(rule, "empty", False) else [])
        return options[int(rng.integers(len(options)))]
    if isinstance(rule, P.Currency):
        return ["USD", "EUR", "KRW", "JPY", "GBP"][int(rng.integers(5))]
    if isinstance(rule, P.Text):
        letters = "abcdefghijklmnopqrstuvwxyz 버블\"'\\{}"
        n = int(rng.integers(0 if rule.empty else 1, min(rule.max_len, 24) + 1))
        return "".join(letters[int(i)] for i in rng.integers(len(letters), size=n))
    if isinstance(rule, P.ListOf):
        n = int(rng.integers(rule.min_len, rule.max_len + 1))
        out: list[Any] = []
        for _ in range(50 * n):
            if len(out) == n:
                break
            v = draw(rule.item, rng)
            if not (rule.unique and v in out):
                out.append(v)
        return out
    raise TypeError(f"no generator for {type(rule).__name__}")


def _log_uniform(low: float, high: float, rng: np.random.Generator, whole: bool = False) -> float:
    r = rng.random()
    if r < 0.1:
        x = low
    elif r < 0.2:
        x = high
    elif low <= 0:
        x = rng.uniform(low, high) if r < 0.5 else math.exp(rng.uniform(0, math.log(high + 1))) - 1
    else:
        x = math.exp(rng.uniform(math.log(low), math.log(high)))
    x = min(max(x, low), high)
    return float(round(x)) if whole else float(x)


def draw_set(notebook: str, rng: np.random.Generator) -> dict[str, Any]:
    """A whole parameter set for ``notebook``: every parameter drawn from its rule."""
    return {name: draw(rule, rng) for name, rule in P.spec(notebook).rules.items()}


def accepted_sets(notebook: str, seed: int, n: int, tries: int = 400) -> list[dict[str, Any]]:
    """Up to ``n`` drawn sets that the notebook's whole check accepts (rules and agreement)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(tries):
        values = draw_set(notebook, rng)
        try:
            P.check(notebook, values)
        except ValueError:
            continue
        out.append(values)
        if len(out) == n:
            break
    return out


def varied_sets(notebook: str, defaults: dict[str, Any], seed: int, n: int,
                tries: int = 400) -> list[dict[str, Any]]:
    """Up to ``n`` accepted sets that each change one to three parameters of ``defaults``.

    Only the changed parameters are returned (what a user passes with ``-p``).
    """
    rng = np.random.default_rng(seed)
    rules = P.spec(notebook).rules
    names = list(rules)
    out: list[dict[str, Any]] = []
    for _ in range(tries):
        k = int(rng.integers(1, min(3, len(names)) + 1))
        chosen = [names[int(i)] for i in rng.choice(len(names), size=k, replace=False)]
        changes = {name: draw(rules[name], rng) for name in chosen}
        try:
            P.check(notebook, {**defaults, **changes})
        except ValueError:
            continue
        out.append(changes)
        if len(out) == n:
            break
    return out
