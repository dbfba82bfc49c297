"""scaleout.verdict: the cluster plan's one-paragraph verdict and its main risk."""

from __future__ import annotations

import dataclasses

import pytest
from scaleout import catalog, costs, formatting, power, synthesis, units, verdict


@pytest.fixture(scope="module")
def cluster() -> synthesis.ClusterPlan:
    return synthesis.cluster_plan("llama3-70b", "H100-SXM5-80GB", 2048, 1024, 15e12)


def _hours(cluster) -> float:
    return units.seconds_to_hours(units.days_to_seconds(cluster.wall_days))


@pytest.fixture(scope="module")
def cloud(cluster) -> costs.CloudCost:
    return costs.cloud_cost(cluster.n_gpus, _hours(cluster), 2.0)


@pytest.fixture(scope="module")
def owned(cluster) -> costs.OwnedCost:
    fab = cluster.fabric
    site = power.cluster_power(cluster.n_gpus, catalog.gpu(cluster.gpu), switches=fab.switches,
                               switch=fab.switch, optics_power_w=fab.optics_power_w, pue=1.2)
    return costs.owned_cost(site, _hours(cluster), price_per_gpu=35000.0,
                            price_per_switch=50000.0,
                            optics_relative_cost=fab.optics_relative_cost,
                            reference_module_price=1000.0, lifetime_years=4.0,
                            price_per_kwh=0.1)


def with_memory(cluster, fraction: float) -> synthesis.ClusterPlan:
    """The same plan with its memory at ``fraction`` of HBM."""
    result = cluster.chosen.result
    capacity = result.memory_bytes / fraction
    chosen = dataclasses.replace(cluster.chosen,
                                 result=dataclasses.replace(result, capacity_bytes=capacity))
    return dataclasses.replace(cluster, chosen=chosen)


def test_headroom_is_memory_against_capacity(cluster):
    best = cluster.chosen.result
    room = verdict.headroom(best)
    assert room.fraction == pytest.approx(best.memory_bytes / best.capacity_bytes)
    assert room.free_bytes == pytest.approx(best.capacity_bytes - best.memory_bytes)
    tight = verdict.Headroom(73 * units.GIB, 80 * units.GIB)
    roomy = verdict.Headroom(71 * units.GIB, 80 * units.GIB)
    assert tight.warning and not roomy.warning  # 91% against 89% of HBM
    assert "73 GiB of 80 GiB per GPU (91%), 7 GiB free" in tight.sentence()
    assert "check it on the hardware" in tight.sentence()
    assert "check it" not in roomy.sentence()


def test_a_plan_above_90_percent_of_hbm_is_the_main_risk(cluster):
    kind, sentence = verdict.main_risk(with_memory(cluster, 0.95))
    assert kind == "memory" and "95%" in sentence


def test_low_goodput_is_the_main_risk_when_memory_is_fine(cluster):
    shaky = dataclasses.replace(with_memory(cluster, 0.6), reliability=dataclasses.replace(
        cluster.reliability, goodput=0.9))
    kind, sentence = verdict.main_risk(shaky)
    assert kind == "failures" and "10%" in sentence  # 1 - goodput of the run is lost


def test_waiting_is_the_main_risk_when_failures_are_cheap(cluster):
    calm = dataclasses.replace(with_memory(cluster, 0.6), reliability=dataclasses.replace(
        cluster.reliability, goodput=0.99))
    result = calm.chosen.result
    step = dict(result.step, dp_comm=result.step_s)  # as long as the whole iteration was
    slow = dataclasses.replace(calm, chosen=dataclasses.replace(
        calm.chosen, result=dataclasses.replace(result, step=step)))
    kind, sentence = verdict.main_risk(slow)
    assert kind == "communication" and "data-parallel communication" in sentence
    quiet_step = {p: (v if p not in ("tp_comm", "bubble", "p2p", "dp_comm") else 0.0)
                  for p, v in result.step.items()}
    quiet = dataclasses.replace(calm, chosen=dataclasses.replace(
        calm.chosen, result=dataclasses.replace(result, step=quiet_step)))
    kind, sentence = verdict.main_risk(quiet)
    assert kind == "failures" and "interruptions over the run" in sentence


def test_the_verdict_says_what_to_build_how_long_and_what_it_costs(cluster, cloud, owned):
    v = verdict.cluster_verdict(cluster, cloud, owned, "EUR")
    text = v.text()
    assert text.startswith("Build 2,048 H100-SXM5-80GB GPUs in 256 scale-up domains of 8")
    assert cluster.chosen.label in text and "15 T tokens" in text
    assert formatting.duration(units.days_to_seconds(cluster.wall_days)) in text
    assert f"rented, about {formatting.money(cloud.total, 'EUR')}" in text and "€" in text
    assert f"owned, about {formatting.money(owned.total, 'EUR')}" in text
    assert "never added" in text
    assert "$" not in text
    assert f"Main risk: {v.risk}." in text
    assert v.html().startswith('<p class="so-verdict"><b>Verdict.</b> Build')


def test_a_free_rental_is_left_out_of_the_cost(cluster, cloud, owned):
    free = dataclasses.replace(cloud, price_per_gpu_hour=0.0)
    v = verdict.cluster_verdict(cluster, free, owned)
    assert "rented" not in v.cost and "owned, about" in v.cost
    assert verdict.cluster_verdict(cluster, free).cost == ""
    only_cloud = verdict.cluster_verdict(cluster, cloud)
    assert "rented" in only_cloud.cost and "owned" not in only_cloud.cost
