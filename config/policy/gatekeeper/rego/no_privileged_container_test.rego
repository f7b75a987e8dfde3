package k8snoprivilegedcontainer_test

import rego.v1

import data.k8snoprivilegedcontainer

pod(containers) := {"review": {"object": {"kind": "Pod", "spec": {"containers": containers}}}}

deployment(pod_spec) := {"review": {"object": {"kind": "Deployment", "spec": {"template": {"spec": pod_spec}}}}}

test_privileged_pod_is_refused if {
	results := k8snoprivilegedcontainer.violation with input as pod([{"name": "app", "image": "app:1", "securityContext": {"privileged": true}}])
	count(results) == 1
	some result in results
	contains(result.msg, `"app"`)
}

test_unprivileged_pod_is_allowed if {
	count(k8snoprivilegedcontainer.violation) == 0 with input as pod([{"name": "app", "image": "app:1", "securityContext": {"privileged": false}}])
	count(k8snoprivilegedcontainer.violation) == 0 with input as pod([{"name": "app", "image": "app:1"}])
}

test_privileged_init_container_of_a_deployment_is_refused if {
	spec := {
		"initContainers": [{"name": "setup", "image": "busybox:1.36", "securityContext": {"privileged": true}}],
		"containers": [{"name": "app", "image": "app:1"}],
	}
	count(k8snoprivilegedcontainer.violation) == 1 with input as deployment(spec)
}

test_privileged_ephemeral_container_is_refused if {
	spec := {
		"containers": [{"name": "app", "image": "app:1"}],
		"ephemeralContainers": [{"name": "debug", "image": "busybox:1.36", "securityContext": {"privileged": true}}],
	}
	count(k8snoprivilegedcontainer.violation) == 1 with input as {"review": {"object": {"kind": "Pod", "spec": spec}}}
}

test_privileged_cronjob_is_refused if {
	object := {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "job", "image": "job:1", "securityContext": {"privileged": true}}]}}}}}}
	count(k8snoprivilegedcontainer.violation) == 1 with input as {"review": {"object": object}}
}

as_user(request, username) := object.union(request, {"review": {"userInfo": {"username": username}}})

test_system_components_are_left_alone if {
	every username in [
		"system:serviceaccount:kube-system:replicaset-controller",
		"system:node:node-1",
		"system:kube-controller-manager",
	] {
		count(k8snoprivilegedcontainer.violation) == 0 with input as as_user(pod([{"name": "app", "image": "app:1", "securityContext": {"privileged": true}}]), username)
	}
	# Anyone else, a ServiceAccount of another namespace included, is checked.
	every username in ["alice", "system:serviceaccount:team-a:deployer", "system:serviceaccount:kube-systemx:a"] {
		count(k8snoprivilegedcontainer.violation) > 0 with input as as_user(pod([{"name": "app", "image": "app:1", "securityContext": {"privileged": true}}]), username)
	}
}
