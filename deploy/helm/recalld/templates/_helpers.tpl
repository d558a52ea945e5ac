{{/* The release's name for every object, within the 63 characters DNS allows. */}}
{{- define "recalld.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "recalld.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "recalld.labels" -}}
{{ include "recalld.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Service whose DNS name lists every ready replica: the chart's own when it
is headless, else the extra one rendered for Envoy. */}}
{{- define "recalld.headlessName" -}}
{{- if .Values.service.headless -}}
{{- include "recalld.fullname" . -}}
{{- else -}}
{{- printf "%s-headless" (include "recalld.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "recalld.envoy.fullname" -}}
{{- printf "%s-envoy" (include "recalld.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Envoy's pods carry their own name, so the replicas' Service, budget and
Deployment, which select recalld.selectorLabels, never select them. */}}
{{- define "recalld.envoy.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-envoy
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "recalld.envoy.labels" -}}
{{ include "recalld.envoy.selectorLabels" . }}
app.kubernetes.io/component: proxy
app.kubernetes.io/part-of: {{ .Chart.Name }}
app.kubernetes.io/version: {{ .Values.envoy.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Envoy's configuration: files/envoy.yaml (a copy of deploy/envoy/envoy.yaml,
kept identical by the tests) aimed at the headless Service, and with tls.secret
TLS on both sides: Envoy presents the replicas' certificate to the clients and
speaks TLS to the replicas. */}}
{{- define "recalld.envoy.config" -}}
{{- $config := .Files.Get "files/envoy.yaml" | fromYaml -}}
{{- $tls := .Values.tls.secret -}}
{{- range $config.static_resources.clusters -}}
{{- if eq .name "recalld" -}}
{{- range .load_assignment.endpoints -}}
{{- range .lb_endpoints -}}
{{- $_ := set .endpoint.address.socket_address "address" (printf "%s.%s.svc.%s" (include "recalld.headlessName" $) $.Release.Namespace $.Values.envoy.clusterDomain) -}}
{{- $_ := set .endpoint.address.socket_address "port_value" $.Values.server.port -}}
{{- end -}}
{{- end -}}
{{- if $tls -}}
{{- $context := dict "alpn_protocols" (list "h2") -}}
{{- with $.Values.envoy.upstreamCAKey -}}
{{- $_ := set $context "validation_context" (dict "trusted_ca" (dict "filename" (printf "/etc/envoy/tls/%s" .))) -}}
{{- end -}}
{{- $_ := set . "transport_socket" (dict "name" "envoy.transport_sockets.tls" "typed_config" (dict "@type" "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext" "common_tls_context" $context)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $tls -}}
{{- range $config.static_resources.listeners -}}
{{- range .filter_chains -}}
{{- $certificate := dict "certificate_chain" (dict "filename" "/etc/envoy/tls/tls.crt") "private_key" (dict "filename" "/etc/envoy/tls/tls.key") -}}
{{- $_ := set . "transport_socket" (dict "name" "envoy.transport_sockets.tls" "typed_config" (dict "@type" "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext" "common_tls_context" (dict "alpn_protocols" (list "h2") "tls_certificates" (list $certificate)))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}
