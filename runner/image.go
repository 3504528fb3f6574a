package runner

import (
	"os"
	"path/filepath"
)

// DefaultImage is the image ImageFor returns when there is no override, the
// workspace's language is not recognised and no fallback is given.
const DefaultImage = "debian:bookworm-slim"

// languageImages is ImageFor's detection table, in order: the first marker
// file present at the top of the workspace decides.
var languageImages = []struct{ marker, image string }{
	{"go.mod", "golang:1.26"},
	{"package.json", "node:22"},
	{"pyproject.toml", "python:3.13"},
	{"requirements.txt", "python:3.13"},
	{"Cargo.toml", "rust:1"},
}

// ImageFor chooses the sandbox image for the workspace dir. If override is
// not empty, it wins: the caller passes the repository's configured image or,
// when that names none, the operator's BOT_SANDBOX_IMAGE. Otherwise the first
// of these files found at the top level of dir decides:
//
//	file              image
//	go.mod            golang:1.26
//	package.json      node:22
//	pyproject.toml    python:3.13
//	requirements.txt  python:3.13
//	Cargo.toml        rust:1
//
// and if there is none, fallback, or DefaultImage (debian:bookworm-slim) if
// fallback is empty. A marker that is a directory or a symbolic link does not
// count: the workspace is the agent's, and a link could point anywhere.
func ImageFor(dir, override, fallback string) string {
	if override != "" {
		return override
	}
	for _, l := range languageImages {
		if info, err := os.Lstat(filepath.Join(dir, l.marker)); err == nil && info.Mode().IsRegular() {
			return l.image
		}
	}
	if fallback != "" {
		return fallback
	}
	return DefaultImage
}
