"""The mutation runner's committed verdicts (tests/mutation/mutate.py): what a run decided is
written per function with the function's code hash, and read back into a new scratch copy as
mutmut's own files, keeping survivors only while the tests are unchanged."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mutation"))
import mutate


def _scratch(root: Path, tests_text: str) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_x.py").write_text(tests_text, encoding="utf-8")
    (root / "pyproject.toml").write_text("[tool.mutmut]\n", encoding="utf-8")
    meta = root / "mutants" / "src" / "scaleout" / "zero.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({
        "exit_code_by_key": {"scaleout.zero.x_f__mutmut_1": 1,     # killed
                             "scaleout.zero.x_f__mutmut_2": 0,     # survived
                             "scaleout.zero.x_f__mutmut_3": -24,   # timeout: not kept
                             "scaleout.zero.x_f__mutmut_4": None,  # not run
                             "scaleout.zero.xǁCǁm__mutmut_1": 33},  # no tests
        "hash_by_function_name": {"x_f": "aaa", "xǁCǁm": "bbb"},
        "type_check_error_by_key": {}, "durations_by_key": {},
        "estimated_durations_by_key": {}}), encoding="utf-8")
    return root


@pytest.mark.parametrize(("tests_text", "expected"), [
    ("def test_a(): pass\n", {"scaleout.zero.x_f__mutmut_1": 1, "scaleout.zero.x_f__mutmut_2": 0,
                              "scaleout.zero.xǁCǁm__mutmut_1": 33}),
    ("def test_b(): pass\n", {"scaleout.zero.x_f__mutmut_1": 1}),  # tests changed
])
def test_verdicts_round_trip_into_a_new_scratch_copy(tmp_path, monkeypatch, tests_text,
                                                      expected):
    monkeypatch.setattr(mutate, "VERDICT_DIR", tmp_path / "verdicts")
    old = _scratch(tmp_path / "old", "def test_a(): pass\n")
    saved = mutate.save_verdicts("zero", old)
    record = json.loads(saved.read_text(encoding="utf-8"))
    assert record["verdicts"] == {"killed": 1, "survived": 1, "no_tests": 1, "other": 0}
    new = tmp_path / "new"
    (new / "tests").mkdir(parents=True)
    (new / "tests" / "test_x.py").write_text(tests_text, encoding="utf-8")
    (new / "pyproject.toml").write_text("[tool.mutmut]\n", encoding="utf-8")
    assert mutate.restore_verdicts("zero", new) == len(expected)
    meta = json.loads((new / "mutants" / "src" / "scaleout" / "zero.py.meta")
                      .read_text(encoding="utf-8"))
    assert meta["exit_code_by_key"] == expected
    assert meta["hash_by_function_name"] == {"x_f": "aaa", "xǁCǁm": "bbb"}


def test_nothing_to_save_or_restore(tmp_path, monkeypatch):
    monkeypatch.setattr(mutate, "VERDICT_DIR", tmp_path / "verdicts")
    assert mutate.save_verdicts("zero", tmp_path / "none") is None
    assert mutate.restore_verdicts("zero", tmp_path) == 0


def test_a_resume_under_a_new_map_saves_the_scratch_verdicts_and_starts_a_new_copy(
        tmp_path, monkeypatch):
    """mutmut forgets every verdict when its test selection changes; the runner saves the
    scratch copy's verdicts first and removes the copy, so the resumed run is seeded from
    them. An unchanged map keeps the copy as it is."""
    monkeypatch.setattr(mutate, "VERDICT_DIR", tmp_path / "verdicts")
    work = _scratch(tmp_path / "work", "def test_a(): pass\n")
    assert not mutate.rebuild_on_new_map("zero", work, "[tool.mutmut]\n")
    assert work.exists() and not (tmp_path / "verdicts").exists()
    assert mutate.rebuild_on_new_map("zero", work, "[tool.mutmut]\ntests = ['b']\n")
    assert not work.exists()
    record = json.loads((tmp_path / "verdicts" / "zero.json").read_text(encoding="utf-8"))
    assert record["verdicts"] == {"killed": 1, "survived": 1, "no_tests": 1, "other": 0}


def test_a_resume_with_changed_tests_runs_the_survivors_again(tmp_path):
    """A resumed scratch copy whose tests changed forgets its survived and no-tests verdicts
    and mutmut's test map (so the new tests reach the old survivors); kills stand. With the
    tests unchanged nothing is cleared."""
    work = _scratch(tmp_path / "work", "def test_a(): pass\n")
    stats = work / "mutants" / "mutmut-stats.json"
    stats.write_text("{}", encoding="utf-8")
    same = mutate.tests_fingerprint(work)
    assert mutate.forget_survivors_on_new_tests(work, same) == 0 and stats.exists()
    (work / "tests" / "test_x.py").write_text("def test_b(): pass\n", encoding="utf-8")
    assert mutate.forget_survivors_on_new_tests(work, same) == 2
    meta = json.loads((work / "mutants" / "src" / "scaleout" / "zero.py.meta")
                      .read_text(encoding="utf-8"))["exit_code_by_key"]
    assert meta == {"scaleout.zero.x_f__mutmut_1": 1, "scaleout.zero.x_f__mutmut_2": None,
                    "scaleout.zero.x_f__mutmut_3": -24, "scaleout.zero.x_f__mutmut_4": None,
                    "scaleout.zero.xǁCǁm__mutmut_1": None}
    assert not stats.exists()


def test_a_resume_with_a_changed_library_collects_the_test_map_again(tmp_path):
    """A function added since the last run has no entry in mutmut's map of tests to
    functions: when the library changed, the map is dropped (to be collected again) and the
    verdicts stand; with the library unchanged the map stays."""
    work = _scratch(tmp_path / "work", "def test_a(): pass\n")
    (work / "src").mkdir()
    (work / "src" / "m.py").write_text("def f(): return 1\n", encoding="utf-8")
    stats = work / "mutants" / "mutmut-stats.json"
    stats.write_text("{}", encoding="utf-8")
    same = mutate.source_fingerprint(work)
    assert not mutate.forget_test_map_on_new_source(work, same) and stats.exists()
    (work / "src" / "m.py").write_text("def f(): return 1\ndef g(): return 2\n",
                                       encoding="utf-8")
    assert mutate.forget_test_map_on_new_source(work, same) and not stats.exists()
    meta = json.loads((work / "mutants" / "src" / "scaleout" / "zero.py.meta")
                      .read_text(encoding="utf-8"))["exit_code_by_key"]
    assert meta["scaleout.zero.x_f__mutmut_2"] == 0  # a survivor stands
