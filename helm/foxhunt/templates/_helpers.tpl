{{/* Release-scoped base name for the objects this chart names itself. */}}
{{- define "foxhunt.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "foxhunt.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "foxhunt.serviceAccountName" -}}
{{- .Values.serviceAccount.name -}}
{{- end -}}

{{- define "foxhunt.s3Secret" -}}
{{- required "s3.existingSecret must name an existing Secret with the S3 credentials" .Values.s3.existingSecret -}}
{{- end -}}

{{/* repository:tag, or repository@digest when a digest pins it. */}}
{{- define "foxhunt.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Every train-pipeline parameter default the chart controls, as a YAML map of strings. */}}
{{- define "foxhunt.parameterDefaults" -}}
{{- $defaults := dict -}}
{{- range $name, $value := .Values.run -}}
{{- /* A JSON parameter given as a YAML mapping is passed on as its JSON text. */ -}}
{{- $_ := set $defaults $name (ternary (toJson $value) (toString $value) (kindIs "map" $value)) -}}
{{- end -}}
{{- $_ := set $defaults "image" (include "foxhunt.image" .) -}}
{{- $_ := set $defaults "gpu-pool" (toString .Values.gpu.pool) -}}
{{- toYaml $defaults -}}
{{- end -}}

{{/*
A WorkflowTemplate from files/workflows/ (the output of `foxhunt workflows render`, shipped as is),
with the cluster's values set on the parsed object. The file is data, never template text, so
Argo's {{...}} expressions reach Argo untouched.
Call with (dict "root" $ "file" "files/workflows/NAME.yaml").
*/}}
{{- define "foxhunt.workflowTemplate" -}}
{{- $root := .root -}}
{{- $doc := $root.Files.Get .file | fromYaml -}}
{{- if or (hasKey $doc "Error") (ne (get $doc "kind") "WorkflowTemplate") -}}
{{- fail (printf "%s is not a rendered WorkflowTemplate; run: foxhunt workflows render --out helm/foxhunt/files/workflows" .file) -}}
{{- end -}}
{{- $params := include "foxhunt.parameterDefaults" $root | fromYaml -}}
{{- $secret := include "foxhunt.s3Secret" $root -}}
{{- $labels := include "foxhunt.labels" $root | fromYaml -}}
{{- $_ := set $doc.metadata "labels" (merge $labels (default (dict) $doc.metadata.labels)) -}}
{{- $_ := set $doc.metadata "namespace" $root.Release.Namespace -}}
{{- $_ := set $doc.spec "serviceAccountName" (include "foxhunt.serviceAccountName" $root) -}}
{{- with $doc.spec.arguments -}}
{{- range $p := .parameters -}}
{{- if hasKey $params $p.name -}}
{{- $_ := set $p "value" (get $params $p.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $t := $doc.spec.templates -}}
{{- with $t.inputs -}}
{{- range $p := .parameters -}}
{{- if hasKey $params $p.name -}}
{{- $_ := set $p "default" (get $params $p.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $t.nodeSelector -}}
{{/* The selector's value is the gpu-pool expression; only its key is the cluster's. */}}
{{- $_ := set $t "nodeSelector" (dict $root.Values.gpu.poolLabel (values . | first)) -}}
{{- end -}}
{{- with $t.container -}}
{{- /* GPU pods (train, trial-worker) take resources.train; the others their own template's name. */ -}}
{{- $gpu := index .resources.limits "nvidia.com/gpu" -}}
{{- $key := ternary "train" $t.name (not (empty $gpu)) -}}
{{- $resources := deepCopy (required (printf "resources.%s is not set" $key) (index $root.Values.resources $key)) -}}
{{- if $gpu -}}
{{- $_ := set $resources.requests "nvidia.com/gpu" $gpu -}}
{{- $_ := set $resources.limits "nvidia.com/gpu" $gpu -}}
{{- end -}}
{{- $_ := set . "resources" $resources -}}
{{- $_ := set . "imagePullPolicy" $root.Values.image.pullPolicy -}}
{{- range $e := .env -}}
{{- with $e.valueFrom -}}
{{- with .secretKeyRef -}}
{{- /* Only the S3 Secret (rendered as foxhunt-s3) is the chart's; the study Secret is a parameter. */ -}}
{{- if eq .name "foxhunt-s3" -}}
{{- $_ := set . "name" $secret -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (not $root.Values.outputArtifacts) $t.outputs -}}
{{- $_ := unset $t.outputs "artifacts" -}}
{{- end -}}
{{- end -}}
{{- toYaml $doc -}}
{{- end -}}
