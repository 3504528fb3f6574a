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
		{name: "azure without a version", env: with("OPENAI_API_TYPE", "azure", "OPENAI_BASE_URL", "https://r.openai.azure.com"), wantErr: "OPENAI_API_VERSION is not set"},
		{name: "azure without an endpoint", env: with("OPENAI_API_TYPE", "azure", "OPENAI_API_VERSION", "2024-10-21"), wantErr: "OPENAI_BASE_URL is not set"},
		{name: "unknown api type", env: with("OPENAI_API_TYPE", "vertex"), wantErr: "OPENAI_API_TYPE"},
		{name: "azure", env: with("OPENAI_API_TYPE", "azure", "OPENAI_API_VERSION", "2024-10-21", "OPENAI_BASE_URL", "https://r.openai.azure.com"),
			check: func(t *testing.T, _, _, _, _ string, _ int, _ string) {}},
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

func TestOperatorConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yml", "installations: [7]\nmodels:\n  allowed: [big-model]\nrate:\n  tasks_per_hour: 3\ncaps:\n  memory: 4GiB\n")
	named := write("named.yml", "models:\n  default: house-model\n")
	bad := write("bad.yml", "rate:\n  task_per_hour: 3\n")
	base := map[string]string{"GITHUB_WEBHOOK_SECRET": "s", "GITHUB_APP_ID": "42", "GITHUB_APP_PRIVATE_KEY": "PEM", "BOT_MODEL": "env-model"}

	tests := []struct {
		name      string
		args      []string
		wantErr   []string
		wantModel string
	}{
		{name: "no file: built-in defaults"},
		{name: "--config", args: []string{"--config", good}, wantModel: "env-model"},
		{name: "--bot-config", args: []string{"--bot-config", good}, wantModel: "env-model"},
		{name: "the file's model wins over BOT_MODEL", args: []string{"--config", named}, wantModel: "house-model"},
		{name: "broken file names the line and key", args: []string{"--config", bad}, wantErr: []string{bad, ":2", "task_per_hour", "tasks_per_hour"}},
		{name: "missing file", args: []string{"--config", filepath.Join(dir, "nope.yml")}, wantErr: []string{"operator configuration", "nope.yml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			get := settings(fs, env(base))
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := config(get)
			if tc.wantErr != nil {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantModel == "" {
				if cfg.Operator != nil {
					t.Fatalf("an operator configuration without a file: %+v", cfg.Operator)
				}
				return
			}
			op := cfg.Operator
			if op == nil || op.Models.Default != tc.wantModel {
				t.Fatalf("operator = %+v, want default model %q", op, tc.wantModel)
			}
			if tc.wantModel == "env-model" && (!op.Serves(7, "any") || op.Serves(8, "any") || op.Rate.TasksPerHour != 3 || op.Rate.ConcurrentTasks != 5) {
				t.Errorf("the file was not applied over the defaults: %+v", op)
			}
		})
	}
}

// The bot's proxy environment is read as net/http reads it, the lower-case
// spelling first, once, for the fence's parent.
func TestProxyEnv(t *testing.T) {
	got := proxyEnv(env(map[string]string{
		"HTTPS_PROXY": "http://upper.test:3128", "https_proxy": "http://lower.test:3128",
		"HTTP_PROXY": "http://plain.test:3128", "NO_PROXY": ".corp.test", "REQUEST_METHOD": "GET",
	}))
	if got.HTTPSProxy != "http://lower.test:3128" || got.HTTPProxy != "http://plain.test:3128" || got.NoProxy != ".corp.test" || got.CGI {
		t.Fatalf("proxyEnv = %+v", got)
	}
}
