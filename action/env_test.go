package action

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
)

func TestFromEnvModelEndpoint(t *testing.T) {
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"GITHUB_EVENT_NAME": "issue_comment", "GITHUB_EVENT_PATH": event, "GITHUB_REPOSITORY": "octo/widgets",
		"GITHUB_RUN_ID": "7", "INPUT_GITHUB-TOKEN": "t", "INPUT_STATE-KEY": strings.Repeat("k", MinStateKey),
		"INPUT_OPENAI-API-KEY": "azure-key",
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
		apiType string
		version string
	}{
		{name: "openai by default", env: map[string]string{}, apiType: "openai"},
		{name: "azure", env: map[string]string{"INPUT_OPENAI-API-TYPE": "azure", "INPUT_OPENAI-API-VERSION": "2024-10-21",
			"INPUT_OPENAI-BASE-URL": "https://r.openai.azure.com"}, apiType: "azure", version: "2024-10-21"},
		{name: "azure from the environment", env: map[string]string{"OPENAI_API_TYPE": "azure", "OPENAI_API_VERSION": "2024-10-21",
			"OPENAI_BASE_URL": "https://r.openai.azure.com"}, apiType: "azure", version: "2024-10-21"},
		{name: "azure without a version", env: map[string]string{"INPUT_OPENAI-API-TYPE": "azure", "INPUT_OPENAI-BASE-URL": "https://r.openai.azure.com"},
			wantErr: "openai-api-version is not set"},
		{name: "azure without an endpoint", env: map[string]string{"INPUT_OPENAI-API-TYPE": "azure", "INPUT_OPENAI-API-VERSION": "2024-10-21"},
			wantErr: "openai-base-url is not set"},
		{name: "azure in capitals", env: map[string]string{"INPUT_OPENAI-API-TYPE": "Azure", "INPUT_OPENAI-API-VERSION": "2024-10-21",
			"INPUT_OPENAI-BASE-URL": "https://r.openai.azure.com"}, apiType: "azure", version: "2024-10-21"},
		{name: "the Python library's open_ai", env: map[string]string{"OPENAI_API_TYPE": "open_ai"}, apiType: "openai"},
		{name: "the Python library's azure_ad", env: map[string]string{"OPENAI_API_TYPE": "azure_ad"}, wantErr: "Entra ID"},
		{name: "unknown type", env: map[string]string{"INPUT_OPENAI-API-TYPE": "bedrock"}, wantErr: `openai-api-type: API type "bedrock"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := FromEnv(func(k string) string {
				if v, ok := tt.env[k]; ok {
					return v
				}
				return base[k]
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "azure-key") {
					t.Fatalf("err = %v, want one about %s without the key", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.OpenAIAPIType != tt.apiType || e.OpenAIAPIVersion != tt.version {
				t.Errorf("type %q version %q", e.OpenAIAPIType, e.OpenAIAPIVersion)
			}
		})
	}
}

// The prices input is the operator file's prices, checked as there.
func TestFromEnvPrices(t *testing.T) {
	event := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(event, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"GITHUB_EVENT_NAME": "issue_comment", "GITHUB_EVENT_PATH": event, "GITHUB_REPOSITORY": "octo/widgets",
		"GITHUB_RUN_ID": "7", "INPUT_GITHUB-TOKEN": "t", "INPUT_STATE-KEY": strings.Repeat("k", MinStateKey),
		"INPUT_OPENAI-API-KEY": "k",
	}
	for _, tt := range []struct {
		name, prices string
		want         map[string]pullwright.Price
		wantErr      string
	}{
		{name: "none"},
		{name: "one a line, as a block input gives them",
			prices: "gpt-4.1-mini: {input: 0.4, output: 1.6}\ngpt-4.1:\n  input: 2\n  output: 8\n  cached_input: 0.5\n",
			want:   map[string]pullwright.Price{"gpt-4.1-mini": {Input: 0.4, Output: 1.6}, "gpt-4.1": {Input: 2, Output: 8, CachedInput: 0.5}}},
		{name: "negative", prices: "gpt-4.1: {input: -1, output: 8}", wantErr: "a price cannot be negative"},
		{name: "not a mapping", prices: "cheap", wantErr: "line 1: prices: expected keys and values"},
		{name: "an error's line is the input's", prices: "a: {input: 1}\n\nb: {input: x}", wantErr: "line 3: prices[\"b\"].input"},
		{name: "a carriage return would start an operator setting", prices: "gpt-4.1: {input: 1, output: 8}\rrate: {tasks_per_hour: 0}", wantErr: "a carriage return"},
		{name: "the prices: line copied from the operator file", prices: "prices:\n  gpt-4.1: {input: 1, output: 8}", wantErr: "without the prices: line"},
		{name: "a price per token, not per million", prices: "gpt-4.1: {input: 2000000, output: 8}", wantErr: "is more than 1e+06"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := maps.Clone(base)
			if tt.prices != "" {
				env["INPUT_PRICES"] = tt.prices
			}
			e, err := FromEnv(func(k string) string { return env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.Prices, tt.want) {
				t.Errorf("prices = %v, want %v", e.Prices, tt.want)
			}
		})
	}
}
