package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright"
)

// The operator's CA bundle (DockerConfig.CABundle) is what a network that
// inspects TLS needs its sandboxes to trust. Every sandbox, setup's and
// approved runs' alike, gets it at CABundlePath, in the run's tools volume
// beside the workspace (never among the repository's files), and the
// variables each ecosystem reads point there (caEnv). The tools volume and
// the files in it belong to root, and the command runs as another user
// with every capability dropped, so it can read the bundle but neither
// change nor replace it. The bundle goes there through the engine's API,
// like the workspace: the engine may be on another machine.

// CABundlePath is where a sandbox finds the operator's CA bundle.
const CABundlePath = ToolsDir + "/ca-certificates.pem"

// maxCABundle bounds a bundle: a system's whole set of public roots is a
// few hundred kilobytes.
const maxCABundle = 4 << 20

// toolsVolumeSize holds the forwarder and a bundle.
const toolsVolumeSize = forwarderVolumeSize + maxCABundle

// LoadCABundle reads the PEM file at path and checks it is a bundle of
// certificates: at least one CERTIFICATE block, each a certificate, and
// no other block (a private key must never reach a sandbox). Text between
// the blocks (a bundle's comments) is allowed and left out: what it
// returns is the certificates alone, PEM-encoded.
func LoadCABundle(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the CA bundle: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCABundle+1))
	if err != nil {
		return nil, fmt.Errorf("read the CA bundle %s: %w", path, err)
	}
	if len(data) > maxCABundle {
		return nil, fmt.Errorf("the CA bundle %s is larger than %s: a bundle of certificates is a few hundred kilobytes", path, formatBytes(maxCABundle))
	}
	var out bytes.Buffer
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("the CA bundle %s holds a %q block (its block %d): a CA bundle holds certificates alone (CERTIFICATE), and no key may go into a sandbox", path, block.Type, n)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return nil, fmt.Errorf("the CA bundle %s: its certificate %d does not parse: %w", path, n, err)
		}
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})
	}
	if n == 0 {
		return nil, fmt.Errorf("the CA bundle %s is not a PEM certificate bundle: it has no -----BEGIN CERTIFICATE----- block", path)
	}
	return out.Bytes(), nil
}

// caEnv are the variables that point each ecosystem at the bundle, when
// there is one. SSL_CERT_FILE (Go, OpenSSL and so Python's ssl, Ruby…),
// PIP_CERT and REQUESTS_CA_BUNDLE (pip, requests), CARGO_HTTP_CAINFO,
// GIT_SSL_CAINFO and CURL_CA_BUNDLE replace the trusted roots file with
// it; NODE_EXTRA_CA_CERTS adds it to Node's own roots. So the bundle must
// be complete: the public roots and the network's own.
func (d *Docker) caEnv() []string {
	if d.ca == nil {
		return nil
	}
	var env []string
	for _, v := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "PIP_CERT", "REQUESTS_CA_BUNDLE",
		"CARGO_HTTP_CAINFO", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"} {
		env = append(env, v+"="+CABundlePath)
	}
	return env
}

// needsTools reports whether a run of s gets a tools volume at ToolsDir:
// a fenced run for its forwarder, a run given the bot's binary, and every
// run when there is a bundle.
func (d *Docker) needsTools(s pullwright.RunSpec) bool {
	return s.Route != nil || s.Bot || d.ca != nil
}

// toolsVolume is the run's ToolsDir: a small tmpfs that belongs to root,
// so that the command, which never runs as root, cannot change what the
// runner puts there (the forwarder, the bundle).
func (d *Docker) toolsVolume(s pullwright.RunSpec) mount.Mount {
	return d.tmpfsVolume(s, ToolsDir, fmt.Sprintf("size=%d,uid=0,gid=0,mode=0755,nosuid,nodev", toolsVolumeSize))
}

// copyCABundle puts the bundle into the container's ToolsDir, root's and
// read-only to everyone; nothing without a bundle.
func (d *Docker) copyCABundle(ctx context.Context, id string) error {
	if d.ca == nil {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := tw.WriteHeader(&tar.Header{Name: "ca-certificates.pem", Mode: 0o444, Size: int64(len(d.ca)), Uid: 0, Gid: 0,
		ModTime: time.Now(), Typeflag: tar.TypeReg, Format: tar.FormatPAX})
	if err == nil {
		_, err = tw.Write(d.ca)
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return fmt.Errorf("the CA bundle: %w", err)
	}
	if _, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: ToolsDir, Content: &buf}); err != nil {
		return fmt.Errorf("copy the CA bundle into the container: %w", err)
	}
	return nil
}
