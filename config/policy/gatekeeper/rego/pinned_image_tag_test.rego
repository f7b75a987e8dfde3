package k8spinnedimagetag_test

import rego.v1

import data.k8spinnedimagetag

pod(image) := {"review": {"object": {"kind": "Pod", "spec": {"containers": [{"name": "app", "image": image}]}}}}

myresource(image) := {"review": {"object": {"kind": "MyResource", "apiVersion": "myorg.io/v1alpha1", "spec": {"image": image}}}}

digest := "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

test_pinned_images_are_allowed if {
	every image in [
		"app:1.2.3",
		"registry.example.com:5000/team/app:1.2.3",
		sprintf("app@%s", [digest]),
		sprintf("registry.example.com:5000/team/app:1.2.3@%s", [digest]),
	] {
		count(k8spinnedimagetag.violation) == 0 with input as pod(image)
		count(k8spinnedimagetag.violation) == 0 with input as myresource(image)
	}
}

test_latest_is_refused if {
	every image in ["app:latest", "registry.example.com:5000/app:latest", sprintf("app:latest@%s", [digest])] {
		count(k8spinnedimagetag.violation) == 1 with input as pod(image)
		count(k8spinnedimagetag.violation) == 1 with input as myresource(image)
	}
}

test_untagged_is_refused if {
	# The port of the registry is not a tag.
	every image in ["app", "registry.example.com:5000/team/app"] {
		count(k8spinnedimagetag.violation) == 1 with input as pod(image)
		count(k8spinnedimagetag.violation) == 1 with input as myresource(image)
	}
}

test_myresource_message_names_the_field if {
	some result in k8spinnedimagetag.violation with input as myresource("app:latest")
	startswith(result.msg, "spec.image")
}

test_deployment_init_containers_are_checked if {
	object := {"kind": "Deployment", "spec": {"template": {"spec": {
		"initContainers": [{"name": "setup", "image": "busybox"}],
		"containers": [{"name": "app", "image": "app:1"}],
	}}}}
	count(k8spinnedimagetag.violation) == 1 with input as {"review": {"object": object}}
}

as_user(request, username) := object.union(request, {"review": {"userInfo": {"username": username}}})

test_system_components_are_left_alone if {
	every username in [
		"system:serviceaccount:kube-system:replicaset-controller",
		"system:node:node-1",
		"system:kube-controller-manager",
	] {
		count(k8spinnedimagetag.violation) == 0 with input as as_user(pod("app:latest"), username)
	}
	# Anyone else, a ServiceAccount of another namespace included, is checked.
	every username in ["alice", "system:serviceaccount:team-a:deployer", "system:serviceaccount:kube-systemx:a"] {
		count(k8spinnedimagetag.violation) > 0 with input as as_user(pod("app:latest"), username)
	}
}
