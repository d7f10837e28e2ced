#!/usr/bin/env python3
"""The official Python `kubernetes` client against a running Corral API server.

Usage: test_client.py KUBECONFIG

A plain script, not a pytest module: each check is an `assert`, and the exit code is 0 only
when every check passed. The Rust integration test `python_client` starts a fresh server and
runs this script against it (crates/corral/tests/it/python_client.rs).

Waits are polls with a deadline, never fixed sleeps: the server's behaviour, not its speed, is
what is being checked.
"""

import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

# Generous: CI machines are busy compiling while the tests run.
DEADLINE_SECONDS = 30
# Bounds every watch, so that a missing event fails the run instead of hanging it.
WATCH_TIMEOUT_SECONDS = 30

GROUP = "example.com"
VERSION = "v1"
PLURAL = "gadgets"


def log(message):
    print(message, flush=True)


def eventually(what, check):
    """Calls `check` until it returns something truthy, failing after the deadline."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def expect_api_error(status, call, *args, **kwargs):
    """Runs `call` and returns the ApiException it must raise, with HTTP status `status`."""
    try:
        call(*args, **kwargs)
    except ApiException as error:
        assert error.status == status, f"expected HTTP {status}, got {error.status}: {error.body}"
        return error
    raise AssertionError(f"{call.__name__} succeeded; expected HTTP {status}")


def not_found(call, *args, **kwargs):
    """True when `call` raises a 404 ApiException; other errors propagate."""
    try:
        call(*args, **kwargs)
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


def configmap(name, data, labels=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels), data=data
    )


def test_namespace(core):
    name = "py-namespace"
    created = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    assert created.metadata.name == name
    assert created.metadata.uid, "the server sets a uid"
    assert created.metadata.resource_version, "the server sets a resourceVersion"

    read = core.read_namespace(name)
    assert read.metadata.uid == created.metadata.uid

    names = [item.metadata.name for item in core.list_namespace().items]
    assert name in names, f"{name} missing from {names}"
    assert "default" in names, f"default missing from {names}"

    patched = core.patch_namespace(name, {"metadata": {"labels": {"team": "blue"}}})
    assert patched.metadata.labels == {"team": "blue"}, patched.metadata.labels

    patched.metadata.labels["team"] = "green"
    replaced = core.replace_namespace(name, patched)
    assert replaced.metadata.labels == {"team": "green"}, replaced.metadata.labels
    assert int(replaced.metadata.resource_version) > int(patched.metadata.resource_version)

    selected = core.list_namespace(label_selector="team=green").items
    assert [item.metadata.name for item in selected] == [name], selected

    core.delete_namespace(name)

    # An empty namespace goes away at once or after a short Terminating phase.
    def gone_or_terminating():
        try:
            namespace = core.read_namespace(name)
        except ApiException as error:
            if error.status == 404:
                return True
            raise
        return namespace.metadata.deletion_timestamp is not None

    eventually(f"namespace {name} to be deleted", gone_or_terminating)
    eventually(f"namespace {name} to be gone", lambda: not_found(core.read_namespace, name))
    log("namespace: ok")


def test_configmap(core, namespace):
    name = "py-config"
    created = core.create_namespaced_config_map(
        namespace, configmap(name, {"color": "red"}, labels={"app": "py"})
    )
    assert created.metadata.namespace == namespace
    assert created.data == {"color": "red"}

    read = core.read_namespaced_config_map(name, namespace)
    assert read.data == {"color": "red"}
    assert read.metadata.resource_version == created.metadata.resource_version

    listed = core.list_namespaced_config_map(namespace, label_selector="app=py")
    assert [item.metadata.name for item in listed.items] == [name], listed.items
    assert listed.metadata.resource_version, "a list carries a resourceVersion"

    # A dict body goes as a strategic merge patch, a list body as a JSON patch.
    patched = core.patch_namespaced_config_map(name, namespace, {"data": {"size": "large"}})
    assert patched.data == {"color": "red", "size": "large"}, patched.data
    patched = core.patch_namespaced_config_map(
        name, namespace, [{"op": "replace", "path": "/data/color", "value": "blue"}]
    )
    assert patched.data == {"color": "blue", "size": "large"}, patched.data

    stale = core.read_namespaced_config_map(name, namespace)
    fresh = core.read_namespaced_config_map(name, namespace)
    fresh.data = {"color": "green"}
    replaced = core.replace_namespaced_config_map(name, namespace, fresh)
    assert replaced.data == {"color": "green"}, replaced.data
    assert int(replaced.metadata.resource_version) > int(stale.metadata.resource_version)

    # `stale` still carries the resourceVersion from before the replace.
    stale.data = {"color": "purple"}
    error = expect_api_error(409, core.replace_namespaced_config_map, name, namespace, stale)
    assert "Conflict" in error.body, error.body
    assert core.read_namespaced_config_map(name, namespace).data == {"color": "green"}

    expect_api_error(409, core.create_namespaced_config_map, namespace, configmap(name, {}))

    core.delete_namespaced_config_map(name, namespace)
    error = expect_api_error(404, core.read_namespaced_config_map, name, namespace)
    assert "NotFound" in error.body, error.body
    expect_api_error(404, core.delete_namespaced_config_map, name, namespace)
    log("configmap: ok")


def create_crd(extensions, custom):
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    created = extensions.create_custom_resource_definition(crd)
    assert created.metadata.name == f"{PLURAL}.{GROUP}"
    read = extensions.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
    assert read.spec.names.kind == "Gadget"

    def served():
        try:
            custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    eventually("the CRD to be served", served)


def test_custom_objects(extensions, custom, namespace):
    create_crd(extensions, custom)
    name = "py-gadget"
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Gadget",
        "metadata": {"name": name, "labels": {"app": "py"}},
        "spec": {"color": "red", "size": 3},
    }
    # The client sends this POST without a Content-Type header.
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    assert created["metadata"]["name"] == name
    assert created["metadata"]["uid"]
    assert created["metadata"]["generation"] == 1, created["metadata"]
    assert created["spec"] == {"color": "red", "size": 3}, created["spec"]

    read = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    assert read["spec"] == {"color": "red", "size": 3}

    listed = custom.list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, label_selector="app=py"
    )
    assert [item["metadata"]["name"] for item in listed["items"]] == [name], listed
    everywhere = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert [item["metadata"]["name"] for item in everywhere["items"]] == [name], everywhere

    # CustomObjectsApi patches are merge patches.
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, {"spec": {"color": "blue", "size": None}}
    )
    assert patched["spec"] == {"color": "blue"}, patched["spec"]
    assert patched["metadata"]["generation"] == 2, patched["metadata"]

    status = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, name, {"status": {"phase": "Ready"}}
    )
    assert status["status"] == {"phase": "Ready"}, status
    assert status["metadata"]["generation"] == 2, "a status write does not bump the generation"

    replaced_body = dict(status)
    replaced_body["spec"] = {"color": "green"}
    replaced = custom.replace_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, replaced_body
    )
    assert replaced["spec"] == {"color": "green"}, replaced
    expect_api_error(
        409,
        custom.replace_namespaced_custom_object,
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        name,
        replaced_body,
    )

    custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    expect_api_error(
        404, custom.get_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, name
    )
    log("custom objects: ok")


def test_watch(core, namespace):
    """ADDED, MODIFIED and DELETED reach a watch for changes made from another thread."""
    # The synthetic ADDED for an object that exists before the watch starts shows that the
    # watch is streaming; only then are the changes made.
    core.create_namespaced_config_map(namespace, configmap("py-watch-sentinel", {}))
    name = "py-watched"
    errors = []

    def make_changes():
        try:
            core.create_namespaced_config_map(namespace, configmap(name, {"step": "1"}))
            core.patch_namespaced_config_map(name, namespace, {"data": {"step": "2"}})
            core.delete_namespaced_config_map(name, namespace)
        except Exception as error:  # reported by the main thread
            errors.append(error)

    writer = threading.Thread(target=make_changes)
    started = False
    seen = []
    stream = watch.Watch()
    for event in stream.stream(
        core.list_namespaced_config_map, namespace, timeout_seconds=WATCH_TIMEOUT_SECONDS
    ):
        object_name = event["object"].metadata.name
        if object_name == "py-watch-sentinel" and not started:
            writer.start()
            started = True
        if object_name == name:
            seen.append((event["type"], event["object"].data))
            if event["type"] == "DELETED":
                stream.stop()
    writer.join()
    assert not errors, errors
    assert seen == [
        ("ADDED", {"step": "1"}),
        ("MODIFIED", {"step": "2"}),
        ("DELETED", {"step": "2"}),
    ], seen
    log("watch: ok")


def test_watch_resume(core, namespace):
    """A watch from a list's resourceVersion replays exactly the changes made after it."""
    core.create_namespaced_config_map(namespace, configmap("py-resume-a", {"step": "1"}))
    listed = core.list_namespaced_config_map(namespace)
    resume_from = listed.metadata.resource_version
    core.patch_namespaced_config_map("py-resume-a", namespace, {"data": {"step": "2"}})
    core.create_namespaced_config_map(namespace, configmap("py-resume-b", {"step": "1"}))
    core.delete_namespaced_config_map("py-resume-a", namespace)

    seen = []
    stream = watch.Watch()
    for event in stream.stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=resume_from,
        timeout_seconds=WATCH_TIMEOUT_SECONDS,
    ):
        metadata = event["object"].metadata
        assert int(metadata.resource_version) > int(resume_from), (event["type"], metadata)
        seen.append((event["type"], metadata.name))
        if len(seen) == 3:
            stream.stop()
    assert seen == [
        ("MODIFIED", "py-resume-a"),
        ("ADDED", "py-resume-b"),
        ("DELETED", "py-resume-a"),
    ], seen
    # The watch client remembers where it stopped.
    assert int(stream.resource_version) > int(resume_from)
    log("watch resume: ok")


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} KUBECONFIG")
    config.load_kube_config(config_file=sys.argv[1])
    core = client.CoreV1Api()
    extensions = client.ApiextensionsV1Api()
    custom = client.CustomObjectsApi()

    namespace = "py-test"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))

    test_namespace(core)
    test_configmap(core, namespace)
    test_custom_objects(extensions, custom, namespace)
    test_watch(core, namespace)
    test_watch_resume(core, namespace)
    log("all Python client checks passed")


if __name__ == "__main__":
    main()
