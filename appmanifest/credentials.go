package appmanifest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The files Save writes in the operator's directory (BOT_APP_DIR): the
// private key, and the rest as KEY=value lines named after the settings
// they stand for. app.env is written last, so its presence means a whole
// set.
const (
	envFile = "app.env"
	keyFile = "private-key.pem"
)

// ErrNoApp means the directory holds no credentials yet: the first run.
var ErrNoApp = errors.New("no GitHub App credentials yet")

// Credentials are what GitHub hands back for a new app, and a session key
// the setup made for the console.
type Credentials struct {
	AppID         int64
	Slug          string
	Owner         string // the account that owns the app
	HTMLURL       string
	WebhookSecret string
	ClientID      string
	ClientSecret  string
	// SessionKey seals the console's cookies (BOT_SESSION_KEY): 32
	// random bytes, hex.
	SessionKey string
	PrivateKey []byte // PEM
}

// Settings are the bot's settings these credentials give, by name.
func (c Credentials) Settings() map[string]string {
	return map[string]string{
		"GITHUB_APP_ID":          strconv.FormatInt(c.AppID, 10),
		"GITHUB_APP_PRIVATE_KEY": string(c.PrivateKey),
		"GITHUB_WEBHOOK_SECRET":  c.WebhookSecret,
		"GITHUB_CLIENT_ID":       c.ClientID,
		"GITHUB_CLIENT_SECRET":   c.ClientSecret,
		"BOT_SESSION_KEY":        c.SessionKey,
	}
}

func (c Credentials) check() error {
	switch {
	case c.AppID <= 0:
		return errors.New("no app id")
	case c.ClientID == "" || c.ClientSecret == "" || c.SessionKey == "":
		// An empty webhook secret is saved rather than lost with the
		// key: serve then refuses to start until the operator sets one
		// on GitHub and in GITHUB_WEBHOOK_SECRET.
		return errors.New("the client id or a secret is missing")
	}
	if b, _ := pem.Decode(c.PrivateKey); b == nil {
		return errors.New("the private key is not PEM")
	}
	for _, v := range []string{c.Slug, c.Owner, c.HTMLURL, c.WebhookSecret, c.ClientID, c.ClientSecret, c.SessionKey} {
		if strings.ContainsAny(v, "\r\n") {
			return errors.New("a value holds a line break")
		}
	}
	return nil
}

func newSessionKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Save writes c into dir, readable by this user only. It never replaces
// credentials already there: an app once created is the operator's to
// delete, on GitHub and here.
func Save(dir string, c Credentials) error {
	if err := c.check(); err != nil {
		return fmt.Errorf("save the app's credentials: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save the app's credentials: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, envFile)); err == nil {
		return fmt.Errorf("save the app's credentials: %s already holds an app's", dir)
	}
	if err := writeNew(dir, keyFile, c.PrivateKey, true); err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The GitHub App %s (%s), created by bot serve's setup page.\n", c.Slug, c.HTMLURL)
	fmt.Fprintf(&b, "GITHUB_APP_ID=%d\n", c.AppID)
	for _, f := range c.envFields() {
		fmt.Fprintf(&b, "%s=%s\n", f.key, *f.val)
	}
	return writeNew(dir, envFile, b.Bytes(), false)
}

// writeNew writes name in dir through a temporary file, mode 0600;
// replace allows a file of that name to be replaced (the key of a set
// whose app.env was never written), otherwise one there is an error.
func writeNew(dir, name string, data []byte, replace bool) error {
	f, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return fmt.Errorf("save the app's credentials: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("save the app's credentials: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("save the app's credentials: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("save the app's credentials: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save the app's credentials: %w", err)
	}
	final := filepath.Join(dir, name)
	switch {
	case replace:
		err = os.Rename(tmp, final)
	default:
		// A link fails if the name exists: two saves cannot both win.
		err = os.Link(tmp, final)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			// A file system without hard links: create the name
			// exclusively instead.
			err = createExclusive(final, data)
		}
	}
	if err != nil {
		return fmt.Errorf("save the app's credentials: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		// The new name lasts a crash only once the directory is synced.
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func createExclusive(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// envFields are app.env's text lines and the fields they hold, one list
// for Save and Load (GITHUB_APP_ID, a number, apart).
func (c *Credentials) envFields() []struct {
	key string
	val *string
} {
	return []struct {
		key string
		val *string
	}{
		{"GITHUB_APP_SLUG", &c.Slug},
		{"GITHUB_APP_OWNER", &c.Owner},
		{"GITHUB_APP_URL", &c.HTMLURL},
		{"GITHUB_WEBHOOK_SECRET", &c.WebhookSecret},
		{"GITHUB_CLIENT_ID", &c.ClientID},
		{"GITHUB_CLIENT_SECRET", &c.ClientSecret},
		{"BOT_SESSION_KEY", &c.SessionKey},
	}
}

// Load reads the credentials Save wrote in dir; ErrNoApp if there are none.
func Load(dir string) (Credentials, error) {
	b, err := os.ReadFile(filepath.Join(dir, envFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Credentials{}, ErrNoApp
	}
	if err != nil {
		return Credentials{}, fmt.Errorf("read the app's credentials: %w", err)
	}
	var c Credentials
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Credentials{}, fmt.Errorf("read the app's credentials: %s:%d: want KEY=value", filepath.Join(dir, envFile), n)
		}
		switch k {
		case "GITHUB_APP_ID":
			if c.AppID, err = strconv.ParseInt(v, 10, 64); err != nil {
				return Credentials{}, fmt.Errorf("read the app's credentials: %s:%d: GITHUB_APP_ID is not a number", filepath.Join(dir, envFile), n)
			}
		default:
			for _, f := range c.envFields() {
				if f.key == k {
					*f.val = v
				}
			}
		}
	}
	if c.PrivateKey, err = os.ReadFile(filepath.Join(dir, keyFile)); err != nil {
		return Credentials{}, fmt.Errorf("read the app's credentials: %w", err)
	}
	if err := c.check(); err != nil {
		return Credentials{}, fmt.Errorf("read the app's credentials in %s: %w", dir, err)
	}
	return c, nil
}
