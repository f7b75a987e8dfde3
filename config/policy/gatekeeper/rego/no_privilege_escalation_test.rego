package k8snoprivilegeescalation_test

import rego.v1

import data.k8snoprivilegeescalation

deployment(containers) := {"review": {"object": {"kind": "Deployment", "spec": {"template": {"spec": {"containers": containers}}}}}}

test_escalation_allowed_explicitly_is_refused if {
	count(k8snoprivilegeescalation.violation) == 1 with input as deployment([{"name": "app", "image": "app:1", "securityContext": {"allowPrivilegeEscalation": true}}])
}

test_escalation_left_unset_is_refused if {
	count(k8snoprivilegeescalation.violation) == 1 with input as deployment([{"name": "app", "image": "app:1"}])
	count(k8snoprivilegeescalation.violation) == 1 with input as deployment([{"name": "app", "image": "app:1", "securityContext": {"runAsNonRoot": true}}])
}

test_escalation_turned_off_is_allowed if {
	count(k8snoprivilegeescalation.violation) == 0 with input as deployment([{"name": "app", "image": "app:1", "securityContext": {"allowPrivilegeEscalation": false}}])
}

test_every_container_is_checked if {
	containers := [
		{"name": "good", "image": "app:1", "securityContext": {"allowPrivilegeEscalation": false}},
		{"name": "bad", "image": "app:1", "securityContext": {"allowPrivilegeEscalation": true}},
	]
	results := k8snoprivilegeescalation.violation with input as deployment(containers)
	count(results) == 1
	some result in results
	contains(result.msg, `"bad"`)
}

as_user(request, username) := object.union(request, {"review": {"userInfo": {"username": username}}})

test_system_components_are_left_alone if {
	every username in [
		"system:serviceaccount:kube-system:replicaset-controller",
		"system:node:node-1",
		"system:kube-controller-manager",
	] {
		count(k8snoprivilegeescalation.violation) == 0 with input as as_user(deployment([{"name": "app", "image": "app:1"}]), username)
	}
	# Anyone else, a ServiceAccount of another namespace included, is checked.
	every username in ["alice", "system:serviceaccount:team-a:deployer", "system:serviceaccount:kube-systemx:a"] {
		count(k8snoprivilegeescalation.violation) > 0 with input as as_user(deployment([{"name": "app", "image": "app:1"}]), username)
	}
}
