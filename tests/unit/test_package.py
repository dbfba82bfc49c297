"""The package exposes its modules: ``import scaleout; scaleout.plan`` works."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest
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


def _defined_names(module) -> set[str]:
    """Public names a module defines at its top level (functions, classes, constants)."""
    names: set[str] = set()
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("package", ["fabric", "reliability", "render"])
def test_a_package_re_exports_every_public_name_of_its_modules(package):
    pkg = importlib.import_module(f"scaleout.{package}")
    modules = [m.name for m in pkgutil.iter_modules(pkg.__path__)]
    assert modules, package
    for name in modules:
        module = importlib.import_module(f"{pkg.__name__}.{name}")
        for public in _defined_names(module):
            assert public in pkg.__all__, f"{package}.{name}.{public} is not in {package}.__all__"
            assert getattr(pkg, public) is getattr(module, public), public
    assert all(hasattr(pkg, n) for n in pkg.__all__)
