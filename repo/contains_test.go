package repo_test

import "testing"

func TestContains(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	w := clone(t, u)
	write(t, w, map[string]string{"README.md": "# widgets\nmine\n"})
	mine, err := w.CommitAll("mine", bot)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(ctxT(t), token, "main"); err != nil {
		t.Fatal(err)
	}
	// A person builds on the bot's commit; another branch does not.
	person := s.Push(t, owner, name, "main", map[string]string{"NOTES.md": "notes\n"}, "Person")
	other := s.Push(t, owner, name, "other", map[string]string{"OTHER.md": "x\n"}, "Elsewhere")
	if err := w.Fetch(ctxT(t), token, person); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		tip, sha  string
		want      bool
		wantError bool
	}{
		{"itself", mine, mine, true, false},
		{"a parent", mine, base, true, false},
		{"the bot's commit under a person's", person, mine, true, false},
		{"a child is not in its parent", mine, person, false, false},
		{"a commit the workspace lacks", person, other, false, false},
		{"not a SHA", "main", mine, false, true},
		{"a short SHA", mine, base[:12], false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.Contains(tt.tip, tt.sha)
			if got != tt.want || (err != nil) != tt.wantError {
				t.Errorf("Contains = %v, %v; want %v, error %v", got, err, tt.want, tt.wantError)
			}
		})
	}
}
