package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestRank(t *testing.T) {
	for role, want := range map[string]int{
		"": 0, "none": 0, "owner": 0, "custom-role": 0, "pull": 0,
		"read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5, "ADMIN": 5,
	} {
		if got := Rank(role); got != want {
			t.Errorf("Rank(%q) = %d, want %d", role, got, want)
		}
	}
}

// teams is a fake team-membership lookup that records what it was asked.
type teams struct {
	members map[string][]string // "org/slug" → logins
	fail    map[string]error
	asked   []string
}

func (f *teams) member(login string) func(org, team string) (bool, error) {
	return func(org, team string) (bool, error) {
		k := org + "/" + team
		f.asked = append(f.asked, k)
		if err := f.fail[k]; err != nil {
			return false, err
		}
		for _, m := range f.members[k] {
			if strings.EqualFold(m, login) {
				return true, nil
			}
		}
		return false, nil
	}
}

func TestAdmits(t *testing.T) {
	boom := errors.New("GitHub is down")
	tests := []struct {
		name      string
		who       Who
		role      string
		login     string
		members   map[string][]string
		fail      map[string]error
		want      bool
		wantErr   bool
		wantAsked string // comma-separated teams asked, in order
	}{
		{name: "default is write", who: Who{}, role: "write", login: "a", want: true},
		{name: "below default", who: Who{}, role: "triage", login: "a"},
		{name: "admin above write", who: Who{}, role: "admin", login: "a", want: true},
		{name: "none", who: Who{Permission: "read"}, role: "none", login: "a"},
		{name: "unknown role", who: Who{Permission: "read"}, role: "owner", login: "a"},
		{name: "empty role", who: Who{Permission: "read"}, role: "", login: "a"},
		{name: "read rule", who: Who{Permission: "read"}, role: "read", login: "a", want: true},
		{name: "maintain rule, write role", who: Who{Permission: "maintain"}, role: "write", login: "a"},
		{name: "unknown permission in rule", who: Who{Permission: "owner"}, role: "admin", login: "a", wantErr: true},
		{name: "listed user", who: Who{Users: []string{"Alice"}}, role: "write", login: "alice", want: true},
		{name: "listed user without the role", who: Who{Users: []string{"alice"}}, role: "read", login: "alice"},
		{name: "unlisted user", who: Who{Users: []string{"alice"}}, role: "admin", login: "bob"},
		{name: "empty login", who: Who{Users: []string{"alice"}}, role: "admin", login: ""},
		{name: "bot suffix does not make a user", who: Who{Users: []string{"alice"}}, role: "admin", login: "alice[bot]"},
		{name: "listed bot", who: Who{Users: []string{"renovate[bot]"}}, role: "write", login: "renovate[bot]", want: true},
		{name: "bot not looked up in teams", who: Who{Teams: []string{"acme/core"}}, role: "admin", login: "alice[bot]",
			members: map[string][]string{"acme/core": {"alice[bot]"}}},
		{name: "team of another org", who: Who{Teams: []string{"acme/core"}}, role: "write", login: "alice",
			members: map[string][]string{"acme/core": {"alice"}}, want: true, wantAsked: "acme/core"},
		{name: "bare slug is the owner's", who: Who{Teams: []string{"core"}}, role: "write", login: "alice",
			members: map[string][]string{"owner/core": {"alice"}}, want: true, wantAsked: "owner/core"},
		{name: "not in any team", who: Who{Teams: []string{"a", "b"}}, role: "write", login: "alice",
			wantAsked: "owner/a,owner/b"},
		{name: "stops at the first team that admits", who: Who{Teams: []string{"a", "b", "c"}}, role: "write", login: "alice",
			members: map[string][]string{"owner/b": {"alice"}}, want: true, wantAsked: "owner/a,owner/b"},
		{name: "user before teams", who: Who{Users: []string{"alice"}, Teams: []string{"a"}}, role: "write", login: "alice", want: true},
		{name: "role before teams", who: Who{Teams: []string{"a"}}, role: "read", login: "alice",
			members: map[string][]string{"owner/a": {"alice"}}},
		{name: "an error, then admitted", who: Who{Teams: []string{"a", "b"}}, role: "write", login: "alice",
			members: map[string][]string{"owner/b": {"alice"}}, fail: map[string]error{"owner/a": boom}, want: true, wantAsked: "owner/a,owner/b"},
		{name: "an error, and no team admits", who: Who{Teams: []string{"a", "b"}}, role: "write", login: "alice",
			fail: map[string]error{"owner/a": boom}, wantErr: true, wantAsked: "owner/a,owner/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &teams{members: tt.members, fail: tt.fail}
			got, err := tt.who.Admits(tt.role, tt.login, "owner", f.member(tt.login))
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("Admits = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
			if err != nil && tt.fail != nil && !errors.Is(err, boom) {
				t.Errorf("error %v does not wrap the lookup's", err)
			}
			if asked := strings.Join(f.asked, ","); asked != tt.wantAsked {
				t.Errorf("asked %q, want %q", asked, tt.wantAsked)
			}
		})
	}
	// No lookup is needed when no team is named.
	if ok, err := (Who{}).Admits("write", "a", "o", nil); !ok || err != nil {
		t.Errorf("nil member: %v, %v", ok, err)
	}
	if ok, err := (Who{Teams: []string{"t"}}).Admits("write", "a", "o", nil); ok || err == nil {
		t.Errorf("teams with nil member: %v, %v; want an error", ok, err)
	}
}

func TestAdmitsAnswer(t *testing.T) {
	f := &teams{members: map[string][]string{"acme/release": {"carol"}}}
	a := Approvers{Who: Who{Permission: "maintain", Teams: []string{"acme/release"}}, ExcludeRequester: true}
	f.members["acme/release"] = append(f.members["acme/release"], "carol-renamed")
	const requesterOnly = "the requester of a task may not approve its commands in this repository"
	tests := []struct {
		role           string
		who, requester Account
		want           bool
		why            string
	}{
		{"admin", Account{"carol", 3}, Account{"alice", 1}, true, ""},
		{"admin", Account{"Carol", 3}, Account{"carol", 3}, false, requesterOnly},
		// The requester renamed their account: the same person.
		{"admin", Account{"carol-renamed", 3}, Account{"carol", 3}, false, requesterOnly},
		// Someone else took the requester's old login: another person.
		{"admin", Account{"carol", 4}, Account{"carol", 3}, true, ""},
		// Without an id (a task recorded before ids were), the logins.
		{"admin", Account{"carol", 3}, Account{"Carol", 0}, false, requesterOnly},
		{"write", Account{"carol", 3}, Account{"alice", 1}, false, "approving commands needs maintain permission or higher on this repository"},
		{"admin", Account{"dave", 5}, Account{"alice", 1}, false, "approving commands is limited to the people and teams listed in .github/pullwright.yml"},
	}
	for _, tt := range tests {
		ok, why, err := a.AdmitsAnswer(tt.role, tt.who, tt.requester, "acme", f.member(strings.ToLower(tt.who.Login)))
		if err != nil || ok != tt.want || why != tt.why {
			t.Errorf("AdmitsAnswer(%s, %+v, requester %+v) = %v, %q, %v; want %v, %q", tt.role, tt.who, tt.requester, ok, why, err, tt.want, tt.why)
		}
	}
	carol := Account{"carol", 3}
	// The requester is refused before GitHub is asked anything.
	f.asked = nil
	if ok, _, _ := a.AdmitsAnswer("admin", carol, carol, "acme", f.member("carol")); ok || len(f.asked) != 0 {
		t.Errorf("requester: ok %v, asked %q", ok, f.asked)
	}
	// Without ExcludeRequester, the requester may approve.
	a.ExcludeRequester = false
	if ok, _, _ := a.AdmitsAnswer("admin", carol, carol, "acme", f.member("carol")); !ok {
		t.Error("requester refused without exclude_requester")
	}
	if got := (Who{}).Refusal("read", "starting a task"); got != "starting a task needs write permission or higher on this repository" {
		t.Errorf("Refusal = %q", got)
	}
}
