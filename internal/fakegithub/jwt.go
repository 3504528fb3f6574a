package fakegithub

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// verifyJWT checks an app JWT the way GitHub does: RS256 signature by the app
// key, iss = app id (string or number), iat not in the future (60s skew
// allowed), exp in the future and at most 10 minutes after iat.
func (s *Server) verifyJWT(tok string, now time.Time) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &hdr); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if hdr.Alg != "RS256" {
		return fmt.Errorf("alg %q, want RS256", hdr.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat *float64        `json:"iat"`
		Exp *float64        `json:"exp"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	if iss != strconv.FormatInt(s.AppID, 10) {
		return fmt.Errorf("iss %s is not app %d", claims.Iss, s.AppID)
	}
	if claims.Iat == nil || claims.Exp == nil {
		return errors.New("iat and exp are required")
	}
	iat := time.Unix(int64(*claims.Iat), 0)
	exp := time.Unix(int64(*claims.Exp), 0)
	switch {
	case iat.After(now.Add(time.Minute)):
		return errors.New("iat is in the future")
	case !exp.After(now):
		return errors.New("expired")
	case exp.Sub(iat) > 10*time.Minute:
		return errors.New("exp is too far in the future")
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
