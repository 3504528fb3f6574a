package policy

import "testing"

func TestProtectedBy(t *testing.T) {
	globs := []string{".github/workflows/**", Path, "secrets/", "*.pem", "docs/**/*.key"}
	tests := []struct {
		path string
		want string // "" means not protected
	}{
		{".github/workflows/ci.yml", ".github/workflows/**"},
		{".github/workflows/sub/x.yaml", ".github/workflows/**"},
		{".GitHub/Workflows/ci.yml", ".github/workflows/**"},
		{"./.github/workflows/../workflows/ci.yml", ".github/workflows/**"},
		{`.github\workflows\ci.yml`, ".github/workflows/**"},
		{".github/pullwright.yml", Path},
		{".github/dependabot.yml", ""},
		{"secrets/prod.env", "secrets/"},
		{"secrets", "secrets/"},
		{"key.pem", "*.pem"},
		{"dir/key.pem", ""}, // a single * does not cross directories
		{"docs/a/b/c.key", "docs/**/*.key"},
		{"src/main.go", ""},
		{"", ""},
		{".", ""},
	}
	for _, tt := range tests {
		got, ok := ProtectedBy(globs, tt.path)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("ProtectedBy(%q) = %q, %v; want %q", tt.path, got, ok, tt.want)
		}
	}
}

func TestValidGlob(t *testing.T) {
	for g, want := range map[string]bool{"a/**": true, "*.go": true, "[a-": false, "": false, " ": false} {
		if got := ValidGlob(g); got != want {
			t.Errorf("ValidGlob(%q) = %v, want %v", g, got, want)
		}
	}
}

func TestProtectsFromForks(t *testing.T) {
	s := Settings{Protected: []string{".github/workflows/**", Path, "Makefile"}}
	tests := []struct {
		path, want string
	}{
		{".github/workflows/ci.yml", ".github/workflows/**"},
		{".github/actions/setup/action.yml", ".github/**"},
		{".GitHub/CODEOWNERS", ".github/**"},
		{"Makefile", "Makefile"},
		{"src/main.go", ""},
		{".githubx/a", ""},
	}
	for _, tc := range tests {
		got, ok := s.ProtectsFromForks(tc.path)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ProtectsFromForks(%q) = %q, %v; want %q", tc.path, got, ok, tc.want)
		}
	}
}
