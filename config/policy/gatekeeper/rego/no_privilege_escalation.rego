package k8snoprivilegeescalation

import rego.v1

pod_spec := input.review.object.spec if input.review.object.kind == "Pod"

pod_spec := input.review.object.spec.jobTemplate.spec.template.spec if input.review.object.kind == "CronJob"

pod_spec := input.review.object.spec.template.spec if {
	not input.review.object.kind in {"Pod", "CronJob"}
}

containers contains container if {
	some field in ["initContainers", "containers", "ephemeralContainers"]
	some container in pod_spec[field]
}

# Unset means allowed (the kernel default), so the field must be false explicitly, as in the
# restricted Pod Security Standard.
# The kube-system controllers' and the kubelets' own writes (ReplicaSets of a Deployment, Pods of a
# ReplicaSet, mirror Pods) are left alone, as the native policies' matchConditions do: the object a
# person or a tool wrote is checked, once, with an answer that person sees.
system_component if startswith(input.review.userInfo.username, "system:node:")

system_component if startswith(input.review.userInfo.username, "system:serviceaccount:kube-system:")

system_component if input.review.userInfo.username in {"system:kube-controller-manager", "system:kube-scheduler"}

violation contains {"msg": msg} if {
	not system_component
	some container in containers
	not container.securityContext.allowPrivilegeEscalation == false
	msg := sprintf("container %q must set securityContext.allowPrivilegeEscalation: false", [container.name])
}
