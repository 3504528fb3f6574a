// Package helm tests the Helm chart in deploy/helm/pullwright: it renders
// the chart with the real helm (PULLWRIGHT_HELM names the binary, else
// helm on PATH; .ci/run builds one) over a few sets of values and decodes
// every object with Kubernetes' own API types, strictly, so that a field
// the API does not have is an error as it would be on a cluster.
package helm

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/pullwright/pullwright/internal/prereq"
	"github.com/pullwright/pullwright/policy"
)

const (
	chart      = "pullwright"
	testValues = "pullwright/ci/test-values.yaml"
)

// helmBinary is the helm the test runs: skip without one, fail with CI=true,
// where .ci/run has built it.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PULLWRIGHT_HELM"); p != "" {
		return p
	}
	p, err := exec.LookPath("helm")
	if err == nil {
		return p
	}
	prereq.Missing(t, "helm", "no helm: set PULLWRIGHT_HELM or put helm on PATH (.ci/run builds it from its Go module)")
	return ""
}

// render runs helm template on the chart with the values files and --set
// arguments given, and returns what it printed, or its error with stderr.
func render(t *testing.T, helm string, files, set []string) (string, error) {
	t.Helper()
	args := []string{"template", "pullwright", chart, "--namespace", "pullwright"}
	for _, f := range files {
		args = append(args, "--values", f)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.CommandContext(t.Context(), helm, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", errors.New(err.Error() + ": " + stderr.String())
	}
	return stdout.String(), nil
}

// objects are the rendered objects by kind. ServiceMonitor is the
// Prometheus Operator's, whose types the module does not carry: it stays a
// map.
type objects struct {
	deployments     []appsv1.Deployment
	services        []corev1.Service
	pdbs            []policyv1.PodDisruptionBudget
	pvcs            []corev1.PersistentVolumeClaim
	configMaps      []corev1.ConfigMap
	serviceMonitors []map[string]any
}

// decode reads every document of out into its kind's type, refusing a kind
// the chart should not render (a Secret above all) and a field the type
// does not have.
func decode(t *testing.T, out string) objects {
	t.Helper()
	var objs objects
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read the rendered documents: %v", err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("decode a rendered document: %v\n%s", err, doc)
		}
		var into any
		switch meta.Kind {
		case "":
			continue // a document of comments only
		case "Deployment":
			objs.deployments = append(objs.deployments, appsv1.Deployment{})
			into = &objs.deployments[len(objs.deployments)-1]
		case "Service":
			objs.services = append(objs.services, corev1.Service{})
			into = &objs.services[len(objs.services)-1]
		case "PodDisruptionBudget":
			objs.pdbs = append(objs.pdbs, policyv1.PodDisruptionBudget{})
			into = &objs.pdbs[len(objs.pdbs)-1]
		case "PersistentVolumeClaim":
			objs.pvcs = append(objs.pvcs, corev1.PersistentVolumeClaim{})
			into = &objs.pvcs[len(objs.pvcs)-1]
		case "ConfigMap":
			objs.configMaps = append(objs.configMaps, corev1.ConfigMap{})
			into = &objs.configMaps[len(objs.configMaps)-1]
		case "ServiceMonitor":
			objs.serviceMonitors = append(objs.serviceMonitors, map[string]any{})
			into = &objs.serviceMonitors[len(objs.serviceMonitors)-1]
		case "Secret":
			t.Fatalf("the chart rendered a Secret: credentials come from Secrets the operator creates, never from values\n%s", doc)
		default:
			t.Fatalf("the chart rendered a %s, which this test does not check\n%s", meta.Kind, doc)
		}
		// As the API server decodes: field names matched case-sensitively
		// (encoding/json alone takes readOnlyRootFileSystem for
		// readOnlyRootFilesystem), no unknown field, no field twice.
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("the %s is no YAML: %v\n%s", meta.Kind, err, doc)
		}
		strict, err := kjson.UnmarshalStrict(j, into)
		if err := errors.Join(append(strict, err)...); err != nil {
			t.Fatalf("decode the %s: %v\n%s", meta.Kind, err, doc)
		}
	}
	return objs
}

// credentialName is a variable whose value is a credential by its name.
var credentialName = regexp.MustCompile(`KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|HEADERS|DATABASE_URL`)

func TestChartRenders(t *testing.T) {
	helm := helmBinary(t)
	testSecrets := []string{"pullwright-app", "pullwright-console", "pullwright-db", "pullwright-docker-tls", "pullwright-model", "pullwright-otlp"}
	cases := []struct {
		name           string
		files, set     []string
		replicas       int32
		postgres       bool
		firstRun       bool
		serviceMonitor bool
		hostSocket     bool
		operatorFile   bool
		secrets        []string // every Secret the pod reads, sorted
	}{
		{
			name:     "the chart's defaults: one pod on SQLite",
			replicas: 1,
			secrets:  []string{"pullwright"},
		},
		{
			name:           "the test values: three replicas on Postgres, console, traces, sandbox host",
			files:          []string{testValues},
			replicas:       3,
			postgres:       true,
			serviceMonitor: true,
			operatorFile:   true,
			secrets:        testSecrets,
		},
		{
			name:         "the test values on one replica",
			files:        []string{testValues},
			set:          []string{"replicaCount=1", "metrics.serviceMonitor.enabled=false"},
			replicas:     1,
			postgres:     true,
			operatorFile: true,
			secrets:      testSecrets,
		},
		{
			name:     "first run on SQLite",
			set:      []string{"firstRun.enabled=true", "publicURL=https://pullwright.example.com"},
			replicas: 1,
			firstRun: true,
			secrets:  []string{"pullwright"},
		},
		{
			name:  "first run on Postgres, two replicas on a ReadWriteMany claim",
			files: []string{testValues},
			set: []string{"replicaCount=2", "firstRun.enabled=true", "console.existingSecret=",
				"firstRun.persistence.accessModes={ReadWriteMany}"},
			replicas:       2,
			postgres:       true,
			firstRun:       true,
			serviceMonitor: true,
			operatorFile:   true,
			secrets:        []string{"pullwright-db", "pullwright-docker-tls", "pullwright-model", "pullwright-otlp"},
		},
		{
			name:       "the node's Docker socket",
			set:        []string{"sandbox.hostSocket.enabled=true", "sandbox.hostSocket.gid=998"},
			replicas:   1,
			hostSocket: true,
			secrets:    []string{"pullwright"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(t, helm, tc.files, tc.set)
			if err != nil {
				t.Fatal(err)
			}
			objs := decode(t, out)
			if len(objs.deployments) != 1 || len(objs.services) != 1 {
				t.Fatalf("rendered %d Deployments and %d Services, want one each", len(objs.deployments), len(objs.services))
			}
			d := objs.deployments[0]
			if d.Spec.Replicas == nil || *d.Spec.Replicas != tc.replicas {
				t.Errorf("Deployment replicas = %v, want %d", d.Spec.Replicas, tc.replicas)
			}
			labels := d.Spec.Template.Labels
			if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 || !subset(d.Spec.Selector.MatchLabels, labels) {
				t.Errorf("Deployment selects %v, its pods carry %v", d.Spec.Selector, labels)
			}
			pod := d.Spec.Template.Spec
			checkPodSecurity(t, pod, tc.hostSocket)
			env, secrets := checkEnv(t, pod)
			if want := tc.secrets; !slices.Equal(secrets, want) {
				t.Errorf("the pod reads the Secrets %v, want %v", secrets, want)
			}
			c := pod.Containers[0]
			checkProbes(t, c, env["BOT_ADDR"])

			mounts := mountSources(pod, c)
			if tc.postgres {
				if env["BOT_DATABASE_URL"] != "secret:pullwright-db/database-url" {
					t.Errorf("BOT_DATABASE_URL = %q, want it from the Secret pullwright-db", env["BOT_DATABASE_URL"])
				}
				if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
					t.Errorf("strategy %q on Postgres, want RollingUpdate", d.Spec.Strategy.Type)
				}
				if mounts["/var/lib/pullwright"] != "emptyDir" {
					t.Errorf("/var/lib/pullwright from %q on Postgres, want an emptyDir: replicas share nothing on disk", mounts["/var/lib/pullwright"])
				}
			} else {
				if !strings.HasPrefix(env["BOT_DATABASE_URL"], "sqlite:///var/lib/pullwright/") {
					t.Errorf("BOT_DATABASE_URL = %q, want a SQLite file on the data volume", env["BOT_DATABASE_URL"])
				}
				if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
					t.Errorf("strategy %q on SQLite, want Recreate: two pods must never share the file", d.Spec.Strategy.Type)
				}
				if mounts["/var/lib/pullwright"] != "pvc:pullwright-data" || !hasClaim(objs.pvcs, "pullwright-data") {
					t.Errorf("/var/lib/pullwright from %q, want the chart's claim pullwright-data", mounts["/var/lib/pullwright"])
				}
			}
			if (pod.Hostname != "") != (tc.replicas == 1) {
				t.Errorf("hostname %q with %d replicas: want a fixed one with one replica only (replicas of one name remove each other's sandboxes)", pod.Hostname, tc.replicas)
			}
			if tc.replicas == 1 && pod.Hostname != d.Name {
				// Two releases on one sandbox engine must not share it.
				t.Errorf("hostname %q, want the release's full name %q", pod.Hostname, d.Name)
			}

			if tc.firstRun {
				dir := env["BOT_APP_DIR"]
				if dir == "" || env["GITHUB_APP_ID"] != "" || env["GITHUB_WEBHOOK_SECRET"] != "" {
					t.Errorf("first run: BOT_APP_DIR %q, GITHUB_APP_ID %q, GITHUB_WEBHOOK_SECRET %q: want the directory alone", dir, env["GITHUB_APP_ID"], env["GITHUB_WEBHOOK_SECRET"])
				}
				if src := mountOf(mounts, dir); !strings.HasPrefix(src, "pvc:") {
					t.Errorf("BOT_APP_DIR %s is on %q, want a PersistentVolumeClaim: the saved App must outlast the pod", dir, src)
				} else if !hasClaim(objs.pvcs, strings.TrimPrefix(src, "pvc:")) {
					t.Errorf("BOT_APP_DIR's claim %s is not rendered", src)
				}
				if env["BOT_PUBLIC_URL"] == "" {
					t.Error("first run without BOT_PUBLIC_URL")
				}
			} else {
				for _, name := range []string{"GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET", "OPENAI_API_KEY"} {
					if !strings.HasPrefix(env[name], "secret:") {
						t.Errorf("%s = %q, want it from a Secret", name, env[name])
					}
				}
				if key := env["GITHUB_APP_PRIVATE_KEY_PATH"]; !strings.HasPrefix(mountOf(mounts, key), "secret:") {
					t.Errorf("GITHUB_APP_PRIVATE_KEY_PATH %q is not in a Secret's volume", key)
				}
			}

			if tc.hostSocket {
				if !strings.HasPrefix(env["DOCKER_HOST"], "unix://") || mountOf(mounts, strings.TrimPrefix(env["DOCKER_HOST"], "unix://")) != "hostPath:/var/run/docker.sock" {
					t.Errorf("DOCKER_HOST %q: want the node's socket, mounted", env["DOCKER_HOST"])
				}
				if sc := pod.SecurityContext; sc == nil || !slices.Contains(sc.SupplementalGroups, 998) {
					t.Error("the socket's group is not among the pod's supplemental groups")
				}
			}

			if tc.operatorFile {
				if len(objs.configMaps) != 1 {
					t.Fatalf("%d ConfigMaps, want the operator's file", len(objs.configMaps))
				}
				file := env["BOT_CONFIG"]
				if mountOf(mounts, file) != "configMap:"+objs.configMaps[0].Name {
					t.Errorf("BOT_CONFIG %q is not in the ConfigMap's volume", file)
				}
				if _, err := policy.LoadOperator([]byte(objs.configMaps[0].Data["operator.yml"])); err != nil {
					t.Errorf("the operator's file of the values: %v", err)
				}
			} else if len(objs.configMaps) != 0 || env["BOT_CONFIG"] != "" {
				t.Error("an operator's file without operatorConfig")
			}

			svc := objs.services[0]
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
				t.Errorf("Service ports %v, want one targeting http", svc.Spec.Ports)
			}
			if len(svc.Spec.Selector) == 0 || !subset(svc.Spec.Selector, labels) {
				t.Errorf("Service selects %v, the pods carry %v", svc.Spec.Selector, labels)
			}

			if want := tc.replicas > 1; (len(objs.pdbs) == 1) != want || len(objs.pdbs) > 1 {
				t.Errorf("%d PodDisruptionBudgets with %d replicas", len(objs.pdbs), tc.replicas)
			} else if want {
				pdb := objs.pdbs[0]
				if pdb.Spec.MaxUnavailable == nil || pdb.Spec.Selector == nil || !maps.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
					t.Errorf("PodDisruptionBudget %+v: want maxUnavailable and the Deployment's selector", pdb.Spec)
				}
			}

			if (len(objs.serviceMonitors) == 1) != tc.serviceMonitor || len(objs.serviceMonitors) > 1 {
				t.Errorf("%d ServiceMonitors, want one only when enabled (%v)", len(objs.serviceMonitors), tc.serviceMonitor)
			} else if tc.serviceMonitor {
				checkServiceMonitor(t, objs.serviceMonitors[0], svc)
			}
		})
	}
}

// TestChartRefuses checks that values the bot cannot work with, or that
// would put a credential in the Deployment, fail to render with a message
// that says what to do.
func TestChartRefuses(t *testing.T) {
	helm := helmBinary(t)
	cases := []struct {
		name  string
		files []string
		set   []string
		want  string
	}{
		{"two replicas on SQLite", nil, []string{"replicaCount=2"}, "several replicas need Postgres"},
		{"the test values without the database", []string{testValues}, []string{"database.existingSecret="}, "several replicas need Postgres"},
		{"no App and no first run", nil, []string{"github.existingSecret="}, "github.existingSecret is empty"},
		{"first run without an address", nil, []string{"firstRun.enabled=true"}, "firstRun.enabled needs publicURL"},
		{"first run on three replicas and a ReadWriteOnce claim", []string{testValues}, []string{"firstRun.enabled=true", "console.existingSecret="}, "ReadWriteMany"},
		{"the console without an address", nil, []string{"console.existingSecret=pullwright-console"}, "console.existingSecret needs publicURL"},
		{"a model key as a literal value", nil, []string{"extraEnv[0].name=OPENAI_API_KEY", "extraEnv[0].value=sk-test"}, "extraEnv sets OPENAI_API_KEY to a literal value"},
		{"OTLP headers as a literal value", nil, []string{"otel.env.OTEL_EXPORTER_OTLP_HEADERS=x"}, "otel.env sets OTEL_EXPORTER_OTLP_HEADERS to a literal value"},
		{"a variable of the bot in otel.env", nil, []string{"otel.env.BOT_WORKERS=8"}, "only OTEL_* variables"},
		{"credentials in the OTLP endpoint", nil, []string{"otel.endpoint=https://user:pw@collector:4318"}, "otel.endpoint holds credentials"},
		{"the node's socket without its group", nil, []string{"sandbox.hostSocket.enabled=true"}, "sandbox.hostSocket.gid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(t, helm, tc.files, tc.set)
			if err == nil {
				t.Fatalf("rendered, want a failure saying %q\n%s", tc.want, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("failed with %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// checkPodSecurity checks the pod and each of its containers against what
// the image needs and no more: a non-root user, no privilege, no
// capability, a read-only root, the runtime's seccomp profile, nothing of
// the node's but the Docker socket when asked for.
func checkPodSecurity(t *testing.T, pod corev1.PodSpec, hostSocket bool) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("pod securityContext: want runAsNonRoot and a non-zero runAsUser")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod securityContext: want the RuntimeDefault seccomp profile")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("the pod shares the node's network, processes or IPC")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service-account token: the bot never talks to the Kubernetes API")
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil && !(hostSocket && v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathSocket) {
			t.Errorf("volume %s mounts the node's %s", v.Name, v.HostPath.Path)
		}
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want the bot alone", len(pod.Containers))
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s has no securityContext", c.Name)
			continue
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("container %s is privileged", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s: want allowPrivilegeEscalation: false", c.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container %s: want readOnlyRootFilesystem", c.Name)
		}
		if sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot || sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("container %s runs as root", c.Name)
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container %s capabilities %+v: want drop [ALL] and none added", c.Name, sc.Capabilities)
		}
	}
}

// checkEnv returns the bot container's environment, a variable from a
// Secret as "secret:name/key", and the sorted names of every Secret the pod
// reads (variables and volumes). A credential by its name must come from a
// Secret; the only literal BOT_DATABASE_URL is a SQLite file.
func checkEnv(t *testing.T, pod corev1.PodSpec) (map[string]string, []string) {
	t.Helper()
	c := pod.Containers[0]
	env := map[string]string{}
	secrets := map[string]bool{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("env %s is set twice", e.Name)
		}
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			env[e.Name] = "secret:" + ref.Name + "/" + ref.Key
			secrets[ref.Name] = true
		case e.ValueFrom != nil:
			t.Errorf("env %s comes from %+v, which this test does not know", e.Name, e.ValueFrom)
		case e.Name == "BOT_DATABASE_URL" && strings.HasPrefix(e.Value, "sqlite://"):
			env[e.Name] = e.Value
		case credentialName.MatchString(e.Name) && !strings.HasSuffix(e.Name, "_PATH"):
			t.Errorf("env %s is set literally: a credential belongs in a Secret", e.Name)
		default:
			env[e.Name] = e.Value
		}
	}
	for _, from := range c.EnvFrom {
		if from.SecretRef != nil {
			secrets[from.SecretRef.Name] = true
		}
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secrets[v.Secret.SecretName] = true
		}
	}
	return env, slices.Sorted(maps.Keys(secrets))
}

// checkProbes checks the probes on /healthz and /readyz, on the port the
// bot listens on.
func checkProbes(t *testing.T, c corev1.Container, addr string) {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	var http int32
	for _, p := range c.Ports {
		if p.Name == "http" {
			http = p.ContainerPort
		}
	}
	if err != nil || strconv.Itoa(int(http)) != port {
		t.Errorf("BOT_ADDR %q and the container port http (%d) disagree", addr, http)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{"startupProbe", c.StartupProbe, "/healthz"},
		{"livenessProbe", c.LivenessProbe, "/healthz"},
		{"readinessProbe", c.ReadinessProbe, "/readyz"},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no %s with httpGet", p.name)
			continue
		}
		if g := p.probe.HTTPGet; g.Path != p.path || g.Port.String() != "http" {
			t.Errorf("%s: GET %s on %s, want %s on http", p.name, g.Path, g.Port.String(), p.path)
		}
	}
}

// mountSources maps each mount path of c to where it comes from:
// "pvc:claim", "emptyDir", "secret:name", "configMap:name" or
// "hostPath:path".
func mountSources(pod corev1.PodSpec, c corev1.Container) map[string]string {
	volumes := map[string]string{}
	for _, v := range pod.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			volumes[v.Name] = "pvc:" + v.PersistentVolumeClaim.ClaimName
		case v.EmptyDir != nil:
			volumes[v.Name] = "emptyDir"
		case v.Secret != nil:
			volumes[v.Name] = "secret:" + v.Secret.SecretName
		case v.ConfigMap != nil:
			volumes[v.Name] = "configMap:" + v.ConfigMap.Name
		case v.HostPath != nil:
			volumes[v.Name] = "hostPath:" + v.HostPath.Path
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = volumes[m.Name]
	}
	return mounts
}

// mountOf is the source of the deepest mount that holds path.
func mountOf(mounts map[string]string, path string) string {
	best := ""
	for p := range mounts {
		if (path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/")) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return ""
	}
	return mounts[best]
}

func hasClaim(pvcs []corev1.PersistentVolumeClaim, name string) bool {
	return slices.ContainsFunc(pvcs, func(p corev1.PersistentVolumeClaim) bool { return p.Name == name })
}

// subset reports whether every label of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkServiceMonitor checks that the ServiceMonitor scrapes /metrics on
// the Service's http port and selects that Service.
func checkServiceMonitor(t *testing.T, sm map[string]any, svc corev1.Service) {
	t.Helper()
	var spec struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port string `json:"port"`
			Path string `json:"path"`
		} `json:"endpoints"`
	}
	b, err := yaml.Marshal(sm["spec"])
	if err == nil {
		err = yaml.Unmarshal(b, &spec)
	}
	if err != nil {
		t.Fatalf("ServiceMonitor spec: %v", err)
	}
	if len(spec.Endpoints) != 1 || spec.Endpoints[0].Port != "http" || spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want /metrics on http", spec.Endpoints)
	}
	if len(spec.Selector.MatchLabels) == 0 || !subset(spec.Selector.MatchLabels, svc.Labels) {
		t.Errorf("ServiceMonitor selects %v, the Service carries %v", spec.Selector.MatchLabels, svc.Labels)
	}
}
