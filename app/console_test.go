package app_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/task"
)

// consoleConfig is a bot whose console is configured as withConsole says,
// served at the address of ln.
func consoleConfig(t *testing.T, gh *fakegithub.Server, ln net.Listener, withConsole bool) app.Config {
	cfg := app.Config{
		DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "bot.db"),
		AppID:       gh.AppID, PrivateKey: gh.PrivateKeyPEM(), WebhookSecret: "s", APIURL: gh.URL,
		OpenAIKey: "sk-test", Model: "test-model", Runner: "local", WorkDir: t.TempDir(), Workers: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if withConsole {
		cfg.PublicURL = "http://" + ln.Addr().String()
		cfg.ClientID, cfg.ClientSecret = gh.ClientID, gh.ClientSecret
		cfg.SessionKey = []byte(strings.Repeat("s", 32))
	}
	return cfg
}

func TestConsoleIsServedOnlyWhenConfigured(t *testing.T) {
	gh := fakegithub.New(t)
	gh.AddInstallation(1, "o/r")
	gh.SetPermission("o", "r", "alice", "write")
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[on], func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			bot, err := app.New(ctx, consoleConfig(t, gh, ln, on))
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- bot.Serve(ctx, ln) }()
			t.Cleanup(func() { cancel(); <-done; bot.Close() })
			base := "http://" + ln.Addr().String()

			tk := &task.Task{Kind: task.KindFix, Repo: pullwright.Repo{InstallationID: 1, Owner: "o", Name: "r"}, Issue: 1,
				IssueTitle: "the console test's issue", RunAfter: time.Now().Add(time.Hour)}
			if err := bot.Store().Record(ctx, task.Delivery{ID: "d1"}, tk); err != nil {
				t.Fatal(err)
			}
			jar, _ := cookiejar.New(nil)
			client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
			gh.SignInBrowser("alice")
			resp, err := client.Get(base + "/console/login")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !on {
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("console without configuration = %d", resp.StatusCode)
				}
				return
			}
			// Signed in through GitHub, back on the list, which shows the task.
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "the console test&#39;s issue") {
				t.Fatalf("after sign-in = %d %s", resp.StatusCode, body)
			}
			if resp.Request.URL.Path != "/console/" {
				t.Fatalf("landed on %s", resp.Request.URL)
			}
		})
	}
}

func TestConsoleHalfConfiguredIsRefused(t *testing.T) {
	gh := fakegithub.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := consoleConfig(t, gh, ln, true)
	cfg.SessionKey = nil
	if bot, err := app.New(context.Background(), cfg); err == nil {
		bot.Close()
		t.Fatal("a console without a session key started")
	}
}
