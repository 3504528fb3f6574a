package ghapp

import (
	"sync"
	"time"
)

const (
	defaultPermissionTTL = 30 * time.Second
	// maxPermissionTTL bounds how long a revoked user keeps the rights the
	// cache remembers: a maintainer removed from a repository or team must
	// lose the right to approve within a minute.
	maxPermissionTTL = time.Minute
	// maxAnswers bounds the cache's memory whatever the traffic: one entry
	// per (installation, repository or team, user) asked about in a TTL.
	maxAnswers = 4096
)

// answerKey names one cached answer. kind tells permission answers from
// team answers; scope is "owner/repo" or "org/team"; scope and user are
// lower case, as GitHub compares them.
type answerKey struct {
	kind  string
	inst  int64
	scope string
	user  string
}

type answer struct {
	val string
	at  time.Time // when the question was sent
}

// answerCache remembers Permission and TeamMember answers for ttl, so that
// a busy thread (every comment is checked) does not spend the installation's
// rate limit on the same question. Errors are never stored: only answers
// GitHub gave. A ttl <= 0 disables it. It is safe for concurrent use and
// holds at most max entries.
type answerCache struct {
	ttl time.Duration
	now func() time.Time
	max int

	mu      sync.Mutex
	entries map[answerKey]answer
	swept   time.Time // last sweep of expired entries
}

func newAnswerCache(ttl time.Duration, now func() time.Time, max int) *answerCache {
	return &answerCache{ttl: ttl, now: now, max: max, entries: map[answerKey]answer{}}
}

// fresh reports whether an answer asked at at is still usable at now. An
// answer from the future (a clock that went back) is not.
func (c *answerCache) fresh(at, now time.Time) bool {
	age := now.Sub(at)
	return age >= 0 && age < c.ttl
}

func (c *answerCache) get(k answerKey) (string, bool) {
	if c.ttl <= 0 {
		return "", false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return "", false
	}
	if !c.fresh(e.at, now) {
		delete(c.entries, k)
		return "", false
	}
	return e.val, true
}

// put stores val for k as GitHub answered it to a question sent at at (the
// TTL counts from the question, not from when a slow answer arrived).
// Expired entries are dropped at most once per TTL, and whenever the cache
// is full; if it is still full, the oldest answer makes room.
func (c *answerCache) put(k answerKey, val string, at time.Time) {
	if c.ttl <= 0 {
		return
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok && (len(c.entries) >= c.max || !c.fresh(c.swept, now)) {
		for key, e := range c.entries {
			if !c.fresh(e.at, now) {
				delete(c.entries, key)
			}
		}
		c.swept = now
		if len(c.entries) >= c.max {
			var oldest answerKey
			first := true
			for key, e := range c.entries {
				if first || e.at.Before(c.entries[oldest].at) {
					oldest, first = key, false
				}
			}
			delete(c.entries, oldest)
		}
	}
	c.entries[k] = answer{val: val, at: at}
}

func (c *answerCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
