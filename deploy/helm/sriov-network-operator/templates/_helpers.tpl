{{/* The operator namespace: namespace.name, else the release namespace. */}}
{{- define "sriovop.namespace" -}}
{{- .Values.namespace.name | default .Release.Namespace -}}
{{- end -}}

{{/* Labels Helm adds to every object (the only difference from `kubectl kustomize manifests/`). */}}
{{- define "sriovop.helmLabels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The operator container's environment the values set (name → value); unset values are left out,
so the Deployment keeps what manifests/ says. */}}
{{- define "sriovop.operatorEnv" -}}
{{- $mode := .Values.certificates.mode -}}
{{- $env := dict -}}
{{- $set := dict
  "RESOURCE_PREFIX" .Values.operator.resourcePrefix
  "ADMISSION_CONTROLLERS_CERTIFICATES_CA_LIFETIME" .Values.certificates.caLifetime
  "ADMISSION_CONTROLLERS_CERTIFICATES_CERT_LIFETIME" .Values.certificates.certLifetime
  "SRIOV_NETWORK_CONFIG_DAEMON_IMAGE" .Values.images.configDaemon
  "SRIOV_NETWORK_WEBHOOK_IMAGE" .Values.images.webhook
  "NETWORK_RESOURCES_INJECTOR_IMAGE" .Values.images.webhook
  "SRIOV_DEVICE_PLUGIN_IMAGE" .Values.images.devicePlugin
  "SRIOV_CNI_IMAGE" .Values.images.sriovCni
  "SRIOV_INFINIBAND_CNI_IMAGE" .Values.images.ibSriovCni
  "OVS_CNI_IMAGE" .Values.images.ovsCni
  "RDMA_CNI_IMAGE" .Values.images.rdmaCni
-}}
{{- range $name, $value := $set }}{{ if $value }}{{ $_ := set $env $name $value }}{{ end }}{{ end -}}
{{- if $mode -}}
{{- $_ := set $env "CLUSTER_TYPE" (ternary "openshift" "kubernetes" (eq $mode "openshift")) -}}
{{- $_ := set $env "ADMISSION_CONTROLLERS_CERTIFICATES_CERT_MANAGER_ENABLED" (ternary "true" "false" (eq $mode "cert-manager")) -}}
{{- end -}}
{{- if eq $mode "custom" -}}
{{- $_ := set $env "ADMISSION_CONTROLLERS_CERTIFICATES_OPERATOR_CA_CRT" (b64enc .Values.certificates.custom.operatorCa) -}}
{{- with .Values.certificates.custom.injectorCa }}
{{- $_ := set $env "ADMISSION_CONTROLLERS_CERTIFICATES_INJECTOR_CA_CRT" (b64enc .) -}}
{{- end -}}
{{- end -}}
{{- toYaml $env -}}
{{- end -}}

{{/* The operator image: images.operator, else the one manifests/operator/deployment.yaml names. */}}
{{- define "sriovop.operatorImage" -}}
{{- if .Values.images.operator -}}
{{- .Values.images.operator -}}
{{- else -}}
{{- $deployment := .Files.Get "files/operator/deployment.yaml" | fromYaml -}}
{{- (index $deployment.spec.template.spec.containers 0).image -}}
{{- end -}}
{{- end -}}
