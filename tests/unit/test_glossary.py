"""scaleout.glossary: the walk, the glossary and the concept map, and their validating loader."""

import re

import pytest
from scaleout import glossary

GOOD = """
[[notebook]]
id = "00_start_here"
short = "00 start"
title = "Start"
question = "Where to begin?"

[[notebook]]
id = "99_missing"
short = "99 missing"
title = "Not written"
question = "Is it planned?"

[[term]]
term = "scale-up"
korean = "스케일 업"
definition = "A bigger machine."
notebook = "00_start_here"
aliases = ["vertical scaling"]

[[concept]]
concept = "Scale-up versus scale-out"
notebook = "99_missing"
"""


def write(tmp_path, text):
    path = tmp_path / "glossary.toml"
    path.write_text(text, encoding="utf-8")
    nb_dir = tmp_path / "notebooks"
    nb_dir.mkdir(exist_ok=True)
    (nb_dir / "00_start_here.ipynb").write_text("{}", encoding="utf-8")
    return path, nb_dir


def load_text(tmp_path, text):
    path, nb_dir = write(tmp_path, text)
    return glossary.load(path, nb_dir)


def test_project_glossary_loads_and_is_complete():
    g = glossary.load()
    assert len(g.terms) >= 35
    assert len(g.concepts) >= 35
    ids = [nb.id for nb in g.notebooks]
    assert ids[:2] == ["00_start_here", "01_scale_up_limits"] and ids[-1] == "reports/cluster_plan"
    assert {t.notebook for t in g.terms} <= set(ids)
    assert {c.notebook for c in g.concepts} <= set(ids)
    assert all(re.search("[\uac00-\ud7a3]", t.korean) for t in g.terms)
    for word in ("scale-up", "scale-out", "bubble", "all-reduce", "ZeRO", "Clos network",
                 "memory semantics", "message semantics", "elastic training"):
        assert any(t.term == word for t in g.terms), word


def test_status_comes_from_the_file_system(tmp_path):
    g = load_text(tmp_path, GOOD)
    assert [nb.status for nb in g.notebooks] == ["available", "planned"]
    (tmp_path / "notebooks" / "99_missing.ipynb").write_text("{}", encoding="utf-8")
    assert g.notebook("99_missing").status == "available"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('notebook = "00_start_here"\naliases', 'notebook = "01_nowhere"\naliases'),
         "[[term]] entry 1 ('scale-up'): field 'notebook' is '01_nowhere', not a notebook"),
        (('korean = "스케일 업"', 'korean = "scale up"'),
         "[[term]] entry 1 ('scale-up'): field 'korean' must contain Hangul"),
        (('definition = "A bigger machine."', 'definiton = "A bigger machine."'),
         "[[term]] entry 1 ('scale-up'): unknown field 'definiton' (did you mean 'definition'?)"),
        (('definition = "A bigger machine."\n', ""),
         "[[term]] entry 1 ('scale-up'): missing field 'definition'"),
        (('title = "Start"', 'title = ""'),
         "[[notebook]] entry 1 ('00_start_here'): field 'title' must be a non-empty string"),
        (('short = "99 missing"', 'short = "99 a very long label"'),
         "[[notebook]] entry 2 ('99_missing'): field 'short' must be at most 14 characters"),
        (('id = "99_missing"', 'id = "00_start_here"'),
         "[[notebook]] entry 2 ('00_start_here'): duplicate id"),
        (('aliases = ["vertical scaling"]', 'aliases = "vertical scaling"'),
         "field 'aliases' must be a list of non-empty strings"),
        (('concept = "Scale-up versus scale-out"\nnotebook = "99_missing"',
          'concept = "Scale-up versus scale-out"\nnotebook = 3'),
         "[[concept]] entry 1 ('Scale-up versus scale-out'): field 'notebook' must be a non-empty"),
    ],
)
def test_bad_entries_name_file_entry_and_field(tmp_path, change, message):
    old, new = change
    assert old in GOOD
    with pytest.raises(ValueError) as err:
        load_text(tmp_path, GOOD.replace(old, new, 1))
    assert str(err.value).startswith("glossary.toml: ")
    assert message in str(err.value)


def test_duplicate_term_or_alias(tmp_path):
    extra = GOOD + '\n[[term]]\nterm = "Vertical Scaling"\nkorean = "수직 확장"\n' \
        'definition = "x"\nnotebook = "00_start_here"\n'
    with pytest.raises(ValueError, match=r"\[\[term\]\] entry 2 .*already the term or an alias"):
        load_text(tmp_path, extra)


def test_missing_table_bad_toml_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match=r"expected one or more \[\[concept\]\] entries"):
        load_text(tmp_path, GOOD.split("[[concept]]")[0])
    with pytest.raises(ValueError, match="not valid TOML"):
        load_text(tmp_path, GOOD + "\n[[term]\n")
    with pytest.raises(ValueError, match="unknown table 'terms'"):
        load_text(tmp_path, GOOD + '\n[[terms]]\nterm = "x"\n')
    with pytest.raises(ValueError, match="glossary file not found"):
        glossary.load(tmp_path / "nope.toml")


def test_search_english_korean_and_filter():
    r = glossary.search("bubble")
    assert [t.term for t in r.terms] == ["bubble"]
    assert r.per_notebook()["05_pipeline_parallelism"] == r.total
    assert [t.term for t in glossary.search("버블").terms] == ["bubble"]
    assert "tensor parallelism" in [t.term for t in glossary.search("TP").terms]
    everything = glossary.search("")
    assert len(everything.terms) == len(glossary.terms())
    only_01 = glossary.search("", "01_scale_up_limits")
    assert only_01.terms and all(t.notebook == "01_scale_up_limits" for t in only_01.terms)
    assert sum(only_01.per_notebook().values()) == only_01.total


def test_search_errors_name_the_parameter():
    with pytest.raises(ValueError, match=r"query 'clso' matches no glossary term.*did you mean"):
        glossary.search("clso")
    with pytest.raises(ValueError, match=r"notebook must be one of .*did you mean '05_pipeline"):
        glossary.search("bubble", "05_pipe")
    with pytest.raises(ValueError, match="query must be text"):
        glossary.search(None)


def test_library_modules_lists_itself():
    mods = glossary.library_modules()
    for name in ("units", "catalog", "memory", "compute", "scaling", "glossary", "plotting",
                 "widgets.scale_up"):
        assert mods[name], name


def test_term_lookup():
    assert glossary.term("All-Reduce").korean == "올 리듀스"
    assert glossary.term("TP").term == "tensor parallelism"
    with pytest.raises(ValueError, match="term 'all-reduse' is not in the glossary; did you mean"):
        glossary.term("all-reduse")


def test_every_notebook_file_is_a_step_of_the_walk(notebooks_dir):
    """A notebook whose id the walk does not know would show as 'planned' forever."""
    walk_ids = {nb.id for nb in glossary.walk()}
    files = sorted(p.stem for p in notebooks_dir.glob("[0-9][0-9]_*.ipynb"))
    files += sorted(f"reports/{p.stem}" for p in (notebooks_dir / "reports").glob("*.ipynb"))
    assert files, "no notebooks found"
    missing = [f for f in files if f not in walk_ids]
    assert not missing, f"notebooks missing from data/glossary.toml's walk: {missing}"


def test_readme_links_every_notebook(repo_root, notebooks_dir):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    for path in sorted(notebooks_dir.glob("[0-9][0-9]_*.ipynb")):
        assert f"(notebooks/{path.name})" in readme, f"README's walk does not link {path.name}"
