package k8spinnedimagetag

import rego.v1

# The same rules as the MyResource CRD: a digest, or a tag after the last '/' (so the port of
# "registry:5000/app" is not a tag), and never :latest (not even with a digest).
pod_spec := input.review.object.spec if input.review.object.kind == "Pod"

pod_spec := input.review.object.spec.jobTemplate.spec.template.spec if input.review.object.kind == "CronJob"

pod_spec := input.review.object.spec.template.spec if {
	not input.review.object.kind in {"Pod", "CronJob", "MyResource"}
}

images contains {"where": sprintf("container %q", [container.name]), "image": container.image} if {
	some field in ["initContainers", "containers", "ephemeralContainers"]
	some container in pod_spec[field]
}

images contains {"where": "spec.image", "image": input.review.object.spec.image} if {
	input.review.object.kind == "MyResource"
}

pinned(image) if contains(image, "@")

pinned(image) if regex.match(`:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`, image)

latest(image) if regex.match(`:latest(@.*)?$`, image)

# The kube-system controllers' and the kubelets' own writes (ReplicaSets of a Deployment, Pods of a
# ReplicaSet, mirror Pods) are left alone, as the native policies' matchConditions do: the object a
# person or a tool wrote is checked, once, with an answer that person sees.
system_component if startswith(input.review.userInfo.username, "system:node:")

system_component if startswith(input.review.userInfo.username, "system:serviceaccount:kube-system:")

system_component if input.review.userInfo.username in {"system:kube-controller-manager", "system:kube-scheduler"}

violation contains {"msg": msg} if {
	not system_component
	some entry in images
	not pinned(entry.image)
	msg := sprintf("%s: image %q has no tag or digest (that means :latest); pin a version tag or a digest", [entry.where, entry.image])
}

violation contains {"msg": msg} if {
	not system_component
	some entry in images
	latest(entry.image)
	msg := sprintf("%s: image %q uses :latest; pin a version tag or a digest", [entry.where, entry.image])
}
