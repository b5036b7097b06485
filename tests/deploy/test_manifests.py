"""The Kubernetes manifests validate against the Kubernetes schemas and agree with the server's behaviour."""

import copy
import re
import shlex
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from typer.main import get_command

from turboinfer.cli.search import search
from turboinfer.serve.run import DRAIN_TIMEOUT_S

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
VERSION = "1.30"


def load(name: str) -> dict:
    return yaml.safe_load((K8S / name).read_text())


@pytest.mark.parametrize("name", yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
def test_each_resource_validates_strictly(name):
    kubernetes_validate.validate(load(name), VERSION, strict=True)


def test_probes_limits_and_grace_period_match_the_server():
    deployment = load("deployment.yaml")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["startupProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert DRAIN_TIMEOUT_S < pod["terminationGracePeriodSeconds"] <= 30
    threads = load("configmap.yaml")["data"]["TURBOINFER_THREADS"]
    assert container["resources"]["limits"]["cpu"] == threads  # CPU limit matched to the threads setting


def test_autoscaling_targets_queue_time_per_pod():
    hpa = load("hpa.yaml")
    assert hpa["apiVersion"] == "autoscaling/v2"
    metric = hpa["spec"]["metrics"][0]
    assert metric["type"] == "Pods" and metric["pods"]["target"]["type"] == "AverageValue"
    rules = load("prometheus-adapter-rules.yaml")["rules"]["custom"][0]
    assert rules["name"]["as"] == metric["pods"]["metric"]["name"]
    assert "turboinfer_queue_duration_seconds" in rules["metricsQuery"]
    keda = load("keda-scaledobject.yaml")
    assert keda["kind"] == "ScaledObject" and keda["spec"]["triggers"][0]["type"] == "prometheus"


def test_a_broken_manifest_is_caught():
    deployment = load("deployment.yaml")
    deployment["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, VERSION, strict=True)


def json_patch(document: dict, operations: list[dict]) -> dict:
    """Apply RFC 6902 `add`/`replace`/`remove` operations (what the LLM overlay uses) to a copy of a manifest."""
    out = copy.deepcopy(document)
    for op in operations:
        *parents, last = op["path"].strip("/").split("/")
        node = out
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        assert op["op"] in ("add", "replace", "remove") and (op["op"] == "add" or last in node or last.isdigit())
        if isinstance(node, list) and last == "-":  # append
            node.append(op["value"])
            continue
        key = int(last) if isinstance(node, list) else last
        if op["op"] == "remove":
            del node[key]
        else:
            node[key] = op["value"]
    return out


def render_overlay(name: str) -> dict[str, dict]:
    """The base manifests an overlay patches, patched and validated, by kind."""
    overlay = yaml.safe_load((K8S / name / "kustomization.yaml").read_text())
    assert overlay["resources"][0] == "../"
    kinds = {"ConfigMap": "configmap.yaml", "Deployment": "deployment.yaml", "HorizontalPodAutoscaler": "hpa.yaml"}
    rendered = {}
    for patch in overlay["patches"]:
        kind = patch["target"]["kind"]
        rendered[kind] = json_patch(load(kinds[kind]), yaml.safe_load(patch["patch"]))
        kubernetes_validate.validate(rendered[kind], VERSION, strict=True)
    for extra in overlay["resources"][1:]:
        kubernetes_validate.validate(load(f"{name}/{extra}"), VERSION, strict=True)
    return rendered


def test_the_llm_overlay_renders_valid_manifests_that_serve_the_llm():
    rendered = render_overlay("llm")
    data, args = rendered["ConfigMap"]["data"], rendered["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert data["TURBOINFER_MODELS"] == "smollm2-135m"
    for option in ("--streams", "--kv-cache-gb", "--max-new-tokens", "--queue"):
        assert option in args["args"][0]
    assert all(f"$({name})" in args["args"][0] for name in data)  # every setting reaches the command line
    metric = rendered["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["pods"]["metric"]["name"]
    rules = [r["name"]["as"] for r in load("prometheus-adapter-rules.yaml")["rules"]["custom"]]
    assert metric == "turboinfer_llm_requests_waiting" and metric in rules


def test_the_search_overlay_serves_replicas_from_one_read_only_index_volume():
    rendered = render_overlay("search")
    data = rendered["ConfigMap"]["data"]
    pod = rendered["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "index")
    volume = next(v for v in pod["volumes"] if v["name"] == "index")
    claim = load("search/index-pvc.yaml")
    assert mount == {"name": "index", "mountPath": data["TURBOINFER_INDEX"], "readOnly": True}
    assert volume["persistentVolumeClaim"] == {"claimName": claim["metadata"]["name"], "readOnly": True}
    assert claim["spec"]["accessModes"] == ["ReadOnlyMany"]
    command = re.sub(r"\$\((\w+)\)", lambda m: data[m.group(1)], container["args"][0])  # every setting resolves
    words = shlex.split(command)
    assert words[:4] == ["exec", "turboinfer", "search", "serve"]
    serve = get_command(search).commands["serve"]
    params = serve.make_context("serve", words[4:]).params  # the real CLI parses these arguments
    assert params["index"] == Path("/index") and params["threads"] == int(data["TURBOINFER_THREADS"])
    assert container["resources"]["limits"]["cpu"] == data["TURBOINFER_THREADS"]
    assert rendered.keys() == {"ConfigMap", "Deployment"}  # the base HPA (queue time per request) scales it
