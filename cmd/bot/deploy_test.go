package main

// Tests of the deployment pieces at the repository's root: the GitHub App
// manifest, the Kubernetes manifest, the systemd unit, the container image
// (built by .ci/run as pullwright/bot:ci) and "bot healthcheck", which the
// image's HEALTHCHECK runs.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pullwright/pullwright/internal/prereq"
)

// deployFile reads a file of the repository (the test runs in cmd/bot).
func deployFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appManifest is a GitHub App manifest: every parameter GitHub's manifest
// flow accepts, and no other (the file is decoded strictly, so a misspelt
// key fails here rather than being ignored by GitHub).
type appManifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	Description    string `json:"description"`
	HookAttributes *struct {
		URL    string `json:"url"`
		Active *bool  `json:"active"`
	} `json:"hook_attributes"`
	RedirectURL           string            `json:"redirect_url"`
	CallbackURLs          []string          `json:"callback_urls"`
	SetupURL              string            `json:"setup_url"`
	Public                *bool             `json:"public"`
	DefaultPermissions    map[string]string `json:"default_permissions"`
	DefaultEvents         []string          `json:"default_events"`
	RequestOAuthOnInstall bool              `json:"request_oauth_on_install"`
	SetupOnUpdate         bool              `json:"setup_on_update"`
}

// The permissions and events the bot needs, and nothing more: a permission
// too many is access the bot does not need. docs/deploy.md says why each.
var (
	appPermissions = map[string]string{
		"issues":        "write", // reactions, status comments, replies
		"pull_requests": "write", // draft and ready pull requests
		"contents":      "write", // clone, push the work branch, read .github/pullwright.yml
		"checks":        "write", // approval and run check runs with buttons
		"actions":       "read",  // the logs of a pull request's failing jobs
		"metadata":      "read",  // mandatory for every app
		"members":       "read",  // team allow-lists in trigger and approve
	}
	appEvents = []string{"issue_comment", "issues", "check_run", "pull_request_review_comment", "pull_request"}
)

func TestDeployAppManifest(t *testing.T) {
	dec := json.NewDecoder(bytes.NewReader(deployFile(t, "app-manifest.json")))
	dec.DisallowUnknownFields()
	var m appManifest
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("app-manifest.json: %v", err)
	}
	if dec.More() {
		t.Fatal("app-manifest.json: more than one JSON value")
	}
	if m.Name == "" || len(m.Name) > 34 {
		t.Errorf("name %q: want 1 to 34 characters (GitHub's limit for an app name)", m.Name)
	}
	if !strings.HasPrefix(m.URL, "https://") {
		t.Errorf("url %q: want the app's https homepage (required)", m.URL)
	}
	switch {
	case m.HookAttributes == nil:
		t.Error("hook_attributes: missing (its url is where GitHub sends deliveries)")
	case !strings.HasPrefix(m.HookAttributes.URL, "https://") || !strings.HasSuffix(m.HookAttributes.URL, "/webhook"):
		t.Errorf("hook_attributes.url %q: want https://HOST/webhook, the route of bot serve", m.HookAttributes.URL)
	case m.HookAttributes.Active != nil && !*m.HookAttributes.Active:
		t.Error("hook_attributes.active is false: the app would get no deliveries")
	}
	if !strings.HasPrefix(m.RedirectURL, "https://") {
		t.Errorf("redirect_url %q: want an https URL (GitHub sends the one-time code there)", m.RedirectURL)
	}
	if m.Public == nil || *m.Public {
		t.Error("public: want false (only its owner may install the app; it can read and push code)")
	}
	if !maps.Equal(m.DefaultPermissions, appPermissions) {
		t.Errorf("default_permissions = %v\nwant exactly %v", m.DefaultPermissions, appPermissions)
	}
	got, want := slices.Sorted(slices.Values(m.DefaultEvents)), slices.Sorted(slices.Values(appEvents))
	if !slices.Equal(got, want) {
		t.Errorf("default_events = %v\nwant exactly %v", got, want)
	}

	// The guide explains each permission and event, and the flow.
	doc := string(deployFile(t, "docs/deploy.md"))
	for _, s := range append(slices.Collect(maps.Keys(appPermissions)), appEvents...) {
		if !strings.Contains(doc, "`"+s+"`") {
			t.Errorf("docs/deploy.md does not explain `%s`", s)
		}
	}
	for _, s := range []string{"app-manifest.json", "https://github.com/settings/apps/new", "/app-manifests/", "/conversions"} {
		if !strings.Contains(doc, s) {
			t.Errorf("docs/deploy.md does not mention %s", s)
		}
	}
}

// k8sObject is the part of a Kubernetes object the test looks at.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		// Deployment, StatefulSet
		Replicas *int `yaml:"replicas"`
		Strategy struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		UpdateStrategy struct {
			Type string `yaml:"type"`
		} `yaml:"updateStrategy"`
		ServiceName string `yaml:"serviceName"`
		Template    struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
		// PodDisruptionBudget, and the workloads
		MaxUnavailable any `yaml:"maxUnavailable"`
		// A workload's or a budget's {matchLabels: {…}}, a Service's labels.
		Selector map[string]any `yaml:"selector"`
		// Service
		ClusterIP string `yaml:"clusterIP"`
		Ports     []struct {
			TargetPort any `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// k8sObjects decodes the objects of a manifest of the repository by kind.
func k8sObjects(t *testing.T, path string) map[string][]k8sObject {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(deployFile(t, path)))
	byKind := map[string][]k8sObject{}
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if o.Kind == "" {
			continue // an empty document
		}
		if o.APIVersion == "" || o.Metadata.Name == "" {
			t.Errorf("%s: a %s without apiVersion or metadata.name", path, o.Kind)
		}
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	if n := len(byKind["Secret"]); n != 0 {
		t.Errorf("%s has %d Secret objects: secrets are created with kubectl, never committed", path, n)
	}
	return byKind
}

// selects is the labels o's selector requires.
func (o k8sObject) selects() map[string]string {
	sel := o.Spec.Selector
	if o.Kind != "Service" {
		sel, _ = sel["matchLabels"].(map[string]any)
	}
	out := map[string]string{}
	for k, v := range sel {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// k8sPod is what checkPod found in a pod: the bot container's environment
// (a secret as "secret:name/key"), its ports by name, and where each mount
// path comes from ("pvc:claim" or "emptyDir").
type k8sPod struct {
	env    map[string]string
	ports  map[string]int
	mounts map[string]string
}

// checkPod checks what every manifest's bot pod must be: non-root, a
// read-only root, no capabilities, secrets from Secrets, BOT_ADDR on the
// http port, probes on /healthz and /readyz, and /tmp an emptyDir.
func checkPod(t *testing.T, pod k8sPodSpec) k8sPod {
	t.Helper()
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser == 0 {
		t.Error("pod securityContext: want runAsNonRoot: true and a non-zero runAsUser")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("the pod has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("container: want readOnlyRootFilesystem: true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container: want allowPrivilegeEscalation: false")
	}
	if !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("container: capabilities.drop = %v, want [ALL]", sc.Capabilities.Drop)
	}

	out := k8sPod{env: map[string]string{}, ports: map[string]int{}, mounts: map[string]string{}}
	for _, p := range c.Ports {
		out.ports[p.Name] = p.ContainerPort
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			out.env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		case e.Name != "GITHUB_APP_PRIVATE_KEY_PATH" && (strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "KEY")):
			t.Errorf("env %s is set literally: a secret belongs in a Secret (secretKeyRef)", e.Name)
		default:
			out.env[e.Name] = e.Value
		}
	}
	_, port, err := net.SplitHostPort(out.env["BOT_ADDR"])
	if err != nil || fmt.Sprint(out.ports["http"]) != port {
		t.Errorf("BOT_ADDR %q and the container port http (%d) disagree", out.env["BOT_ADDR"], out.ports["http"])
	}
	for _, name := range []string{"GITHUB_WEBHOOK_SECRET", "OPENAI_API_KEY"} {
		if !strings.HasPrefix(out.env[name], "secret:") {
			t.Errorf("env %s: want it from a Secret", name)
		}
	}
	probe := func(name string, p *k8sProbe, path string) {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("container: no %s with httpGet", name)
			return
		}
		if p.HTTPGet.Path != path || (p.HTTPGet.Port != "http" && p.HTTPGet.Port != out.ports["http"]) {
			t.Errorf("%s: GET %v%s, want GET http%s", name, p.HTTPGet.Port, p.HTTPGet.Path, path)
		}
	}
	probe("livenessProbe", c.LivenessProbe, "/healthz")
	probe("readinessProbe", c.ReadinessProbe, "/readyz")

	volumes := map[string]string{}
	for _, v := range pod.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			volumes[v.Name] = "pvc:" + v.PersistentVolumeClaim.ClaimName
		case v.EmptyDir != nil:
			volumes[v.Name] = "emptyDir"
		}
	}
	for _, m := range c.VolumeMounts {
		out.mounts[m.MountPath] = volumes[m.Name]
	}
	if out.mounts["/tmp"] != "emptyDir" {
		t.Error("/tmp: want an emptyDir (the root file system is read-only)")
	}
	return out
}

// checkService checks that a Service sends to the bot's http port.
func checkService(t *testing.T, svc k8sObject, pod k8sPod) {
	t.Helper()
	if tp := svc.Spec.Ports; len(tp) == 0 || (tp[0].TargetPort != "http" && tp[0].TargetPort != pod.ports["http"]) {
		t.Errorf("Service %s: want a port targeting the container's http port", svc.Metadata.Name)
	}
}

type k8sPodSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    *int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name  string `yaml:"name"`
		Image string `yaml:"image"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		SecurityContext struct {
			RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
		LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
		ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	} `yaml:"containers"`
	Volumes []struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
		EmptyDir any `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

func TestDeployKubernetes(t *testing.T) {
	byKind := k8sObjects(t, "deploy/kubernetes.yaml")
	for _, kind := range []string{"Deployment", "Service", "PersistentVolumeClaim"} {
		if len(byKind[kind]) != 1 {
			t.Fatalf("deploy/kubernetes.yaml has %d %s objects, want 1", len(byKind[kind]), kind)
		}
	}
	d := byKind["Deployment"][0]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Error("Deployment: want replicas: 1 (SQLite has a single writer)")
	}
	if d.Spec.Strategy.Type != "Recreate" {
		t.Errorf("Deployment strategy %q: want Recreate, so that an upgrade never runs two bots on one SQLite file", d.Spec.Strategy.Type)
	}
	pod := checkPod(t, d.Spec.Template.Spec)
	// With a read-only root, the database and workspaces are on the volume.
	if got, want := pod.mounts["/var/lib/pullwright"], "pvc:"+byKind["PersistentVolumeClaim"][0].Metadata.Name; got != want {
		t.Errorf("/var/lib/pullwright is mounted from %q, want %q", got, want)
	}
	for _, name := range []string{"BOT_DATABASE_URL", "BOT_WORKDIR"} {
		if !strings.Contains(pod.env[name], "/var/lib/pullwright/") {
			t.Errorf("%s=%q: want it on the volume at /var/lib/pullwright", name, pod.env[name])
		}
	}
	checkService(t, byKind["Service"][0], pod)
}

func TestDeployKubernetesReplicas(t *testing.T) {
	const path = "deploy/kubernetes-replicas.yaml"
	byKind := k8sObjects(t, path)
	if len(byKind["StatefulSet"]) != 1 || len(byKind["PodDisruptionBudget"]) != 1 || len(byKind["Service"]) != 2 {
		t.Fatalf("%s: want one StatefulSet, one PodDisruptionBudget and two Services", path)
	}
	if n := len(byKind["PersistentVolumeClaim"]); n != 0 {
		t.Errorf("%s has %d PersistentVolumeClaims: replicas keep nothing on disk that another may need", path, n)
	}
	ss := byKind["StatefulSet"][0]
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas < 2 {
		t.Error("StatefulSet: want at least 2 replicas")
	}
	if ss.Spec.UpdateStrategy.Type != "RollingUpdate" {
		t.Errorf("StatefulSet updateStrategy %q: want RollingUpdate", ss.Spec.UpdateStrategy.Type)
	}
	pod := checkPod(t, ss.Spec.Template.Spec)
	if pod.env["BOT_DATABASE_URL"] != "secret:pullwright/database-url" {
		t.Errorf("BOT_DATABASE_URL = %q: want the Postgres URL (it holds a password) from the Secret", pod.env["BOT_DATABASE_URL"])
	}
	if pod.mounts["/var/lib/pullwright"] != "emptyDir" || !strings.HasPrefix(pod.env["BOT_WORKDIR"], "/var/lib/pullwright/") {
		t.Errorf("BOT_WORKDIR %q on %q: want scratch space (an emptyDir)", pod.env["BOT_WORKDIR"], pod.mounts["/var/lib/pullwright"])
	}
	labels := ss.Spec.Template.Metadata.Labels
	pdb := byKind["PodDisruptionBudget"][0]
	if !maps.Equal(ss.selects(), labels) || len(labels) == 0 {
		t.Errorf("StatefulSet selects %v, its pods carry %v", ss.selects(), labels)
	}
	if pdb.Spec.MaxUnavailable == nil || !maps.Equal(pdb.selects(), labels) {
		t.Error("PodDisruptionBudget: want maxUnavailable and the StatefulSet's selector")
	}
	var governing bool
	for _, svc := range byKind["Service"] {
		checkService(t, svc, pod)
		if len(svc.selects()) == 0 {
			t.Errorf("Service %s selects nothing", svc.Metadata.Name)
		}
		for k, v := range svc.selects() {
			if labels[k] != v {
				t.Errorf("Service %s selects %s=%s, which the pods do not carry", svc.Metadata.Name, k, v)
			}
		}
		if svc.Metadata.Name == ss.Spec.ServiceName {
			governing = svc.Spec.ClusterIP == "None"
		}
	}
	if !governing {
		t.Errorf("StatefulSet serviceName %q: want a headless Service of that name", ss.Spec.ServiceName)
	}
}

func TestDeploySystemdUnit(t *testing.T) {
	unit := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(deployFile(t, "deploy/pullwright.service")))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("deploy/pullwright.service: %q is not KEY=value", line)
			continue
		}
		unit[k] = append(unit[k], v)
	}
	want := map[string]string{
		"NoNewPrivileges":       "yes",
		"ProtectSystem":         "strict",
		"PrivateTmp":            "yes",
		"StateDirectory":        "pullwright",
		"CapabilityBoundingSet": "",
	}
	for k, v := range want {
		if !slices.Contains(unit[k], v) {
			t.Errorf("deploy/pullwright.service: want %s=%s, have %q", k, v, unit[k])
		}
	}
	if len(unit["User"]) == 0 && !slices.Contains(unit["DynamicUser"], "yes") {
		t.Error("deploy/pullwright.service: want a dedicated User= or DynamicUser=yes")
	}
	if u := unit["User"]; slices.Contains(u, "root") || slices.Contains(u, "0") {
		t.Error("deploy/pullwright.service runs as root")
	}
	if g := unit["SupplementaryGroups"]; slices.Contains(g, "docker") {
		t.Error("deploy/pullwright.service: the docker group is root on the host")
	}
	if e := unit["ExecStart"]; len(e) != 1 || !strings.HasSuffix(e[0], " serve") {
		t.Errorf("ExecStart = %q, want one ... serve", e)
	}
	// The workspaces must be where the Docker engine sees them: not in the
	// service's private /tmp.
	env := strings.Join(unit["Environment"], "\n")
	for _, s := range []string{"BOT_WORKDIR=/var/lib/pullwright/", "BOT_DATABASE_URL=sqlite:///var/lib/pullwright/"} {
		if !strings.Contains(env, s) {
			t.Errorf("deploy/pullwright.service: want Environment=%s…", s)
		}
	}
}

func TestDeployHealthcheck(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":          "http://127.0.0.1:8080/healthz",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/healthz",
		"[::]:9000":      "http://127.0.0.1:9000/healthz",
		"127.0.0.1:8081": "http://127.0.0.1:8081/healthz",
		"10.1.2.3:80":    "http://10.1.2.3:80/healthz",
		"[::1]:8080":     "http://[::1]:8080/healthz",
		"localhost:8080": "http://localhost:8080/healthz",
		":http":          "http://127.0.0.1:80/healthz",
	} {
		if got, err := healthURL(addr); err != nil || got != want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	for _, addr := range []string{"8080", "host", ":", ":nosuchservice"} {
		if got, err := healthURL(addr); err == nil {
			t.Errorf("healthURL(%q) = %q, want an error", addr, got)
		}
	}

	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	getenv := func(k string) string {
		if k == "BOT_ADDR" {
			return ":" + port
		}
		return ""
	}
	var out bytes.Buffer
	if err := healthcheck(context.Background(), getenv, &out); err != nil {
		t.Fatalf("healthy server: %v", err)
	}
	if !strings.Contains(out.String(), "200") {
		t.Errorf("output %q does not show the 200", out.String())
	}
	status = http.StatusServiceUnavailable
	if err := healthcheck(context.Background(), getenv, io.Discard); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("server answering 503: err = %v, want one naming the 503", err)
	}
	srv.Close()
	if err := healthcheck(context.Background(), getenv, io.Discard); err == nil {
		t.Error("no server: want an error")
	}

	// A server that never answers: the check gives up after 3 s.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	start := time.Now()
	if err := healthcheck(context.Background(), getenv, io.Discard); err == nil {
		t.Error("server that never answers: want an error")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the check took %v; it has a 3 s deadline", d)
	}
}

// deployImage is the image .ci/run builds from the Dockerfile.
func deployImage() string {
	if s := os.Getenv("PULLWRIGHT_BOT_IMAGE"); s != "" {
		return s
	}
	return "pullwright/bot:ci"
}

// needImage skips the test when there is no Docker engine or no image,
// except in CI, where both must be there.
func needImage(t *testing.T) string {
	t.Helper()
	image := deployImage()
	missing := func(format string, args ...any) {
		t.Helper()
		prereq.Missing(t, "the bot's image", fmt.Sprintf(format, args...)+"; build it with: scripts/base-images.sh && docker build -t "+image+" .")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		missing("no docker command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		missing("image %s: %v: %s", image, err, bytes.TrimSpace(out))
	}
	return image
}

func docker(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args[:min(len(args), 2)], " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

func TestDeployImage(t *testing.T) {
	image := needImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var cfg struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		Env          []string
		ExposedPorts map[string]any
		Healthcheck  *struct{ Test []string }
	}
	if err := json.Unmarshal([]byte(docker(t, ctx, "image", "inspect", "--format", "{{json .Config}}", image)), &cfg); err != nil {
		t.Fatal(err)
	}
	uid, _, _ := strings.Cut(cfg.User, ":")
	if uid == "" || uid == "0" || uid == "root" {
		t.Errorf("Config.User = %q: the image must not run as root", cfg.User)
	}
	if cfg.Healthcheck == nil || len(cfg.Healthcheck.Test) == 0 || cfg.Healthcheck.Test[0] == "NONE" {
		t.Errorf("Config.Healthcheck = %+v: want a health check", cfg.Healthcheck)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/bot"}) || !slices.Equal(cfg.Cmd, []string{"serve"}) {
		t.Errorf("ENTRYPOINT %q CMD %q, want [/bot] [serve]", cfg.Entrypoint, cfg.Cmd)
	}
	if _, ok := cfg.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("ExposedPorts = %v, want 8080/tcp", slices.Collect(maps.Keys(cfg.ExposedPorts)))
	}
	if !slices.Contains(cfg.Env, "BOT_DATABASE_URL=sqlite:///var/lib/pullwright/pullwright.db") {
		t.Errorf("Env = %q: want the database in /var/lib/pullwright", cfg.Env)
	}

	if out := docker(t, ctx, "run", "--rm", image, "version"); !strings.HasPrefix(out, "pullwright ") {
		t.Errorf("docker run %s version = %q, want pullwright <version>", image, out)
	}

	// bot serve as the Kubernetes manifest runs it: read-only root, /tmp a
	// tmpfs, the data directory a volume (anonymous here: Docker fills it
	// from the image, owner included), no capabilities. Healthy means the
	// database was created, the workspaces' directory too, and /healthz
	// answered "bot healthcheck" inside the container.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	id := docker(t, ctx, "run", "--detach",
		"--label", "pullwright.test=TestDeployImage",
		"--read-only", "--tmpfs", "/tmp:rw,mode=1777",
		"--volume", "/var/lib/pullwright",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		// Failures in the start period do not count, the first success
		// makes the container healthy: "unhealthy" is a real failure.
		"--health-interval", "1s", "--health-timeout", "5s", "--health-retries", "3", "--health-start-period", "90s",
		"--env", "GITHUB_APP_ID=1",
		"--env", "GITHUB_APP_PRIVATE_KEY="+string(keyPEM),
		"--env", "GITHUB_WEBHOOK_SECRET=x",
		// Fails at once instead of asking the real GitHub who app 1 is.
		"--env", "GITHUB_API_URL=http://127.0.0.1:9",
		"--env", "BOT_RUNNER=local",
		image)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if t.Failed() {
			out, _ := exec.CommandContext(ctx, "docker", "logs", "--tail", "50", id).CombinedOutput()
			t.Logf("container logs:\n%s", out)
		}
		if out, err := exec.CommandContext(ctx, "docker", "rm", "--force", "--volumes", id).CombinedOutput(); err != nil {
			t.Errorf("remove container %s: %v: %s", id, err, out)
		}
	})
	for {
		state := docker(t, ctx, "container", "inspect", "--format", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}", id)
		if state == "running healthy" {
			break
		}
		if state == "running unhealthy" || !strings.HasPrefix(state, "running") && !strings.HasPrefix(state, "created") {
			health := docker(t, ctx, "container", "inspect", "--format", "{{json .State.Health}}", id)
			t.Fatalf("container %s: %s, want running healthy; health: %s", id[:12], state, health)
		}
		select {
		case <-ctx.Done():
			health := docker(t, context.Background(), "container", "inspect", "--format", "{{json .State.Health}}", id)
			t.Fatalf("container %s is %s, not healthy before the deadline; health: %s", id[:12], state, health)
		case <-time.After(500 * time.Millisecond):
		}
	}
	if out := docker(t, ctx, "exec", id, "/bot", "healthcheck"); !strings.Contains(out, "200") {
		t.Errorf("bot healthcheck in the container: %q", out)
	}
	// The bot made its database and workspaces on the volume (docker cp
	// fails for a path that does not exist).
	for _, path := range []string{"/var/lib/pullwright/pullwright.db", "/var/lib/pullwright/work/runs"} {
		docker(t, ctx, "cp", id+":"+path, "-")
	}
}
