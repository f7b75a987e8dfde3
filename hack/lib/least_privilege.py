#!/usr/bin/env python3
"""Least privilege, proven from the API server's audit log.

  least_privilege.py AUDIT_LOG SERVICE_ACCOUNT RBAC_JSON ALLOWLIST

SERVICE_ACCOUNT is NAMESPACE:NAME. RBAC_JSON is `kubectl get clusterroles,clusterrolebindings,
roles,rolebindings -A -o json`. Fails (exit 1, one line per finding) when:
  - a request of the ServiceAccount was denied by the authorizer (audit annotation
    authorization.k8s.io/decision: forbid; an admission 403 such as a terminating namespace is not
    a missing grant);
  - a rule bound to it holds a wildcard (verbs, apiGroups, resources, nonResourceURLs);
  - anything binds cluster-admin to it, or a binding made for it (same labels) binds cluster-admin;
  - a granted (verb, group, resource) was never used by any of its requests in the log, unless
    ALLOWLIST names it with a reason ("verb group/resource  reason"; group "core" for "").
Bindings to the ServiceAccount's groups (system:serviceaccounts, system:authenticated) are the
cluster's defaults (discovery, self-review), not the chart's, and are left out.
"""
import json
import sys

WILDCARD = "*"


def load_allowlist(path):
    allowed = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split(None, 2)
            if len(fields) < 3:
                sys.exit(f"{path}:{number}: expected 'VERB GROUP/RESOURCE REASON', got: {line}")
            verb, target, reason = fields
            group, _, resource = target.partition("/")
            allowed[(verb, "" if group == "core" else group, resource)] = reason
    return allowed


def bound_rules(rbac, namespace, name):
    """The (binding, role, rules, scope namespace) bound to the ServiceAccount itself."""
    roles = {}
    bindings = []
    for item in rbac.get("items", []):
        kind = item.get("kind")
        meta = item.get("metadata", {})
        if kind in ("ClusterRole", "Role"):
            roles[(kind, meta.get("namespace", ""), meta.get("name"))] = item
        elif kind in ("ClusterRoleBinding", "RoleBinding"):
            bindings.append(item)
    found = []
    for binding in bindings:
        subjects = binding.get("subjects") or []
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == name and
                   s.get("namespace") == namespace for s in subjects):
            continue
        ref = binding.get("roleRef", {})
        scope = binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else ""
        role_namespace = scope if ref.get("kind") == "Role" else ""
        role = roles.get((ref.get("kind"), role_namespace, ref.get("name")))
        found.append((binding, ref, role, scope))
    return found


def used_requests(log_path, user):
    used = set()
    denied = []
    with open(log_path, encoding="utf-8") as log:
        for line in log:
            if user not in line:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("stage") != "ResponseComplete" or entry.get("user", {}).get("username") != user:
                continue
            ref = entry.get("objectRef") or {}
            code = (entry.get("responseStatus") or {}).get("code")
            resource = ref.get("resource", "")
            if ref.get("subresource"):
                resource += "/" + ref["subresource"]
            described = "{} {}/{} {}/{} -> {}".format(entry.get("verb"), ref.get("apiGroup", "") or "core", resource,
                                                       ref.get("namespace", ""), ref.get("name", ""), code)
            # Denied by the authorizer (RBAC), not a 403 of admission such as "namespace is being
            # terminated", which the operator meets when a namespace goes while it reconciles there.
            if (entry.get("annotations") or {}).get("authorization.k8s.io/decision") == "forbid":
                denied.append(described)
                continue
            if resource:
                used.add((entry.get("verb"), ref.get("apiGroup", ""), resource))
            else:
                used.add((entry.get("verb"), "nonResourceURL", entry.get("requestURI", "")))
    return used, denied


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    log_path, account, rbac_path, allowlist_path = argv[1:]
    namespace, _, name = account.partition(":")
    user = f"system:serviceaccount:{namespace}:{name}"
    with open(rbac_path, encoding="utf-8") as rbac_file:
        rbac = json.load(rbac_file)
    allowed_unused = load_allowlist(allowlist_path)
    used, denied = used_requests(log_path, user)
    findings = [f"denied: {d}" for d in denied]
    granted = {}
    bindings = bound_rules(rbac, namespace, name)
    if not bindings:
        findings.append(f"nothing is bound to {user}: the RBAC under test is missing")
    for binding, ref, role, scope in bindings:
        where = f"{binding['kind']} {binding['metadata'].get('namespace', '')}/{binding['metadata']['name']}"
        if ref.get("name") == "cluster-admin":
            findings.append(f"{where} binds cluster-admin")
            continue
        if role is None:
            findings.append(f"{where} refers to a missing {ref.get('kind')} {ref.get('name')}")
            continue
        for rule in role.get("rules") or []:
            for field in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"):
                if WILDCARD in (rule.get(field) or []):
                    findings.append(f"{ref.get('kind')} {ref.get('name')} ({where}) has a wildcard in {field}: {rule}")
            for verb in rule.get("verbs") or []:
                for group in rule.get("apiGroups") or []:
                    for resource in rule.get("resources") or []:
                        granted.setdefault((verb, group, resource), set()).add(ref.get("name"))
                for url in rule.get("nonResourceURLs") or []:
                    granted.setdefault((verb, "nonResourceURL", url), set()).add(ref.get("name"))
    # Any binding carrying the release's labels that binds cluster-admin, to anyone.
    for item in rbac.get("items", []):
        if item.get("kind") in ("ClusterRoleBinding", "RoleBinding") and \
                item.get("roleRef", {}).get("name") == "cluster-admin" and \
                (item["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == "my-operator":
            findings.append(f"{item['kind']} {item['metadata']['name']} (my-operator's) binds cluster-admin")
    for grant in sorted(granted):
        verb, group, resource = grant
        if grant in used:
            continue
        if grant in allowed_unused:
            print(f"allowed, unused here: {verb} {group or 'core'}/{resource}: {allowed_unused[grant]}")
            continue
        findings.append(f"granted but never used: {verb} {group or 'core'}/{resource} "
                        f"(by {', '.join(sorted(granted[grant]))}); remove it, or allow-list it with a reason")
    for grant in sorted(allowed_unused):
        if grant not in granted:
            findings.append(f"the allow-list names {grant[0]} {grant[1] or 'core'}/{grant[2]}, which is not granted")
    print(f"{user}: {len(granted)} granted (verb, group, resource), {len(used)} used, {len(denied)} denied")
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
