package runner_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/egresstest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
)

// A bundle is certificates and nothing else, checked when the runner is
// made, with an error naming the file; comments between them are left
// out of what sandboxes get.
func TestLoadCABundle(t *testing.T) {
	ca, other := egresstest.NewCA(t, "Test CA"), egresstest.NewCA(t, "Other CA")
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("not a real key")}))
	bad := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not a certificate")}))
	for _, tc := range []struct {
		name, content string
		certs         int
		err           string
	}{
		{"two certificates with comments", "# the network's CA\n" + string(ca.PEM()) + "\nOther CA\n========\n" + string(other.PEM()), 2, ""},
		{"empty", "", 0, "is not a PEM certificate bundle"},
		{"not PEM", "MIIB...\n", 0, "is not a PEM certificate bundle"},
		{"a key among the certificates", string(ca.PEM()) + key, 0, `holds a "PRIVATE KEY" block (its block 2)`},
		{"a block that is no certificate", bad, 0, "its certificate 1 does not parse"},
		{"too large", strings.Repeat("#", 5<<20), 0, "is larger than 4 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(strings.ReplaceAll(tc.name, " ", "-")+".pem", tc.content)
			got, err := runner.LoadCABundle(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
					t.Fatalf("LoadCABundle = %v, want an error naming %s with %q", err, path, tc.err)
				}
				if _, err := runner.NewDocker(runner.DockerConfig{CABundle: path}); err == nil || !strings.Contains(err.Error(), path) {
					t.Fatalf("NewDocker with the bundle: %v, want the bundle's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(got), "#") || strings.Count(string(got), "-----BEGIN CERTIFICATE-----") != tc.certs {
				t.Fatalf("LoadCABundle =\n%s\nwant the %d certificates alone", got, tc.certs)
			}
			if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(got) {
				t.Fatal("what LoadCABundle returns is not PEM certificates")
			}
		})
	}
	if _, err := runner.LoadCABundle(filepath.Join(dir, "missing.pem")); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("a missing bundle: %v", err)
	}
}

// The sandbox trusts the operator's CA bundle through the variables each
// ecosystem reads: Python's ssl (SSL_CERT_FILE) and Node
// (NODE_EXTRA_CA_CERTS) reach an HTTPS server whose certificate the CA
// signed, which they refuse without the bundle. The server runs in the
// sandbox itself, on its loopback, as an approved run has no network.
// The bundle is outside the workspace, and the command can neither change
// nor remove it.
func TestDockerSandboxTrustsTheCABundle(t *testing.T) {
	image := sandboxtest.NodeAndPython(t)
	ca := egresstest.NewCA(t, "Pullwright Test Inspection CA")
	leaf := ca.Issue(t, "127.0.0.1")
	var chain []byte
	for _, der := range leaf.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"server.pem": string(chain),
		"server.key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
		"check.py":   checkTLS,
	})
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	if err := os.WriteFile(bundle, append([]byte("# the network's inspection CA\n"), ca.PEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := strings.Join([]string{
		"python3 check.py",
		`echo "vars: $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $PIP_CERT $REQUESTS_CA_BUNDLE $CARGO_HTTP_CAINFO $GIT_SSL_CAINFO $CURL_CA_BUNDLE"`,
		`if [ -n "$SSL_CERT_FILE" ]; then (echo >> "$SSL_CERT_FILE") 2>/dev/null && echo "bundle: written" || echo "bundle: not writable"; ` +
			`rm -f "$SSL_CERT_FILE" 2>/dev/null; test -f "$SSL_CERT_FILE" && echo "bundle: still there"; ` +
			`touch /.pullwright/other 2>/dev/null && echo "tools: written" || echo "tools: not writable"; ` +
			`grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE"; fi`,
		`echo "workspace: $(ls -A /workspace | tr '\n' ' ')"`,
	}, "; ")
	spec := pullwright.RunSpec{Dir: dir, Image: image, Command: cmd, Timeout: 2 * time.Minute}

	with := newDocker(t, runner.DockerConfig{CABundle: bundle})
	res, err := with.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with the bundle: exit %d\n%s", res.ExitCode, res.Output)
	path := runner.CABundlePath
	for _, want := range []string{
		"python: trusted", "node: trusted",
		"vars: " + strings.TrimSpace(strings.Repeat(path+" ", 7)),
		"bundle: not writable", "bundle: still there", "tools: not writable", "\n1\n",
	} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("with the bundle, the output lacks %q", want)
		}
	}
	if !strings.Contains(res.Output, "workspace: check.py server.key server.pem \n") {
		t.Errorf("the workspace holds more than the run's files")
	}

	without := newDocker(t, runner.DockerConfig{})
	res, err = without.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without the bundle: exit %d\n%s", res.ExitCode, res.Output)
	for _, want := range []string{"python: failed", "node: failed"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("without the bundle, the output lacks %q", want)
		}
	}
	if strings.Contains(res.Output, path) {
		t.Errorf("without a bundle, a variable names one")
	}
}

// checkTLS serves HTTPS on the sandbox's loopback with the certificate in
// server.pem and asks it with Python's and Node's default trust.
const checkTLS = `import http.server, ssl, subprocess, threading, urllib.request

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"trusted\n")

    def log_message(self, *args):
        pass

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("server.pem", "server.key")
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 8443), Handler)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
threading.Thread(target=srv.serve_forever, daemon=True).start()

try:
    print("python:", urllib.request.urlopen("https://127.0.0.1:8443/", timeout=20).read().decode().strip(), flush=True)
except Exception as e:
    print("python: failed:", e, flush=True)

node = """require("https").get("https://127.0.0.1:8443/", r => r.on("data", d => process.stdout.write("node: " + d)))
  .on("error", e => console.log("node: failed: " + e.message))"""
subprocess.run(["node", "-e", node], timeout=60)
`
