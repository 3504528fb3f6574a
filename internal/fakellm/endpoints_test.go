package fakellm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// jsonValue decodes b for a comparison that ignores key order and spacing.
func jsonValue(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, b)
	}
	return v
}

// TestTranscripts sends each documented request through go-openai to a
// server answering with the documented response: go-openai must put the
// same request on the wire, at the same path, and read the answer.
func TestTranscripts(t *testing.T) {
	tests := []struct {
		file      string
		azure     bool
		wantText  string
		wantCall  string // name of the tool call, if one
		wantUsage openai.Usage
		cached    int
		finish    openai.FinishReason
	}{
		{file: "openai.txt", wantCall: "get_current_weather", wantUsage: openai.Usage{PromptTokens: 82, CompletionTokens: 17, TotalTokens: 99}, cached: 64, finish: "tool_calls"},
		{file: "azure.txt", azure: true, wantText: "Ahoy matey!", wantUsage: openai.Usage{PromptTokens: 33, CompletionTokens: 557, TotalTokens: 590}, finish: "stop"},
		{file: "ollama.txt", wantText: "Hello! How can I assist you today?", wantUsage: openai.Usage{PromptTokens: 23, CompletionTokens: 10, TotalTokens: 33}, finish: "stop"},
		{file: "vllm.txt", wantCall: "get_weather", wantUsage: openai.Usage{PromptTokens: 253, CompletionTokens: 26, TotalTokens: 279}, finish: "tool_calls"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tr := LoadTranscript(t, "testdata/"+tt.file)
			if !strings.Contains(tr.Header, "Source:") {
				t.Errorf("the header does not say where the exchange comes from:\n%s", tr.Header)
			}
			s := New(t, tr.Step())
			var req openai.ChatCompletionRequest
			if err := json.Unmarshal(tr.Request, &req); err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(tr.Path)
			if err != nil {
				t.Fatal(err)
			}
			var cfg openai.ClientConfig
			if tt.azure {
				deployment := strings.Split(u.Path, "/")[3]
				s.WithAzure("azure-key", u.Query().Get("api-version"), deployment)
				cfg = openai.DefaultAzureConfig("azure-key", s.URL)
				cfg.APIVersion = u.Query().Get("api-version")
				req.Model = deployment // go-openai finds the deployment through the model
			} else {
				cfg = openai.DefaultConfig("key")
				cfg.BaseURL = s.URL
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, req)
			if err != nil {
				t.Fatal(err)
			}

			got := s.HTTP()
			if len(got) != 1 {
				t.Fatalf("%d requests, want 1", len(got))
			}
			if got[0].Method != tr.Method || got[0].Path != u.Path || got[0].Query.Encode() != u.Query().Encode() {
				t.Errorf("request = %s %s?%s, want %s %s", got[0].Method, got[0].Path, got[0].Query.Encode(), tr.Method, tr.Path)
			}
			sent, want := jsonValue(t, got[0].Body), jsonValue(t, tr.Request)
			if tt.azure {
				delete(sent, "model") // Azure reads the model from the deployment
			}
			if sent["stream"] == false {
				delete(sent, "stream") // go-openai always sends the API's default
			}
			if !reflect.DeepEqual(sent, want) {
				t.Errorf("wire request differs from the documented one:\n got %v\nwant %v", sent, want)
			}

			c := resp.Choices[0]
			if c.FinishReason != tt.finish || !strings.HasPrefix(c.Message.Content, tt.wantText) {
				t.Errorf("answer = %q (finish %q)", c.Message.Content, c.FinishReason)
			}
			if tt.wantCall != "" && (len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != tt.wantCall ||
				c.Message.ToolCalls[0].ID == "" || !json.Valid([]byte(c.Message.ToolCalls[0].Function.Arguments))) {
				t.Errorf("tool calls = %+v", c.Message.ToolCalls)
			}
			u2 := resp.Usage
			if u2.PromptTokens != tt.wantUsage.PromptTokens || u2.CompletionTokens != tt.wantUsage.CompletionTokens || u2.TotalTokens != tt.wantUsage.TotalTokens {
				t.Errorf("usage = %+v, want %+v", u2, tt.wantUsage)
			}
			cached := 0
			if u2.PromptTokensDetails != nil {
				cached = u2.PromptTokensDetails.CachedTokens
			}
			if cached != tt.cached {
				t.Errorf("cached tokens = %d, want %d", cached, tt.cached)
			}
		})
	}
}

// TestAzureRefuses: the fake refuses what Azure refuses, with Azure's
// statuses and bodies, and go-openai reports them without the key.
func TestAzureRefuses(t *testing.T) {
	const key = "azure-secret-key"
	tests := []struct {
		name       string
		key        string
		version    string
		deployment string
		status     int
		message    string
	}{
		{"served", key, "2024-10-21", "gpt-4o", http.StatusOK, ""},
		{"no key", "", "2024-10-21", "gpt-4o", http.StatusUnauthorized, AzureUnauthorized},
		{"wrong key", "other", "2024-10-21", "gpt-4o", http.StatusUnauthorized, AzureUnauthorized},
		{"no api-version", key, "", "gpt-4o", http.StatusNotFound, AzureNotFound},
		{"other api-version", key, "2023-05-15", "gpt-4o", http.StatusBadRequest, AzureBadVersion},
		{"unknown deployment", key, "2024-10-21", "gpt-35", http.StatusNotFound, AzureDeploymentNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t, Step{Content: "ok"}).WithAzure(key, "2024-10-21", "gpt-4o")
			cfg := openai.DefaultAzureConfig(tt.key, s.URL)
			cfg.APIVersion = tt.version
			cfg.AzureModelMapperFunc = func(string) string { return tt.deployment }
			_, err := ask(openai.NewClientWithConfig(cfg), "hi")
			if tt.status == http.StatusOK {
				if err != nil {
					t.Fatal(err)
				}
				h := s.HTTP()[0]
				if h.Header.Get("api-key") != key || h.Header.Get("Authorization") != "" {
					t.Errorf("headers = %v", h.Header)
				}
				return
			}
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tt.status || apiErr.Message != tt.message {
				t.Fatalf("err = %v, want %d %q", err, tt.status, tt.message)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the error shows the key: %v", err)
			}
			if s.Calls() != 0 {
				t.Errorf("a refused request reached the script")
			}
		})
	}
	// Without WithAzure's path, an OpenAI path is refused too.
	s := New(t).WithAzure(key, "2024-10-21", "gpt-4o")
	c := client(s, key)
	if _, err := ask(c, "hi"); err == nil {
		t.Error("an OpenAI-style request reached an Azure resource")
	}
}
