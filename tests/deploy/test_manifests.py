"""The Kubernetes manifests validate against the Kubernetes schemas and agree with the server's behaviour."""

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

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
