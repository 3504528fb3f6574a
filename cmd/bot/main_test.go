package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfig(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, []byte("PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"GITHUB_WEBHOOK_SECRET": "s", "GITHUB_APP_ID": "42", "GITHUB_APP_PRIVATE_KEY": "PEM"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
		check   func(t *testing.T, addr, db, cmd, api string, workers int, key string)
	}{
		{name: "no secret refuses to start", env: with("GITHUB_WEBHOOK_SECRET", ""), wantErr: "GITHUB_WEBHOOK_SECRET"},
		{name: "bad app id", env: with("GITHUB_APP_ID", "x"), wantErr: "GITHUB_APP_ID"},
		{name: "no key", env: with("GITHUB_APP_PRIVATE_KEY", ""), wantErr: "GITHUB_APP_PRIVATE_KEY"},
		{name: "missing key file", env: with("GITHUB_APP_PRIVATE_KEY", "", "GITHUB_APP_PRIVATE_KEY_PATH", "/nonexistent"), wantErr: "GITHUB_APP_PRIVATE_KEY_PATH"},
		{name: "bad workers", env: with("BOT_WORKERS", "0"), wantErr: "BOT_WORKERS"},
		{name: "lease too short", env: with("BOT_LEASE", "1s"), wantErr: "BOT_LEASE"},
		{name: "bad approval timeout", env: with("BOT_APPROVAL_TIMEOUT", "soon"), wantErr: "BOT_APPROVAL_TIMEOUT"},
		{name: "defaults", env: with(), check: func(t *testing.T, addr, db, cmd, api string, workers int, key string) {
			if addr != ":8080" || db != "sqlite://./pullwright.db" || cmd != "/agent" || api != "https://api.github.com" || workers != 4 {
				t.Errorf("defaults = %q %q %q %q %d", addr, db, cmd, api, workers)
			}
		}},
		{name: "key from file, trailing slash trimmed", env: with("GITHUB_APP_PRIVATE_KEY", "", "GITHUB_APP_PRIVATE_KEY_PATH", keyFile, "GITHUB_API_URL", "https://ghe.example.com/api/v3/"),
			check: func(t *testing.T, _, _, _, api string, _ int, key string) {
				if key != "PEM" || api != "https://ghe.example.com/api/v3" {
					t.Errorf("key %q api %q", key, api)
				}
			}},
		{name: "flag overrides environment", env: with("BOT_ADDR", ":1"), args: []string{"--bot-addr", ":2", "--bot-command", "/bot"},
			check: func(t *testing.T, addr, _, cmd, _ string, _ int, _ string) {
				if addr != ":2" || cmd != "/bot" {
					t.Errorf("addr %q cmd %q", addr, cmd)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			get := settings(fs, env(tc.env))
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := config(get)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg.Addr, cfg.DatabaseURL, cfg.Command, cfg.APIURL, cfg.Workers, string(cfg.PrivateKey))
		})
	}
}

func TestSecretsAreNotPrintedInHelp(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "-h"},
		env(map[string]string{"GITHUB_WEBHOOK_SECRET": "hunter2", "OPENAI_API_KEY": "sk-secret"}), &out, &out)
	if err == nil {
		t.Fatal("serve -h returned no error")
	}
	if strings.Contains(out.String(), "hunter2") || strings.Contains(out.String(), "sk-secret") {
		t.Fatalf("help shows a secret:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "--github-webhook-secret") && !strings.Contains(out.String(), "-github-webhook-secret") {
		t.Fatalf("help lacks the secret's flag:\n%s", out.String())
	}
}

func TestRunCommands(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"version"}, env(nil), &out, &errb); err != nil || !strings.HasPrefix(out.String(), "pullwright ") {
		t.Fatalf("version: %v %q", err, out.String())
	}
	if err := run(context.Background(), []string{"frobnicate"}, env(nil), &out, &errb); err == nil || !strings.Contains(err.Error(), "frobnicate") {
		t.Fatalf("unknown command: %v", err)
	}
	if err := run(context.Background(), []string{"serve"}, env(nil), &out, &errb); err == nil || !strings.Contains(err.Error(), "GITHUB_WEBHOOK_SECRET") {
		t.Fatalf("serve without secret: %v", err)
	}
}
