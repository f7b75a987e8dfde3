#!/usr/bin/env python3
"""Strict JSON schemas for kubeconform, made from the pinned Kubernetes and the project's CRDs.

    kubeconform_schemas.py OUTPUT_DIR OPENAPI_V3_DIR [CRD_FILE...]

OPENAPI_V3_DIR is api/openapi-spec/v3 of the k8s.io/kubernetes module at KUBERNETES_VERSION
(hack/tools/versions.env), so the schemas are those of the API server the tests run, not a
download. Each kind becomes OUTPUT_DIR/<kind>_<group>_<version>.json (lower-case kind; the core
group is "v1", as kubeconform's {{ .Group }} names it), for the schema location
'OUTPUT_DIR/{{ .ResourceKind }}_{{ .Group }}_{{ .ResourceAPIVersion }}.json'.

Strict means what the API server's strict field validation means: an object schema with
properties refuses any other property (additionalProperties: false) unless it preserves unknown
fields. OpenAPI's nullable becomes a "null" type.
"""

import copy
import json
import pathlib
import sys

import yaml


def strict(schema):
    """The schema with additionalProperties: false on every closed object, nullable as a type."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {}
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "definitions"):
            result[key] = {name: strict(child) for name, child in value.items()}
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
            result[key] = strict(value)
        elif key == "description":
            continue  # size only
        else:
            result[key] = value
    if ("properties" in result and "additionalProperties" not in result
            and not result.get("x-kubernetes-preserve-unknown-fields")):
        result["additionalProperties"] = False
    if result.pop("nullable", False) and isinstance(result.get("type"), str):
        result["type"] = [result["type"], "null"]
    return result


def references(schema, found):
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.rsplit("/", 1)[-1])
            else:
                references(value, found)
    elif isinstance(schema, list):
        for item in schema:
            references(item, found)


def rewrite_references(schema):
    if isinstance(schema, dict):
        return {key: ("#/definitions/" + value.rsplit("/", 1)[-1]
                      if key == "$ref" and isinstance(value, str) else rewrite_references(value))
                for key, value in schema.items()}
    if isinstance(schema, list):
        return [rewrite_references(item) for item in schema]
    return schema


def file_name(kind, group, version):
    return f"{kind.lower()}_{group or 'v1'}_{version}.json"


def standalone(root_name, schemas):
    """The schema of root_name with every definition it reaches, references made local."""
    needed, pending = set(), [root_name]
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        found = set()
        references(schemas[name], found)
        pending.extend(found - needed)
    document = rewrite_references(copy.deepcopy(schemas[root_name]))
    document["definitions"] = {name: rewrite_references(schemas[name]) for name in sorted(needed)}
    return strict(document)


def write(output, name, document):
    (output / name).write_text(json.dumps(document, sort_keys=True) + "\n")


def from_openapi(output, openapi_dir):
    count = 0
    for path in sorted(pathlib.Path(openapi_dir).glob("*.json")):
        schemas = json.loads(path.read_text()).get("components", {}).get("schemas", {})
        for name, schema in schemas.items():
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                if gvk["kind"].endswith("List") or gvk["kind"] in ("WatchEvent", "DeleteOptions", "Status"):
                    continue
                # Only the kind's own group-version file: others carry it as a reference.
                group_path = "api__v1" if not gvk["group"] else f"apis__{gvk['group']}__{gvk['version']}"
                if path.name != f"{group_path}_openapi.json":
                    continue
                write(output, file_name(gvk["kind"], gvk["group"], gvk["version"]), standalone(name, schemas))
                count += 1
    return count


def from_crd(output, crd_file):
    count = 0
    for crd in yaml.safe_load_all(pathlib.Path(crd_file).read_text()):
        if not crd or crd.get("kind") != "CustomResourceDefinition":
            continue
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
            properties = schema.setdefault("properties", {})
            properties.setdefault("apiVersion", {"type": "string"})
            properties.setdefault("kind", {"type": "string"})
            # The API server checks metadata itself; a CRD says only `type: object`.
            properties["metadata"] = {"type": "object"}
            write(output, file_name(kind, group, version["name"]), strict(schema))
            count += 1
    return count


def main(arguments):
    if len(arguments) < 2:
        sys.exit(__doc__)
    output = pathlib.Path(arguments[0])
    output.mkdir(parents=True, exist_ok=True)
    count = from_openapi(output, arguments[1])
    if count == 0:
        sys.exit(f"kubeconform_schemas: no kinds in {arguments[1]}")
    for crd_file in arguments[2:]:
        count += from_crd(output, crd_file)
    print(f"kubeconform_schemas: {count} schemas in {output}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
