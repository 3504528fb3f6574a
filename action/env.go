// Package action is what is particular to running Pullwright as a GitHub
// Actions step: reading the run's environment (the GITHUB_* variables the
// runner sets and the INPUT_* variables of action.yml) and the sealed state
// a task waiting for "/approve" leaves in the repository between two runs.
//
// It also holds the logic of one run (Step, in run.go): restoring and
// claiming a saved state, refusing and reporting one that fails its
// checks, and saving or removing the state when the run ends. It reaches
// the store, the workers, GitHub and the repository's refs only through
// the small interfaces run.go declares, which app fills in; it reads no
// environment but in FromEnv and opens no connection of its own.
//
// Import rule: none of ghapp, runner or console.
package action

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/policy"
)

// Env is what one workflow run tells the step.
type Env struct {
	EventName string
	// Event is the event file's content: the full webhook payload.
	Event      []byte
	Repository string // "owner/name"
	APIURL     string
	ServerURL  string
	RunID      int64
	RunAttempt int

	Token         string
	OpenAIKey     string
	OpenAIBaseURL string
	// OpenAIAPIType is "openai" or "azure"; OpenAIAPIVersion is Azure's
	// api-version, required with "azure".
	OpenAIAPIType, OpenAIAPIVersion string
	Model                           string
	Command                         string
	Runner                          string
	SandboxImage                    string
	// StateKey authenticates the state saved between runs (HMAC-SHA256).
	StateKey        []byte
	ApprovalTimeout time.Duration
	// TempDir is where the run's store and workspaces go (RUNNER_TEMP).
	TempDir string
	// Path is the job's PATH, which approved commands get with the local
	// runner: it holds what the job's setup steps installed.
	Path string
	// Prices are USD per million tokens by model, as the operator file's
	// prices: the task's comments and the job summary show its cost.
	Prices map[string]pullwright.Price
}

// MinStateKey is the shortest state key accepted, in bytes.
const MinStateKey = 16

// input reads an action input as the runner passes it: INPUT_ and the name
// upper-cased, spaces turned into underscores and hyphens kept
// ("github-token" → INPUT_GITHUB-TOKEN). Where the runner sets none (the
// steps of a composite action such as action.yml, a plain run step), the
// plain variable named by fallback is read instead.
func input(getenv func(string) string, name, fallback string) string {
	v := getenv("INPUT_" + strings.ToUpper(strings.ReplaceAll(name, " ", "_")))
	if v == "" && fallback != "" {
		v = getenv(fallback)
	}
	return strings.TrimSpace(v)
}

// FromEnv reads the run's environment and event file. Every problem is
// named, so a misconfigured workflow fails with a clear message, and no
// message repeats a secret.
func FromEnv(getenv func(string) string) (Env, error) {
	e := Env{
		EventName:        getenv("GITHUB_EVENT_NAME"),
		Repository:       getenv("GITHUB_REPOSITORY"),
		APIURL:           strings.TrimRight(getenv("GITHUB_API_URL"), "/"),
		ServerURL:        strings.TrimRight(getenv("GITHUB_SERVER_URL"), "/"),
		Token:            input(getenv, "github-token", "GITHUB_TOKEN"),
		OpenAIKey:        input(getenv, "openai-api-key", "OPENAI_API_KEY"),
		OpenAIBaseURL:    input(getenv, "openai-base-url", "OPENAI_BASE_URL"),
		OpenAIAPIType:    input(getenv, "openai-api-type", "OPENAI_API_TYPE"),
		OpenAIAPIVersion: input(getenv, "openai-api-version", "OPENAI_API_VERSION"),
		Model:            input(getenv, "model", "BOT_MODEL"),
		Command:          input(getenv, "command", "BOT_COMMAND"),
		Runner:           input(getenv, "runner", "BOT_RUNNER"),
		SandboxImage:     input(getenv, "sandbox-image", "BOT_SANDBOX_IMAGE"),
		StateKey:         []byte(input(getenv, "state-key", "PULLWRIGHT_STATE_KEY")),
		TempDir:          getenv("RUNNER_TEMP"),
		Path:             getenv("PATH"),
	}
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if e.EventName == "" {
		add("GITHUB_EVENT_NAME is not set: run this as a step of a workflow")
	}
	if path := getenv("GITHUB_EVENT_PATH"); path == "" {
		add("GITHUB_EVENT_PATH is not set: run this as a step of a workflow")
	} else if b, err := os.ReadFile(path); err != nil {
		add("read the event file: %v", err)
	} else if !json.Valid(b) {
		add("the event file %s is not JSON", path)
	} else {
		e.Event = b
	}
	if owner, name, ok := strings.Cut(e.Repository, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		add("GITHUB_REPOSITORY=%q: want owner/name", e.Repository)
	}
	if e.APIURL == "" {
		e.APIURL = "https://api.github.com"
	}
	if e.ServerURL == "" {
		e.ServerURL = "https://github.com"
	}
	if id, err := strconv.ParseInt(getenv("GITHUB_RUN_ID"), 10, 64); err != nil || id <= 0 {
		add("GITHUB_RUN_ID=%q: want the run's number", getenv("GITHUB_RUN_ID"))
	} else {
		e.RunID = id
	}
	e.RunAttempt = 1
	if a, err := strconv.Atoi(getenv("GITHUB_RUN_ATTEMPT")); err == nil && a > 0 {
		e.RunAttempt = a
	}
	if e.Token == "" {
		add("no GitHub token: set the github-token input (its default is the job's token, ${{ github.token }})")
	}
	if e.OpenAIKey == "" && e.OpenAIBaseURL == "" {
		add("no model endpoint: set the openai-api-key input (from a secret), or openai-base-url for an endpoint without a key")
	}
	if apiType, err := agent.ParseAPIType(e.OpenAIAPIType); err != nil {
		add("openai-api-type: %v", err)
	} else if e.OpenAIAPIType = apiType; apiType == agent.APITypeAzure {
		if e.OpenAIAPIVersion == "" {
			add("openai-api-type is azure but openai-api-version is not set: Azure OpenAI needs its api-version, for instance 2024-10-21")
		}
		if e.OpenAIBaseURL == "" {
			add("openai-api-type is azure but openai-base-url is not set: set it to the resource's endpoint, https://NAME.openai.azure.com")
		}
	}
	if len(e.StateKey) < MinStateKey {
		add("the state-key input is missing or shorter than %d characters: it authenticates the state kept between runs; "+
			"make one with `openssl rand -hex 32`, store it as a repository secret and pass it as state-key", MinStateKey)
	}
	switch e.Runner {
	case "":
		e.Runner = "local"
	case "local", "docker":
	default:
		add("runner=%q: want local or docker", e.Runner)
	}
	e.ApprovalTimeout = 7 * 24 * time.Hour
	if v := input(getenv, "approval-timeout", "BOT_APPROVAL_TIMEOUT"); v != "" {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			add("approval-timeout=%q: want a duration such as 24h or 168h", v)
		} else {
			e.ApprovalTimeout = d
		}
	}
	if v := input(getenv, "prices", "BOT_PRICES"); v != "" {
		if p, err := parsePrices(v); err != nil {
			add("prices: %v", err)
		} else {
			e.Prices = p
		}
	}
	if e.TempDir == "" {
		e.TempDir = os.TempDir()
	}
	if len(problems) > 0 {
		return e, errors.New(strings.Join(problems, "\n"))
	}
	return e, nil
}

// parsePrices reads the prices input, written as the operator file's
// prices are, and checks it as that file's are.
func parsePrices(v string) (map[string]pullwright.Price, error) {
	// Only lines the indent below keeps under prices: a carriage return
	// would start a line of the operator file's own.
	v = strings.ReplaceAll(v, "\r\n", "\n")
	if strings.ContainsRune(v, '\r') {
		return nil, errors.New("a carriage return in the prices: write one model per line")
	}
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "prices:") {
		return nil, errors.New("write the models and their prices without the prices: line above them")
	}
	doc := "prices:\n  " + strings.ReplaceAll(v, "\n", "\n  ") + "\n"
	op, err := policy.LoadOperator([]byte(doc))
	if err != nil {
		// Its lines are the document's less the prices: line on top.
		return nil, errors.New(lineAbove.ReplaceAllStringFunc(err.Error(), func(m string) string {
			n, _ := strconv.Atoi(lineAbove.FindStringSubmatch(m)[1])
			return "line " + strconv.Itoa(max(n-1, 1))
		}))
	}
	return op.Prices, nil
}

var lineAbove = regexp.MustCompile(`line (\d+)`)

// Owner and Name split Repository.
func (e Env) Owner() string { o, _, _ := strings.Cut(e.Repository, "/"); return o }
func (e Env) Name() string  { _, n, _ := strings.Cut(e.Repository, "/"); return n }

// DeliveryID names this run's event as the store records it; a re-run of
// the same run is the same delivery.
func (e Env) DeliveryID() string { return "actions-run-" + strconv.FormatInt(e.RunID, 10) }

// RunURL is where the run is shown, as GitHub recommends building it.
func (e Env) RunURL() string {
	return fmt.Sprintf("%s/%s/actions/runs/%d", e.ServerURL, e.Repository, e.RunID)
}
