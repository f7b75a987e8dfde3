{{/*
The conversion webhook's pieces, shared by the two places it can run: its own Deployment
(webhook.deployment.enabled, webhook-deployment.yaml) or the manager's pods (deployment.yaml).
*/}}

{{/* Whether the webhook runs as its own Deployment. */}}
{{- define "my-operator.webhookDeployment" -}}
{{- if and .Values.webhook.enabled .Values.webhook.deployment.enabled -}}true{{- end -}}
{{- end -}}

{{/* Selector labels of the webhook Deployment's pods: the manager's component swapped for webhook. */}}
{{- define "my-operator.webhookSelectorLabels" -}}
app.kubernetes.io/name: {{ include "my-operator.name" . }}
app.kubernetes.io/component: webhook
myorg.io/release: {{ .Release.Name }}
{{- end -}}

{{/* The labels the webhook Service selects: the webhook Deployment's pods, or the manager's. */}}
{{- define "my-operator.webhookServingLabels" -}}
{{- if include "my-operator.webhookDeployment" . -}}
{{- include "my-operator.webhookSelectorLabels" . -}}
{{- else -}}
{{- include "my-operator.selectorLabels" . -}}
{{- end -}}
{{- end -}}

{{/* Labels of every operator pod, manager or webhook: what the metrics Service selects. */}}
{{- define "my-operator.podLabels" -}}
app.kubernetes.io/name: {{ include "my-operator.name" . }}
myorg.io/release: {{ .Release.Name }}
{{- end -}}

{{/* The ServiceAccount of the webhook Deployment (default <fullname>-webhook). */}}
{{- define "my-operator.webhookDeploymentServiceAccountName" -}}
{{- $account := .Values.webhook.deployment.serviceAccount -}}
{{- if $account.create -}}
{{- default (printf "%s-webhook" (include "my-operator.fullname" .)) $account.name -}}
{{- else -}}
{{- required "webhook.deployment.serviceAccount.name is required when webhook.deployment.serviceAccount.create is false" $account.name -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount that serves the webhook and so holds its certificate rights: the webhook
Deployment's, or the manager's when the manager serves it. */}}
{{- define "my-operator.webhookServiceAccountName" -}}
{{- if include "my-operator.webhookDeployment" . -}}
{{- include "my-operator.webhookDeploymentServiceAccountName" . -}}
{{- else -}}
{{- include "my-operator.serviceAccountName" . -}}
{{- end -}}
{{- end -}}

{{/* The container arguments that serve the webhook, its certificate's included. */}}
{{- define "my-operator.webhookArgs" -}}
- --webhook-bind-address=:{{ .Values.webhook.port }}
- --webhook-service={{ include "my-operator.fullname" . }}-webhook
{{ include "my-operator.webhookCertArgs" . }}
{{- end -}}

{{/* The metrics arguments, the same for the manager and the webhook pods. */}}
{{- define "my-operator.metricsArgs" -}}
{{- if .Values.metrics.enabled -}}
- --metrics-bind-address=:{{ .Values.metrics.port }}
{{- if .Values.metrics.secure }}
- --metrics-secure
{{- with .Values.metrics.certSecret }}
- --metrics-cert-dir=/etc/my-operator/metrics-certs
{{- end }}
{{- end }}
{{- else -}}
- --metrics-bind-address=0
{{- end }}
{{- end -}}

{{/*
Readiness of a pod that serves the webhook: the API server sends it conversions while it is
ready, so a pod that stops answering leaves the Service within periodSeconds x failureThreshold
(plus the endpoints update). Two misses, not one: a single 1 s stall on a busy node must not take
a healthy replica out (with two replicas that could empty the Service).
*/}}
{{- define "my-operator.webhookReadinessTiming" -}}
periodSeconds: 2
timeoutSeconds: 1
failureThreshold: 2
successThreshold: 1
{{- end -}}

{{/* Volume mounts and volumes of the webhook's and the metrics' certificates, when mounted. */}}
{{- define "my-operator.certificateMounts" -}}
{{- $webhook := index . 1 -}}
{{- with index . 0 -}}
{{- if and .Values.metrics.enabled .Values.metrics.secure .Values.metrics.certSecret }}
- name: metrics-certs
  mountPath: /etc/my-operator/metrics-certs
  readOnly: true
{{- end }}
{{- if and $webhook .Values.webhook.certManager.enabled }}
- name: webhook-certs
  mountPath: /etc/my-operator/webhook-certs
  readOnly: true
{{- end }}
{{- end }}
{{- end -}}

{{- define "my-operator.certificateVolumes" -}}
{{- $webhook := index . 1 -}}
{{- with index . 0 -}}
{{- if and .Values.metrics.enabled .Values.metrics.secure .Values.metrics.certSecret }}
# The kubelet refreshes the files when the Secret changes; the operator reloads them.
- name: metrics-certs
  secret:
    secretName: {{ .Values.metrics.certSecret }}
    items:
      - {key: tls.crt, path: tls.crt}
      - {key: tls.key, path: tls.key}
{{- end }}
{{- if and $webhook .Values.webhook.certManager.enabled }}
# cert-manager's Secret; the kubelet refreshes the files when it is renewed.
- name: webhook-certs
  secret:
    secretName: {{ include "my-operator.fullname" . }}-webhook-tls
    items:
      - {key: tls.crt, path: tls.crt}
      - {key: tls.key, path: tls.key}
{{- end }}
{{- end }}
{{- end -}}
