"""Adversary, Part 15 (what-if lab): attacks that held. Bad files refused with a reason,
bounds, determinism of ``manage.py whatif`` and of export/re-import, the figures against the
pods behind them, and the pages (404, CSRF, login, escaping of hostile names)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from dashboard.whatif import runner, service
from dashboard.whatif.models import Experiment
from dashboard.whatif.spec import SpecError, load, loads

GATES_PATH = Path("dashboard/whatif/examples/gates.yaml")
GATES_TEXT = GATES_PATH.read_text()
GATES = yaml.safe_load(GATES_TEXT)
HOSTILE = '<script>alert("x")</script>'


def _refused(data) -> str:
    with pytest.raises(SpecError) as caught:
        load(data)
    return str(caught.value)


def _with(**changes) -> dict:
    data = copy.deepcopy(GATES)
    data.update(changes)
    return data


@pytest.mark.parametrize(
    "data, word",
    [
        (_with(horizon=-600), "horizon"),
        (_with(horizon=0), "horizon"),
        (_with(horizon=float("inf")), "horizon"),
        (_with(horizon=24 * 3600 + 1, step=60), "horizon"),
        (_with(step=0), "step"),
        (_with(step=-5), "step"),
        (_with(horizon=2001, step=1), "cycles"),
        (_with(horizon="600"), "horizon"),
        (_with(variants=[]), "variants"),
        (_with(variants=[{"name": f"v{i}"} for i in range(9)]), "at most 8"),
        (_with(variants=[{"name": "a"}, {"name": "a"}]), "names must differ"),
        (_with(surprise=1), "unknown key"),
        (_with(variants=[{"name": "a", "gates": "yes"}]), "gates"),
        (_with(variants=[{"name": "a", "autoscaler": "magic"}]), "autoscaler"),
        (_with(variants=[{"name": "a", "schedulerConf": "actions: [\n"}]), "schedulerConf"),
        (_with(variants=[{"name": "a", "reservationTimeout": -1}]), "reservationTimeout"),
        (_with(workload={"trace": {"pods": 2001}}), "pods"),
        (_with(workload={"trace": {"nodes": 0}}), "nodes"),
        (_with(workload={"recorded": {"from": "a", "to": "b"}}), "recorded"),
        (_with(cluster={"connected": {}}), "cluster"),
        ([1, 2], "mapping"),
    ],
)
def test_a_bad_file_is_a_spec_error_naming_the_key(data, word):
    assert word in _refused(data)


def test_a_scenario_of_2001_pods_is_refused():
    data = copy.deepcopy(GATES)
    data["workload"]["scenario"]["workload"][0]["replicas"] = 1987  # + needs-big = 1988
    load(data)
    data["workload"]["scenario"]["workload"][0]["replicas"] = 2000
    assert "2001 pods" in _refused(data)


def test_yaml_that_is_not_a_mapping_is_refused_with_a_reason():
    for text in ("- a\n- b\n", "42\n", "a: [\n", ""):
        with pytest.raises(SpecError):
            loads(text)


@pytest.fixture(scope="module")
def played():
    """The gate-burst example played once (about 3 s)."""
    return runner.run(loads(GATES_TEXT))


def test_the_command_gives_byte_identical_json_twice_and_after_export(tmp_path, played):
    """Same file twice, and the file exported (Spec.to_yaml) then re-imported: the same JSON."""
    first, second, third = (tmp_path / n for n in ("a.json", "b.json", "c.json"))
    exported = tmp_path / "exported.yaml"
    exported.write_text(loads(GATES_TEXT).to_yaml())
    assert loads(exported.read_text()).to_yaml() == exported.read_text()
    call_command("whatif", str(GATES_PATH), output=str(first), stdout=io.StringIO())
    call_command("whatif", str(GATES_PATH), output=str(second), stdout=io.StringIO())
    call_command("whatif", str(exported), output=str(third), stdout=io.StringIO())
    assert first.read_bytes() == second.read_bytes() == third.read_bytes()
    assert json.loads(first.read_text()) == json.loads(
        json.dumps(runner.comparable(played), sort_keys=True)
    )


def test_the_figures_agree_with_the_pods_behind_them(played):
    for result in played:
        s, pods = result["summary"], result["pods"]
        assert s["pods"] == len(pods)
        assert s["never_ran"] == sum(1 for p in pods if p["bound"] is None)
        waits = sorted(p["bound"] - p["created"] for p in pods if p["bound"] is not None)
        assert waits == sorted(p["wait"] for p in pods if p["wait"] is not None)
        assert s["wait_max"] == (max(waits) if waits else None)
        assert s["wait_p50"] in waits and s["wait_p95"] in waits
        assert s["false_scale_ups"] == sum(1 for u in result["scale_ups"] if u["false_scale_up"])
        names = {(p["namespace"], p["name"]) for p in pods}
        for u in result["scale_ups"]:
            assert {(tp["namespace"], tp["name"]) for tp in u["pods"]} <= names
    off, on = played
    assert on["summary"]["false_scale_ups"] == 0
    assert off["summary"]["false_scale_ups"] > 0


@pytest.mark.django_db
def test_the_pages_404_for_an_experiment_that_does_not_exist(client):
    for url in ("/whatif/999999/", "/whatif/999999/progress/", "/whatif/999999/experiment.yaml",
                "/whatif/999999/variants/0/pods/"):  # fmt: skip
        assert client.get(url).status_code == 404, url


@pytest.mark.django_db
def test_start_and_cancel_need_a_login_and_a_csrf_token():
    user = User.objects.create_user("adv15h", password="pw-adv15h-1")
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.post("/whatif/start/", {"spec": GATES_TEXT}).status_code in (302, 403)
    logged = Client(enforce_csrf_checks=True)
    logged.force_login(user)
    assert logged.post("/whatif/start/", {"spec": GATES_TEXT}).status_code == 403
    experiment = service.create(loads(GATES_TEXT))
    assert logged.post(f"/whatif/{experiment.pk}/cancel/").status_code == 403
    assert Client().post(f"/whatif/{experiment.pk}/cancel/").status_code == 302
    experiment.refresh_from_db()
    assert Experiment.objects.count() == 1 and not experiment.cancel_requested


@pytest.mark.django_db
def test_hostile_names_are_escaped_on_every_page(client, played):
    data = copy.deepcopy(GATES)
    data["name"] = HOSTILE
    data["description"] = HOSTILE
    data["variants"][0]["name"] = HOSTILE
    spec = load(data)
    experiment = service.create(spec)
    results = [dict(played[0], name=HOSTILE), played[1]]
    service.store_results(experiment, results)
    Experiment.objects.filter(pk=experiment.pk).update(status=Experiment.Status.DONE)
    for url in ("/whatif/", f"/whatif/{experiment.pk}/", f"/whatif/{experiment.pk}/progress/",
                f"/whatif/{experiment.pk}/variants/0/pods/?filter=false-scale-up"):  # fmt: skip
        html = client.get(url).content.decode()
        assert HOSTILE not in html, url
        if url == f"/whatif/{experiment.pk}/":
            assert "&lt;script&gt;alert" in html  # the name is shown, escaped


@pytest.mark.django_db
def test_a_cancel_that_arrives_mid_run_stops_it_and_keeps_no_half_result(client):
    """A cancel request found at the running task's first progress check: status
    cancelled, no variant stored, the comparison shows no figures."""
    experiment = service.create(loads(GATES_TEXT))
    Experiment.objects.filter(pk=experiment.pk).update(
        status=Experiment.Status.RUNNING, cancel_requested=True
    )
    finished = service.execute(experiment.pk)
    assert finished.status == Experiment.Status.CANCELLED
    assert finished.done < finished.total
    assert not finished.results.exists()
    html = client.get(f"/whatif/{experiment.pk}/").content.decode()
    assert "would have avoided" not in html


@pytest.mark.django_db
def test_the_lab_pages_are_closed_when_login_is_required(settings, client):
    settings.SLUICE_REQUIRE_LOGIN = True
    experiment = service.create(loads(GATES_TEXT))
    for url in ("/whatif/", f"/whatif/{experiment.pk}/", f"/whatif/{experiment.pk}/progress/",
                f"/whatif/{experiment.pk}/experiment.yaml",
                f"/whatif/{experiment.pk}/variants/0/pods/"):  # fmt: skip
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url


def test_two_experiments_played_at_once_give_what_each_gives_alone(played):
    """Two runs of the gate-burst example in two threads at once: each the same as alone
    (no state shared between simulated clusters or scheduler services)."""
    import threading

    alone = json.dumps(runner.comparable(played), sort_keys=True)
    out: list[str] = ["", ""]

    def play(i: int) -> None:
        out[i] = json.dumps(runner.comparable(runner.run(loads(GATES_TEXT))), sort_keys=True)

    threads = [threading.Thread(target=play, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert out == [alone, alone]
