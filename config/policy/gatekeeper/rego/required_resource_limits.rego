package k8srequiredresourcelimits

import rego.v1

# Which limits are required comes from the Constraint (parameters.resources, default cpu and
# memory); which namespaces, from its namespaceSelector (tenant namespaces).
required_resources := object.get(input, ["parameters", "resources"], ["cpu", "memory"])

pod_spec := input.review.object.spec if input.review.object.kind == "Pod"

pod_spec := input.review.object.spec.jobTemplate.spec.template.spec if input.review.object.kind == "CronJob"

pod_spec := input.review.object.spec.template.spec if {
	not input.review.object.kind in {"Pod", "CronJob", "MyResource"}
}

# Ephemeral containers cannot carry resources, so they are not asked to.
limited contains {"where": sprintf("container %q", [container.name]), "limits": object.get(container, ["resources", "limits"], {})} if {
	some field in ["initContainers", "containers"]
	some container in pod_spec[field]
}

# A MyResource's limits become its Deployment's, so a missing one is refused before the
# operator would fail to create the Deployment.
limited contains {"where": "MyResource spec.resources", "limits": object.get(input.review.object, ["spec", "resources", "limits"], {})} if {
	input.review.object.kind == "MyResource"
}

# The kube-system controllers' and the kubelets' own writes (ReplicaSets of a Deployment, Pods of a
# ReplicaSet, mirror Pods) are left alone, as the native policies' matchConditions do: the object a
# person or a tool wrote is checked, once, with an answer that person sees.
system_component if startswith(input.review.userInfo.username, "system:node:")

system_component if startswith(input.review.userInfo.username, "system:serviceaccount:kube-system:")

system_component if input.review.userInfo.username in {"system:kube-controller-manager", "system:kube-scheduler"}

violation contains {"msg": msg} if {
	not system_component
	some entry in limited
	some resource in required_resources
	not entry.limits[resource]
	msg := sprintf("%s must set limits.%s in a tenant namespace", [entry.where, resource])
}
