package fakellm

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// Azure OpenAI's answers to requests it refuses: the status and the error
// body its data-plane endpoint sends (its REST reference documents the
// api-key header, the api-version query parameter and the deployment path;
// the messages are the service's own, as users have quoted them in public
// reports: for instance {"error":{"code":"BadRequest","message":"API version
// not supported"}} in hotovo/aider-desk#460, and the 401 and
// DeploymentNotFound texts in many more).
const (
	AzureUnauthorized = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key " +
		"for an active subscription and use a correct regional API endpoint for your resource."
	AzureNotFound           = "Resource not found"
	AzureDeploymentNotFound = "The API deployment for this resource does not exist. If you created the deployment within the last " +
		"5 minutes, please wait a moment and try again."
	AzureBadVersion = "API version not supported"
)

// azure is what WithAzure makes the server check.
type azure struct {
	key, version string
	deployments  []string
}

// WithAzure makes the server an Azure OpenAI resource: it serves only
// POST /openai/deployments/{deployment}/chat/completions?api-version=version
// for the named deployments, with the key in the api-key header (an
// Authorization header is not a key to it), and refuses anything else as
// Azure does. It returns s for chaining after New.
func (s *Server) WithAzure(key, version string, deployments ...string) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.azure = &azure{key: key, version: version, deployments: deployments}
	s.URL = s.srv.URL // the resource's endpoint, without /v1
	return s
}

// refuse answers r as Azure would when Azure would not serve it, and says
// whether it did.
func (az *azure) refuse(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("api-key") != az.key {
		writeAzureError(w, http.StatusUnauthorized, "401", AzureUnauthorized)
		return true
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/openai/deployments/")
	name, tail, _ := strings.Cut(rest, "/")
	if !ok || name == "" || tail != "chat/completions" {
		writeAzureError(w, http.StatusNotFound, "404", AzureNotFound)
		return true
	}
	switch v := r.URL.Query().Get("api-version"); {
	case v == "":
		writeAzureError(w, http.StatusNotFound, "404", AzureNotFound)
		return true
	case v != az.version:
		writeAzureError(w, http.StatusBadRequest, "BadRequest", AzureBadVersion)
		return true
	}
	if !slices.Contains(az.deployments, name) {
		writeAzureError(w, http.StatusNotFound, "DeploymentNotFound", AzureDeploymentNotFound)
		return true
	}
	return false
}

func writeAzureError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}
