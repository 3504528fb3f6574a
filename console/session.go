package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// MinSessionKey is the shortest session key accepted, in bytes.
const MinSessionKey = 32

// session is who signed in, kept in the browser as a sealed cookie: the
// console keeps nothing in memory that another replica would need.
type session struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	// Token is the person's GitHub user token: what every permission
	// question about them is asked with. It is why the cookie is
	// encrypted and not only signed.
	Token string `json:"token"`
	// CSRF is the secret every form of the session carries back.
	CSRF    string `json:"csrf"`
	Expires int64  `json:"exp"` // Unix seconds
}

// oauthState is the sign-in under way: the state sent to GitHub, which
// must come back with the code, in the same browser.
type oauthState struct {
	State   string `json:"state"`
	Expires int64  `json:"exp"`
}

// sealer seals and opens cookie values. It uses AES-256-GCM, an
// authenticated encryption: the tag signs the value as an HMAC would, and
// the encryption keeps the user token in it unreadable to anyone who
// reads the cookie (a proxy's log, a shared machine). Its key is derived
// from the operator's session key with HMAC-SHA256, so the session key
// itself is never used directly as a cipher key.
type sealer struct{ aead cipher.AEAD }

var errBadCookie = errors.New("cookie is not one of ours, or was changed")

func newSealer(key []byte) (*sealer, error) {
	if len(key) < MinSessionKey {
		return nil, fmt.Errorf("session key of %d bytes: want at least %d", len(key), MinSessionKey)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("pullwright console cookie v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("session cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("session cipher: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// seal encrypts v for the cookie called name. The name is authenticated
// with it, so that one cookie's value cannot be replayed as another's.
func (s *sealer) seal(name string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("seal %s: %w", name, err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal %s: %w", name, err)
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(name))), nil
}

// open reads a value sealed for the cookie called name into v.
func (s *sealer) open(name, value string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(b) < s.aead.NonceSize() {
		return errBadCookie
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(name))
	if err != nil {
		return errBadCookie
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return errBadCookie
	}
	return nil
}

// cookies names and writes the console's cookies. With Secure they carry
// the __Host- prefix, which browsers accept only from HTTPS, for the whole
// host and no domain: a sibling subdomain cannot plant one.
type cookies struct {
	secure bool
	sealer *sealer
}

func (c cookies) name(base string) string {
	if c.secure {
		return "__Host-" + base
	}
	return base
}

const (
	sessionCookie = "pullwright-session"
	stateCookie   = "pullwright-signin"
)

// set writes v sealed under base's name, for the browser to keep for
// life. The value carries its own expiry too: a browser that keeps a
// cookie longer gains nothing.
func (c cookies) set(w http.ResponseWriter, base string, v any, life time.Duration) error {
	name := c.name(base)
	val, err := c.sealer.seal(name, v)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: val, Path: "/", MaxAge: int(life.Seconds()),
		Secure: c.secure, HttpOnly: true,
		// Lax, not Strict: the way back from GitHub's authorization page,
		// and a link to a task from a comment, are top-level navigations
		// from github.com that must carry the cookie. Forms are guarded by
		// the CSRF token, not by SameSite alone.
		SameSite: http.SameSiteLaxMode,
	})
	return nil
}

func (c cookies) clear(w http.ResponseWriter, base string) {
	http.SetCookie(w, &http.Cookie{Name: c.name(base), Value: "", Path: "/", MaxAge: -1,
		Secure: c.secure, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// get opens base's cookie into v; false when it is absent or not ours.
func (c cookies) get(r *http.Request, base string, v any) bool {
	ck, err := r.Cookie(c.name(base))
	if err != nil {
		return false
	}
	return c.sealer.open(c.name(base), ck.Value, v) == nil
}

// sameSecret compares two secrets in constant time.
func sameSecret(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
