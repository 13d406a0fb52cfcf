{{/* The chart's name in object names: nameOverride replaces "foxhunt". */}}
{{- define "foxhunt.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-scoped base name for the objects this chart names itself; fullnameOverride replaces it. */}}
{{- define "foxhunt.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "foxhunt.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
A WorkflowTemplate's installed name: the rendered name (what `foxhunt submit` and `argo submit --from`
use by default), or <fullname>-<name> with workflowTemplates.releaseScoped, so that two releases can
share a namespace. Call with (dict "root" $ "name" "train").
*/}}
{{- define "foxhunt.templateName" -}}
{{- if .root.Values.workflowTemplates.releaseScoped -}}
{{- printf "%s-%s" (include "foxhunt.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- .name -}}
{{- end -}}
{{- end -}}

{{/* The ConfigMap whose key gpu-pods holds the Argo semaphore's limit on concurrent GPU pods. */}}
{{- define "foxhunt.gpuSemaphoreName" -}}
{{- default (printf "%s-gpu-semaphore" (include "foxhunt.fullname" .)) .Values.gpu.semaphore.existingConfigMap -}}
{{- end -}}

{{- define "foxhunt.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "foxhunt.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Empty serviceAccount.name: <fullname>-workflow, one per release. */}}
{{- define "foxhunt.serviceAccountName" -}}
{{- default (printf "%s-workflow" (include "foxhunt.fullname" .)) .Values.serviceAccount.name -}}
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
{{- $_ := set $doc.metadata "name" (include "foxhunt.templateName" (dict "root" $root "name" $doc.metadata.name)) -}}
{{- /* Whole-workflow settings: they apply to a workflow submitted from this template. */ -}}
{{- $wt := $root.Values.workflowTemplates -}}
{{- if $wt.activeDeadlineSeconds -}}
{{- $_ := set $doc.spec "activeDeadlineSeconds" (int64 $wt.activeDeadlineSeconds) -}}
{{- end -}}
{{- with $wt.podGC -}}
{{- $_ := set $doc.spec "podGC" . -}}
{{- end -}}
{{- with $wt.ttlStrategy -}}
{{- $_ := set $doc.spec "ttlStrategy" . -}}
{{- end -}}
{{- with $root.Values.imagePullSecrets -}}
{{- $_ := set $doc.spec "imagePullSecrets" . -}}
{{- end -}}
{{- with $doc.spec.arguments -}}
{{- range $p := .parameters -}}
{{- if hasKey $params $p.name -}}
{{- $_ := set $p "value" (get $params $p.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $t := $doc.spec.templates -}}
{{- with $t.dag -}}
{{- range $task := .tasks -}}
{{- with $task.templateRef -}}
{{- $_ := set . "name" (include "foxhunt.templateName" (dict "root" $root "name" .name)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $t.container -}}
{{- include "foxhunt.podScheduling" (dict "root" $root "t" $t) -}}
{{- end -}}
{{- with $t.inputs -}}
{{- range $p := .parameters -}}
{{- if hasKey $params $p.name -}}
{{- $_ := set $p "default" (get $params $p.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- with $t.container -}}
{{- /* GPU pods (train, trial-worker) take resources.train; the others their own template's name. */ -}}
{{- $gpu := index .resources.limits "nvidia.com/gpu" -}}
{{- $key := ternary "train" $t.name (not (empty $gpu)) -}}
{{- $resources := deepCopy (required (printf "resources.%s is not set" $key) (index $root.Values.resources $key)) -}}
{{- if $gpu -}}
{{- $_ := set $resources.limits "nvidia.com/gpu" $gpu -}}
{{- if $root.Values.gpu.guaranteedQoS -}}
{{- /* Guaranteed QoS: every container's requests equal its limits (Argo's own containers in podSpecPatch). */ -}}
{{- $_ := set $resources "requests" (deepCopy $resources.limits) -}}
{{- else -}}
{{- $_ := set $resources.requests "nvidia.com/gpu" $gpu -}}
{{- end -}}
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


{{/*
Where and how one pod template of a WorkflowTemplate runs: node selection, tolerations, affinity,
priority, pod annotations and labels, and for GPU pods (those with an nvidia.com/gpu limit) the pool
selector, the GPU tolerations, Guaranteed QoS for Argo's own containers and the optional semaphore.
Call with (dict "root" $ "t" <template>); it changes the template in place and prints nothing.
*/}}
{{- define "foxhunt.podScheduling" -}}
{{- $root := .root -}}
{{- $t := .t -}}
{{- $v := $root.Values -}}
{{- $gpu := not (empty (index (default (dict) $t.container.resources.limits) "nvidia.com/gpu")) -}}
{{- $meta := default (dict) $t.metadata -}}
{{- $_ := set $meta "labels" (merge (dict "app.kubernetes.io/instance" $root.Release.Name) (default (dict) $meta.labels)) -}}
{{- with $v.pods.annotations -}}
{{- $_ := set $meta "annotations" (merge (default (dict) $meta.annotations) .) -}}
{{- end -}}
{{- $_ := set $t "metadata" $meta -}}
{{- $selector := deepCopy (default (dict) $v.pods.nodeSelector) -}}
{{- $tolerations := default (list) $v.pods.tolerations -}}
{{- $affinity := $v.pods.affinity -}}
{{- $priority := $v.pods.priorityClassName -}}
{{- if $gpu -}}
{{- /* The rendered selector's value is the gpu-pool expression; only its key is the cluster's. */ -}}
{{- $_ := set $selector $v.gpu.poolLabel (values $t.nodeSelector | first) -}}
{{- $tolerations = concat (default (list) $v.gpu.tolerations) $tolerations -}}
{{- $affinity = default $affinity $v.gpu.affinity -}}
{{- $priority = default $priority $v.gpu.priorityClassName -}}
{{- if $v.gpu.semaphore.enabled -}}
{{- $ref := dict "configMapKeyRef" (dict "name" (include "foxhunt.gpuSemaphoreName" $root) "key" "gpu-pods") -}}
{{- $_ := set $t "synchronization" (dict "semaphores" (list $ref)) -}}
{{- end -}}
{{- if $v.gpu.guaranteedQoS -}}
{{- $executor := dict "requests" (deepCopy $v.resources.executor) "limits" (deepCopy $v.resources.executor) -}}
{{- $patch := fromJson (default "{}" $t.podSpecPatch) -}}
{{- $_ := set $patch "containers" (list (dict "name" "wait" "resources" $executor)) -}}
{{- if and $t.inputs $t.inputs.artifacts -}}
{{- /* Argo adds its init container only to pods with input artifacts; a patch elsewhere would add one. */ -}}
{{- $_ := set $patch "initContainers" (list (dict "name" "init" "resources" (deepCopy $executor))) -}}
{{- end -}}
{{- $_ := set $t "podSpecPatch" (toJson $patch) -}}
{{- end -}}
{{- end -}}
{{- if $selector -}}
{{- $_ := set $t "nodeSelector" $selector -}}
{{- else -}}
{{- $_ := unset $t "nodeSelector" -}}
{{- end -}}
{{- if $tolerations -}}
{{- $_ := set $t "tolerations" $tolerations -}}
{{- else -}}
{{- $_ := unset $t "tolerations" -}}
{{- end -}}
{{- with $affinity -}}
{{- $_ := set $t "affinity" . -}}
{{- end -}}
{{- with $priority -}}
{{- $_ := set $t "priorityClassName" . -}}
{{- end -}}
{{- end -}}
