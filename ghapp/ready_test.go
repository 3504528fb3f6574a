package ghapp

import (
	"crypto/rsa"
	"math/big"
	"strings"
	"testing"
)

func TestReadySignsWithoutCallingGitHub(t *testing.T) {
	tests := []struct {
		name string
		// spoil changes the parsed key the way a broken key file could be.
		spoil   func(k *rsa.PrivateKey) *rsa.PrivateKey
		wantErr bool
	}{
		{"good key", func(k *rsa.PrivateKey) *rsa.PrivateKey { return k }, false},
		{"private exponent does not match", func(k *rsa.PrivateKey) *rsa.PrivateKey {
			c := *k
			c.D = new(big.Int).Add(k.D, big.NewInt(2))
			c.Precomputed = rsa.PrecomputedValues{}
			return &c
		}, true},
		{"public half of another key", func(k *rsa.PrivateKey) *rsa.PrivateKey {
			c := *k
			c.PublicKey.E = 3
			return &c
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.app.key = tc.spoil(e.app.key)
			err := e.app.Ready()
			t.Logf("Ready = %v", err)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Ready = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), e.app.key.D.String())) {
				t.Errorf("the error shows the key: %v", err)
			}
			if n := len(e.fake.Requests()); n != 0 {
				t.Errorf("Ready made %d requests to GitHub, want none", n)
			}
		})
	}
}
