{{/* Names, labels, addresses and the pod template every Engram service shares. */}}

{{- define "engram.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release> when it already says "engram", else <release>-engram. */}}
{{- define "engram.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "engram.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select every Engram pod of this release (NetworkPolicies use them). */}}
{{- define "engram.selectorLabels" -}}
app.kubernetes.io/name: {{ include "engram.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "engram.labels" -}}
helm.sh/chart: {{ include "engram.chart" . }}
{{ include "engram.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: engram
{{- end }}

{{/* (dict "ctx" $ "component" "gateway") */}}
{{- define "engram.componentSelectorLabels" -}}
{{ include "engram.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "engram.componentLabels" -}}
{{ include "engram.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "engram.serviceAccountName" -}}
{{- default (include "engram.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{- define "engram.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
The gRPC target of a service: its headless Service, so clients resolve every pod and call them round robin.
$(POD_NAMESPACE) is expanded by Kubernetes: the manifests work in whatever namespace they are applied to.
*/}}
{{- define "engram.grpcTarget" -}}
{{- printf "dns:///%s-%s-headless.$(POD_NAMESPACE).svc.%s:%d" (include "engram.fullname" .ctx) .component .ctx.Values.clusterDomain (int .ctx.Values.grpcPort) }}
{{- end }}

{{/* A subchart's full name, as the official NATS and Qdrant charts compute it. (dict "ctx" $ "chart" "nats") */}}
{{- define "engram.subchartFullname" -}}
{{- $values := get .ctx.Values .chart }}
{{- if $values.fullnameOverride }}
{{- $values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .chart $values.nameOverride }}
{{- if contains $name .ctx.Release.Name }}
{{- .ctx.Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .ctx.Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "engram.natsUrl" -}}
{{- if .Values.nats.enabled }}
{{- printf "nats://%s:4222" (include "engram.subchartFullname" (dict "ctx" . "chart" "nats")) }}
{{- else }}
{{- required "nats.enabled=false needs externalNats.url (nats://host:4222, several comma separated)" .Values.externalNats.url }}
{{- end }}
{{- end }}

{{- define "engram.qdrantUrl" -}}
{{- if .Values.qdrant.enabled }}
{{- printf "http://%s:6333" (include "engram.subchartFullname" (dict "ctx" . "chart" "qdrant")) }}
{{- else }}
{{- required "search.backend=qdrant with qdrant.enabled=false needs externalQdrant.url (http://host:6333)" .Values.externalQdrant.url }}
{{- end }}
{{- end }}

{{- define "engram.searchKind" -}}
{{- if eq .Values.search.backend "edge" }}StatefulSet{{ else if eq .Values.search.backend "qdrant" }}Deployment{{ else }}{{ fail "search.backend must be edge or qdrant" }}{{ end }}
{{- end }}

{{/* Settings every service reads (engram/config.py; the README's configuration table). */}}
{{- define "engram.commonEnv" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: ENGRAM_HOME
  value: /var/lib/engram
- name: ENGRAM_DEV_MODE
  value: "false"
- name: ENGRAM_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: ENGRAM_NATS_URL
  value: {{ include "engram.natsUrl" . | quote }}
- name: ENGRAM_STREAM_REPLICAS
  value: {{ .Values.streamReplicas | quote }}
{{- with .Values.natsAuth }}
{{- if .credsSecret }}
- name: ENGRAM_NATS_CREDS
  value: /etc/engram/nats/{{ .credsKey }}
{{- else if .enabled }}
- name: ENGRAM_NATS_USER
  value: {{ .user | quote }}
- name: ENGRAM_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .passwordKey }}
{{- end }}
{{- end }}
{{- if .Values.metrics.enabled }}
- name: ENGRAM_METRICS_LISTEN
  value: "0.0.0.0:{{ .Values.metrics.port }}"
{{- end }}
{{- end }}

{{/*
The pod template of a service. (dict "ctx" $ "component" "search" "values" .Values.search
"env" <yaml list> "volumes" <yaml list> "mounts" <yaml list> "ports" <yaml list> "probes" <yaml map>)
*/}}
{{- define "engram.podTemplate" -}}
{{- $ctx := .ctx -}}
metadata:
  labels:
    {{- include "engram.componentLabels" (dict "ctx" $ctx "component" .component) | nindent 4 }}
    {{- with $ctx.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $ctx.Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ include "engram.serviceAccountName" $ctx }}
  automountServiceAccountToken: false
  enableServiceLinks: false
  {{- with $ctx.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $ctx.Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ .values.terminationGracePeriodSeconds | default 30 }}
  containers:
    - name: {{ .component }}
      image: {{ include "engram.image" $ctx | quote }}
      imagePullPolicy: {{ $ctx.Values.image.pullPolicy }}
      args: ["run", {{ .component | quote }}]
      securityContext:
        {{- toYaml $ctx.Values.securityContext | nindent 8 }}
      ports:
        {{- .ports | nindent 8 }}
        {{- if $ctx.Values.metrics.enabled }}
        - name: metrics
          containerPort: {{ $ctx.Values.metrics.port }}
          protocol: TCP
        {{- end }}
      env:
        {{- include "engram.commonEnv" $ctx | nindent 8 }}
        {{- with .env }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- with $ctx.Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with .values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .probes }}
      {{- . | nindent 6 }}
      {{- end }}
      resources:
        {{- toYaml .values.resources | nindent 8 }}
      volumeMounts:
        - name: data
          mountPath: /var/lib/engram
        - name: tmp
          mountPath: /tmp
        {{- if $ctx.Values.natsAuth.credsSecret }}
        - name: nats-creds
          mountPath: /etc/engram/nats
          readOnly: true
        {{- end }}
        {{- with .mounts }}
        {{- . | nindent 8 }}
        {{- end }}
      {{- with .lifecycle }}
      lifecycle:
        {{- . | nindent 8 }}
      {{- end }}
  volumes:
    {{- if not .persistent }}
    - name: data
      emptyDir:
        sizeLimit: {{ $ctx.Values.dataSizeLimit }}
    {{- end }}
    - name: tmp
      emptyDir:
        sizeLimit: 256Mi
    {{- if $ctx.Values.natsAuth.credsSecret }}
    - name: nats-creds
      secret:
        secretName: {{ $ctx.Values.natsAuth.credsSecret }}
        defaultMode: 0440
    {{- end }}
    {{- with .volumes }}
    {{- . | nindent 4 }}
    {{- end }}
  {{- with (.values.nodeSelector | default $ctx.Values.nodeSelector) }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with (.values.tolerations | default $ctx.Values.tolerations) }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with (.values.affinity | default $ctx.Values.affinity) }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if $ctx.Values.spreadAcrossNodes }}
  topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "engram.componentSelectorLabels" (dict "ctx" $ctx "component" .component) | nindent 10 }}
  {{- end }}
{{- end }}

{{/*
Probes of a gRPC service. Readiness is gRPC health's overall status (every service of the process ready). Startup
and liveness check that the process accepts connections: the overall status is NOT_SERVING while NATS is
unreachable or the index catches up, which calls for taking the pod out of its Services, not for restarting it.
grpcProbes.livenessService names a health entry that stays SERVING while the process runs, to probe liveness over
gRPC instead.
*/}}
{{- define "engram.grpcProbes" -}}
{{- $port := int .Values.grpcPort }}
{{- with .Values.grpcProbes -}}
startupProbe:
  tcpSocket:
    port: grpc
  {{- toYaml .startup | nindent 2 }}
livenessProbe:
  {{- if .livenessService }}
  grpc:
    port: {{ $port }}
    service: {{ .livenessService | quote }}
  {{- else }}
  tcpSocket:
    port: grpc
  {{- end }}
  {{- toYaml .liveness | nindent 2 }}
readinessProbe:
  grpc:
    port: {{ $port }}
  {{- toYaml .readiness | nindent 2 }}
{{- end }}
{{- end }}

{{- define "engram.grpcPorts" -}}
- name: grpc
  containerPort: {{ .Values.grpcPort }}
  protocol: TCP
{{- end }}

{{/* A gRPC service's ClusterIP Service (gRPC and metrics) and headless Service (what clients resolve). */}}
{{- define "engram.grpcServices" -}}
{{- $ctx := .ctx -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "engram.fullname" $ctx }}-{{ .component }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "engram.componentLabels" (dict "ctx" $ctx "component" .component) | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "engram.componentSelectorLabels" (dict "ctx" $ctx "component" .component) | nindent 4 }}
  ports:
    - name: grpc
      port: {{ $ctx.Values.grpcPort }}
      targetPort: grpc
      protocol: TCP
      appProtocol: grpc
    {{- if $ctx.Values.metrics.enabled }}
    - name: metrics
      port: {{ $ctx.Values.metrics.port }}
      targetPort: metrics
      protocol: TCP
    {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "engram.fullname" $ctx }}-{{ .component }}-headless
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "engram.componentLabels" (dict "ctx" $ctx "component" .component) | nindent 4 }}
spec:
  clusterIP: None
  selector:
    {{- include "engram.componentSelectorLabels" (dict "ctx" $ctx "component" .component) | nindent 4 }}
  ports:
    - name: grpc
      port: {{ $ctx.Values.grpcPort }}
      targetPort: grpc
      protocol: TCP
      appProtocol: grpc
{{- end }}

{{/* A gRPC service's Deployment. (dict "ctx" $ "component" "ingest" "values" .Values.ingest "env" <yaml list>) */}}
{{- define "engram.grpcDeployment" -}}
{{- $ctx := .ctx -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "engram.fullname" $ctx }}-{{ .component }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "engram.componentLabels" (dict "ctx" $ctx "component" .component) | nindent 4 }}
  annotations:
    {{- include "engram.checkovSkips" $ctx | nindent 4 }}
spec:
  {{- if not (and .values.autoscaling .values.autoscaling.enabled) }}
  replicas: {{ .values.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "engram.componentSelectorLabels" (dict "ctx" $ctx "component" .component) | nindent 6 }}
  template:
    {{- $pod := dict "ctx" $ctx "component" .component "values" .values "env" .env "ports" (include "engram.grpcPorts" $ctx) "probes" (include "engram.grpcProbes" $ctx) }}
    {{- include "engram.podTemplate" $pod | nindent 4 }}
{{- end }}

{{/*
Policy-scanner findings that are deliberate (checkov reads these annotations; docs/operations.md lists them).
*/}}
{{- define "engram.checkovSkips" -}}
checkov.io/skip1: CKV_K8S_43=The image is referenced by its release tag; set image.digest to pin it by digest
checkov.io/skip2: CKV_K8S_15=IfNotPresent by default - release tags are not rewritten and image.digest pins one; Always would make every pod start depend on the registry and cannot run an image loaded into a kind node; set image.pullPolicy
checkov.io/skip3: CKV_K8S_35=Engram reads settings only from ENGRAM_* environment variables (engram/config.py) - the NATS password and the Qdrant API key come from Secrets by secretKeyRef, never from the manifest; natsAuth.credsSecret mounts a NATS creds file instead
{{- end }}

{{- define "engram.gatewayEnv" -}}
{{- $ctx := .ctx -}}
- name: ENGRAM_HOST
  value: "0.0.0.0"
- name: ENGRAM_PORT
  value: {{ $ctx.Values.gateway.port | quote }}
- name: ENGRAM_KEYS_FILE
  value: /etc/engram/keys/keys.json
- name: ENGRAM_INGEST_ADDR
  value: {{ include "engram.grpcTarget" (dict "ctx" $ctx "component" "ingest") | quote }}
- name: ENGRAM_SEARCH_ADDR
  value: {{ include "engram.grpcTarget" (dict "ctx" $ctx "component" "search") | quote }}
- name: ENGRAM_CONSOLIDATION_ADDR
  value: {{ include "engram.grpcTarget" (dict "ctx" $ctx "component" "consolidation") | quote }}
- name: ENGRAM_SYNC_ADDR
  value: {{ include "engram.grpcTarget" (dict "ctx" $ctx "component" "sync") | quote }}
- name: ENGRAM_ALLOWED_HOSTS
  value: {{ join "," .hosts | quote }}
{{- with .origins }}
- name: ENGRAM_ALLOWED_ORIGINS
  value: {{ join "," . | quote }}
{{- end }}
{{- end }}

{{/* The gateway's probes: /healthz (the process is up) and /readyz (every service ready, or why not). */}}
{{- define "engram.httpProbes" -}}
{{- with .Values.gateway.probes -}}
startupProbe:
  httpGet:
    path: /healthz
    port: http
  {{- toYaml .startup | nindent 2 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  {{- toYaml .liveness | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: http
  {{- toYaml .readiness | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The NATS chart's server pods. By name and component, not by release: with `kubectl apply -k` NATS is its own Helm
release (engram-nats), so its instance label differs from Engram's.
*/}}
{{- define "engram.natsPodLabels" -}}
app.kubernetes.io/name: nats
app.kubernetes.io/component: nats
{{- end }}
