package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/internal/sanitize"
)

// GitHub drives the user's gh CLI, so its logins, hosts and enterprise
// set-ups work unchanged. Every argv is built here from validated values;
// free text goes through stdin (--body-file -) or as a --flag=value
// element, so nothing the task says can be read as an option.
type GitHub struct {
	gh   string
	dir  string
	repo string // [HOST/]OWNER/NAME for -R
	host string
}

// viewFields are the documented `gh pr view --json` fields lazy reads.
const viewFields = "number,url,state,isDraft,headRefName,headRefOid,baseRefName,mergeCommit,reviewDecision,mergeStateStatus,statusCheckRollup,reviews,comments"

// listFields are the `gh pr list --json` fields used to find a pull
// request by its head branch.
const listFields = "number,url,state,headRefName,baseRefName"

func newGitHub(cfg Config, loc *Location) (*GitHub, error) {
	if cfg.Repo != "" {
		var err error
		if loc, err = repoOverride(cfg.Repo, loc); err != nil {
			return nil, err
		}
	}
	if loc == nil {
		return nil, errors.New("cannot tell the GitHub repository of the remote; set git config lazy.forge.repo to OWNER/NAME")
	}
	host := loc.Host
	if host == "" {
		host = "github.com"
	}
	repo := loc.Owner + "/" + loc.Name
	if host != "github.com" {
		repo = host + "/" + repo
	}
	gh := cfg.GH
	if gh == "" {
		gh = "gh"
	}
	return &GitHub{gh: gh, dir: cfg.Dir, repo: repo, host: host}, nil
}

// Kind implements Forge.
func (g *GitHub) Kind() string { return "github" }

// Argv returns the argv (without "gh") of each command GitHub runs, with
// sample values: the test that checks them against the real gh parser
// uses it, so what is checked is what runs.
func (g *GitHub) Argv() map[string][]string {
	spec := Spec{Head: "lazy/x", Base: "main", Title: "-t", Draft: true}
	return map[string][]string{
		"auth":    g.authArgv(),
		"list":    g.listArgv("lazy/x"),
		"create":  g.createArgv(spec),
		"edit":    g.editArgv(7, spec),
		"view":    g.viewArgv(7),
		"merge":   g.mergeArgv(7, "squash", false),
		"auto":    g.mergeArgv(7, "rebase", true),
		"methods": g.methodsArgv(),
		"comment": g.commentArgv(7),
		"close":   g.closeArgv(7, "--why"),
		"log":     g.logArgv("456"),
	}
}

func (g *GitHub) authArgv() []string { return []string{"auth", "status", "--hostname", g.host} }
func (g *GitHub) listArgv(head string) []string {
	return []string{"pr", "list", "-R", g.repo, "--head", head, "--state", "open", "--limit", "5", "--json", listFields}
}
func (g *GitHub) createArgv(s Spec) []string {
	a := []string{"pr", "create", "-R", g.repo, "--head", s.Head, "--base", s.Base, "--title=" + s.Title, "--body-file", "-"}
	if s.Draft {
		a = append(a, "--draft")
	}
	return a
}
func (g *GitHub) editArgv(n int, s Spec) []string {
	return []string{"pr", "edit", strconv.Itoa(n), "-R", g.repo, "--base", s.Base, "--title=" + s.Title, "--body-file", "-"}
}
func (g *GitHub) viewArgv(n int) []string {
	return []string{"pr", "view", strconv.Itoa(n), "-R", g.repo, "--json", viewFields}
}
func (g *GitHub) mergeArgv(n int, method string, auto bool) []string {
	a := []string{"pr", "merge", strconv.Itoa(n), "-R", g.repo, "--" + method}
	if auto {
		a = append(a, "--auto")
	}
	return a
}
func (g *GitHub) methodsArgv() []string {
	return []string{"repo", "view", g.repo, "--json", "squashMergeAllowed,mergeCommitAllowed,rebaseMergeAllowed"}
}
func (g *GitHub) commentArgv(n int) []string {
	return []string{"pr", "comment", strconv.Itoa(n), "-R", g.repo, "--body-file", "-"}
}
func (g *GitHub) closeArgv(n int, comment string) []string {
	return []string{"pr", "close", strconv.Itoa(n), "-R", g.repo, "--comment=" + comment}
}

// run runs gh and returns its stdout; a failure carries gh's own message.
func (g *GitHub) run(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return nil, errors.New("a gh argument contains a NUL byte")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.gh, argv...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "GH_PROMPT_DISABLED=1", "GH_NO_UPDATE_NOTIFIER=1", "NO_COLOR=1", "GH_PAGER=cat")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("the GitHub CLI (gh) is not installed; install it (Debian: apt install gh) and run gh auth login")
		}
		msg := sanitize.Field(strings.TrimSpace(Bound(errb.String(), 500)))
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("gh %s %s: %s", argv[0], argv[1], msg)
	}
	return out.Bytes(), nil
}

// Ready implements Forge: gh must be installed and logged in to the host.
func (g *GitHub) Ready(ctx context.Context) error {
	if _, err := exec.LookPath(g.gh); err != nil {
		return fmt.Errorf("the GitHub CLI (gh) is not installed; install it (Debian: apt install gh) and run gh auth login, then submit again")
	}
	if _, err := g.run(ctx, nil, g.authArgv()...); err != nil {
		return fmt.Errorf("gh is not logged in to %s; run gh auth login --hostname %s, then submit again (%w)", g.host, g.host, err)
	}
	return nil
}

// Open implements Forge.
func (g *GitHub) Open(ctx context.Context, spec Spec) (*PR, error) {
	out, err := g.run(ctx, nil, g.listArgv(spec.Head)...)
	if err != nil {
		return nil, err
	}
	var found []struct {
		Number      int    `json:"number"`
		HeadRefName string `json:"headRefName"`
	}
	if err := json.Unmarshal(out, &found); err != nil {
		return nil, fmt.Errorf("gh pr list printed something lazy cannot read: %w", err)
	}
	for _, f := range found {
		if f.HeadRefName == spec.Head && f.Number > 0 {
			if _, err := g.run(ctx, []byte(spec.Body), g.editArgv(f.Number, spec)...); err != nil {
				return nil, err
			}
			return g.View(ctx, f.Number)
		}
	}
	out, err = g.run(ctx, []byte(spec.Body), g.createArgv(spec)...)
	if err != nil {
		return nil, err
	}
	n, err := numberFromURL(strings.TrimSpace(lastLine(string(out))))
	if err != nil {
		return nil, fmt.Errorf("gh pr create printed no pull request URL: %w", err)
	}
	return g.View(ctx, n)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// numberFromURL reads N from .../pull/N.
func numberFromURL(u string) (int, error) {
	if !ValidURL(u) {
		return 0, fmt.Errorf("%q is not a URL", Bound(u, 200))
	}
	i := strings.LastIndex(u, "/pull/")
	if i < 0 {
		return 0, fmt.Errorf("%q is not a pull request URL", u)
	}
	n, err := strconv.Atoi(strings.TrimRight(u[i+len("/pull/"):], "/"))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a pull request URL", u)
	}
	return n, nil
}

// ghView is the documented JSON of `gh pr view --json viewFields`.
type ghView struct {
	Number           int    `json:"number"`
	URL              string `json:"url"`
	State            string `json:"state"`
	IsDraft          bool   `json:"isDraft"`
	HeadRefName      string `json:"headRefName"`
	HeadRefOid       string `json:"headRefOid"`
	BaseRefName      string `json:"baseRefName"`
	ReviewDecision   string `json:"reviewDecision"`
	MergeStateStatus string `json:"mergeStateStatus"`
	MergeCommit      *struct {
		Oid string `json:"oid"`
	} `json:"mergeCommit"`
	StatusCheckRollup []struct {
		Typename    string `json:"__typename"`
		Name        string `json:"name"`
		Status      string `json:"status"`
		Conclusion  string `json:"conclusion"`
		DetailsURL  string `json:"detailsUrl"`
		Context     string `json:"context"`
		State       string `json:"state"`
		TargetURL   string `json:"targetUrl"`
		Description string `json:"description"`
		Title       string `json:"title"`
	} `json:"statusCheckRollup"`
	Reviews []struct {
		ID     string `json:"id"`
		Author struct {
			Login string `json:"login"`
		} `json:"author"`
		Body        string    `json:"body"`
		State       string    `json:"state"`
		SubmittedAt time.Time `json:"submittedAt"`
	} `json:"reviews"`
	Comments []struct {
		ID     string `json:"id"`
		Author struct {
			Login string `json:"login"`
		} `json:"author"`
		Body      string    `json:"body"`
		CreatedAt time.Time `json:"createdAt"`
		URL       string    `json:"url"`
	} `json:"comments"`
}

// View implements Forge.
func (g *GitHub) View(ctx context.Context, number int) (*PR, error) {
	out, err := g.run(ctx, nil, g.viewArgv(number)...)
	if err != nil {
		return nil, err
	}
	var v ghView
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("gh pr view printed something lazy cannot read: %w", err)
	}
	return v.pr()
}

func (v *ghView) pr() (*PR, error) {
	if v.Number <= 0 || !ValidURL(v.URL) {
		return nil, fmt.Errorf("gh pr view returned a pull request without a valid number and URL")
	}
	p := &PR{Number: v.Number, URL: v.URL, Draft: v.IsDraft, Head: v.HeadRefName, Base: v.BaseRefName, HeadSHA: v.HeadRefOid}
	switch strings.ToUpper(v.State) {
	case "OPEN":
		p.State = StateOpen
	case "MERGED":
		p.State = StateMerged
	case "CLOSED":
		p.State = StateClosed
	default:
		return nil, fmt.Errorf("gh pr view reported an unknown state %q", Bound(v.State, 40))
	}
	if v.MergeCommit != nil {
		p.MergeCommit = v.MergeCommit.Oid
	}
	switch v.ReviewDecision {
	case "APPROVED":
		p.Review = ReviewApproved
	case "CHANGES_REQUESTED":
		p.Review = ReviewChangesRequested
	case "REVIEW_REQUIRED":
		p.Review = ReviewRequired
	}
	switch s := strings.ToUpper(v.MergeStateStatus); s {
	case "", "CLEAN", "UNKNOWN", "HAS_HOOKS", "UNSTABLE":
	default:
		p.Blocked = strings.ToLower(s)
	}
	for _, c := range v.StatusCheckRollup {
		ch := Check{Name: c.Name, URL: c.DetailsURL, Summary: Bound(c.Title, 500)}
		state := strings.ToUpper(c.Conclusion)
		if c.Typename == "StatusContext" {
			ch = Check{Name: c.Context, URL: c.TargetURL, Summary: Bound(c.Description, 500)}
			state = strings.ToUpper(c.State)
		} else if strings.ToUpper(c.Status) != "COMPLETED" {
			state = "PENDING"
		}
		switch state {
		case "SUCCESS", "NEUTRAL", "SKIPPED":
			ch.State = ChecksPassing
		case "PENDING", "EXPECTED", "":
			ch.State = ChecksPending
		default: // FAILURE, ERROR, CANCELLED, TIMED_OUT, ACTION_REQUIRED, STARTUP_FAILURE, STALE
			ch.State = ChecksFailing
		}
		if !ValidURL(ch.URL) {
			ch.URL = ""
		}
		p.Checks = append(p.Checks, ch)
	}
	for _, r := range v.Reviews {
		if r.ID == "" {
			continue
		}
		p.Comments = append(p.Comments, Comment{ID: "review:" + r.ID, Author: r.Author.Login, Body: r.Body, URL: v.URL, At: r.SubmittedAt, Review: strings.ToLower(r.State)})
	}
	for _, c := range v.Comments {
		if c.ID == "" {
			continue
		}
		u := c.URL
		if !ValidURL(u) {
			u = v.URL
		}
		p.Comments = append(p.Comments, Comment{ID: "comment:" + c.ID, Author: c.Author.Login, Body: c.Body, URL: u, At: c.CreatedAt})
	}
	return p, nil
}

// Merge implements Forge: a direct merge first; when the forge refuses
// it (checks pending, approval required) it asks for auto-merge, which
// GitHub performs once the branch protection is satisfied. Whether the
// auto-merge request was taken is told by View, not by its exit status,
// since repositories without auto-merge refuse it.
func (g *GitHub) Merge(ctx context.Context, number int, method string) error {
	if _, err := PickMethod(method, nil); err != nil {
		return err
	}
	_, err := g.run(ctx, nil, g.mergeArgv(number, method, false)...)
	if err == nil {
		return nil
	}
	if _, aerr := g.run(ctx, nil, g.mergeArgv(number, method, true)...); aerr != nil {
		return fmt.Errorf("%w; requesting auto-merge failed too: %w", err, aerr)
	}
	return nil
}

// Methods implements Forge.
func (g *GitHub) Methods(ctx context.Context) ([]string, error) {
	out, err := g.run(ctx, nil, g.methodsArgv()...)
	if err != nil {
		return nil, err
	}
	var r struct {
		Squash bool `json:"squashMergeAllowed"`
		Merge  bool `json:"mergeCommitAllowed"`
		Rebase bool `json:"rebaseMergeAllowed"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("gh repo view printed something lazy cannot read: %w", err)
	}
	var m []string
	for _, x := range []struct {
		ok   bool
		name string
	}{{r.Squash, "squash"}, {r.Merge, "merge"}, {r.Rebase, "rebase"}} {
		if x.ok {
			m = append(m, x.name)
		}
	}
	return m, nil
}

// jobURL finds the job of a GitHub Actions check run link.
// It is compiled on first use: a regexp at package level is compiled by
// every lazy process at start, whatever the command.
var jobURL = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/actions/runs/[0-9]+/job/([0-9]+)$`) })

func (g *GitHub) logArgv(job string) []string {
	return []string{"run", "view", "-R", g.repo, "--job", job, "--log-failed"}
}

// CheckLog implements LogReader for GitHub Actions checks: the tail of
// the failed steps' log of the check's job.
func (g *GitHub) CheckLog(ctx context.Context, c Check) (string, error) {
	m := jobURL().FindStringSubmatch(c.URL)
	if m == nil {
		return "", fmt.Errorf("check %q is not a GitHub Actions job", c.Name)
	}
	out, err := g.run(ctx, nil, g.logArgv(m[1])...)
	if err != nil {
		return "", err
	}
	return Tail(string(out), MaxLog), nil
}

// Comment implements Forge.
func (g *GitHub) Comment(ctx context.Context, number int, body string) error {
	_, err := g.run(ctx, []byte(body), g.commentArgv(number)...)
	return err
}

// Close implements Forge.
func (g *GitHub) Close(ctx context.Context, number int, comment string) error {
	_, err := g.run(ctx, nil, g.closeArgv(number, comment)...)
	return err
}
