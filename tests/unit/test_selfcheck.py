"""scaleout.selfcheck: one quiet line when a notebook's claims hold, the failed ones when not."""

from __future__ import annotations

import numpy as np
import pytest
from scaleout import selfcheck


def test_all_passing_prints_one_line(capsys, monkeypatch):
    monkeypatch.delenv("VOILA_KERNEL_ID", raising=False)
    result = selfcheck.report({"one plus one is two": 1 + 1 == 2,
                               "numpy's bools count": np.all(np.arange(3) >= 0)})
    out = capsys.readouterr().out
    assert out == "✓ all 2 self-checks passed\n"
    assert result.ok and result.total == 2 and result.passed == 2 and result.failed == ()
    assert result.as_dict() == {"total": 2, "passed": 2, "failed": []}


def test_quiet_in_voila_and_on_request(capsys, monkeypatch):
    monkeypatch.setenv("VOILA_KERNEL_ID", "abc")
    assert selfcheck.in_voila()
    selfcheck.report({"true is true": True})
    selfcheck.report({"true is true": True}, quiet=False)
    monkeypatch.delenv("VOILA_KERNEL_ID")
    selfcheck.report({"true is true": True}, quiet=True)
    assert capsys.readouterr().out == "✓ all 1 self-checks passed\n"


def test_a_failure_names_every_failed_sentence(capsys):
    checks = {"the first claim holds": True, "the second claim holds": False,
              "the third claim holds": np.bool_(False)}
    with pytest.raises(AssertionError) as info:
        selfcheck.report(checks, quiet=True)
    message = str(info.value)
    assert message.startswith("2 of 3 self-checks failed:")
    assert "✗ the second claim holds" in message and "✗ the third claim holds" in message
    assert "first" not in message
    assert capsys.readouterr().out == ""  # no "passed" line above a failure


@pytest.mark.parametrize("value", [[1], [], np.array([True, True]), None, 1, "yes"])
def test_a_check_that_is_not_a_bool_is_a_defect(value):
    with pytest.raises(ValueError, match="self-check 'x' must be True or False"):
        selfcheck.report({"x": value}, quiet=True)


@pytest.mark.parametrize("checks", [{}, [("x", True)], {"": True}, {"  ": True}, {3: True}])
def test_checks_must_be_sentences(checks):
    with pytest.raises(ValueError):
        selfcheck.report(checks, quiet=True)


def test_the_result_of_a_closing_cell_displays_nothing(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    formatter = InteractiveShell.instance().display_formatter
    result = selfcheck.report({"true is true": True}, quiet=True)
    # what a cell ending in selfcheck.report(...) shows: nothing (its own display hook runs)
    assert formatter.format(result) == ({}, {})
    assert capsys.readouterr().out == ""
