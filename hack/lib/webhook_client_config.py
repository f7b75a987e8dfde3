#!/usr/bin/env python3
"""Points shipped manifests at a conversion webhook outside the cluster (a URL and its CA).

    webhook_client_config.py crd URL CA_FILE [MANIFEST]
        The MyResource CRD (myresources.myorg.io) of MANIFEST (a file or stdin, one or more YAML
        documents) with spec.conversion.webhook.clientConfig = {url: URL, caBundle: base64 of CA_FILE}
        in place of the Service the chart and config/crd name: a test control plane has no pod
        network, so its API server can only reach a webhook on loopback. Fails when MANIFEST holds
        no such CRD.
    webhook_client_config.py crd-if-present URL CA_FILE [MANIFEST]
        As `crd`, but MANIFEST without that CRD (an Application that names it, a Pod) is written
        back unchanged: for manifests that may or may not hold it (rendered charts, kustomize builds).
    webhook_client_config.py chart-values URL CA_FILE [MANIFEST]
        Every Argo CD Application of MANIFEST with spec.source.helm.valuesObject gets
        valuesObject.webhook = {url, caBundle}: the chart then renders the CRD as `crd` does.
    webhook_client_config.py --self-test

Writes the result to stdout. Only the block at that path changes; every other line, comment and
quote stays as it was (a YAML library would rewrite the whole file). The path is found by
indentation, so the file's indentation does not matter; the keys on the path must be block
mappings (`key:` on a line of its own), as they are in every manifest of this repository.
Used by hack/lib/conversion-webhook (the test fixture and bench/run), hack/argocd-env and the
packaging integration tests (test/integration/packaging/packaging_support.h, with_fixture_webhook):
the one rewriter of that clientConfig.
"""
import base64
import json
import re
import sys

CRD_PATH = ["spec", "conversion", "webhook", "clientConfig"]
VALUES_PATH = ["spec", "source", "helm", "valuesObject", "webhook"]
KEY = re.compile(r"^( *)([A-Za-z0-9_.\-/]+):(?: +(.*?))? *$")


def content(line):
    """A line that belongs to the YAML structure (not blank, not a comment)."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def children(lines, parent, start, end):
    """(first, last + 1) of the lines below the key at `parent` (-1: the document) within [start, end).

    The block ends before the first content line at the parent's indentation or less; blank and
    comment lines after its last content line belong to what follows."""
    parent_indent = indent_of(lines[parent]) if parent >= 0 else -1
    first = parent + 1 if parent >= 0 else start
    last = first
    for index in range(first, end):
        if not content(lines[index]):
            continue
        if indent_of(lines[index]) <= parent_indent:
            break
        last = index + 1
    return first, last


def find_key(lines, parent, start, end, key):
    """Index of the line `key:` directly below `parent`, or None."""
    first, last = children(lines, parent, start, end)
    child_indent = next((indent_of(lines[i]) for i in range(first, last) if content(lines[i])), None)
    for index in range(first, last):
        match = KEY.match(lines[index])
        if match and len(match.group(1)) == child_indent and match.group(2) == key:
            return index
    return None


def lookup(lines, path, start=0, end=None):
    """Index of the line of the last key of `path`, or None."""
    end = len(lines) if end is None else end
    parent = -1
    for key in path:
        parent = find_key(lines, parent, start, end, key)
        if parent is None:
            return None
    return parent


def scalar(lines, path):
    at = lookup(lines, path)
    if at is None:
        return None
    value = KEY.match(lines[at]).group(3) or ""
    return value.strip("'\"")


def set_mapping(lines, path, values):
    """`lines` with the mapping at `path` replaced by `values` (a dict of scalars); the keys of the
    path that are missing are added at the end of their parent's block."""
    lines = list(lines)
    parent = -1
    step = 2  # the file's indentation step, as far as the path shows it
    for depth, key in enumerate(path):
        found = find_key(lines, parent, 0, len(lines), key)
        parent_indent = indent_of(lines[parent]) if parent >= 0 else -step
        if found is None:
            first, last = children(lines, parent, 0, len(lines))
            indent = next((indent_of(lines[i]) for i in range(first, last) if content(lines[i])),
                          parent_indent + step)
            lines.insert(last, " " * indent + key + ":")
            found = last
        else:
            if parent >= 0:
                step = indent_of(lines[found]) - parent_indent
            inline = KEY.match(lines[found]).group(3)
            if inline and not inline.startswith("#"):
                if depth < len(path) - 1:
                    raise ValueError(f"{'.'.join(path[:depth + 1])} is not a block mapping: {lines[found].strip()}")
                lines[found] = " " * indent_of(lines[found]) + key + ":"
        parent = found
    first, last = children(lines, parent, 0, len(lines))
    indent = next((indent_of(lines[i]) for i in range(first, last) if content(lines[i])),
                  indent_of(lines[parent]) + step)
    lines[first:last] = [" " * indent + f"{name}: {json.dumps(value)}" for name, value in values.items()]
    return lines


def documents(text):
    """The YAML documents of `text` as lists of lines, and the separator lines between them."""
    parts, current = [], []
    for line in text.split("\n"):
        if line.rstrip() == "---":
            parts.append(current)
            parts.append(line)
            current = []
        else:
            current.append(line)
    parts.append(current)
    return parts


def rewrite(text, document_matches, path, values, required):
    changed = 0
    output = []
    for part in documents(text):
        if isinstance(part, str):
            output.append(part)
            continue
        if document_matches(part):
            part = set_mapping(part, path, values)
            changed += 1
        output.extend(part)
    if required and not changed:
        raise ValueError("no document to rewrite: " + required)
    return "\n".join(output)


def is_myresource_crd(lines):
    return (scalar(lines, ["kind"]) == "CustomResourceDefinition"
            and scalar(lines, ["metadata", "name"]) == "myresources.myorg.io")


def has_chart_values(lines):
    return scalar(lines, ["kind"]) == "Application" and lookup(lines, VALUES_PATH[:-1]) is not None


def client_config(url, ca_pem):
    return {"url": url, "caBundle": base64.b64encode(ca_pem).decode()}


def crd(text, url, ca_pem, required=True):
    return rewrite(text, is_myresource_crd, CRD_PATH, client_config(url, ca_pem),
                   required="the CustomResourceDefinition myresources.myorg.io" if required else None)


def crd_if_present(text, url, ca_pem):
    return crd(text, url, ca_pem, required=False)


def chart_values(text, url, ca_pem):
    return rewrite(text, has_chart_values, VALUES_PATH, client_config(url, ca_pem), required=None)


def self_test():
    ca = b"-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n"
    bundle = base64.b64encode(ca).decode()
    url = "https://127.0.0.1:8443/convert"
    shipped = """# comment
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: myresources.myorg.io
spec:
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig:
        service:
          namespace: my-operator-system
          name: my-operator-webhook
        # a comment of the next key
      other: kept
  versions:
    - name: v1alpha1
"""
    expected = shipped.replace("""        service:
          namespace: my-operator-system
          name: my-operator-webhook
""", f"""        url: "{url}"
        caBundle: "{bundle}"
""")
    assert crd(shipped, url, ca) == expected, crd(shipped, url, ca)
    assert crd("---\n" + shipped, url, ca) == "---\n" + expected
    # Another indentation (4 spaces), a second document before it, and an inline clientConfig.
    other = ("kind: ConfigMap\nmetadata:\n    name: x\ndata:\n    a: \"true\"\n---\n"
             "kind: CustomResourceDefinition\nmetadata:\n    name: myresources.myorg.io\nspec:\n"
             "    conversion:\n        webhook:\n            clientConfig: {service: {name: s}}\n")
    assert crd(other, url, ca) == other.replace(
        "            clientConfig: {service: {name: s}}\n",
        f"            clientConfig:\n                url: \"{url}\"\n                caBundle: \"{bundle}\"\n"), \
        crd(other, url, ca)
    # A CRD of another name, or none: an error, not an unchanged file.
    for text in ("kind: ConfigMap\n", shipped.replace("myresources.myorg.io", "others.myorg.io")):
        try:
            crd(text, url, ca)
            raise AssertionError("no error for a manifest without the CRD")
        except ValueError:
            pass
    # ... unless it may be absent: then the manifest comes back as it was, whatever names the CRD.
    assert crd_if_present(shipped, url, ca) == expected
    naming = "kind: Application\nspec:\n  ignoreDifferences:\n    - kind: CustomResourceDefinition\n" \
             "      name: myresources.myorg.io\n"
    assert crd_if_present(naming, url, ca) == naming, crd_if_present(naming, url, ca)
    # A CRD without conversion gets the whole path.
    bare = "kind: CustomResourceDefinition\nmetadata:\n  name: myresources.myorg.io\nspec:\n  group: myorg.io\n"
    assert crd(bare, url, ca) == bare + (f"  conversion:\n    webhook:\n      clientConfig:\n"
                                         f"        url: \"{url}\"\n        caBundle: \"{bundle}\"\n"), \
        crd(bare, url, ca)
    application = """kind: Application
spec:
  source:
    helm:
      releaseName: my-operator
      valuesObject:
        image:
          repository: r
        replicaCount: 2
  # comment of destination
  destination:
    namespace: n
"""
    assert chart_values(application, url, ca) == application.replace(
        "        replicaCount: 2\n",
        f"        replicaCount: 2\n        webhook:\n          url: \"{url}\"\n          caBundle: \"{bundle}\"\n"), \
        chart_values(application, url, ca)
    # An Application without chart values (another app of the repository) is left as it is.
    plain = "kind: Application\nspec:\n  source:\n    path: apps\n"
    assert chart_values(plain, url, ca) == plain
    print("webhook_client_config: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    modes = {"crd": crd, "crd-if-present": crd_if_present, "chart-values": chart_values}
    if len(argv) not in (4, 5) or argv[1] not in modes:
        sys.stderr.write(__doc__)
        return 2
    mode, url, ca_file = argv[1:4]
    with open(ca_file, "rb") as f:
        ca_pem = f.read()
    if len(argv) == 5:
        with open(argv[4]) as f:
            text = f.read()
    else:
        text = sys.stdin.read()
    try:
        sys.stdout.write(modes[mode](text, url, ca_pem))
    except ValueError as error:
        sys.stderr.write(f"webhook_client_config: {error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
