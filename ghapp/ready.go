package ghapp

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
)

// Ready reports whether the app's credentials are usable, without a
// network call: the private key New parsed signs an app JWT the way every
// call to GitHub does (ghinstallation's transport, over a round tripper
// that only keeps the token), and the signature checks out with the key's
// public half. The error never holds the key or the token. An App built
// without a key (one that acts with a fixed token) has nothing to sign:
// New checked what it was given, and it is ready.
func (a *App) Ready() error {
	if a.key == nil {
		return nil
	}
	var auth string
	keep := roundTripper(func(r *http.Request) (*http.Response, error) {
		auth = r.Header.Get("Authorization")
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	})
	atr := ghinstallation.NewAppsTransportFromPrivateKey(keep, a.cfg.AppID, a.key)
	req, err := http.NewRequest(http.MethodGet, a.base+"/app", nil)
	if err != nil {
		return fmt.Errorf("ghapp: app JWT: %w", err)
	}
	resp, err := atr.RoundTrip(req)
	if err != nil {
		// ghinstallation's message names the failure, never the key.
		return fmt.Errorf("ghapp: sign the app JWT: %w", err)
	}
	resp.Body.Close()
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return errors.New("ghapp: the app transport set no bearer token")
	}
	return a.checkJWT(token)
}

// checkJWT verifies an RS256 app JWT against the app's public key and
// checks that it names the app as its issuer.
func (a *App) checkJWT(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("ghapp: the app JWT is malformed")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return errors.New("ghapp: the app JWT's signature is malformed")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&a.key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return errors.New("ghapp: the private key signs app JWTs its own public key does not verify")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return errors.New("ghapp: the app JWT's claims are malformed")
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return errors.New("ghapp: the app JWT's claims are malformed")
	}
	if want := strconv.FormatInt(a.cfg.AppID, 10); claims.Issuer != want {
		return fmt.Errorf("ghapp: the app JWT names issuer %q, want the app id %s", claims.Issuer, want)
	}
	return nil
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
