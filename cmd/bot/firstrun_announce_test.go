package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A serve with nothing of a GitHub App configured names first-run mode
// and the two settings that start it, before any other complaint; one
// with an app configured by hand is not told of it.
func TestServeAnnouncesFirstRunMode(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    []string
		wantNot string
	}{
		{name: "nothing configured", env: map[string]string{},
			want: []string{"BOT_APP_DIR", "BOT_PUBLIC_URL", "first-run mode", "one click", "GITHUB_APP_ID"}},
		{name: "an app by hand, without its secret", env: map[string]string{"GITHUB_APP_ID": "42"},
			want: []string{"GITHUB_WEBHOOK_SECRET is not set"}, wantNot: "first-run mode"},
		{name: "a directory without an address", env: map[string]string{"BOT_APP_DIR": "DIR"},
			want: []string{"set BOT_PUBLIC_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env["BOT_APP_DIR"] == "DIR" {
				tt.env["BOT_APP_DIR"] = t.TempDir()
			}
			var stderr bytes.Buffer
			err := run(context.Background(), []string{"serve"}, env(tt.env), &stderr, &stderr)
			if err == nil {
				t.Fatal("serve started")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
			if tt.wantNot != "" && strings.Contains(err.Error(), tt.wantNot) {
				t.Errorf("the error says %q:\n%v", tt.wantNot, err)
			}
		})
	}
}
