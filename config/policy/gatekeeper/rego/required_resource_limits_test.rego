package k8srequiredresourcelimits_test

import rego.v1

import data.k8srequiredresourcelimits

deployment(resources) := {"review": {"object": {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:1", "resources": resources}]}}}}}}

test_both_limits_are_allowed if {
	count(k8srequiredresourcelimits.violation) == 0 with input as deployment({"limits": {"cpu": "500m", "memory": "256Mi"}})
}

test_each_missing_limit_is_named if {
	results := k8srequiredresourcelimits.violation with input as deployment({"requests": {"cpu": "100m"}, "limits": {"cpu": "500m"}})
	count(results) == 1
	some result in results
	contains(result.msg, "limits.memory")
	count(k8srequiredresourcelimits.violation) == 2 with input as deployment({})
}

test_parameters_choose_the_resources if {
	review := deployment({"limits": {"cpu": "500m"}})
	count(k8srequiredresourcelimits.violation) == 0 with input as object.union(review, {"parameters": {"resources": ["cpu"]}})
	count(k8srequiredresourcelimits.violation) == 1 with input as object.union(review, {"parameters": {"resources": ["cpu", "ephemeral-storage"]}})
}

test_myresource_without_limits_is_refused if {
	object := {"kind": "MyResource", "spec": {"image": "app:1", "resources": {"requests": {"cpu": "1"}}}}
	count(k8srequiredresourcelimits.violation) == 2 with input as {"review": {"object": object}}
	with_limits := {"kind": "MyResource", "spec": {"image": "app:1", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}}
	count(k8srequiredresourcelimits.violation) == 0 with input as {"review": {"object": with_limits}}
}

as_user(request, username) := object.union(request, {"review": {"userInfo": {"username": username}}})

test_system_components_are_left_alone if {
	every username in [
		"system:serviceaccount:kube-system:replicaset-controller",
		"system:node:node-1",
		"system:kube-controller-manager",
	] {
		count(k8srequiredresourcelimits.violation) == 0 with input as as_user(deployment({}), username)
	}
	# Anyone else, a ServiceAccount of another namespace included, is checked.
	every username in ["alice", "system:serviceaccount:team-a:deployer", "system:serviceaccount:kube-systemx:a"] {
		count(k8srequiredresourcelimits.violation) > 0 with input as as_user(deployment({}), username)
	}
}
