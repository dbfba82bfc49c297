"""Hostile and malformed report parameters: plain data only, bounded work, one line, no code.

Every payload here once ran code or hung (a YAML tag turning a list element into a tuple that
papermill wrote into the parameters cell as source; nine nested aliases; argparse reading a
negative number as an option). Each is now refused before any kernel starts, with exit
status 2 and one line, or written as an inert literal.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from scaleout import __main__ as cli
from scaleout import report

NB07 = report.NOTEBOOKS_DIR / "07_all_reduce_cost.ipynb"
NB12 = report.NOTEBOOKS_DIR / "12_scale_up_vs_scale_out.ipynb"
CANARY = "/tmp/scaleout-pwned"
CODE = f'__import__("os").system("touch {CANARY}")'
YAML_CODE = CODE.replace('"', '\\"')  # the same, inside a double-quoted YAML string

# (value as typed after -p, what the refusal says)
TAG_PAYLOADS = [
    (f'!!pairs [{{"\\"]; {YAML_CODE} #": 1}}]', "tag 'tag:yaml.org,2002:pairs' is not allowed"),
    ('[!!pairs [{"x": 1}]]', "is not allowed"),
    ("!!binary aGVsbG8=", "tag 'tag:yaml.org,2002:binary' is not allowed"),
    ("!!set {a, b}", "tag 'tag:yaml.org,2002:set' is not allowed"),
    ("!!omap [{a: 1}]", "tag 'tag:yaml.org,2002:omap' is not allowed"),
    ("!!python/object/apply:os.system [touch /tmp/x]", "is not allowed"),
    ("[[[[[[[[[[[[[[1]]]]]]]]]]]]]]", "nested deeper than"),
]


def _alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "{" + ", ".join(lines) + "}"


@pytest.fixture(autouse=True)
def no_canary():
    Path(CANARY).unlink(missing_ok=True)
    yield
    assert not Path(CANARY).exists(), "a parameter ran code"


@pytest.mark.parametrize(("text", "message"), TAG_PAYLOADS)
def test_tags_and_deep_nesting_are_refused_when_parsed(text, message):
    with pytest.raises(ValueError, match=message) as e:
        report.parse_value(text)
    assert "\n" not in str(e.value)


def test_an_alias_bomb_is_refused_before_it_expands():
    assert len(_alias_bomb()) < 800  # nine levels of nine: 9**9 strings once expanded
    for text in ("[&a [1], *a]", _alias_bomb()):
        with pytest.raises(ValueError, match="aliases"):
            report.parse_value(text)
    assert report.parse_value("&a [1, 2]") == [1, 2]  # an anchor alone builds nothing more


@pytest.mark.parametrize("value", [
    ("a", 1), b"bytes", {1, 2}, frozenset(), complex(1, 2), float("nan"), float("inf"),
    [("tuple", "inside")], [[1]], [{"k": "v"}], object(), range(3), 10**40,
])
def test_only_plain_values_of_the_defaults_type_pass(value):
    with pytest.raises(ValueError, match="rdma_link_names") as e:
        report.check_parameters(NB07, {"rdma_link_names": value})
    assert "\n" not in str(e.value)


def test_list_elements_are_checked_against_the_defaults_elements():
    with pytest.raises(ValueError, match=r"rdma_link_names\[1\]=2 must be text"):
        report.check_parameters(NB07, {"rdma_link_names": ["InfiniBand NDR", 2]})
    # numbers in a list of floats: ints are widened, text refused
    out = report.plain_value("d", [1, 2.5], [0.1, 1])
    assert out == [1.0, 2.5] and all(isinstance(x, float) for x in out)
    with pytest.raises(ValueError, match=r"d\[0\]='far' must be a number"):
        report.plain_value("d", ["far"], [0.1, 1])


def test_a_budget_bounds_how_much_any_value_may_hold():
    shared = ["x"] * 100
    wide = [shared] * 200  # 20,000 strings through shared references
    with pytest.raises(ValueError, match="more than 10,000 values"):
        report.plain_value("v", wide, None)
    with pytest.raises(ValueError, match="characters long"):
        report.plain_value("v", "x" * (report.MAX_TEXT + 1), "")


@pytest.mark.parametrize("value", [
    '"]; ' + CODE + " #", "\\\"; " + CODE, "'''" + CODE + "'''", "\n" + CODE, "{" + CODE + "}",
    "\x00\u2028\u202e" + CODE,
])
def test_text_becomes_an_inert_literal_in_the_parameters_cell(value):
    source = report.parameters_source({"search_term": value, "sizes": [1, 2.5, "a'b\"c"]})
    tree = ast.parse(source)
    assigns = [n for n in tree.body if isinstance(n, ast.Assign)]
    assert len(assigns) == len(tree.body) == 2
    namespace: dict = {}
    exec(compile(source, "<cell>", "exec"), {"__builtins__": {}}, namespace)
    assert namespace == {"search_term": value, "sizes": [1, 2.5, "a'b\"c"]}


def test_the_papermill_translator_writes_literals():
    translator = report._literal_translator()
    source = translator.codify({"x": ['"]; ' + CODE + " #"], "n": 3})
    assert ast.literal_eval(source.split(" = ", 1)[1].splitlines()[0]) == ['"]; ' + CODE + " #"]
    with pytest.raises(ValueError, match="Python name"):
        translator.codify({"os.system": 1})


def test_parameters_cells_are_read_without_running_them(tmp_path: Path):
    cell = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "outputs": [],
            "source": f"x = 1\n{CODE}\n"}
    nb = tmp_path / "evil.ipynb"
    nb.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                              "nbformat_minor": 5}))
    with pytest.raises(ValueError, match="only assignments of literal values"):
        report.notebook_parameters(nb)
    cell["source"] = "x = 2**28\ny = -1.5e3\nz = [1, 'a']\n"
    nb.write_text(json.dumps({"cells": [cell]}))
    assert report.notebook_parameters(nb) == {"x": 2**28, "y": -1500.0, "z": [1, "a"]}
    cell["source"] = "x = 9**9**9\n"
    nb.write_text(json.dumps({"cells": [cell]}))
    with pytest.raises(ValueError, match="exponent"):
        report.notebook_parameters(nb)


# ---------------------------------------------------------------------------- sweep files
def _sweep(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sets.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "message"), [
    (f'- name: a\n  rdma_link_names: !!pairs [{{"\\"]; {YAML_CODE} #": 1}}]\n', "is not allowed"),
    ("- name: a\n  rdma_link_names: [!!binary aGk=]\n", "is not allowed"),
    ("- name: bomb\n  domain_sizes: " + _alias_bomb() + "\n", "aliases"),
    ("- " * 40 + "1\n", "nested deeper"),
    ("[" * 2000 + "]" * 2000, "nested"),
    ("- name: a b\n  n_gpus: 8\n- name: a-b\n  n_gpus: 16\n", "both be written to a-b.html"),
    ("- name: same\n  n_gpus: 8\n- name: same\n  n_gpus: 16\n", "two sets are named 'same'"),
    ("twice: {n_gpus: 8}\ntwice: {n_gpus: 16}\n", "the key 'twice' appears twice"),
    ("- name: [1, 2]\n  n_gpus: 8\n", "a name must be text"),
    ("a: [\n  b: c\n", "not valid YAML"),
])
def test_bad_sweep_files_are_refused_in_one_line(tmp_path: Path, text, message):
    with pytest.raises(ValueError, match=message) as e:
        report.load_sweep(_sweep(tmp_path, text))
    assert "\n" not in str(e.value)


def test_a_huge_sweep_file_is_refused_unread(tmp_path: Path):
    path = _sweep(tmp_path, "# " + "x" * report.MAX_SWEEP_BYTES + "\n")
    with pytest.raises(ValueError, match="at most 1,000,000"):
        report.load_sweep(path)


def test_a_sweep_with_a_hostile_set_refuses_that_set_and_never_runs_it(tmp_path: Path):
    sweep = _sweep(tmp_path, "- name: good\n  n_gpus: 8\n"
                   f"- name: evil\n  site_distances_km: [1, '\"]; {CODE} #']\n")
    sets = report.load_sweep(sweep)  # plain data: a string inside a list of numbers
    with pytest.raises(ValueError, match=r"site_distances_km\[1\]=.* must be a number"):
        report.check_parameters(NB12, sets["evil"])


# ---------------------------------------------------------------------------- the command
def _main(*argv: str, capsys) -> tuple[int, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code)
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize(("argv", "message"), [
    (["report", "07", "-p", "rdma_link_names", TAG_PAYLOADS[0][0]], "is not allowed"),
    (["report", "07", "-p", "rdma_link_names", '[["\\"]; ' + YAML_CODE + ' #"]]'],
     r"rdma_link_names\[0\]=.* must be text"),
    (["report", "12", "-p", "domain_sizes", _alias_bomb()], "aliases"),
    (["report", "12", "-p", "design_gpu_counts", "[1, !!binary aGk=]"], "is not allowed"),
    (["report", "-p", "tokens", "-1e12"], "tokens must be a number from 1000000.0"),
    (["report", "-p", "n_gpus", "1e30"], "n_gpus must be a whole number from 1 to 10000000"),
    (["report", "-p", "n_gpus", "8", "-p", "n_gpus", "16"], "given twice"),
    (["report", "--timeout", "0"], "--timeout must be"),
])
def test_the_report_command_refuses_in_one_line_with_status_2(argv, message, capsys, tmp_path):
    code, err = _main(*argv, "-o", str(tmp_path / "out"), capsys=capsys)
    assert code == 2, err
    assert err.count("\n") == 0 and re.search(message, err), err
    assert not list(tmp_path.rglob("*.ipynb"))


def test_an_output_path_that_is_a_file_is_refused(capsys, tmp_path: Path):
    existing = tmp_path / "notes.txt"
    existing.write_text("keep me")
    code, err = _main("report", "-o", str(existing), capsys=capsys)
    assert code == 2 and "is an existing file" in err
    assert existing.read_text() == "keep me"


def test_a_dangling_p_is_an_error(capsys):
    code, err = _main("report", "-p", "n_gpus", capsys=capsys)
    assert code == 2 and "-p needs a NAME and a VALUE" in err
