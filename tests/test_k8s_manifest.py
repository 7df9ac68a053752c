"""docker/k8s.yaml (issue 31, item 5): valid Kubernetes objects by a schema of the fields this manifest relies on
(kinds and apiVersions, required fields and their types), and consistent with each other and with the server:
a headless Service selecting the StatefulSet's pods, the token from the Secret at the path the server reads,
CPU/memory limits, a read-only root filesystem."""
import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G)?$")

# kind -> (apiVersion, {dotted path: type}) for the fields each object must carry; "[]" = every list item
SCHEMA = {
    "Secret": ("v1", {"metadata.name": str, "type": str, "stringData.token": str}),
    "Service": ("v1", {"metadata.name": str, "spec.clusterIP": str, "spec.selector": dict, "spec.ports": list,
                       "spec.ports[].port": int, "spec.ports[].targetPort": int, "spec.ports[].name": str}),
    "StatefulSet": ("apps/v1", {
        "metadata.name": str, "spec.serviceName": str, "spec.replicas": int, "spec.selector.matchLabels": dict,
        "spec.template.metadata.labels": dict, "spec.template.spec.containers": list,
        "spec.template.spec.containers[].name": str, "spec.template.spec.containers[].image": str,
        "spec.template.spec.containers[].args": list,
        "spec.template.spec.containers[].ports[].containerPort": int,
        "spec.template.spec.containers[].resources.limits.cpu": str,
        "spec.template.spec.containers[].resources.limits.memory": str,
        "spec.template.spec.containers[].securityContext.readOnlyRootFilesystem": bool,
        "spec.template.spec.containers[].volumeMounts[].name": str,
        "spec.template.spec.containers[].volumeMounts[].mountPath": str,
        "spec.template.spec.volumes[].name": str}),
}


def values(node, path: str):
    """Every value at `path` ('a.b[].c': c of every item of the list a.b); KeyError naming a missing step."""
    head, _, rest = path.partition(".")
    many = head.endswith("[]")
    key = head.removesuffix("[]")
    if not isinstance(node, dict) or key not in node:
        raise KeyError(key)
    items = node[key] if many else [node[key]]
    assert not many or isinstance(items, list), f"{key} is not a list"
    return [v for item in items for v in (values(item, rest) if rest else [item])]


def schema_problems(doc) -> list[str]:
    kind = doc.get("kind")
    if kind not in SCHEMA:
        return [f"kind {kind!r} is not one of {sorted(SCHEMA)}"]
    api, fields = SCHEMA[kind]
    out = [] if doc.get("apiVersion") == api else [f"{kind}: apiVersion {doc.get('apiVersion')!r}, expected {api!r}"]
    name = doc.get("metadata", {}).get("name", "")
    if not DNS_1123.match(name or ""):
        out.append(f"{kind}: metadata.name {name!r} is not a DNS-1123 label")
    for path, typ in fields.items():
        try:
            got = values(doc, path)
        except KeyError as e:
            out.append(f"{kind} {name}: {path}: missing {e}")
            continue
        out += [f"{kind} {name}: {path} = {v!r} is not {typ.__name__}" for v in got
                if not isinstance(v, typ) or (typ is int and isinstance(v, bool))]
    return out


def load():
    docs = list(yaml.safe_load_all((ROOT / "docker" / "k8s.yaml").read_text()))
    return {d["kind"]: d for d in docs}, docs


def test_manifest_objects_pass_the_schema():
    by_kind, docs = load()
    assert sorted(d["kind"] for d in docs) == ["Secret", "Service", "StatefulSet"]
    assert [p for d in docs for p in schema_problems(d)] == []
    # the schema catches what it should
    bad = yaml.safe_load("apiVersion: apps/v1beta1\nkind: StatefulSet\nmetadata: {name: Env_Fleet}\nspec: {replicas: '3'}")
    problems = schema_problems(bad)
    assert any("apiVersion 'apps/v1beta1'" in p for p in problems) and any("DNS-1123" in p for p in problems)
    assert any("spec.replicas = '3' is not int" in p for p in problems)
    assert any("spec.serviceName: missing 'serviceName'" in p for p in problems)


def test_fleet_is_headless_limited_read_only_and_reads_the_token_from_the_secret():
    by_kind, _ = load()
    secret, service, sts = by_kind["Secret"], by_kind["Service"], by_kind["StatefulSet"]
    assert service["spec"]["clusterIP"] == "None" and sts["spec"]["serviceName"] == service["metadata"]["name"]
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    pod = sts["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert [p["containerPort"] for p in c["ports"]] == [p["targetPort"] for p in service["spec"]["ports"]] == [8765]
    for kind in ("requests", "limits"):
        assert QUANTITY.match(c["resources"][kind]["cpu"]) and QUANTITY.match(c["resources"][kind]["memory"])
    assert c["resources"]["requests"] == c["resources"]["limits"]  # equal quotas: no straggler
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and pod["securityContext"]["runAsNonRoot"] is True
    # --token-file points into the mount of the Secret's volume, at the Secret's key; the server's own args
    args = c["args"]
    token_file = args[args.index("--token-file") + 1]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mount = next(m for m in c["volumeMounts"] if token_file.startswith(m["mountPath"] + "/"))
    assert mount["readOnly"] is True
    assert volumes[mount["name"]]["secret"]["secretName"] == secret["metadata"]["name"]
    assert token_file[len(mount["mountPath"]) + 1:] in secret["stringData"]
    assert secret["stringData"]["token"] == ""  # ships empty: the servers refuse to start until it is set
    assert args[args.index("--port") + 1] == "8765" and args[args.index("--host") + 1] == "0.0.0.0"
    # the writable paths are exactly the mounts: /tmp (memory) and the read-only token
    assert sorted(m["mountPath"] for m in c["volumeMounts"]) == ["/run/secrets/env-token", "/tmp"]
    from gui_jax.envs.server import parse_args
    cfg, _ = parse_args([a for a in args if a != token_file and a != "--token-file"])
    assert (cfg.backend, cfg.port) == ("phonesim", 8765)
