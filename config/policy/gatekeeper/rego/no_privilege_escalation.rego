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
violation contains {"msg": msg} if {
	some container in containers
	not container.securityContext.allowPrivilegeEscalation == false
	msg := sprintf("container %q must set securityContext.allowPrivilegeEscalation: false", [container.name])
}
