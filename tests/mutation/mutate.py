"""Mutation testing of the library's core modules with mutmut: `./workbook mutate [MODULE ...]`.

Each module is mutated in a scratch copy of the project (``.mutation/MODULE/``, ignored by git):
the library as ``src/scaleout`` (where mutmut looks for importable sources), ``data/``, and the
unit tests. ``targets.toml`` beside this file says which test files guard which module; mutmut
runs, for each mutant, only the tests among them that call the mutated function, so one module
takes minutes on two cores. The runner prints killed / survived per module and writes every
survivor's diff to ``.mutation/MODULE/survivors.diff``; ``tests/MUTATION.md`` explains the
survivors that no test can kill (equivalent mutants).

A run's verdicts are also written to ``verdicts/MODULE.json`` beside this file (committed;
``--save`` writes them for a stopped run), so that ``--resume`` in a new checkout, where
``.mutation/`` does not exist, carries on where the last run stopped (:func:`restore_verdicts`).

Not part of ``./workbook test``: it re-runs the unit tests thousands of times.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCRATCH = ROOT / ".mutation"
CORE = ("memory", "compute", "collectives", "pipeline", "zero", "fabric", "optics", "reliability")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")

PYPROJECT = """\
[tool.pytest.ini_options]
addopts = "-ra --strict-markers -p no:cacheprovider"
markers = [
    "notebook: executes notebooks (papermill, nbval)",
    "browser: drives headless Chromium against a running Voila server",
]
filterwarnings = ["ignore::DeprecationWarning:jupyter_client.*", "ignore::DeprecationWarning:zmq.*"]

[tool.mutmut]
source_paths = ["src"]
only_mutate = {only_mutate}
also_copy = ["data"]
pytest_add_cli_args_test_selection = {tests}
pytest_add_cli_args = {deselect}
do_not_mutate_patterns = {patterns}
timeout_constant = {timeout}
"""

#: Lines left unmutated unless ``--messages``: input checks and error messages (a ``check_*``
#: call, a ``raise``, a line that is only a string, as a message's continuation is). Their
#: mutants change which words an error message holds; the bad-input tests
#: (test_bad_input.py, test_hostile_input.py) guard those, and the mutation runs measure formulas.
MESSAGE_LINES = (r"\bcheck_\w+\(", r"raise \w+\(", r'^\s*f?"[^"]*"\s*\)*,?\s*$')


#: Appended to the scratch copy's ``tests/conftest.py``. mutmut runs each mutant's tests in a
#: process forked from one that has already run the clean tests, so a ``functools`` cache
#: filled there (``plan.network.linear_cost``, the planner's validation table) would answer
#: for the mutated code: its mutants would survive without ever running. And mutmut learns
#: which tests reach which function by recording the calls while the clean tests run: under
#: a cache only the first test to call ``published.cases()`` or ``cross_validation()`` reaches
#: the functions beneath, so their mutants were run against that one test alone. The caches
#: are therefore emptied at the start of every session, and before every test of the clean
#: run; a mutant's own run keeps them between its tests (the mutant does not change within
#: it), so it pays for the cross-validation once, not once per test. Slow tests run after the
#: others (see ``SLOW_FIXTURES``).
FRESH_CACHES = """

def _empty_scaleout_caches():
    \"\"\"Empty every functools cache of the library (added by tests/mutation/mutate.py).\"\"\"
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("scaleout") and module is not None:
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def pytest_sessionstart(session):
    _empty_scaleout_caches()


def _running_a_mutant():
    import os

    return "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", "")


def pytest_runtest_setup(item):
    if not _running_a_mutant():  # the clean run that records which test calls what
        _empty_scaleout_caches()


#: Fixtures whose set-up takes seconds (the planner's cross-validation, ~20 s under mutmut).
SLOW_FIXTURES = {"cv"}


def pytest_collection_modifyitems(session, config, items):
    \"\"\"Slow tests last (added by tests/mutation/mutate.py): those behind a slow fixture, then
    the test files by the duration mutmut recorded for their tests. mutmut runs a mutant's
    tests with -x, so a mutant that a quick test kills never pays for a slow one. The order
    changes which test is first to fail, never whether one fails.\"\"\"
    import json

    try:
        with open("mutmut-stats.json", encoding="utf-8") as f:
            seconds = json.load(f)["duration_by_test"]
    except (OSError, ValueError, KeyError):
        seconds = {}
    module_s = {}
    for item in items:  # a module's tests stay together, so its fixtures are set up once
        module = item.nodeid.split("::")[0]
        module_s[module] = module_s.get(module, 0.0) + seconds.get(item.nodeid, 0.0)
    items.sort(key=lambda item: (bool(SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))),
                                 module_s[item.nodeid.split("::")[0]]))
"""


def load_targets() -> dict[str, dict[str, list[str]]]:
    """The module -> (source files, test files, tests deselected) map of ``targets.toml``
    (without its ``[unmapped]`` table, :func:`unmapped_on_purpose`)."""
    table = tomllib.loads((HERE / "targets.toml").read_text(encoding="utf-8"))
    table.pop("unmapped", None)
    return table


def unmapped_on_purpose() -> dict[str, str]:
    """Test files left out of every map on purpose, with the reason ``targets.toml`` gives."""
    table = tomllib.loads((HERE / "targets.toml").read_text(encoding="utf-8"))
    return dict(table.get("unmapped", {}))


def importers(module: str) -> set[str]:
    """Unit-test files that import ``scaleout.<module>`` (by their import statements)."""
    found = set()
    for path in sorted((ROOT / "tests" / "unit").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: set[str] = set()
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scaleout"):
                parts = (node.module or "").split(".")
                names = {parts[1]} if len(parts) > 1 else {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                names = {a.name.split(".")[1] for a in node.names if a.name.startswith("scaleout.")}
            if module in names:
                found.add(path.name)
    return found


#: mutmut's exit codes that are a verdict (mutmut/stats.py): killed, survived, no tests,
#: skipped, timeout, caught by a type check, segfault. Anything else (2: "check was interrupted
#: by user", a worker stopped by a signal) is run again by ``--resume``.
VERDICTS = {0, 1, 3, 5, 33, 34, 36, 37, -24, 24, 152, 255, -11, -9}


def _clear_verdicts(work: Path, stale: Callable[[int | None], bool]) -> int:
    """Set to None (to be run again) every verdict of ``work``'s mutants that ``stale``
    picks; returns how many."""
    count = 0
    for meta in (work / "mutants").rglob("*.meta"):
        data = json.loads(meta.read_text(encoding="utf-8"))
        codes = data.get("exit_code_by_key", {})
        keys = [k for k, code in codes.items() if stale(code)]
        for key in keys:
            codes[key] = None
        if keys:
            meta.write_text(json.dumps(data, indent=4), encoding="utf-8")
            count += len(keys)
    return count


def forget_interrupted(work: Path) -> int:
    """Clear the results of mutants a stopped run left without a verdict, so that a resumed
    run tests them; returns how many."""
    return _clear_verdicts(work, lambda code: code is not None and code not in VERDICTS)


def forget_survivors_on_new_tests(work: Path, before: str) -> int:
    """When a resumed scratch copy's tests differ from those its verdicts were reached with
    (``before``, their :func:`tests_fingerprint`), clear its survived and no-tests verdicts
    and mutmut's record of which tests reach which function (``mutmut-stats.json``, collected
    again on the next run): otherwise the old survivors would stand, never run against the
    new tests. Returns the verdicts cleared (0 when the tests are unchanged)."""
    if before == tests_fingerprint(work):
        return 0
    count = _clear_verdicts(work, lambda code: code in KEPT_WHILE_TESTS_UNCHANGED)
    (work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    return count


def source_fingerprint(work: Path) -> str:
    """A hash of the library a scratch copy mutates (every file under ``src/``)."""
    digest = hashlib.sha256()
    for path in sorted((work / "src").rglob("*.py")):
        digest.update(str(path.relative_to(work)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def forget_test_map_on_new_source(work: Path, before: str) -> bool:
    """When a resumed scratch copy's library changed (``before``: its
    :func:`source_fingerprint`), drop mutmut's record of which tests reach which function:
    a function added since has no entry there, and mutmut would call its mutants "no tests".
    Verdicts stand (mutmut re-tests a changed function by its hash). Returns whether it
    dropped the record."""
    if before == source_fingerprint(work):
        return False
    (work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    return True


#: Verdicts kept in ``verdicts/MODULE.json`` (committed) so a run too long for one sitting goes
#: on in a new checkout: killed, a segfault, caught by a type check (they stand while the
#: function's code is unchanged), survived and no tests (they stand while the tests are also
#: unchanged). Timeouts are not kept: under load they may be slow rather than caught.
KEPT = {1, 3, -11, -9, 37}
KEPT_WHILE_TESTS_UNCHANGED = {0, 5, 33}
VERDICT_DIR = HERE / "verdicts"


def tests_fingerprint(work: Path) -> str:
    """A hash of the test files and options a scratch copy runs (its ``pyproject.toml``'s
    mutmut table and the content of every file under ``tests/``)."""
    digest = hashlib.sha256((work / "pyproject.toml").read_bytes())
    for path in sorted((work / "tests").rglob("*.py")):
        digest.update(str(path.relative_to(work)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def save_verdicts(module: str, work: Path) -> Path | None:
    """Write the verdicts of ``work``'s mutants (see :data:`KEPT`) to ``verdicts/MODULE.json``:
    per mutated file, per function its code hash and the verdict of each mutant number."""
    metas = sorted((work / "mutants").rglob("*.meta"))
    if not metas:
        return None
    files, counts = {}, {}
    for meta in metas:
        data = json.loads(meta.read_text(encoding="utf-8"))
        funcs: dict[str, list] = {}
        for func, digest in sorted(data.get("hash_by_function_name", {}).items()):
            funcs[func] = [digest, {}]
        prefix = ""
        for key, code in data.get("exit_code_by_key", {}).items():
            prefix, name = key.rsplit(".", 1)
            if code not in KEPT | KEPT_WHILE_TESTS_UNCHANGED:
                continue
            func, number = name.rsplit("__mutmut_", 1)
            if func in funcs:
                funcs[func][1][number] = code
                counts[code] = counts.get(code, 0) + 1
        if prefix:
            files[str(meta.relative_to(work / "mutants"))] = {"module": prefix, "functions": funcs}
    VERDICT_DIR.mkdir(exist_ok=True)
    out = VERDICT_DIR / f"{module}.json"
    record = {"module": module, "tests": tests_fingerprint(work),
              "saved": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "verdicts": {"killed": counts.get(1, 0) + counts.get(3, 0),
                           "survived": counts.get(0, 0),
                           "no_tests": counts.get(5, 0) + counts.get(33, 0),
                           "other": sum(counts.get(c, 0) for c in (-11, -9, 37))},
              "files": files}
    out.write_text(json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n",
                   encoding="utf-8")
    return out


def restore_verdicts(module: str, work: Path) -> int:
    """Seed a fresh scratch copy with ``verdicts/MODULE.json``: mutmut then tests only the
    mutants without a kept verdict (and, as always, those of functions whose code changed,
    by their hash). Survivors are run again when the tests changed. Returns the verdicts
    restored."""
    saved = VERDICT_DIR / f"{module}.json"
    if not saved.exists():
        return 0
    record = json.loads(saved.read_text(encoding="utf-8"))
    keep = KEPT | (KEPT_WHILE_TESTS_UNCHANGED if record["tests"] == tests_fingerprint(work)
                   else set())
    restored = 0
    for rel, entry in record["files"].items():
        prefix, funcs = entry["module"], entry["functions"]
        codes = {f"{prefix}.{func}__mutmut_{n}": code for func, (_, verdicts) in funcs.items()
                 for n, code in verdicts.items() if code in keep}
        meta = work / "mutants" / rel
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({
            "exit_code_by_key": codes,
            "hash_by_function_name": {func: digest for func, (digest, _) in funcs.items()},
            "type_check_error_by_key": {}, "durations_by_key": {},
            "estimated_durations_by_key": {}}, indent=4), encoding="utf-8")
        restored += len(codes)
    return restored


def rebuild_on_new_map(module: str, work: Path, pyproject: str) -> bool:
    """Before a resumed run whose test map (the ``pyproject.toml`` it writes) differs from the
    scratch copy's: save the copy's verdicts and remove it, so the run is seeded from them.

    mutmut itself, seeing its test selection changed, forgets every verdict of the copy and
    runs every mutant again (hours for the planner); :func:`restore_verdicts` keeps the kills
    and re-runs only the survivors (the tests changed) and the mutants of changed functions.
    Returns whether the copy was rebuilt."""
    old = work / "pyproject.toml"
    if not old.exists() or old.read_text(encoding="utf-8") == pyproject:
        return False
    save_verdicts(module, work)
    shutil.rmtree(work)
    return True


def prepare(module: str, target: dict[str, list[str]], messages: bool,
            resume: bool = False) -> tuple[Path, list[str]]:
    """A scratch project for ``module``; returns its folder and the test files used.

    Fresh unless ``resume``: then the library, data and tests are copied over the last run's
    scratch copy and mutmut's results there are kept (mutmut tests again only the mutants
    without a verdict and those of functions whose code changed since)."""
    work = SCRATCH / module
    tests = [f"tests/unit/{name}" for name in target["tests"]
             if (ROOT / "tests" / "unit" / name).exists()]
    only = [f"src/{pattern}" for pattern in target["source"]]
    deselect = [arg for test in target.get("deselect", [])
                for arg in ("--deselect", f"tests/unit/{test}")]
    pyproject = PYPROJECT.format(
        only_mutate=json.dumps(only), tests=json.dumps(tests), deselect=json.dumps(deselect),
        patterns=json.dumps([] if messages else list(MESSAGE_LINES)),
        timeout=float(target.get("timeout_constant_s", 1.0)))
    if work.exists() and not resume:
        shutil.rmtree(work)
    if resume and work.exists():
        forget_interrupted(work)
        if rebuild_on_new_map(module, work, pyproject):
            print(f"    the map of {module} changed: the scratch copy's verdicts saved, "
                  "and a new copy seeded from them", flush=True)
    seed = resume and not any((work / "mutants").rglob("*.meta"))
    carry_on = resume and not seed and (work / "pyproject.toml").exists()
    before = tests_fingerprint(work) if carry_on else None
    before_src = source_fingerprint(work) if carry_on else None
    for part in ("src", "data", "tests"):
        if (work / part).exists():
            shutil.rmtree(work / part)
    (work / "tests").mkdir(parents=True)
    shutil.copytree(ROOT / "lib" / "scaleout", work / "src" / "scaleout", ignore=IGNORE)
    shutil.copytree(ROOT / "data", work / "data", ignore=IGNORE)
    shutil.copytree(ROOT / "tests" / "unit", work / "tests" / "unit", ignore=IGNORE)
    shutil.copy2(ROOT / "tests" / "conftest.py", work / "tests" / "conftest.py")
    with (work / "tests" / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(FRESH_CACHES)
    (work / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    if before is not None:
        cleared = forget_survivors_on_new_tests(work, before)
        if cleared:
            print(f"    the tests changed: {cleared} survivors run again against them",
                  flush=True)
        elif forget_test_map_on_new_source(work, before_src):
            print("    the library changed: mutmut's map of tests to functions is collected "
                  "again", flush=True)
    if seed:  # no scratch copy to carry on from (a new checkout): the committed verdicts
        print(f"    {restore_verdicts(module, work)} verdicts restored from "
              f"{(VERDICT_DIR / f'{module}.json').relative_to(ROOT)}", flush=True)
    return work, tests


def mutmut(work: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the venv's mutmut in ``work`` (output to ``log`` when given)."""
    exe = Path(sys.executable).with_name("mutmut")
    if log is None:
        return subprocess.run([str(exe), *args], cwd=work, capture_output=True, text=True)
    with log.open("w", encoding="utf-8") as out:
        return subprocess.run([str(exe), *args], cwd=work, stdout=out, stderr=subprocess.STDOUT,
                              text=True)


def mutant_diff(work: Path, name: str) -> str:
    """The diff of one mutant (``scaleout.zero.x_zero_comm__mutmut_3``) against the original
    function, read from mutmut's generated file and its spans (``mutmut show`` does the same,
    a few seconds a mutant slower)."""
    module, key = name.rsplit(".", 1)
    path = work / "mutants" / "src" / Path(*module.split("."))
    path = path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    spans = json.loads(Path(f"{path}.spans").read_text(encoding="utf-8"))["spans"]
    orig = spans[key.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"]
    mutant = spans[key]
    old = lines[orig[0] - 1:orig[1]]
    new = [line.replace(key, key.rsplit("__mutmut_", 1)[0] + "__mutmut_orig")
           for line in lines[mutant[0] - 1:mutant[1]]]
    diff = difflib.unified_diff(old, new, f"{name} (original)", name, n=1)
    return "".join(diff) + "\n"


def run_module(module: str, target: dict[str, list[str]], children: int, messages: bool = False,
               only: tuple[str, ...] = (), resume: bool = False) -> dict[str, object]:
    """Mutate one module (or only the mutants named by ``only``, globs allowed; ``resume``:
    carry on from the last run, see :func:`prepare`); return its counts and the survivors'
    names. Mutants a stopped run did not reach are counted as ``not_run``."""
    unmapped = importers(module) - set(target["tests"]) - set(unmapped_on_purpose())
    unmapped -= {n for n in unmapped if n.startswith(("test_widgets_", "test_diagrams"))}
    # (widget tests are left out on purpose; see targets.toml)
    if unmapped:
        print(f"    note: {', '.join(sorted(unmapped))} import {module}"
              " but are not in targets.toml")
    work, tests = prepare(module, target, messages, resume)
    print(f"==> {module}: mutmut over {', '.join(target['source'])} with {len(tests)} test files"
          f" (log: {work.relative_to(ROOT)}/mutmut.log)", flush=True)
    start = time.monotonic()
    done = mutmut(work, "run", "--max-children", str(children), *only, log=work / "mutmut.log")
    if done.returncode != 0 and not (work / "mutants" / "mutmut-stats.json").exists():
        raise SystemExit(f"mutmut failed for {module}; see {work / 'mutmut.log'}")
    mutmut(work, "export-cicd-stats")
    stats = json.loads((work / "mutants" / "mutmut-cicd-stats.json").read_text(encoding="utf-8"))
    listing = mutmut(work, "results", "--all", "true").stdout.splitlines()
    states = [line.rsplit(":", 1)[1].strip() for line in listing if ":" in line]
    not_run = states.count("not checked") + states.count("check was interrupted by user")
    if only or not_run:  # mutmut's totals cover every mutant generated; count those that ran
        stats = {"killed": states.count("killed"), "timeout": states.count("timeout"),
                 "segfault": states.count("segfault"), "survived": states.count("survived"),
                 "no_tests": states.count("no tests"), "skipped": 0}
        stats["total"] = sum(stats.values())
    survivors = [line.split(":")[0].strip() for line in listing
                 if line.strip().endswith(("survived", "no tests"))]
    with (work / "survivors.diff").open("w", encoding="utf-8") as out:
        for name in survivors:
            out.write(mutant_diff(work, name))
    caught = stats["killed"] + stats["timeout"] + stats["segfault"]
    total = stats["total"] - stats["skipped"]
    result = {"module": module, "mutants": total, "killed": caught,
              "survived": stats["survived"], "no_tests": stats["no_tests"],
              "kill_rate": caught / total if total else float("nan"), "not_run": not_run,
              "minutes": (time.monotonic() - start) / 60, "survivors": survivors}
    (work / "summary.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    save_verdicts(module, work)
    return result


def main(argv: list[str] | None = None) -> int:
    targets = load_targets()
    parser = argparse.ArgumentParser(prog="./workbook mutate", description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE",
                        help=f"modules to mutate (default: the core ones, {', '.join(CORE)}); "
                        f"known: {', '.join(targets)}")
    parser.add_argument("--max-children", type=int, default=2,
                        help="mutants tested at once (default 2)")
    parser.add_argument("--show", action="store_true", help="print every survivor's diff")
    parser.add_argument("--messages", action="store_true",
                        help="also mutate input checks and error messages (see MESSAGE_LINES)")
    parser.add_argument("--resume", action="store_true",
                        help="carry on from the last run's scratch copy: mutants with a verdict "
                        "are not run again unless their function changed (Ctrl-C stops a run "
                        "and keeps what it decided)")
    parser.add_argument("--save", action="store_true",
                        help="run nothing: write the verdicts of the last (perhaps stopped) run "
                        "of each module to tests/mutation/verdicts/MODULE.json, from which "
                        "--resume carries on in a new checkout")
    parser.add_argument("--only", nargs="+", default=(), metavar="MUTANT",
                        help="run only these mutants (names as `survivors.diff` gives them, "
                        "globs allowed), e.g. to re-check survivors after a new test")
    args = parser.parse_args(argv)
    modules = args.modules or list(CORE)
    unknown = [m for m in modules if m not in targets]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}; known: {', '.join(targets)}")
    if args.save:
        for m in modules:
            out = save_verdicts(m, SCRATCH / m)
            print(f"{m}: " + (f"verdicts written to {out.relative_to(ROOT)}" if out else
                              f"no run to save in {(SCRATCH / m).relative_to(ROOT)}"))
        return 0
    results = [run_module(m, targets[m], args.max_children, args.messages, tuple(args.only),
                          args.resume) for m in modules]
    print(f"\n{'module':<12} {'mutants':>8} {'killed':>7} {'survived':>9} {'no tests':>9}"
          f" {'kill rate':>10} {'not run':>8} {'minutes':>8}")
    for r in results:
        print(f"{r['module']:<12} {r['mutants']:>8} {r['killed']:>7} {r['survived']:>9}"
              f" {r['no_tests']:>9} {r['kill_rate']:>10.1%} {r['not_run']:>8}"
              f" {r['minutes']:>8.1f}")
    for r in results:
        if r["survivors"]:
            diff = SCRATCH / str(r["module"]) / "survivors.diff"
            print(f"\n{r['module']}: {len(r['survivors'])} survivors, diffs in "
                  f"{diff.relative_to(ROOT)}")
            if args.show:
                print(diff.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
