package forge

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
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
	if jobURL := glJobURL.FindStringSubmatch("https://gitlab.com/o/r/-/jobs/42"); jobURL == nil || jobURL[1] != "42" {
		t.Fatalf("job URL: %v", jobURL)
	}
}

// TestGitLabArgvAgainstRealGlab runs every argv lazy builds through the
// real glab's parser: with --help appended, glab parses the flags (an
// unknown one fails) and then prints the command's help instead of
// running it, so the check needs no login and no network. The help must
// be the command's own, so a wrong subcommand fails too.
func TestGitLabArgvAgainstRealGlab(t *testing.T) {
	glab, err := exec.LookPath("glab")
	if err != nil {
		if os.Getenv("LAZY_REQUIRE_GLAB") == "1" {
			t.Fatal("glab is not installed and LAZY_REQUIRE_GLAB=1 (scripts/ci-install-glab.sh installs it)")
		}
		t.Skip("glab is not installed (scripts/ci-install-glab.sh installs it)")
	}
	f, err := Open(Config{RemoteURL: "https://gitlab.com/acme/platform/app.git"})
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := t.TempDir()
	env := []string{"GLAB_CONFIG_DIR=" + cfgDir, "HOME=" + cfgDir, "XDG_CONFIG_HOME=" + cfgDir, "PATH=" + os.Getenv("PATH"),
		"NO_PROMPT=1", "NO_COLOR=1", "GLAB_CHECK_UPDATE=false", "GLAB_SEND_TELEMETRY=false"}
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
