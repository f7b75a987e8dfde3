{{/* Chart name, or nameOverride. */}}
{{- define "my-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the release name, suffixed with the chart name unless it already holds it. */}}
{{- define "my-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Labels of every object of the chart. The selector labels deliberately leave out
app.kubernetes.io/instance: Argo CD's label tracking rewrites that label, and a Deployment
selector cannot change. myorg.io/release keeps two releases in one namespace apart.
*/}}
{{- define "my-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "my-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: my-operator
myorg.io/release: {{ .Release.Name }}
{{- end -}}

{{- define "my-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "my-operator.name" . }}
app.kubernetes.io/component: manager
myorg.io/release: {{ .Release.Name }}
{{- end -}}

{{- define "my-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "my-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* repository@digest when a digest is given, else repository:tag (tag defaults to appVersion). */}}
{{- define "my-operator.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The rules the operator needs in every namespace it watches (docs/design.md "Permissions");
the same as config/rbac/role.yaml. Exactly the verbs the code uses, no wildcards.
*/}}
{{- define "my-operator.managerRules" -}}
- apiGroups: [myorg.io]
  resources: [myresources]
  verbs: [list, watch, patch]
- apiGroups: [myorg.io]
  resources: [myresources/status]
  verbs: [patch]
- apiGroups: [myorg.io]
  resources: [myresources/finalizers]
  verbs: [update]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [list, watch, create, patch, delete]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- end -}}

{{/* The Secret whose `token` the ServiceMonitor sends: metrics.serviceMonitor.tokenSecret, or the
token Secret of <fullname>-metrics-scraper that servicemonitor.yaml creates. */}}
{{- define "my-operator.metricsTokenSecret" -}}
{{- default (printf "%s-metrics-scraper-token" (include "my-operator.fullname" .)) .Values.metrics.serviceMonitor.tokenSecret }}
{{- end }}
