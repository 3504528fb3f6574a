package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A CA bundle for the sandboxes that is no bundle stops the bot at start,
// naming the file.
func TestNewRefusesABadCABundle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "corp-ca.pem")
	if err := os.WriteFile(bad, []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(t.Context(), Config{
		Token: "t", OpenAIKey: "k", Runner: "docker", SandboxCABundle: bad,
		DatabaseURL: "sqlite://" + filepath.Join(dir, "bot.db"), WorkDir: filepath.Join(dir, "work"),
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "CA bundle") {
		t.Fatalf("New = %v, want an error naming %s", err, bad)
	}
}
