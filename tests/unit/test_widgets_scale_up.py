"""The explorers of notebooks 00 and 01 without a browser: set controls, read numbers and chart."""

import pytest
from scaleout import glossary, scaling, units
from scaleout.render import html_table
from scaleout.widgets.scale_up import GlossaryExplorer, ScaleUpExplorer


# ------------------------------------------------------------------------- 01: scale-up
@pytest.fixture
def explorer():
    return ScaleUpExplorer(model="gpt3-175b", gpu="A100-SXM4-80GB", recipe="mixed-adam")


def test_initial_numbers_match_library(explorer):
    assert explorer.error is None
    plan = explorer.result["plan"]
    assert plan == scaling.holding_plan("gpt3-175b", "A100-SXM4-80GB", "mixed-adam")
    assert plan.weights == 350e9 and plan.state == 2.8e12
    assert (plan.gpus_for_weights, plan.gpus_for_state) == (5, 33)
    assert explorer.result["gib"]["weights"] == pytest.approx(units.bytes_to_gib(350e9))
    assert explorer.result["biggest"].name == "GB200 NVL72"
    assert explorer.image.format == "svg+xml" and bytes(explorer.image.value).startswith(b"<svg")
    assert "does not fit in one 8-GPU domain" in explorer.readout.value


def test_controls_change_numbers_and_chart(explorer):
    before = explorer.image.value
    explorer.controls["gpu"].value = "GB200"
    plan = explorer.result["plan"]
    assert plan.gpu.name == "GB200" and plan.domain_gpus == 72
    assert plan.gpus_for_state == scaling.gpus_to_hold(2.8e12, "GB200") == 15
    assert plan.state_fits_domain
    assert explorer.image.value != before
    explorer.controls["recipe"].value = "fp32-sgd-momentum"
    assert explorer.result["plan"].state == pytest.approx(175e9 * 12)
    explorer.controls["model"].value = "GPT-3"  # an alias works
    assert explorer.error is None and explorer.result["plan"].model.name == "gpt3-175b"


def test_bad_model_shows_message_and_recovers(explorer):
    good = explorer.result
    explorer.controls["model"].value = "gpt-5"
    assert explorer.error.startswith("model 'gpt-5' is not in the catalog")
    assert "⚠" in explorer.status.value and "model &#x27;gpt-5&#x27;" in explorer.status.value
    assert explorer.result is good
    explorer.controls["model"].value = "llama3-70b"
    assert explorer.error is None and explorer.status.value == ""
    assert explorer.result["plan"].params == 70.6e9


def test_bad_gpu_named(explorer):
    explorer.controls["gpu"].value = "H900"
    assert explorer.error.startswith("gpu 'H900' is not in the catalog; did you mean")
    explorer.controls["gpu"].value = "H100"
    assert explorer.error is None


def test_model_changes_recompute_the_plan_and_redraw(explorer):
    """Each model change holds that model's numbers (fp16 weights at 2 bytes per parameter,
    16 bytes of mixed-precision Adam state) and draws a new chart; the time it takes is
    measured in tests/benchmarks/bench_widgets.py."""
    for name, params in (("llama3-8b", 8.03e9), ("megatron-1t", 1008e9),
                         ("gpt3-175b", 175e9), ("llama3-405b", 405.8e9)):
        before = explorer.image.value
        explorer.controls["model"].value = name
        plan = explorer.result["plan"]
        assert explorer.error is None and plan.model.name == name
        assert plan.params == pytest.approx(params, rel=2e-3)
        assert plan.weights == pytest.approx(2 * plan.params)
        assert plan.state == pytest.approx(16 * plan.params)
        assert explorer.image.value != before


# ------------------------------------------------------------------------- 00: glossary
@pytest.fixture
def search():
    return GlossaryExplorer(query="bubble")


def test_glossary_search(search):
    assert search.error is None
    assert [t.term for t in search.result.terms] == ["bubble"]
    assert "버블" in search.readout.value
    before = search.image.value
    search.controls["query"].value = "RDMA"
    assert search.result == glossary.search("RDMA")
    assert search.result.per_notebook()["07_all_reduce_cost"] >= 1
    assert search.image.value != before
    search.controls["notebook"].value = "05_pipeline_parallelism"  # RDMA is not taught there
    taught_in = sorted(nb for nb, n in glossary.search("RDMA").per_notebook().items() if n)
    assert "07_all_reduce_cost" in taught_in
    assert search.error == ("query 'RDMA' matches nothing taught in 05_pipeline_parallelism; "
                            f"see {', '.join(taught_in)}")
    search.controls["query"].value = ""
    assert search.error is None and search.result.terms
    assert all(t.notebook == "05_pipeline_parallelism" for t in search.result.terms)


def test_glossary_bad_query_shows_message_and_recovers(search):
    search.controls["query"].value = "clso"
    assert search.error.startswith("query 'clso' matches no glossary term or concept")
    assert "⚠" in search.status.value and "query" in search.status.value
    search.controls["query"].value = "Clos"
    assert search.error is None and search.status.value == ""
    assert any(t.term == "Clos network" for t in search.result.terms)


def test_html_table_escapes():
    out = html_table(["a", "b"], [("<x>", 1)])
    assert "&lt;x&gt;" in out and "text-align:right" in out
