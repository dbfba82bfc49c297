"""The package exposes its modules: ``import scaleout; scaleout.plan`` works."""

from __future__ import annotations

import subprocess
import sys

import scaleout


def test_all_lists_every_module():
    assert scaleout.__all__ == list(scaleout.MODULES)
    assert {"plan", "layout", "fabric", "reliability", "parameters"} <= set(scaleout.MODULES)


def test_modules_are_reachable_as_attributes_and_imported_lazily():
    code = ("import sys, scaleout; assert 'scaleout.plan' not in sys.modules; "
            "scaleout.plan.search; assert 'scaleout.plan' in sys.modules; "
            "print(scaleout.fabric.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "scaleout.fabric"


def test_an_unknown_attribute_is_an_attribute_error():
    try:
        scaleout.no_such_module  # noqa: B018
    except AttributeError as exc:
        assert "no_such_module" in str(exc)
    else:
        raise AssertionError("expected an AttributeError")
