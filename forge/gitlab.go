package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/internal/sanitize"
)

// GitLab drives the user's glab CLI, so its logins, hosts (gitlab.com and
// self-hosted instances) and tokens work unchanged.
//
// Reading and merging go through glab's merge-request commands (mr list,
// mr view -F json, mr merge, mr note, mr close). Creating and updating a
// merge request go through `glab api` with a JSON body on stdin, because
// `glab mr create` is built for an interactive checkout: it resolves (and
// may add) git remotes in the user's repository and reads the default
// branch from them, and neither it nor `mr update` reads a description
// from stdin. The JSON fields are GitLab's REST API v4 (docs.gitlab.com
// /api/merge_requests, /api/jobs, /api/notes, /api/projects), which is
// also what `glab mr view -F json` prints: glab marshals the API client's
// MergeRequest, whose JSON tags are the API's field names.
//
// Every argv is built here from validated values; free text goes through
// stdin or as a --flag=value element, so nothing a task says can be read
// as an option.
type GitLab struct {
	glab string
	dir  string
	host string // host[:port], for glab api --hostname and auth status
	path string // group[/subgroup]/name
	repo string // -R for the mr commands: the project's https URL
	proj string // projects/<url-escaped path>, for glab api
}

// maxGitLabText bounds a description or note lazy sends, below GitLab's
// own limit (1,000,000 characters) and the kernel's limit on one argv
// element (128 KiB) for the note that goes through argv.
const maxGitLabText = 100_000

func newGitLab(cfg Config, loc *Location) (*GitLab, error) {
	if cfg.Repo != "" {
		var err error
		if loc, err = gitLabRepoOverride(cfg.Repo, loc); err != nil {
			return nil, err
		}
	}
	if loc == nil {
		return nil, errors.New("cannot tell the GitLab project of the remote; set git config lazy.forge.repo to GROUP/NAME or HOST/GROUP/NAME")
	}
	host := loc.Host
	if host == "" {
		host = "gitlab.com"
	}
	path := loc.Owner + "/" + loc.Name
	glab := cfg.Glab
	if glab == "" {
		glab = "glab"
	}
	return &GitLab{
		glab: glab, dir: cfg.Dir, host: host, path: path,
		// A full URL is the one -R form glab never mistakes: GROUP/NAME
		// would go to GITLAB_HOST, and HOST/GROUP/NAME reads like a
		// nested group.
		repo: "https://" + host + "/" + path,
		proj: "projects/" + url.PathEscape(path),
	}, nil
}

// gitLabRepoOverride parses lazy.forge.repo for GitLab: GROUP/NAME,
// GROUP/SUBGROUP/NAME, or HOST/GROUP/.../NAME, where the first element is
// a host when it has a dot or a port (a top-level group has neither).
func gitLabRepoOverride(s string, loc *Location) (*Location, error) {
	bad := fmt.Errorf("git config lazy.forge.repo = %q is not GROUP/NAME or HOST/GROUP/NAME", s)
	parts := strings.Split(strings.TrimSpace(s), "/")
	out := &Location{Scheme: "https"}
	if loc != nil {
		*out = *loc
	}
	if len(parts) >= 3 && strings.ContainsAny(parts[0], ".:") {
		if !validHost(parts[0]) {
			return nil, bad
		}
		out.Host, parts = parts[0], parts[1:]
	}
	if len(parts) < 2 || len(parts) > 20 {
		return nil, bad
	}
	for _, p := range parts {
		if !validSegment(p) {
			return nil, bad
		}
	}
	out.Owner, out.Name = strings.Join(parts[:len(parts)-1], "/"), parts[len(parts)-1]
	return out, nil
}

// Kind implements Forge.
func (g *GitLab) Kind() string { return "gitlab" }

// Argv returns the argv (without "glab") of each command GitLab runs,
// with sample values: the test that checks them against the real glab
// parser uses it, so what is checked is what runs.
func (g *GitLab) Argv() map[string][]string {
	return map[string][]string{
		"auth":      g.authArgv(),
		"list":      g.listArgv("lazy/x"),
		"create":    g.createArgv(),
		"update":    g.updateArgv(7),
		"view":      g.viewArgv(7),
		"jobs":      g.jobsArgv(99),
		"notes":     g.notesArgv(7),
		"approvals": g.approvalsArgv(7),
		"reviewers": g.reviewersArgv(7),
		"merge":     g.mergeArgv(7, "squash"),
		"rebase":    g.mergeArgv(7, "rebase"),
		"auto":      g.autoMergeArgv(7),
		"methods":   g.methodsArgv(),
		"comment":   g.commentArgv(7, "-m"),
		"close":     g.closeArgv(7),
		"log":       g.logArgv(456),
	}
}

func (g *GitLab) authArgv() []string { return []string{"auth", "status", "--hostname", g.host} }
func (g *GitLab) listArgv(head string) []string {
	return []string{"mr", "list", "-R", g.repo, "--source-branch", head, "--per-page", "5", "-F", "json"}
}

// api is a glab api argv; a body, when there is one, is JSON on stdin.
func (g *GitLab) api(method, path string, body bool) []string {
	a := []string{"api", "--hostname", g.host, "--method", method}
	if body {
		a = append(a, "--input", "-", "--header", "Content-Type: application/json")
	}
	return append(a, g.proj+path)
}
func (g *GitLab) createArgv() []string { return g.api("POST", "/merge_requests", true) }
func (g *GitLab) updateArgv(n int) []string {
	return g.api("PUT", "/merge_requests/"+strconv.Itoa(n), true)
}
func (g *GitLab) viewArgv(n int) []string {
	return []string{"mr", "view", strconv.Itoa(n), "-R", g.repo, "-F", "json"}
}
func (g *GitLab) jobsArgv(pipeline int64) []string {
	return g.api("GET", "/pipelines/"+strconv.FormatInt(pipeline, 10)+"/jobs?per_page=100", false)
}
func (g *GitLab) notesArgv(n int) []string {
	return append(g.api("GET", "/merge_requests/"+strconv.Itoa(n)+"/notes?sort=asc&order_by=created_at", false), "--paginate")
}
func (g *GitLab) approvalsArgv(n int) []string {
	return g.api("GET", "/merge_requests/"+strconv.Itoa(n)+"/approvals", false)
}
func (g *GitLab) reviewersArgv(n int) []string {
	return g.api("GET", "/merge_requests/"+strconv.Itoa(n)+"/reviewers", false)
}

// mergeArgv leaves out --auto-merge: it is on by default in glab (which
// asks GitLab to merge when the pipeline succeeds whenever one is still
// running), and older glab releases name it --when-pipeline-succeeds.
func (g *GitLab) mergeArgv(n int, method string) []string {
	a := []string{"mr", "merge", strconv.Itoa(n), "-R", g.repo, "--yes"}
	switch method {
	case "squash":
		a = append(a, "--squash")
	case "rebase":
		a = append(a, "--rebase")
	}
	return a
}
func (g *GitLab) autoMergeArgv(n int) []string {
	return g.api("PUT", "/merge_requests/"+strconv.Itoa(n)+"/merge", true)
}
func (g *GitLab) methodsArgv() []string { return g.api("GET", "", false) }
func (g *GitLab) commentArgv(n int, body string) []string {
	return []string{"mr", "note", strconv.Itoa(n), "-R", g.repo, "--message=" + body}
}
func (g *GitLab) closeArgv(n int) []string {
	return []string{"mr", "close", strconv.Itoa(n), "-R", g.repo}
}
func (g *GitLab) logArgv(job int64) []string {
	return g.api("GET", "/jobs/"+strconv.FormatInt(job, 10)+"/trace", false)
}

// run runs glab with stdin, writing its stdout to out; a failure carries
// glab's own message.
func (g *GitLab) run(ctx context.Context, stdin []byte, out io.Writer, argv ...string) error {
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return errors.New("a glab argument contains a NUL byte")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.glab, argv...)
	cmd.Dir = g.dir
	// No prompts, pager, colours or update checks: lazy reads the output.
	// (glab warns on stdout about the older NO_PROMPT, so not that one.)
	cmd.Env = append(os.Environ(), "GLAB_NO_PROMPT=1", "NO_COLOR=1", "GLAB_PAGER=cat", "PAGER=cat", "GLAB_CHECK_UPDATE=false")
	cmd.Stdin = bytes.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errb
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return errors.New("the GitLab CLI (glab) is not installed; install it (https://gitlab.com/gitlab-org/cli) and run glab auth login")
		}
		msg := strings.TrimSpace(errb.String())
		if b, ok := out.(*bytes.Buffer); ok && msg == "" {
			msg = strings.TrimSpace(b.String()) // mr merge says why on stdout
		}
		msg = sanitize.Field(Bound(msg, 500))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("glab %s %s: %s", argv[0], glabWhat(argv), msg)
	}
	return nil
}

// glabWhat names a glab command for an error: the subcommand, or the
// method and path of an api call.
func glabWhat(argv []string) string {
	if argv[0] != "api" {
		return argv[1]
	}
	return argv[4] + " " + argv[len(argv)-1]
}

// call runs glab and returns its stdout, from the first line that starts
// a JSON value: glab prints warnings (a deprecated setting in the user's
// environment) on stdout ahead of the JSON.
func (g *GitLab) call(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	var out bytes.Buffer
	err := g.run(ctx, stdin, &out, argv...)
	b := out.Bytes()
	for len(b) > 0 && b[0] != '[' && b[0] != '{' {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return out.Bytes(), err
		}
		b = b[i+1:]
	}
	if len(b) == 0 {
		return out.Bytes(), err
	}
	return b, err
}

// Ready implements Forge: glab must be installed and logged in to the
// host.
func (g *GitLab) Ready(ctx context.Context) error {
	if _, err := exec.LookPath(g.glab); err != nil {
		return fmt.Errorf("the GitLab CLI (glab) is not installed; install it (https://gitlab.com/gitlab-org/cli) and run glab auth login --hostname %s, then submit again", g.host)
	}
	if _, err := g.call(ctx, nil, g.authArgv()...); err != nil {
		return fmt.Errorf("glab is not logged in to %s; run glab auth login --hostname %s, then submit again (%w)", g.host, g.host, err)
	}
	return nil
}

// glMR is a merge request in GitLab's REST API v4 vocabulary (the "Get
// single MR" reply, which glab mr view -F json prints).
type glMR struct {
	IID                 int    `json:"iid"`
	WebURL              string `json:"web_url"`
	State               string `json:"state"` // opened, closed, locked, merged
	Title               string `json:"title"`
	Draft               bool   `json:"draft"`
	WorkInProgress      bool   `json:"work_in_progress"` // before GitLab 14
	SourceBranch        string `json:"source_branch"`
	TargetBranch        string `json:"target_branch"`
	SHA                 string `json:"sha"`
	MergeCommitSHA      string `json:"merge_commit_sha"`
	SquashCommitSHA     string `json:"squash_commit_sha"`
	DetailedMergeStatus string `json:"detailed_merge_status"`
	HasConflicts        bool   `json:"has_conflicts"`
	HeadPipeline        *struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
		WebURL string `json:"web_url"`
	} `json:"head_pipeline"`
}

// glJob is one job of a pipeline (GET /projects/:id/pipelines/:id/jobs).
type glJob struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	Stage         string `json:"stage"`
	Status        string `json:"status"`
	WebURL        string `json:"web_url"`
	AllowFailure  bool   `json:"allow_failure"`
	FailureReason string `json:"failure_reason"`
}

// glNote is a merge request note (GET .../merge_requests/:iid/notes).
type glNote struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	Type   string `json:"type"` // "", DiscussionNote, DiffNote
	System bool   `json:"system"`
	Author struct {
		Username string `json:"username"`
	} `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	Position  *struct {
		NewPath string `json:"new_path"`
		NewLine int    `json:"new_line"`
		OldPath string `json:"old_path"`
		OldLine int    `json:"old_line"`
	} `json:"position"`
}

// glApprovals is GET .../merge_requests/:iid/approvals.
type glApprovals struct {
	ApprovalsLeft int `json:"approvals_left"`
	ApprovedBy    []struct {
		User struct {
			Username string `json:"username"`
		} `json:"user"`
	} `json:"approved_by"`
}

// glReviewer is one of GET .../merge_requests/:iid/reviewers: the
// reviewer's state is unreviewed, reviewed, requested_changes, approved
// or unapproved.
type glReviewer struct {
	State string `json:"state"`
}

// Open implements Forge: the open merge request of spec.Head is updated,
// else one is created. GitLab marks a draft by a "Draft:" title prefix.
func (g *GitLab) Open(ctx context.Context, spec Spec) (*PR, error) {
	out, err := g.call(ctx, nil, g.listArgv(spec.Head)...)
	if err != nil {
		return nil, err
	}
	var found []glMR
	if err := json.Unmarshal(out, &found); err != nil {
		return nil, fmt.Errorf("glab mr list printed something lazy cannot read: %w", err)
	}
	title := spec.Title
	if spec.Draft {
		title = "Draft: " + title
	}
	body := Bound(spec.Body, maxGitLabText)
	for _, f := range found {
		if f.SourceBranch == spec.Head && f.State == "opened" && f.IID > 0 {
			in, _ := json.Marshal(map[string]any{"title": title, "description": body, "target_branch": spec.Base})
			if _, err := g.call(ctx, in, g.updateArgv(f.IID)...); err != nil {
				return nil, err
			}
			return g.View(ctx, f.IID)
		}
	}
	in, _ := json.Marshal(map[string]any{"source_branch": spec.Head, "target_branch": spec.Base, "title": title, "description": body})
	out, err = g.call(ctx, in, g.createArgv()...)
	if err != nil {
		return nil, err
	}
	var made glMR
	if err := json.Unmarshal(out, &made); err != nil {
		return nil, fmt.Errorf("glab api created a merge request lazy cannot read; lazy submit finds it by its branch next time: %w", err)
	}
	if made.IID <= 0 {
		return nil, errors.New("glab api created a merge request without a number; lazy submit finds it by its branch next time")
	}
	return g.View(ctx, made.IID)
}

// View implements Forge: the merge request, its head pipeline's jobs,
// its approvals and its notes.
func (g *GitLab) View(ctx context.Context, number int) (*PR, error) {
	out, err := g.call(ctx, nil, g.viewArgv(number)...)
	if err != nil {
		return nil, err
	}
	var m glMR
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("glab mr view printed something lazy cannot read: %w", err)
	}
	p, err := m.pr()
	if err != nil {
		return nil, err
	}
	if m.HeadPipeline != nil && m.HeadPipeline.ID > 0 {
		out, err := g.call(ctx, nil, g.jobsArgv(m.HeadPipeline.ID)...)
		if err != nil {
			return nil, err
		}
		var jobs []glJob
		if err := json.Unmarshal(out, &jobs); err != nil {
			return nil, fmt.Errorf("glab api printed pipeline jobs lazy cannot read: %w", err)
		}
		p.Checks = glChecks(m.HeadPipeline.Status, m.HeadPipeline.WebURL, jobs)
	}
	// Approvals and reviewer states are best effort: instances without
	// them answer 404, and the detailed merge status still tells a
	// missing approval or requested changes when nothing else holds the
	// merge.
	var a glApprovals
	var rs []glReviewer
	if out, err := g.call(ctx, nil, g.approvalsArgv(number)...); err == nil {
		_ = json.Unmarshal(out, &a)
	}
	if out, err := g.call(ctx, nil, g.reviewersArgv(number)...); err == nil {
		_ = json.Unmarshal(out, &rs)
	}
	glReview(p, &a, rs)
	out, err = g.call(ctx, nil, g.notesArgv(number)...)
	if err != nil {
		return nil, err
	}
	notes, err := decodePages[glNote](out)
	if err != nil {
		return nil, fmt.Errorf("glab api printed notes lazy cannot read: %w", err)
	}
	p.Comments = glComments(p.URL, notes)
	return p, nil
}

// decodePages reads glab api --paginate output: one JSON array per page,
// back to back.
func decodePages[T any](b []byte) ([]T, error) {
	var all []T
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var page []T
		if err := dec.Decode(&page); err != nil {
			return nil, err
		}
		all = append(all, page...)
	}
	return all, nil
}

func (m *glMR) pr() (*PR, error) {
	if m.IID <= 0 || !ValidURL(m.WebURL) {
		return nil, errors.New("glab mr view returned a merge request without a valid number and URL")
	}
	p := &PR{Number: m.IID, URL: m.WebURL, Head: m.SourceBranch, Base: m.TargetBranch, HeadSHA: m.SHA,
		Draft: m.Draft || m.WorkInProgress}
	switch m.State {
	case "opened", "locked":
		p.State = StateOpen
	case "merged":
		p.State = StateMerged
		// A squash or merge commit, else a fast-forward landed the head.
		for _, c := range []string{m.MergeCommitSHA, m.SquashCommitSHA, m.SHA} {
			if validSHA(c) {
				p.MergeCommit = c
				break
			}
		}
	case "closed":
		p.State = StateClosed
	default:
		return nil, fmt.Errorf("glab mr view reported an unknown state %q", Bound(m.State, 40))
	}
	switch s := m.DetailedMergeStatus; s {
	// Mergeable, still being computed, or held by what Checks and
	// Review already say.
	case "", "mergeable", "unchecked", "checking", "preparing", "approvals_syncing",
		"ci_still_running", "ci_must_pass", "not_approved", "requested_changes":
	default: // conflict, need_rebase, draft_status, discussions_not_resolved, blocked_status...
		if onlyRunes(s, "_") {
			p.Blocked = strings.ReplaceAll(Bound(s, 60), "_", " ")
		} else {
			p.Blocked = "blocked"
		}
	}
	if m.HasConflicts && p.Blocked == "" {
		p.Blocked = "conflict"
	}
	switch m.DetailedMergeStatus {
	case "not_approved":
		p.Review = ReviewRequired
	case "requested_changes":
		p.Review = ReviewChangesRequested
	}
	return p, nil
}

// glReview completes the review decision from the approvals and the
// reviewers' states: the detailed merge status names only the first
// thing that holds a merge, so a failed pipeline hides requested
// changes there.
func glReview(p *PR, a *glApprovals, rs []glReviewer) {
	changes, approved := false, len(a.ApprovedBy) > 0
	for _, r := range rs {
		changes = changes || r.State == "requested_changes"
		approved = approved || r.State == "approved"
	}
	switch {
	case changes || p.Review == ReviewChangesRequested:
		p.Review = ReviewChangesRequested
	case a.ApprovalsLeft > 0 || p.Review == ReviewRequired:
		p.Review = ReviewRequired
	case approved:
		p.Review = ReviewApproved
	}
}

// glChecks turns a pipeline's jobs into checks: one per job, or the
// pipeline itself when it lists none.
func glChecks(pipelineStatus, pipelineURL string, jobs []glJob) []Check {
	if !ValidURL(pipelineURL) {
		pipelineURL = ""
	}
	if len(jobs) == 0 {
		return []Check{{Name: "pipeline", State: glState(pipelineStatus, false), URL: pipelineURL, Summary: "pipeline " + Bound(pipelineStatus, 40)}}
	}
	var out []Check
	for _, j := range jobs {
		c := Check{Name: j.Name, State: glState(j.Status, j.AllowFailure), URL: j.WebURL}
		if j.Stage != "" {
			c.Name = j.Stage + ": " + j.Name
		}
		if !ValidURL(c.URL) {
			c.URL = ""
		}
		c.Summary = "job " + Bound(j.Status, 40)
		if j.FailureReason != "" {
			c.Summary += " (" + strings.ReplaceAll(Bound(j.FailureReason, 100), "_", " ") + ")"
		}
		out = append(out, c)
	}
	return out
}

// glState normalizes a job or pipeline status.
func glState(status string, allowFailure bool) string {
	switch status {
	case "success", "skipped":
		return ChecksPassing
	case "failed", "canceled", "canceling":
		if allowFailure {
			return ChecksPassing // GitLab shows a warning; it does not hold the merge
		}
		return ChecksFailing
	case "manual":
		if allowFailure {
			return ChecksPassing // an optional manual job
		}
		return ChecksPending
	default: // created, pending, running, preparing, waiting_for_resource, scheduled, waiting_for_callback
		return ChecksPending
	}
}

// glComments keeps the humans' notes: GitLab's system notes ("added 1
// commit", "approved this merge request") are not feedback. A diff note
// says where it points.
func glComments(mrURL string, notes []glNote) []Comment {
	var out []Comment
	for _, n := range notes {
		if n.System || n.ID <= 0 {
			continue
		}
		body := n.Body
		if n.Type == "DiffNote" && n.Position != nil {
			path, line := n.Position.NewPath, n.Position.NewLine
			if path == "" || line == 0 {
				path, line = n.Position.OldPath, n.Position.OldLine
			}
			if path != "" {
				body = fmt.Sprintf("On %s line %d: %s", Bound(path, 300), line, body)
			}
		}
		id := strconv.FormatInt(n.ID, 10)
		out = append(out, Comment{ID: "note:" + id, Author: n.Author.Username, Body: body, URL: mrURL + "#note_" + id, At: n.CreatedAt})
	}
	return out
}

// Merge implements Forge. glab mr merge merges, or (its default) sets
// auto-merge when the pipeline is still running. When glab refuses (an
// approval missing, or a pipeline that must pass and has not started),
// lazy asks GitLab itself to merge once the merge checks pass (auto_merge,
// GitLab 17; merge_when_pipeline_succeeds before). Whether that request
// was taken is told by View, not by the exit status.
func (g *GitLab) Merge(ctx context.Context, number int, method string) error {
	if _, err := PickMethod(method, nil); err != nil {
		return err
	}
	_, err := g.call(ctx, nil, g.mergeArgv(number, method)...)
	if err == nil {
		return nil
	}
	in, _ := json.Marshal(map[string]any{"auto_merge": true, "merge_when_pipeline_succeeds": true, "squash": method == "squash"})
	if _, aerr := g.call(ctx, in, g.autoMergeArgv(number)...); aerr != nil {
		return fmt.Errorf("%w; requesting auto-merge failed too: %w", err, aerr)
	}
	return nil
}

// Methods implements Forge from the project's squash option: "always"
// allows only squash, "never" no squash; glab's --rebase (rebase onto
// the target, then merge) and a plain merge are otherwise open, the
// project's merge method deciding whether a merge commit is made.
func (g *GitLab) Methods(ctx context.Context) ([]string, error) {
	out, err := g.call(ctx, nil, g.methodsArgv()...)
	if err != nil {
		return nil, err
	}
	var p struct {
		ID           int64  `json:"id"`
		SquashOption string `json:"squash_option"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, fmt.Errorf("glab api printed a project lazy cannot read: %w", err)
	}
	switch p.SquashOption {
	case "always":
		return []string{"squash"}, nil
	case "never":
		return []string{"merge", "rebase"}, nil
	}
	return []string{"squash", "merge", "rebase"}, nil
}

// maxTrace is how much of a job log's end lazy keeps while reading it;
// Tail then cuts it to MaxLog.
const maxTrace = 64 << 10

// glJobURL finds the job id in a job's web URL (.../-/jobs/N).
var glJobURL = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/-/jobs/([0-9]+)$`) })

// CheckLog implements LogReader for a failed pipeline job: the tail of
// its log (GET /projects/:id/jobs/:id/trace), read through a bounded
// buffer however long the log is.
func (g *GitLab) CheckLog(ctx context.Context, c Check) (string, error) {
	m := glJobURL().FindStringSubmatch(c.URL)
	if m == nil {
		return "", fmt.Errorf("check %q is not a GitLab job", c.Name)
	}
	job, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return "", fmt.Errorf("check %q is not a GitLab job", c.Name)
	}
	t := &tailBuffer{max: maxTrace}
	if err := g.run(ctx, nil, t, g.logArgv(job)...); err != nil {
		return "", err
	}
	return Tail(string(t.b), MaxLog), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.b = append(t.b[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

// Comment implements Forge.
func (g *GitLab) Comment(ctx context.Context, number int, body string) error {
	if strings.TrimSpace(body) == "" {
		body = "(no text)" // an empty --message makes glab open an editor
	}
	_, err := g.call(ctx, nil, g.commentArgv(number, Bound(body, maxGitLabText))...)
	return err
}

// Close implements Forge: the comment first, so a merge request is never
// closed without the reason.
func (g *GitLab) Close(ctx context.Context, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, number, comment); err != nil {
			return err
		}
	}
	_, err := g.call(ctx, nil, g.closeArgv(number)...)
	return err
}
