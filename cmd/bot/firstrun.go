package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/appmanifest"
	"github.com/pullwright/pullwright/console"
)

// withAppDir gives get the GitHub App's credentials saved in BOT_APP_DIR
// for the settings left unset, creating the app first on a first run (no
// GITHUB_APP_ID, nothing saved): serve then serves only the setup page
// until the app exists (package appmanifest). An unset BOT_APP_DIR is
// h's default, outside any clone.
func withAppDir(ctx context.Context, get func(string) string, h host, log *slog.Logger) (func(string) string, error) {
	if get("GITHUB_APP_ID") != "" {
		return get, nil
	}
	start := h.started()
	def, noDefault := h.defaultAppDir(start)
	dir := get("BOT_APP_DIR")
	if dir == "" {
		if get("GITHUB_WEBHOOK_SECRET") != "" {
			// An app configured by hand, partly: config names what
			// is missing.
			return get, nil
		}
		if def == "" {
			// A newcomer's first start, who needs to hear of the
			// setup page before anything else.
			return nil, noAppError("", noDefault, get("BOT_PUBLIC_URL") != "")
		}
		if noDefault != "" {
			log.Warn("BOT_APP_DIR is not set: the GitHub App's credentials go to the default directory, "+noDefault, "dir", def)
		}
		dir = def
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("BOT_APP_DIR %q: %w", dir, err)
	}
	dir = abs
	exposed := ""
	if root, err := h.unignoredIn(dir); err != nil {
		log.Warn("could not check whether git ignores the GitHub App's directory", "dir", dir, "err", err)
	} else if root != "" {
		exposed = exposedWarning(dir, root, def)
		log.Warn(exposed, "dir", dir, "work_tree", root)
	}
	creds, err := appmanifest.Load(dir)
	if errors.Is(err, appmanifest.ErrNoApp) {
		if get("BOT_APP_DIR") == "" && get("BOT_PUBLIC_URL") == "" {
			return nil, noAppError(dir, "", false)
		}
		creds, err = firstRun(ctx, get, firstRunAt{dir: dir, start: start, hostname: h.hostname, exposed: exposed}, log)
	}
	if err != nil {
		return nil, err
	}
	saved := creds.Settings()
	return func(env string) string {
		if v := get(env); v != "" {
			return v
		}
		if env == "GITHUB_APP_PRIVATE_KEY" && get("GITHUB_APP_PRIVATE_KEY_PATH") != "" {
			// The operator's key file wins over the saved key.
			return ""
		}
		return saved[env]
	}, nil
}

// noAppError is serve's answer to a start with no GitHub App configured:
// def is the directory the setup page would save the app in, or "" when
// there is no default, and noDefault then says why; withURL says
// BOT_PUBLIC_URL is set.
func noAppError(def, noDefault string, withURL bool) error {
	byHand := "For an app you created yourself, set GITHUB_APP_ID, GITHUB_WEBHOOK_SECRET and GITHUB_APP_PRIVATE_KEY_PATH. " +
		"See docs/deploy.md, \"The GitHub App\""
	if def == "" && withURL {
		return errors.New("no GitHub App is configured, and BOT_PUBLIC_URL asks for first-run mode, but BOT_APP_DIR is not set and " +
			noDefault + ". Set BOT_APP_DIR to a directory kept across restarts (a volume), outside any git clone: " +
			"the setup page creates the app on GitHub in one click and saves its credentials there. " + byHand)
	}
	where := "BOT_APP_DIR (by default " + def + ", outside any clone)"
	if def == "" {
		where = "BOT_APP_DIR (" + noDefault + ": set it to a directory kept across restarts, a volume, outside any git clone)"
	}
	return errors.New("no GitHub App is configured. " +
		"To create one in one click, set BOT_PUBLIC_URL (the https address GitHub and you reach this bot at, " +
		"or http://localhost:PORT to try it): that starts first-run mode, whose setup page " +
		"creates the app on GitHub and saves its credentials in " + where + ". " + byHand)
}

// firstRunAt is where a first run saves the app and what the setup page
// tells of it.
type firstRunAt struct {
	dir      string // absolute
	start    appmanifest.Start
	hostname string
	exposed  string // the warning of a directory git would commit, or ""
}

// firstRun serves the setup page on BOT_ADDR until the app is created and
// saved, and returns its credentials.
func firstRun(ctx context.Context, get func(string) string, at firstRunAt, log *slog.Logger) (appmanifest.Credentials, error) {
	dir := at.dir
	pub := strings.TrimRight(get("BOT_PUBLIC_URL"), "/")
	if pub == "" {
		return appmanifest.Credentials{}, fmt.Errorf("no GitHub App in BOT_APP_DIR (%s) and no GITHUB_APP_ID: set BOT_PUBLIC_URL, the address GitHub and you reach this bot at, to create the app from the setup page", dir)
	}
	api := strings.TrimRight(get("GITHUB_API_URL"), "/")
	web, err := console.WebURL(api)
	if err != nil {
		return appmanifest.Credentials{}, err
	}
	s, err := appmanifest.New(appmanifest.Config{
		APIURL: api, WebURL: web, PublicURL: pub, Dir: dir,
		Started: at.start, Hostname: at.hostname, Exposed: at.exposed,
		Manifest: pullwright.AppManifest(), Stylesheet: console.Stylesheet(), Logger: log.With("component", "setup"),
	})
	if err != nil {
		return appmanifest.Credentials{}, err
	}
	ln, err := net.Listen("tcp", get("BOT_ADDR"))
	if err != nil {
		return appmanifest.Credentials{}, fmt.Errorf("listen on %s: %w", get("BOT_ADDR"), err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Warn("no GitHub App yet: open the setup page and give it the setup token from the file",
		"setup_url", pub+"/setup", "token_file", s.TokenPath(), "read_it_with", s.TokenCommand())
	// Another replica on the same directory may finish the setup: this
	// one then goes on with what it saved.
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var creds appmanifest.Credentials
wait:
	for {
		select {
		case creds = <-s.Done():
			break wait
		case <-tick.C:
			if c, err := appmanifest.Load(dir); err == nil {
				creds = c
				break wait
			}
		case err := <-served:
			return appmanifest.Credentials{}, fmt.Errorf("setup page: %w", err)
		case <-ctx.Done():
			_ = srv.Close()
			return appmanifest.Credentials{}, ctx.Err()
		}
	}
	// Let the done page reach the browser before the address changes
	// hands to the bot proper.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	log.Info("the GitHub App is created: starting with it", "app_id", creds.AppID, "slug", creds.Slug)
	return creds, nil
}
