package forge

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenPicksGitLab(t *testing.T) {
	cases := []struct {
		cfg        Config
		host, repo string
	}{
		{Config{RemoteURL: "git@gitlab.com:acme/app.git"}, "gitlab.com", "https://gitlab.com/acme/app"},
		{Config{RemoteURL: "https://gitlab.com/acme/platform/app.git"}, "gitlab.com", "https://gitlab.com/acme/platform/app"},
		{Config{RemoteURL: "ssh://git@gitlab.corp.example:2222/team/svc"}, "gitlab.corp.example", "https://gitlab.corp.example/team/svc"},
		{Config{Kind: "gitlab", RemoteURL: "https://code.corp/a/b/c"}, "code.corp", "https://code.corp/a/b/c"},
		{Config{Kind: "GitLab", RemoteURL: "/srv/git/app.git", Repo: "grp/sub/app"}, "gitlab.com", "https://gitlab.com/grp/sub/app"},
		{Config{Kind: "gitlab", RemoteURL: "/srv/git/app.git", Repo: "git.corp.example/grp/app"}, "git.corp.example", "https://git.corp.example/grp/app"},
	}
	for _, c := range cases {
		f, err := Open(c.cfg)
		if err != nil {
			t.Errorf("%+v: %v", c.cfg, err)
			continue
		}
		g, ok := f.(*GitLab)
		if !ok || g.Kind() != "gitlab" || g.host != c.host || g.repo != c.repo {
			t.Errorf("%+v: got %+v", c.cfg, f)
		}
	}
	g, _ := Open(Config{RemoteURL: "https://gitlab.com/acme/platform/app.git"})
	if p := g.(*GitLab).proj; p != "projects/acme%2Fplatform%2Fapp" {
		t.Errorf("api project path %q", p)
	}
	// Nested paths stay GitLab's: GitHub and Gitea refuse them as before.
	for _, cfg := range []Config{
		{RemoteURL: "https://github.com/a/b/c"},
		{Kind: "gitea", RemoteURL: "https://gitea.example/a/b/c"},
		{RemoteURL: "https://code.corp/a/b/c"},
		{Kind: "gitlab", RemoteURL: "/local", Repo: "only-name"},
		{Kind: "gitlab", RemoteURL: "/local", Repo: "grp/-x"},
	} {
		if f, err := Open(cfg); err == nil {
			t.Errorf("%+v was taken: %+v", cfg, f)
		}
	}
	if _, err := Open(Config{RemoteURL: "https://code.corp/a/b"}); err == nil || !strings.Contains(err.Error(), "github, gitlab or gitea") {
		t.Errorf("an unknown host: %v", err)
	}
	missing, _ := Open(Config{Kind: "gitlab", RemoteURL: "https://gitlab.test/acme/app.git", Glab: filepath.Join(t.TempDir(), "no-glab")})
	if err := missing.Ready(t.Context()); err == nil || !strings.HasPrefix(err.Error(), "the GitLab CLI (glab) is not installed") {
		t.Errorf("Ready without glab: %v", err)
	}
}

// TestGitLabViewParsing feeds the REST API v4 shapes glab prints (a
// merge request, its pipeline's jobs, approvals and notes) through the
// readers.
func TestGitLabViewParsing(t *testing.T) {
	raw := `{"id":901,"iid":12,"project_id":3,"title":"Draft: x","state":"opened","draft":true,
	"web_url":"https://gitlab.com/o/r/-/merge_requests/12","source_branch":"lazy/x","target_branch":"main",
	"sha":"aaaaaaaa","merge_commit_sha":null,"squash_commit_sha":null,"detailed_merge_status":"requested_changes",
	"has_conflicts":false,"head_pipeline":{"id":55,"status":"failed","web_url":"https://gitlab.com/o/r/-/pipelines/55"}}`
	var m glMR
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	p, err := m.pr()
	if err != nil {
		t.Fatal(err)
	}
	if p.Number != 12 || p.State != StateOpen || !p.Draft || p.Head != "lazy/x" || p.Base != "main" || p.Review != ReviewChangesRequested || p.Blocked != "" {
		t.Fatalf("pr = %+v", p)
	}
	jobs := []glJob{
		{ID: 1, Name: "unit", Stage: "test", Status: "failed", WebURL: "https://gitlab.com/o/r/-/jobs/1", FailureReason: "script_failure"},
		{ID: 2, Name: "lint", Stage: "test", Status: "failed", AllowFailure: true, WebURL: "javascript:alert(1)"},
		{ID: 3, Name: "e2e", Stage: "test", Status: "running"},
		{ID: 4, Name: "deploy", Stage: "deploy", Status: "manual"},
	}
	p.Checks = glChecks("failed", "https://gitlab.com/o/r/-/pipelines/55", jobs)
	if p.ChecksState() != ChecksFailing || p.Checks[0].Name != "test: unit" || p.Checks[0].Summary != "job failed (script failure)" ||
		p.Checks[1].State != ChecksPassing || p.Checks[1].URL != "" || p.Checks[2].State != ChecksPending || p.Checks[3].State != ChecksPending {
		t.Fatalf("checks = %+v", p.Checks)
	}
	if c := glChecks("running", "https://gitlab.com/o/r/-/pipelines/56", nil); len(c) != 1 || c[0].State != ChecksPending || c[0].Name != "pipeline" {
		t.Fatalf("a pipeline without jobs: %+v", c)
	}

	var a glApprovals
	_ = json.Unmarshal([]byte(`{"approvals_required":1,"approvals_left":1,"approved_by":[]}`), &a)
	p.Review = ""
	glReview(p, &a, []glReviewer{{State: "reviewed"}})
	if p.Review != ReviewRequired {
		t.Fatalf("review with an approval left: %q", p.Review)
	}
	a = glApprovals{}
	_ = json.Unmarshal([]byte(`{"approvals_left":0,"approved_by":[{"user":{"username":"ann"}}]}`), &a)
	p.Review = ""
	glReview(p, &a, nil)
	if p.Review != ReviewApproved {
		t.Fatalf("review once approved: %q", p.Review)
	}
	var rs []glReviewer
	_ = json.Unmarshal([]byte(`[{"user":{"username":"bob"},"state":"requested_changes"},{"user":{"username":"ann"},"state":"approved"}]`), &rs)
	glReview(p, &a, rs)
	if p.Review != ReviewChangesRequested {
		t.Fatalf("review with changes requested behind a failed pipeline: %q", p.Review)
	}

	pages := `[{"id":1,"body":"added 1 commit","system":true,"author":{"username":"bot"}},
	{"id":2,"body":"please rename","type":"DiffNote","system":false,"author":{"username":"carol"},"created_at":"2026-01-01T00:00:00Z",
	 "position":{"new_path":"r.txt","new_line":3}}]
	[{"id":3,"body":"also this","type":null,"system":false,"author":{"username":"dan"},"created_at":"2026-01-01T00:00:01Z"}]`
	notes, err := decodePages[glNote]([]byte(pages))
	if err != nil {
		t.Fatal(err)
	}
	cs := glComments(p.URL, notes)
	if len(cs) != 2 || cs[0].ID != "note:2" || cs[0].Body != "On r.txt line 3: please rename" || cs[0].Author != "carol" ||
		cs[1].URL != "https://gitlab.com/o/r/-/merge_requests/12#note_3" {
		t.Fatalf("comments = %+v", cs)
	}

	for state, want := range map[string]string{"merged": StateMerged, "closed": StateClosed, "locked": StateOpen} {
		m.State = state
		if p, err := m.pr(); err != nil || p.State != want {
			t.Errorf("state %s: %+v %v", state, p, err)
		}
	}
	m.State, m.SHA, m.SquashCommitSHA = "merged", "aaaaaaaa", "bbbbbbbb"
	if p, _ := m.pr(); p.MergeCommit != "bbbbbbbb" {
		t.Errorf("a squash merge's commit: %q", p.MergeCommit)
	}
	m.State, m.DetailedMergeStatus = "opened", "need_rebase"
	if p, _ := m.pr(); p.Blocked != "need rebase" {
		t.Errorf("blocked: %q", p.Blocked)
	}
	m.WebURL = "file:///etc/passwd"
	if _, err := m.pr(); err == nil {
		t.Fatal("a non-http URL was accepted")
	}
	m.WebURL, m.State = "https://gitlab.com/o/r/-/merge_requests/12", "weird"
	if _, err := m.pr(); err == nil {
		t.Fatal("an unknown state was accepted")
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	b := &tailBuffer{max: 10}
	for _, s := range []string{"0123", "4567", "89ab", "cdefghijklmnop", "q"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatal(n, err)
		}
	}
	if string(b.b) != "ghijklmnopq"[1:] {
		t.Fatalf("tail %q", b.b)
	}
	if jobURL := glJobURL().FindStringSubmatch("https://gitlab.com/o/r/-/jobs/42"); jobURL == nil || jobURL[1] != "42" {
		t.Fatalf("job URL: %v", jobURL)
	}
}

// TestGitLabArgvAgainstRealGlab runs every argv lazy builds through the
// real glab's parser: with --help appended, glab parses the flags (an
// unknown one fails) and then prints the command's help instead of
// running it, so the check needs no login and no network. The help must
// be the command's own, so a wrong subcommand fails too.
func TestGitLabArgvAgainstRealGlab(t *testing.T) {
	glab := realTool(t, "glab", "LAZY_REQUIRE_GLAB", "scripts/ci-install-glab.sh")
	f, err := Open(Config{RemoteURL: "https://gitlab.com/acme/platform/app.git"})
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := t.TempDir()
	env := []string{"GLAB_CONFIG_DIR=" + cfgDir, "HOME=" + cfgDir, "XDG_CONFIG_HOME=" + cfgDir, "PATH=" + os.Getenv("PATH"),
		"GLAB_NO_PROMPT=1", "NO_COLOR=1", "GLAB_CHECK_UPDATE=false", "GLAB_SEND_TELEMETRY=false"}
	check := func(argv []string) (string, error) {
		cmd := exec.Command(glab, append(argv, "--help")...)
		cmd.Env = env
		cmd.Dir = cfgDir
		cmd.Stdin = strings.NewReader("{}")
		out, err := cmd.CombinedOutput()
		text := string(out)
		use := "glab " + argv[0] + " " + argv[1]
		if argv[0] == "api" {
			use = "glab api <endpoint>"
		}
		if low := strings.ToLower(text); err == nil && (strings.Contains(low, "unknown flag") || strings.Contains(low, "unknown shorthand") || !strings.Contains(text, use)) {
			err = errors.New("not the command's help")
		}
		return text, err
	}
	// The check itself must catch a bad flag and a bad subcommand.
	for _, bad := range [][]string{{"mr", "merge", "7", "--squash-it"}, {"mr", "accept-it", "7"}} {
		if _, err := check(bad); err == nil {
			t.Fatalf("glab %q passed the check", bad)
		}
	}
	for name, argv := range f.(*GitLab).Argv() {
		if text, err := check(argv); err != nil {
			t.Errorf("%s: glab %q: %v\n%s", name, argv, err, text)
		}
	}
}

// fakeGitLabAPI serves the GitLab REST API v4 routes that glab and lazy
// use for one project, acme/app, with one merge request once created.
type fakeGitLabAPI struct {
	mu       sync.Mutex
	t        *testing.T
	mr       map[string]any
	merges   []string // query + body of each merge request
	notes    []string
	closed   bool
	mergeOK  bool // accept merge requests (with auto-merge set)
	requests []string
}

func (f *fakeGitLabAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Private-Token") != "glpat-test" && r.Header.Get("Authorization") != "Bearer glpat-test" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"message":"401 Unauthorized"}`))
		return
	}
	reply := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v4")
	const proj = "/projects/acme%2Fapp"
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	switch {
	case p == "/user":
		reply(map[string]any{"id": 1, "username": "tester"})
	case p == proj || p == "/projects/1":
		reply(map[string]any{"id": 1, "path_with_namespace": "acme/app", "path": "app", "name": "app",
			"namespace": map[string]any{"full_path": "acme", "path": "acme"}, "web_url": "https://gitlab.test/acme/app",
			"squash_option": "always", "merge_method": "merge", "merge_requests_enabled": true})
	case p == proj+"/merge_requests" && r.Method == "GET":
		out := []any{}
		if f.mr != nil && f.mr["state"] == "opened" && r.URL.Query().Get("source_branch") == f.mr["source_branch"] {
			out = append(out, f.mr)
		}
		reply(out)
	case p == proj+"/merge_requests" && r.Method == "POST":
		f.mr = map[string]any{"id": 100, "iid": 1, "project_id": 1, "title": in["title"], "description": in["description"], "state": "opened",
			"draft": strings.HasPrefix(in["title"].(string), "Draft:"), "source_branch": in["source_branch"], "target_branch": in["target_branch"],
			"web_url": "https://gitlab.test/acme/app/-/merge_requests/1", "sha": "abcdef1234", "detailed_merge_status": "mergeable",
			"user": map[string]any{"can_merge": true}, "author": map[string]any{"username": "tester"},
			"head_pipeline": map[string]any{"id": 9, "status": "failed", "web_url": "https://gitlab.test/acme/app/-/pipelines/9"}}
		w.WriteHeader(http.StatusCreated)
		reply(f.mr)
	case f.mr != nil && p == proj+"/merge_requests/1" && r.Method == "GET":
		reply(f.mr)
	case f.mr != nil && p == proj+"/merge_requests/1" && r.Method == "PUT":
		for k, v := range in {
			f.mr[k] = v
		}
		f.mr["draft"] = strings.HasPrefix(f.mr["title"].(string), "Draft:")
		if in["state_event"] == "close" {
			f.mr["state"], f.closed = "closed", true
		}
		reply(f.mr)
	case p == proj+"/pipelines/9/jobs":
		reply([]any{map[string]any{"id": 31, "name": "unit", "stage": "test", "status": "failed", "allow_failure": false,
			"web_url": "https://gitlab.test/acme/app/-/jobs/31", "failure_reason": "script_failure"}})
	case p == proj+"/jobs/31/trace":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Repeat("setup\n", 20000) + "FAIL TestX\n"))
	case strings.HasSuffix(p, "/merge_requests/1/approvals") || strings.HasSuffix(p, "/merge_requests/1/approval_state"):
		reply(map[string]any{"approvals_required": 1, "approvals_left": 1, "approved_by": []any{}, "rules": []any{}})
	case strings.HasSuffix(p, "/merge_requests/1/reviewers"):
		reply([]any{map[string]any{"user": map[string]any{"username": "rev"}, "state": "requested_changes"}})
	case strings.HasSuffix(p, "/merge_requests/1/notes") && r.Method == "GET":
		// Two pages, linked as GitLab links them.
		if r.URL.Query().Get("page") != "2" {
			next := *r.URL
			q := next.Query()
			q.Set("page", "2")
			next.RawQuery = q.Encode()
			w.Header().Set("Link", `<http://`+r.Host+next.RequestURI()+`>; rel="next"`)
			reply([]any{map[string]any{"id": 1, "body": "added 1 commit", "system": true, "author": map[string]any{"username": "rev"}}})
			return
		}
		reply([]any{map[string]any{"id": 2, "body": "please fix", "system": false, "author": map[string]any{"username": "rev"}, "created_at": "2026-01-01T00:00:00Z"}})
	case strings.HasSuffix(p, "/merge_requests/1/notes") && r.Method == "POST":
		f.notes = append(f.notes, in["body"].(string))
		w.WriteHeader(http.StatusCreated)
		reply(map[string]any{"id": 3, "body": in["body"]})
	case strings.HasSuffix(p, "/merge_requests/1/merge") && r.Method == "PUT":
		f.merges = append(f.merges, r.URL.RawQuery+" "+string(body))
		if f.mergeOK {
			f.mr["merge_when_pipeline_succeeds"] = true
			reply(f.mr)
			return
		}
		w.WriteHeader(http.StatusMethodNotAllowed)
		reply(map[string]any{"message": "405 Method Not Allowed"})
	default:
		w.WriteHeader(http.StatusNotFound)
		reply(map[string]any{"message": "404 no route " + r.Method + " " + p})
	}
}

// TestGitLabThroughRealGlab drives lazy's GitLab forge through the real
// glab against a fake GitLab API: what glab really sends and prints for
// each command lazy runs, read by lazy's parsers. glab reaches the fake
// through its per-host api_host and api_protocol settings.
func TestGitLabThroughRealGlab(t *testing.T) {
	glab := realTool(t, "glab", "LAZY_REQUIRE_GLAB", "scripts/ci-install-glab.sh")
	api := &fakeGitLabAPI{t: t}
	srv := httptest.NewServer(api)
	defer srv.Close()
	home := t.TempDir()
	cfg := "check_update: false\nno_prompt: true\ntelemetry: false\nhosts:\n  gitlab.test:\n    token: glpat-test\n    api_host: " +
		strings.TrimPrefix(srv.URL, "http://") + "\n    api_protocol: http\n    git_protocol: https\n"
	if err := os.WriteFile(filepath.Join(home, "config.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GLAB_CONFIG_DIR", home)
	t.Setenv("HOME", home)
	t.Setenv("GLAB_SEND_TELEMETRY", "false")
	for _, k := range []string{"GITLAB_TOKEN", "GITLAB_HOST", "GITLAB_URI", "GITLAB_ACCESS_TOKEN", "OAUTH_TOKEN"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
	f, err := Open(Config{Kind: "gitlab", RemoteURL: "https://gitlab.test/acme/app.git", Dir: home, Glab: glab})
	if err != nil {
		t.Fatal(err)
	}
	g := f.(*GitLab)
	ctx := t.Context()
	if err := g.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v\nrequests: %v", err, api.requests)
	}
	other, _ := Open(Config{Kind: "gitlab", RemoteURL: "https://gitlab.invalid/acme/app.git", Dir: home, Glab: glab})
	if err := other.Ready(ctx); err == nil || !strings.HasPrefix(err.Error(), "glab is not logged in to gitlab.invalid; run glab auth login --hostname gitlab.invalid") {
		t.Fatalf("Ready for a host glab has no login for: %v", err)
	}
	pr, err := g.Open(ctx, Spec{Head: "lazy/x", Base: "main", Title: "T", Body: "line one\n--body\nLazy-Task: 1", Draft: true})
	if err != nil {
		t.Fatalf("Open: %v\nrequests: %v", err, api.requests)
	}
	if pr.Number != 1 || !pr.Draft || pr.URL != "https://gitlab.test/acme/app/-/merge_requests/1" || pr.ChecksState() != ChecksFailing ||
		pr.Review != ReviewChangesRequested || len(pr.Comments) != 1 || pr.Comments[0].Body != "please fix" {
		t.Fatalf("opened %+v\nrequests: %v", pr, api.requests)
	}
	if api.mr["description"] != "line one\n--body\nLazy-Task: 1" || api.mr["title"] != "Draft: T" {
		t.Fatalf("the merge request as created: %v", api.mr)
	}
	again, err := g.Open(ctx, Spec{Head: "lazy/x", Base: "main", Title: "T2", Body: "B2"})
	if err != nil || again.Number != 1 || api.mr["title"] != "T2" || again.Draft {
		t.Fatalf("update: %+v %v %v", again, err, api.mr)
	}
	log, err := g.CheckLog(ctx, pr.Checks[0])
	if err != nil || !strings.HasSuffix(log, "FAIL TestX") || len(log) > MaxLog+100 {
		t.Fatalf("job log (%d bytes): %v\n%s", len(log), err, log)
	}
	if m, err := g.Methods(ctx); err != nil || strings.Join(m, ",") != "squash" {
		t.Fatalf("methods %v %v", m, err)
	}
	api.mr["draft"], api.mr["title"] = false, "T2"
	err = g.Merge(ctx, 1, "squash")
	if err == nil || len(api.merges) != 2 || !strings.Contains(api.merges[0], `"squash":true`) || !strings.Contains(api.merges[1], `"auto_merge":true`) {
		t.Fatalf("merge: %v %v\nrequests: %v", err, api.merges, api.requests)
	}
	// A running pipeline: glab's default --auto-merge asks GitLab to
	// merge when it succeeds, and that is a success.
	api.mr["pipeline"] = map[string]any{"id": 10, "status": "running"}
	api.mr["detailed_merge_status"] = "ci_still_running"
	api.mergeOK = true
	if err := g.Merge(ctx, 1, "squash"); err != nil || len(api.merges) != 3 || !strings.Contains(api.merges[2], `"auto_merge":true`) {
		t.Fatalf("merge with a running pipeline: %v %v", err, api.merges)
	}
	if err := g.Close(ctx, 1, "lazy: reject: no\n\n<!-- lazy -->"); err != nil || !api.closed || len(api.notes) != 1 || api.notes[0] != "lazy: reject: no\n\n<!-- lazy -->" {
		t.Fatalf("close: %v %v %v\nrequests: %v", err, api.closed, api.notes, api.requests)
	}
}
