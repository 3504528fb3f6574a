package pullwright

import (
	"bytes"
	_ "embed"
)

//go:embed app-manifest.json
var appManifest []byte

// AppManifest returns app-manifest.json: the GitHub App the bot needs
// (permissions and events), which the first-run setup page
// (package appmanifest) registers through GitHub's manifest flow.
func AppManifest() []byte { return bytes.Clone(appManifest) }
