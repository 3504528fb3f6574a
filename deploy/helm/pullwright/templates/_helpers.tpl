{{/* The chart's name, and the release's full name (objects are named by it). */}}
{{- define "pullwright.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pullwright.fullname" -}}
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

{{- define "pullwright.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pullwright.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "pullwright.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "pullwright.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* postgres is "true" when the store is an existing Postgres database. */}}
{{- define "pullwright.postgres" -}}
{{- if .Values.database.existingSecret }}true{{ end -}}
{{- end -}}

{{- define "pullwright.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/*
validate refuses values that would deploy a bot that cannot work, or one
that puts a secret where Kubernetes shows it to anyone who may read the
object. Each message says what to set instead.
*/}}
{{- define "pullwright.validate" -}}
{{- $replicas := int .Values.replicaCount -}}
{{- if and (gt $replicas 1) (not .Values.database.existingSecret) -}}
{{- fail (printf "replicaCount is %d, but the store is SQLite (database.existingSecret is empty): a SQLite file has one writer on a ReadWriteOnce volume, so several replicas need Postgres. Create a Secret with the database URL and set database.existingSecret (and database.key), or set replicaCount to 1." $replicas) -}}
{{- end -}}
{{- if lt $replicas 0 -}}
{{- fail "replicaCount must not be negative" -}}
{{- end -}}
{{- if .Values.firstRun.enabled -}}
{{- if not .Values.publicURL -}}
{{- fail "firstRun.enabled needs publicURL: the setup page's address, which GitHub sends the browser back to (https://..., behind TLS)" -}}
{{- end -}}
{{- if .Values.console.existingSecret -}}
{{- fail "firstRun.enabled takes the console's client id, secret and session key from BOT_APP_DIR: leave console.existingSecret empty" -}}
{{- end -}}
{{- if and .Values.database.existingSecret (gt $replicas 1) (not .Values.firstRun.persistence.existingClaim) (not (has "ReadWriteMany" .Values.firstRun.persistence.accessModes)) -}}
{{- fail (printf "firstRun.enabled with %d replicas: every replica must read the App the setup saves in BOT_APP_DIR, and a ReadWriteOnce claim mounts on one node. Set firstRun.persistence.accessModes to [ReadWriteMany] (or an existingClaim that is), or run the first start with replicaCount 1." $replicas) -}}
{{- end -}}
{{- else if not .Values.github.existingSecret -}}
{{- fail "github.existingSecret is empty: name the Secret that holds the App's id, private key and webhook secret, or set firstRun.enabled to create the App from the setup page" -}}
{{- end -}}
{{- if and .Values.operatorConfig.content .Values.operatorConfig.existingSecret -}}
{{- fail "operatorConfig.content and operatorConfig.existingSecret both give the operator's file: set one" -}}
{{- end -}}
{{- if and .Values.console.existingSecret (not .Values.publicURL) -}}
{{- fail "console.existingSecret needs publicURL: the console's sign-in sends GitHub publicURL/console/callback" -}}
{{- end -}}
{{- if and .Values.sandbox.hostSocket.enabled .Values.sandbox.dockerHost -}}
{{- fail "sandbox.hostSocket.enabled and sandbox.dockerHost both name the engine: set one" -}}
{{- end -}}
{{- if and .Values.sandbox.hostSocket.enabled (not .Values.sandbox.hostSocket.gid) -}}
{{- fail "sandbox.hostSocket.enabled needs sandbox.hostSocket.gid, the socket's group on the node (stat -c %g /var/run/docker.sock), for the bot's non-root user to reach it" -}}
{{- end -}}
{{- if contains "@" (.Values.otel.endpoint | default "") -}}
{{- fail "otel.endpoint holds credentials (user@): put them in a header from otel.headersSecret, which stays out of the Deployment" -}}
{{- end -}}
{{- range $name, $value := .Values.otel.env -}}
{{- if not (hasPrefix "OTEL_" $name) -}}
{{- fail (printf "otel.env holds %s: only OTEL_* variables belong there (extraEnv takes the others)" $name) -}}
{{- end -}}
{{- include "pullwright.notACredential" (dict "name" $name "where" "otel.env") -}}
{{- end -}}
{{- range .Values.extraEnv -}}
{{- if hasKey . "value" -}}
{{- include "pullwright.notACredential" (dict "name" .name "where" "extraEnv") -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
notACredential fails on a variable given a literal value whose name says it
holds a credential: a value in the Deployment is readable by anyone who may
read Deployments, and stays in Helm's release history.
*/}}
{{- define "pullwright.notACredential" -}}
{{- if and (regexMatch "(KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|HEADERS|DATABASE_URL)" .name) (not (regexMatch "_(PATH|FILE|DIR)$" .name)) -}}
{{- fail (printf "%s sets %s to a literal value: a credential belongs in a Secret; use valueFrom.secretKeyRef in extraEnv (or otel.headersSecret for OTLP headers)" .where .name) -}}
{{- end -}}
{{- end -}}
