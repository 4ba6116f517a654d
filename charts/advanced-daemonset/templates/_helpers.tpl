{{/* Chart name, overridable. */}}
{{- define "ads.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object name prefix: <release>-<chart>, or the release name when it already has the chart name. */}}
{{- define "ads.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ads.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ads.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "ads.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "ads.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: manager
{{- end }}

{{- define "ads.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ads.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Service in front of the webhook; also the DNS name in the serving certificate. */}}
{{- define "ads.webhookServiceName" -}}
{{- printf "%s-webhook" (include "ads.fullname" .) }}
{{- end }}

{{/* Base name of the webhook configurations: <name>-mutating and <name>-validating. */}}
{{- define "ads.webhookConfigurationName" -}}
{{- include "ads.fullname" . }}
{{- end }}

{{- define "ads.certSecretName" -}}
{{- default (printf "%s-webhook-certs" (include "ads.fullname" .)) .Values.certificates.secretName }}
{{- end }}

{{- define "ads.certificateName" -}}
{{- printf "%s-webhook" (include "ads.fullname" .) }}
{{- end }}

{{- define "ads.leaseName" -}}
{{- printf "%s-controller" (include "ads.fullname" .) }}
{{- end }}

{{- define "ads.image" -}}
{{- $repo := .Values.image.repository }}
{{- if .Values.image.registry }}{{ $repo = printf "%s/%s" .Values.image.registry $repo }}{{ end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
caBundle for the webhook configurations, or nothing when someone else fills it in:
- self-signed: the CA the manager stored in its Secret, carried over on upgrade (the manager patches it anyway);
- cert-manager: nothing, cainjector fills it from the Certificate;
- external: the value, else the user's Secret's ca.crt.
*/}}
{{- define "ads.caBundle" -}}
{{- $mode := .Values.certificates.mode }}
{{- if eq $mode "external" }}
{{- if .Values.certificates.external.caBundle }}
{{- .Values.certificates.external.caBundle }}
{{- else }}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "ads.certSecretName" .) }}
{{- dig "data" "ca.crt" "" $secret }}
{{- end }}
{{- else if eq $mode "self-signed" }}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "ads.certSecretName" .) }}
{{- dig "data" "ca.crt" "" $secret }}
{{- end }}
{{- end }}

{{/* Cross-value checks the JSON schema cannot express; each fails with the values to change. */}}
{{- define "ads.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail (printf "replicas is %d but leaderElection.enabled is false: every replica would reconcile the same DaemonSets. Enable leader election or set replicas to 1." (int .Values.replicas)) }}
{{- end }}
{{- if lt (int .Values.terminationGracePeriodSeconds) (add (int .Values.webhook.drainSeconds) 5 | int) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be at least webhook.drainSeconds (%d) + 5, or pods are killed while still draining admission requests." (int .Values.terminationGracePeriodSeconds) (int .Values.webhook.drainSeconds)) }}
{{- end }}
{{- if and (eq .Values.certificates.mode "external") (not .Values.certificates.secretName) }}
{{- fail "certificates.mode is external: set certificates.secretName to your Secret with tls.crt and tls.key (and ca.crt, or certificates.external.caBundle)." }}
{{- end }}
{{- end }}
