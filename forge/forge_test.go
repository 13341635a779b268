package forge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

func TestParseRemote(t *testing.T) {
	for raw, want := range map[string]string{
		"https://github.com/acme/app.git":       "https github.com acme app",
		"git@github.com:acme/app.git":           "https github.com acme app",
		"ssh://git@gitea.example:2222/a/b":      "https gitea.example a b",
		"http://127.0.0.1:3000/owner/repo":      "http 127.0.0.1:3000 owner repo",
		"https://ghe.corp.example/team/service": "https ghe.corp.example team service",
	} {
		loc, err := ParseRemote(raw)
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if got := loc.Scheme + " " + loc.Host + " " + loc.Owner + " " + loc.Name; got != want {
			t.Errorf("%s: got %q, want %q", raw, got, want)
		}
	}
	for _, raw := range []string{"/srv/git/app.git", "https://github.com/acme", "https://github.com/-x/app", "git@github.com:a/b/c", "file:///x/y"} {
		if _, err := ParseRemote(raw); err == nil {
			t.Errorf("%s: accepted", raw)
		}
	}
}

func TestOpenInfersForge(t *testing.T) {
	f, err := Open(Config{RemoteURL: "git@github.com:acme/app.git"})
	if err != nil || f.Kind() != "github" {
		t.Fatalf("github: %v %v", f, err)
	}
	if f.(*GitHub).repo != "acme/app" {
		t.Fatalf("repo %q", f.(*GitHub).repo)
	}
	f, err = Open(Config{RemoteURL: "https://ghe.corp/x/y"})
	if err == nil {
		t.Fatalf("an unknown host was taken for a forge: %v", f)
	}
	f, err = Open(Config{Kind: "github", RemoteURL: "https://ghe.corp/x/y"})
	if err != nil || f.(*GitHub).repo != "ghe.corp/x/y" {
		t.Fatalf("enterprise: %v %v", f, err)
	}
	f, err = Open(Config{Kind: "gitea", RemoteURL: "/local/path", Repo: "127.0.0.1:3000/o/r"})
	if err != nil || f.(*Gitea).base != "https://127.0.0.1:3000/api/v1/repos/o/r" {
		t.Fatalf("gitea override: %v %v", f, err)
	}
	if _, err := Open(Config{Kind: "sourcehut", RemoteURL: "https://x/a/b"}); err == nil {
		t.Fatal("an unsupported forge was accepted")
	}
}

func TestPickMethod(t *testing.T) {
	cases := []struct {
		want    string
		allowed []string
		got     string
		err     bool
	}{
		{"", []string{"squash", "merge"}, "squash", false},
		{"squash", []string{"merge", "rebase"}, "merge", false},
		{"rebase", []string{"squash", "rebase"}, "rebase", false},
		{"", nil, "squash", false},
		{"octopus", nil, "", true},
		{"squash", []string{"fast-forward-only"}, "", true},
	}
	for _, c := range cases {
		got, err := PickMethod(c.want, c.allowed)
		if got != c.got || (err != nil) != c.err {
			t.Errorf("PickMethod(%q, %v) = %q, %v", c.want, c.allowed, got, err)
		}
	}
}

func TestBound(t *testing.T) {
	s := strings.Repeat("é", 100) // 200 bytes
	b := Bound(s, 51)
	if !strings.HasPrefix(b, strings.Repeat("é", 25)+"\n[... cut by lazy: 150 more bytes]") {
		t.Fatalf("Bound cut badly: %q", b)
	}
	if Bound("short", 10) != "short" {
		t.Fatal("Bound changed a short text")
	}
}

// TestGitHubViewParsing feeds the documented `gh pr view --json` shape
// (a CheckRun and a StatusContext, a review, a comment) through the
// reader.
func TestGitHubViewParsing(t *testing.T) {
	raw := `{"number":12,"url":"https://github.com/o/r/pull/12","state":"OPEN","isDraft":false,
	"headRefName":"lazy/x","headRefOid":"aaaaaaaa","baseRefName":"main","mergeCommit":null,
	"reviewDecision":"CHANGES_REQUESTED","mergeStateStatus":"BLOCKED",
	"statusCheckRollup":[
	 {"__typename":"CheckRun","name":"build","status":"COMPLETED","conclusion":"FAILURE","detailsUrl":"https://ci/1"},
	 {"__typename":"CheckRun","name":"lint","status":"IN_PROGRESS","conclusion":"","detailsUrl":"javascript:alert(1)"},
	 {"__typename":"StatusContext","context":"ci/legacy","state":"SUCCESS","targetUrl":"https://ci/2","description":"ok"}],
	"reviews":[{"id":"PRR_1","author":{"login":"bob"},"body":"fix it","state":"CHANGES_REQUESTED","submittedAt":"2026-01-01T00:00:00Z"}],
	"comments":[{"id":"IC_1","author":{"login":"ann"},"body":"also this","createdAt":"2026-01-01T00:00:01Z","url":"https://github.com/o/r/pull/12#issuecomment-1"}]}`
	var v ghView
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	pr, err := v.pr()
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != StateOpen || pr.Review != ReviewChangesRequested || pr.Blocked != "blocked" || pr.ChecksState() != ChecksFailing {
		t.Fatalf("pr = %+v", pr)
	}
	if pr.Checks[1].State != ChecksPending || pr.Checks[1].URL != "" || pr.Checks[2].State != ChecksPassing {
		t.Fatalf("checks = %+v", pr.Checks)
	}
	if len(pr.Comments) != 2 || pr.Comments[0].ID != "review:PRR_1" || pr.Comments[1].URL != "https://github.com/o/r/pull/12#issuecomment-1" {
		t.Fatalf("comments = %+v", pr.Comments)
	}
	v.URL = "file:///etc/passwd"
	if _, err := v.pr(); err == nil {
		t.Fatal("a non-http URL was accepted")
	}
}

// TestGitHubArgvAgainstRealGH runs every argv lazy builds through the
// real gh parser, logged out: each must fail for want of a login, never
// for an unknown flag; and every --json field must be one gh documents.
func TestGitHubArgvAgainstRealGH(t *testing.T) {
	gh := realTool(t, "gh", "LAZY_REQUIRE_GH", "scripts/ci-install-gh.sh")
	f, err := Open(Config{Kind: "github", RemoteURL: "https://github.com/acme/app.git"})
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := t.TempDir()
	env := []string{"GH_CONFIG_DIR=" + cfgDir, "HOME=" + cfgDir, "PATH=" + os.Getenv("PATH"), "GH_PROMPT_DISABLED=1", "GH_NO_UPDATE_NOTIFIER=1"}
	for name, argv := range f.(*GitHub).Argv() {
		cmd := exec.Command(gh, argv...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader("body")
		out, err := cmd.CombinedOutput()
		text := string(out)
		if err == nil || strings.Contains(text, "unknown flag") || strings.Contains(text, "unknown shorthand") || strings.Contains(text, "accepts") || !strings.Contains(text, "gh auth login") {
			t.Errorf("%s: gh %q: %v\n%s", name, argv, err, text)
		}
		for i, a := range argv {
			if a != "--json" || i+1 >= len(argv) {
				continue
			}
			listing := exec.Command(gh, append(argv[:i:i], "--json")...)
			listing.Env = env
			lo, _ := listing.CombinedOutput()
			known := map[string]bool{}
			for _, l := range strings.Split(string(lo), "\n") {
				known[strings.TrimSpace(l)] = true
			}
			for _, field := range strings.Split(argv[i+1], ",") {
				if !known[field] {
					t.Errorf("%s: gh does not document the --json field %q:\n%s", name, field, lo)
				}
			}
		}
	}
}

// fakeGitea serves the handful of Gitea API routes lazy uses.
type fakeGitea struct {
	mu       sync.Mutex
	pulls    map[string]map[string]any
	merges   []map[string]any
	closed   bool
	comments []string
	token    string
}

func (f *fakeGitea) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "token "+f.token {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"message":"token is required"}`))
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/api/v1/repos/o/r")
	var in map[string]any
	_ = json.NewDecoder(r.Body).Decode(&in)
	reply := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	switch {
	case p == "" && r.Method == "GET":
		reply(map[string]any{"id": 1, "allow_squash_merge": false, "allow_merge_commits": true, "allow_rebase": true})
	case p == "/pulls" && r.Method == "GET":
		var out []any
		for _, v := range f.pulls {
			if v["state"] == "open" {
				out = append(out, v)
			}
		}
		reply(out)
	case p == "/pulls" && r.Method == "POST":
		n := len(f.pulls) + 1
		pr := map[string]any{"number": n, "html_url": "http://gitea.test/o/r/pulls/1", "state": "open", "title": in["title"], "head": map[string]any{"ref": in["head"], "sha": "abcdef1234"}, "base": map[string]any{"ref": in["base"]}, "mergeable": true}
		f.pulls["1"] = pr
		reply(pr)
	case p == "/pulls/1" && r.Method == "PATCH":
		for k, v := range in {
			if k != "base" { // Gitea takes a branch name, replies with an object
				f.pulls["1"][k] = v
			}
		}
		f.closed = in["state"] == "closed"
		reply(f.pulls["1"])
	case p == "/pulls/1" && r.Method == "GET":
		reply(f.pulls["1"])
	case p == "/commits/abcdef1234/status":
		reply(map[string]any{"statuses": []any{map[string]any{"id": 1, "context": "ci", "status": "failure", "target_url": "http://ci.test/1", "description": "tests failed"}}})
	case p == "/pulls/1/reviews":
		reply([]any{map[string]any{"id": 5, "user": map[string]any{"login": "rev"}, "body": "please fix", "state": "REQUEST_CHANGES", "html_url": "http://gitea.test/o/r/pulls/1#r5"}})
	case p == "/issues/1/comments" && r.Method == "GET":
		reply([]any{})
	case p == "/issues/1/comments" && r.Method == "POST":
		f.comments = append(f.comments, in["body"].(string))
		reply(map[string]any{"id": 9})
	case p == "/pulls/1/merge":
		f.merges = append(f.merges, in)
		if in["merge_when_checks_succeed"] == nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			reply(map[string]any{"message": "checks are failing"})
			return
		}
		reply(map[string]any{})
	default:
		w.WriteHeader(http.StatusNotFound)
		reply(map[string]any{"message": "no route " + r.Method + " " + p})
	}
}

func TestGiteaLifecycle(t *testing.T) {
	fake := &fakeGitea{pulls: map[string]map[string]any{}, token: "s3cret"}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	f, err := Open(Config{Kind: "gitea", RemoteURL: srv.URL + "/o/r.git"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Ready(ctx); err == nil || !strings.Contains(err.Error(), "lazy.forge.token") {
		t.Fatalf("Ready without a token: %v", err)
	}
	f, _ = Open(Config{Kind: "gitea", RemoteURL: "http://" + host + "/o/r.git", Token: "wrong"})
	if err := f.Ready(ctx); err == nil || !strings.Contains(err.Error(), "did not accept") {
		t.Fatalf("Ready with a bad token: %v", err)
	}
	f, _ = Open(Config{Kind: "gitea", RemoteURL: "http://" + host + "/o/r.git", Credential: func(context.Context, *url.URL) (string, error) { return "s3cret", nil }})
	if err := f.Ready(ctx); err != nil {
		t.Fatalf("Ready with a credential-helper token: %v", err)
	}
	pr, err := f.Open(ctx, Spec{Head: "lazy/x", Base: "main", Title: "T", Body: "B", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Number != 1 || !pr.Draft || pr.ChecksState() != ChecksFailing || pr.Review != ReviewChangesRequested || len(pr.Comments) != 1 {
		t.Fatalf("opened %+v", pr)
	}
	again, err := f.Open(ctx, Spec{Head: "lazy/x", Base: "main", Title: "T2", Body: "B2"})
	if err != nil || again.Number != 1 || len(fake.pulls) != 1 || fake.pulls["1"]["title"] != "T2" {
		t.Fatalf("re-open made another or did not update: %+v %v %v", again, err, fake.pulls)
	}
	methods, err := f.Methods(ctx)
	if err != nil || strings.Join(methods, ",") != "merge,rebase" {
		t.Fatalf("methods %v %v", methods, err)
	}
	if err := f.Merge(ctx, 1, "merge"); err != nil {
		t.Fatal(err)
	}
	if len(fake.merges) != 2 || fake.merges[1]["merge_when_checks_succeed"] != true {
		t.Fatalf("merge requests %v", fake.merges)
	}
	if err := f.Close(ctx, 1, "rejected: no"); err != nil || !fake.closed || fake.comments[0] != "rejected: no" {
		t.Fatalf("close: %v %v %v", err, fake.closed, fake.comments)
	}
}

// realTool finds the real CLI name on PATH. It skips in the fast lane
// (go test -short runs no real client) and when the CLI is missing,
// unless the environment variable require is 1: scripts/test.sh sets it
// when the full suite must run the CLI, and then a missing one fails.
func realTool(t *testing.T, name, require, install string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("runs the real %s: the full suite runs it (scripts/test.sh)", name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(require) == "1" {
			t.Fatalf("%s is not installed and %s=1 (%s installs it)", name, require, install)
		}
		t.Skipf("%s is not installed (%s installs it)", name, install)
	}
	return p
}
