package fencetest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Requests records the paths a stand-in registry was asked for, so that
// a test asserts on what the real client fetched.
type Requests struct {
	mu    sync.Mutex
	paths []string
}

func (r *Requests) add(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paths = append(r.paths, p)
}

// Paths are the paths asked for so far, in order.
func (r *Requests) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.paths)
}

// Package is one release of a package a stand-in registry serves: its
// files, by path inside the package.
type Package struct {
	Name, Version string
	Files         map[string]string
	// Dependencies are an npm package's, as its registry document
	// lists them (its package.json, if Files has one, says the same).
	Dependencies map[string]string
	// Requires are a Python distribution's Requires-Dist, which pip
	// installs with it. A wheel's entry points are its Files'
	// "entry_points.txt", which goes into its dist-info.
	Requires []string
}

// NPMRegistry speaks the npm registry's protocol for the packages it was
// given: a package document at /<name> and the tarball its dist.tarball
// names, with the integrity and shasum the npm client checks.
type NPMRegistry struct {
	Host     string // "npmreg.test:port", resolved by Resolver
	Requests *Requests
	pkgs     map[string][]npmRelease
}

type npmRelease struct {
	Package
	tarball             []byte
	integrity, shasum   string
	tarballPath, tarURL string
}

// ServeNPM stands up an npm registry of pkgs on loopback.
func ServeNPM(t testing.TB, pkgs ...Package) *NPMRegistry {
	t.Helper()
	r := &NPMRegistry{Requests: &Requests{}, pkgs: map[string][]npmRelease{}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	r.Host = "npmreg.test:" + port
	for _, p := range pkgs {
		tgz, err := npmTarball(p)
		if err != nil {
			t.Fatal(err)
		}
		sum512, sum1 := sha512.Sum512(tgz), sha1.Sum(tgz)
		rel := npmRelease{
			Package: p, tarball: tgz,
			integrity:   "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
			shasum:      hex.EncodeToString(sum1[:]),
			tarballPath: "/" + p.Name + "/-/" + p.Name + "-" + p.Version + ".tgz",
		}
		rel.tarURL = r.URL() + strings.TrimPrefix(rel.tarballPath, "/")
		r.pkgs[p.Name] = append(r.pkgs[p.Name], rel)
	}
	return r
}

// URL is the registry's address as the sandbox names it, for npm's
// registry setting.
func (r *NPMRegistry) URL() string { return "http://" + r.Host + "/" }

func (r *NPMRegistry) serve(w http.ResponseWriter, req *http.Request) {
	r.Requests.add(req.URL.Path)
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return
	}
	for _, rels := range r.pkgs {
		for _, rel := range rels {
			if req.URL.Path == rel.tarballPath {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Write(rel.tarball)
				return
			}
		}
	}
	rels, ok := r.pkgs[strings.TrimPrefix(req.URL.Path, "/")]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"Not found"}`))
		return
	}
	doc := map[string]any{"name": rels[0].Name, "dist-tags": map[string]string{"latest": rels[len(rels)-1].Version}}
	versions := map[string]any{}
	times := map[string]string{}
	for _, rel := range rels {
		v := map[string]any{
			"name": rel.Name, "version": rel.Version,
			"dist": map[string]string{"tarball": rel.tarURL, "integrity": rel.integrity, "shasum": rel.shasum},
		}
		if len(rel.Dependencies) > 0 {
			v["dependencies"] = rel.Dependencies
		}
		versions[rel.Version] = v
		times[rel.Version] = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	}
	doc["versions"], doc["time"] = versions, times
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}

// Dist is where the latest release of the package named name is, and its
// integrity, as a lockfile records them.
func (r *NPMRegistry) Dist(name string) (tarball, integrity string) {
	rels := r.pkgs[name]
	rel := rels[len(rels)-1]
	return rel.tarURL, rel.integrity
}

// Lockfile is a package-lock.json (version 3) for a project named name
// whose only dependencies are the registry's packages named in deps, each
// at its latest release: what `npm install` would have written.
func (r *NPMRegistry) Lockfile(name string, deps ...string) string {
	root := map[string]any{"name": name, "version": "1.0.0"}
	want := map[string]string{}
	pkgs := map[string]any{"": root}
	for _, d := range deps {
		rels := r.pkgs[d]
		rel := rels[len(rels)-1]
		want[d] = "^" + rel.Version
		pkgs["node_modules/"+d] = map[string]any{"version": rel.Version, "resolved": rel.tarURL, "integrity": rel.integrity}
	}
	root["dependencies"] = want
	b, _ := json.MarshalIndent(map[string]any{
		"name": name, "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": pkgs,
	}, "", "  ")
	return string(b) + "\n"
}

// LockfileOf is a package-lock.json (version 3) for a project whose
// package.json is root, with the node_modules tree of the registry's
// packages tree: what `npm install` would have written.
func (r *NPMRegistry) LockfileOf(root map[string]any, tree []NodeModule) string {
	entry := map[string]any{}
	for _, k := range []string{"name", "version", "dependencies", "devDependencies", "bin", "license"} {
		if v, ok := root[k]; ok {
			entry[k] = v
		}
	}
	pkgs := map[string]any{"": entry}
	for _, m := range tree {
		var rel *npmRelease
		for i, x := range r.pkgs[m.Name] {
			if x.Version == m.Version {
				rel = &r.pkgs[m.Name][i]
			}
		}
		if rel == nil {
			panic(fmt.Sprintf("the registry has no %s@%s", m.Name, m.Version))
		}
		e := map[string]any{"version": m.Version, "resolved": rel.tarURL, "integrity": rel.integrity}
		if len(m.Dependencies) > 0 {
			e["dependencies"] = m.Dependencies
		}
		if m.Bin != nil {
			e["bin"] = m.Bin
		}
		pkgs[m.Path] = e
	}
	b, _ := json.MarshalIndent(map[string]any{
		"name": root["name"], "version": root["version"], "lockfileVersion": 3, "requires": true, "packages": pkgs,
	}, "", "  ")
	return string(b) + "\n"
}

// npmTarball packs p as npm does: a gzipped tar whose entries are under
// package/, with a package.json naming it.
func npmTarball(p Package) ([]byte, error) {
	files := map[string]string{"package.json": fmt.Sprintf(`{"name":%q,"version":%q,"main":"index.js"}`, p.Name, p.Version)}
	for name, content := range p.Files {
		files[name] = content
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range sortedKeys(files) {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(files[name])),
			Typeflag: tar.TypeReg, ModTime: time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PythonIndex speaks the simple repository API (PEP 503, its HTML form)
// for the packages it was given, each a pure-Python wheel with the
// sha256 fragment pip checks.
type PythonIndex struct {
	Host     string // "pyindex.test:port", resolved by Resolver
	Requests *Requests
	projects map[string][]wheel
}

type wheel struct {
	file   string
	data   []byte
	sha256 string
}

// ServePython stands up a simple index of pkgs on loopback. A package's
// Files are its modules, by path from site-packages.
func ServePython(t testing.TB, pkgs ...Package) *PythonIndex {
	t.Helper()
	ix := &PythonIndex{Requests: &Requests{}, projects: map[string][]wheel{}}
	for _, p := range pkgs {
		w, err := buildWheel(p)
		if err != nil {
			t.Fatal(err)
		}
		ix.projects[normalize(p.Name)] = append(ix.projects[normalize(p.Name)], w)
	}
	srv := httptest.NewServer(http.HandlerFunc(ix.serve))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ix.Host = "pyindex.test:" + port
	return ix
}

// URL is the index's address as the sandbox names it, for pip's
// index-url setting.
func (ix *PythonIndex) URL() string { return "http://" + ix.Host + "/simple/" }

func (ix *PythonIndex) serve(w http.ResponseWriter, req *http.Request) {
	ix.Requests.add(req.URL.Path)
	if file, ok := strings.CutPrefix(req.URL.Path, "/files/"); ok {
		for _, ws := range ix.projects {
			for _, wh := range ws {
				if wh.file == file {
					w.Header().Set("Content-Type", "application/octet-stream")
					w.Write(wh.data)
					return
				}
			}
		}
		http.NotFound(w, req)
		return
	}
	name, ok := strings.CutPrefix(req.URL.Path, "/simple/")
	name = strings.TrimSuffix(name, "/")
	ws, found := ix.projects[name]
	if !ok || !found {
		http.NotFound(w, req)
		return
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><body>\n")
	for _, wh := range ws {
		fmt.Fprintf(&b, "<a href=\"/files/%s#sha256=%s\">%s</a><br/>\n", html.EscapeString(wh.file), wh.sha256, html.EscapeString(wh.file))
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte(b.String()))
}

var separators = regexp.MustCompile(`[-_.]+`)

// normalize is PEP 503's name normalisation.
func normalize(name string) string {
	return strings.ToLower(separators.ReplaceAllString(name, "-"))
}

// buildWheel packs p as a pure-Python wheel (PEP 427): its modules, and
// a dist-info with METADATA, WHEEL and a RECORD of every file's hash.
func buildWheel(p Package) (wheel, error) {
	dist := strings.ReplaceAll(p.Name, "-", "_")
	info := dist + "-" + p.Version + ".dist-info/"
	files := map[string]string{}
	for name, content := range p.Files {
		if name == "entry_points.txt" {
			name = info + name
		}
		files[name] = content
	}
	meta := "Metadata-Version: 2.1\nName: " + p.Name + "\nVersion: " + p.Version + "\n"
	for _, r := range p.Requires {
		meta += "Requires-Dist: " + r + "\n"
	}
	files[info+"METADATA"] = meta
	files[info+"WHEEL"] = "Wheel-Version: 1.0\nGenerator: pullwright-fencetest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	var record strings.Builder
	for _, name := range sortedKeys(files) {
		sum := sha256.Sum256([]byte(files[name]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[name]))
	}
	record.WriteString(info + "RECORD,,\n")
	files[info+"RECORD"] = record.String()

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range sortedKeys(files) {
		f, err := zw.Create(name)
		if err != nil {
			return wheel{}, err
		}
		if _, err := f.Write([]byte(files[name])); err != nil {
			return wheel{}, err
		}
	}
	if err := zw.Close(); err != nil {
		return wheel{}, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return wheel{file: dist + "-" + p.Version + "-py3-none-any.whl", data: buf.Bytes(), sha256: hex.EncodeToString(sum[:])}, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
