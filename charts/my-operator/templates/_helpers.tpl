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

{{/*
"true" when this release's operator keeps the CRD's conversion caBundle, else "false"; the rule of
values.yaml webhook.patchCaBundle. Only the operator's own certificates can: not with certManager.
*/}}
{{- define "my-operator.webhookPatchesCaBundle" -}}
{{- $wanted := .Values.webhook.patchCaBundle -}}
{{- if and (eq (toString $wanted) "true") .Values.webhook.certManager.enabled -}}
{{- fail "webhook.patchCaBundle=true needs the operator's own certificates: with webhook.certManager, cert-manager's CA injector fills the caBundle" -}}
{{- end -}}
{{- if and (eq (toString $wanted) "true") .Values.webhook.caBundle -}}
{{- fail "webhook.patchCaBundle=true and webhook.caBundle both set: the caBundle is either given or the operator's; drop one" -}}
{{- end -}}
{{- if or (not .Values.webhook.enabled) .Values.webhook.certManager.enabled -}}
false
{{- else if eq (toString $wanted) "auto" -}}
{{- and .Values.crds.install (not .Values.webhook.url) (not .Values.webhook.caBundle) | toString -}}
{{- else -}}
{{- toString $wanted -}}
{{- end -}}
{{- end -}}

{{/*
The webhook certificate arguments of a container that serves the conversion webhook (every
Deployment that does includes them): cert-manager's files, or the operator's own Secrets (the
serving one, the CA one) and validities, and the CRDs whose caBundle it keeps: the MyResource CRD
when this release owns it (my-operator.webhookPatchesCaBundle), none (--webhook-crds=) otherwise.
A YAML list, e.g. `{{- include "my-operator.webhookCertArgs" . | nindent 12 }}` under args.
*/}}
{{- define "my-operator.webhookCertArgs" -}}
{{- $fullname := include "my-operator.fullname" . -}}
{{- $patchesCaBundle := include "my-operator.webhookPatchesCaBundle" . -}}
{{- $args := list -}}
{{- if .Values.webhook.certManager.enabled -}}
{{- $args = append $args "--webhook-cert-dir=/etc/my-operator/webhook-certs" -}}
{{- else -}}
{{- $args = append $args (printf "--webhook-secret=%s-webhook-cert" $fullname) -}}
{{- $args = append $args (printf "--webhook-ca-secret=%s-webhook-cert-ca" $fullname) -}}
{{- $args = append $args (printf "--webhook-cert-validity=%s" .Values.webhook.certValidity) -}}
{{- $args = append $args (printf "--webhook-ca-validity=%s" .Values.webhook.caValidity) -}}
{{- if eq $patchesCaBundle "true" -}}
{{- $args = append $args "--webhook-crds=myresources.myorg.io" -}}
{{- with .Values.webhook.url -}}
{{- $args = append $args (printf "--webhook-cert-names=%s" ((urlParse .).hostname | lower)) -}}
{{- end -}}
{{- else -}}
{{- $args = append $args "--webhook-crds=" -}}
{{- end -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{/*
fleet.clusterProfiles: the access provider file, in the cluster inventory API's format. Refuses an
empty list: no profile could engage.
*/}}
{{- define "my-operator.fleetProviders" -}}
{{- $providers := .Values.fleet.clusterProfiles.providers -}}
{{- if not $providers -}}
{{- fail "fleet.clusterProfiles.enabled needs fleet.clusterProfiles.providers: at least one access provider ({name, execConfig}) for the profiles' status.accessProviders to name" -}}
{{- end -}}
{{- dict "providers" $providers | toPrettyJson -}}
{{- end -}}
