package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Admits reports whether someone may do what w guards. role is their
// permission on the repository as GitHub's permission API reports it;
// login is theirs; owner is the repository's owner, the organization of a
// team written without one. member asks GitHub whether login is an active
// member of org/team; it is called only when role and Users have not
// decided, one team at a time, and may be nil when w names no teams.
//
// Logins are compared whole: "alice[bot]" is an app that anyone can name
// alice, so it is not the user alice, and a bot is never looked up in a
// team. A bot gets in only by its own permission and, when users are
// listed, by its full login being one of them.
func (w Who) Admits(role, login, owner string, member func(org, team string) (bool, error)) (bool, error) {
	need := w.Permission
	if need == "" {
		need = "write"
	}
	if Rank(need) == 0 {
		// Load refuses such a rule; one built in code must not quietly
		// admit everyone.
		return false, fmt.Errorf("unknown permission %q in rule", need)
	}
	if Rank(role) < Rank(need) {
		return false, nil
	}
	if len(w.Users) == 0 && len(w.Teams) == 0 {
		return true, nil
	}
	if login == "" {
		return false, nil
	}
	if slices.ContainsFunc(w.Users, func(u string) bool { return strings.EqualFold(u, login) }) {
		return true, nil
	}
	if isBot(login) || len(w.Teams) == 0 {
		return false, nil
	}
	if member == nil {
		return false, errors.New("team membership: no way to ask GitHub")
	}
	// One failed lookup does not decide: another team may admit. It is
	// reported only if none does, so that the caller can tell "no" from
	// "could not ask".
	var firstErr error
	for _, t := range w.Teams {
		org, slug, ok := strings.Cut(t, "/")
		if !ok {
			org, slug = owner, t
		}
		in, err := member(org, slug)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("team membership of %s in %s/%s: %w", login, org, slug, err)
			}
			continue
		}
		if in {
			return true, nil
		}
	}
	return false, firstErr
}

func isBot(login string) bool {
	return strings.HasSuffix(strings.ToLower(login), "[bot]")
}

// Account is a GitHub user as a delivery names them.
type Account struct {
	Login string
	ID    int64 // 0 when not known
}

// Same reports whether a and b are one person. A login can be renamed
// and then taken by someone else, so the ids decide when both are known;
// without them, logins compared as GitHub does, ignoring case.
func (a Account) Same(b Account) bool {
	if a.ID != 0 && b.ID != 0 {
		return a.ID == b.ID
	}
	return a.Login != "" && strings.EqualFold(a.Login, b.Login)
}

// AdmitsAnswer reports whether who may answer (approve or reject) an
// execution request of a task that requester started. When it may not,
// why is a sentence for the reply comment.
func (a Approvers) AdmitsAnswer(role string, who, requester Account, owner string, member func(org, team string) (bool, error)) (ok bool, why string, err error) {
	if a.ExcludeRequester && who.Same(requester) {
		return false, "the requester of a task may not approve its commands in this repository", nil
	}
	ok, err = a.Admits(role, who.Login, owner, member)
	switch {
	case err != nil:
		return false, "", err
	case ok:
		return true, "", nil
	}
	return false, a.refusal(role, "approving commands"), nil
}

// Refusal explains in a sentence why someone with role is not admitted
// to do what (e.g. "starting a task").
func (w Who) Refusal(role, what string) string { return w.refusal(role, what) }

func (w Who) refusal(role, what string) string {
	need := w.Permission
	if need == "" {
		need = "write"
	}
	if Rank(role) < Rank(need) {
		return fmt.Sprintf("%s needs %s permission or higher on this repository", what, need)
	}
	return fmt.Sprintf("%s is limited to the people and teams listed in %s", what, Path)
}

// Serves reports whether the operator serves an installation. Each list,
// when not empty, must admit it: an installation id outside
// Installations, or an owner outside Organizations, is not served.
func (o *Operator) Serves(installationID int64, owner string) bool {
	if len(o.Installations) > 0 && !slices.Contains(o.Installations, installationID) {
		return false
	}
	if len(o.Organizations) > 0 && !slices.ContainsFunc(o.Organizations, func(org string) bool { return strings.EqualFold(org, owner) }) {
		return false
	}
	return true
}

// BotAllowed reports whether comments of the bot login are heard. An
// entry may be written with or without "[bot]" ("renovate" or
// "renovate[bot]"); the caller decides who is a bot from the sender's
// type, never from the login.
func (o *Operator) BotAllowed(login string) bool {
	name := botName(login)
	return name != "" && slices.ContainsFunc(o.AllowedBots, func(b string) bool { return strings.EqualFold(botName(b), name) })
}

func botName(login string) string {
	if isBot(login) {
		return login[:len(login)-len("[bot]")]
	}
	return login
}
