package submission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lazyorch/lazy/forge"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// The tests in this file run submission on its seams alone: the task
// store in memory, git's side faked (fakeGit), the forge faked
// (fakeForge), the supervisor's launch recorded, and PATH emptied so
// that any git or forge CLI a step would start fails the test.

const (
	sessionID = "5e55105e55105e55"
	tip1      = "1111111111111111111111111111111111111111"
	tip2      = "2222222222222222222222222222222222222222"
)

// fakeGit is the Worktree of a repository with one remote, origin, that
// has the branches it names.
type fakeGit struct {
	mu       sync.Mutex
	tips     map[string]string // local branch -> tip
	remote   map[string]bool   // branches on origin
	dirty    bool
	pushErr  error
	pushes   [][]string
	gitCalls []string
	store    task.Store
	id       string
	atPush   []machine.Status // the task's status when each push ran
}

func (g *fakeGit) call(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gitCalls = append(g.gitCalls, s)
}

func (g *fakeGit) RemoteURL(_ context.Context, _, remote string) (string, error) {
	g.call("RemoteURL " + remote)
	if remote != "origin" {
		return "", errors.New("no such remote")
	}
	return "https://github.com/o/r.git", nil
}

func (g *fakeGit) RemoteHasBranch(_ context.Context, _, remote, branch string) bool {
	g.call("RemoteHasBranch " + remote + " " + branch)
	return g.remote[branch]
}

func (g *fakeGit) BranchCommit(_ context.Context, _, branch string) (string, error) {
	g.call("BranchCommit " + branch)
	if t, ok := g.tips[branch]; ok {
		return t, nil
	}
	return "", errors.New("no such branch")
}

func (g *fakeGit) Push(_ context.Context, _ string, args []string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pushes = append(g.pushes, args)
	if sn, err := g.store.Load(g.id); err == nil {
		g.atPush = append(g.atPush, sn.Task.Status)
	}
	return g.pushErr
}

func (g *fakeGit) CredentialFill(context.Context, string, []byte) (string, error) {
	return "", errors.New("no credential helper")
}

func (g *fakeGit) Dirty(context.Context, string) (bool, error) { return g.dirty, nil }

// fakeForge is a forge that opens pull request 7 for any head, and
// records what it was asked.
type fakeForge struct {
	mu       sync.Mutex
	notReady error
	closeErr error
	opened   []forge.Spec
	closed   []string
}

func (f *fakeForge) Kind() string                    { return "github" }
func (f *fakeForge) Ready(ctx context.Context) error { return f.notReady }

func (f *fakeForge) Open(_ context.Context, spec forge.Spec) (*forge.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, spec)
	return &forge.PR{Number: 7, URL: "https://github.com/o/r/pull/7", State: forge.StateOpen, Draft: spec.Draft}, nil
}

func (f *fakeForge) View(context.Context, int) (*forge.PR, error) {
	return nil, errors.New("not viewed in these tests")
}
func (f *fakeForge) Merge(context.Context, int, string) error  { return errors.New("no merge here") }
func (f *fakeForge) Methods(context.Context) ([]string, error) { return []string{"squash"}, nil }
func (f *fakeForge) Comment(context.Context, int, string) error {
	return errors.New("no comment here")
}

func (f *fakeForge) Close(_ context.Context, n int, comment string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = append(f.closed, fmt.Sprintf("#%d %s", n, comment))
	return f.closeErr
}

// fixture is a submission over memstore with a blocked task that ran
// one turn on this machine, on branch lazy/feature of target main.
type fixture struct {
	e        *session.Env
	sv       *Service
	git      *fakeGit
	fg       *fakeForge
	configs  []forge.Config
	launched []string
	sn       *task.Snapshot
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git, no gh: nothing may need one
	ctx := context.Background()
	e := &session.Env{
		Store: memstore.New(memstore.WithHost("ops-test")),
		Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
		Actor: machine.Human,
	}
	x := &fixture{e: e, fg: &fakeForge{}}
	e.Launch = func(id string) error { x.launched = append(x.launched, id); return nil }
	sn, err := e.Store.Create(task.CreateSpec{Title: "add the feature", Goal: "so that it exists", TargetBranch: "main", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	wt := t.TempDir()
	for _, st := range []machine.Status{machine.Working, machine.Blocked} {
		if sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			if s.Session == nil {
				s.Session = &task.Session{ID: sessionID, Number: 1, Host: "ops-test", Branch: "lazy/feature", Worktree: wt}
				s.Task.Sessions = 1
				s.AddTurn(task.Turn{Role: task.RoleHuman, Actor: machine.Human, Kind: "start", Content: "add the feature", At: time.Now().UTC().Truncate(time.Second), Session: sessionID})
			}
			s.Task.Status = st
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sessionID, Agent: "exec", Exec: []string{"/bin/true"}, Worktree: wt, Branch: "lazy/feature", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	x.sn = sn
	x.git = &fakeGit{tips: map[string]string{"lazy/feature": tip1, "main": tip2}, remote: map[string]bool{}, store: e.Store, id: sn.Task.ID}
	x.sv = New(e, nil)
	x.sv.Worktrees = x.git
	x.sv.Forges = func(c forge.Config) (forge.Forge, error) {
		x.configs = append(x.configs, c)
		return x.fg, nil
	}
	return x
}

func (x *fixture) load(t *testing.T) *task.Snapshot {
	t.Helper()
	sn, err := x.e.Store.Load(x.sn.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// A submit records the task submitted before anything leaves the
// machine, pushes the branch this machine made (never forced: no lease
// the first time), opens the pull request against the task's target
// with the goal, the turns and the trailer, and records it; a second
// submit pushes with the commit pushed last as its lease and updates the
// same pull request.
func TestSubmitRecordsThenPushesThenOpens(t *testing.T) {
	x := newFixture(t)
	ctx := context.Background()
	res, err := x.sv.Submit(ctx, x.sn.Task.Slug, SubmitOptions{Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(x.configs) != 1 || x.configs[0].RemoteURL != "https://github.com/o/r.git" || x.configs[0].Credential == nil {
		t.Fatalf("the forge opened with %+v", x.configs)
	}
	if want := [][]string{{"--quiet", "--no-verify", "origin", "refs/heads/lazy/feature:refs/heads/lazy/feature"}}; !slices.EqualFunc(x.git.pushes, want, slices.Equal) {
		t.Fatalf("pushes %q, want %q", x.git.pushes, want)
	}
	if !slices.Equal(x.git.atPush, []machine.Status{machine.Submitted}) {
		t.Fatalf("the task was %v at the push: the submission is recorded first", x.git.atPush)
	}
	if len(x.fg.opened) != 1 {
		t.Fatalf("opened %+v", x.fg.opened)
	}
	spec := x.fg.opened[0]
	if spec.Head != "lazy/feature" || spec.Base != "main" || spec.Title != "add the feature" || !spec.Draft ||
		!strings.HasPrefix(spec.Body, "so that it exists\n\n### Turns\n\n1. **human** (start): add the feature\n") ||
		!strings.HasSuffix(spec.Body, session.AcceptTrailer(x.sn.Task.ID)+"\n"+forgeMarker+"\n") {
		t.Fatalf("the pull request asked for: %+v", spec)
	}
	got := x.load(t)
	f := got.Task.Forge
	if got.Task.Status != machine.Submitted || f == nil || f.Number != 7 || f.HeadSHA != tip1 || f.Remote != "origin" || f.Base != "main" || !f.Draft || res.Updated || res.PR.Number != 7 {
		t.Fatalf("after the submit: %s %+v, result %+v", got.Task.Status, f, res)
	}
	comments, err := x.e.Store.Comments(got)
	if err != nil || len(comments) != 1 || comments[0].Text != "submitted: opened pull request #7 (https://github.com/o/r/pull/7) at "+tip1[:12] {
		t.Fatalf("comments %+v %v", comments, err)
	}

	x.git.tips["lazy/feature"] = tip2
	res, err = x.sv.Submit(ctx, x.sn.Task.Slug, SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := x.git.pushes[1]; !slices.Contains(p, "--force-with-lease=refs/heads/lazy/feature:"+tip1) {
		t.Fatalf("the second push %q carries no lease on the commit pushed first", p)
	}
	if got := x.load(t); !res.Updated || got.Task.Forge.HeadSHA != tip2 || got.Task.Forge.Number != 7 {
		t.Fatalf("the second submit: updated %v, %+v", res.Updated, got.Task.Forge)
	}
}

// A push that fails (nothing left the machine) puts the record back as
// it was before the submit, and no pull request is opened.
func TestAFailedPushPutsTheRecordBack(t *testing.T) {
	x := newFixture(t)
	x.git.pushErr = &gitcli.Error{Args: []string{"push"}, Stderr: "fatal: unable to access: Could not resolve host: github.com", Err: errors.New("exit status 128")}
	_, err := x.sv.Submit(context.Background(), x.sn.Task.Slug, SubmitOptions{})
	if err == nil || !strings.Contains(err.Error(), "could not reach remote origin") || !strings.Contains(err.Error(), "the task is blocked again, as before the submit") {
		t.Fatalf("a submit whose push failed: %v", err)
	}
	got := x.load(t)
	if got.Task.Status != machine.Blocked || got.Task.Forge != nil || len(x.fg.opened) != 0 {
		t.Fatalf("after a failed push: %s %+v, opened %+v", got.Task.Status, got.Task.Forge, x.fg.opened)
	}
	hist, err := x.e.Store.History(got)
	if err != nil || hist[len(hist)-1].Op != "submit-undone" {
		t.Fatalf("history %+v %v", hist, err)
	}
}

// What cannot be submitted is refused before anything is recorded or
// pushed: uncommitted changes in the worktree, a forge that is not ready,
// a subtask whose parent's branch is not on the remote.
func TestSubmitRefusesBeforeRecording(t *testing.T) {
	for _, c := range []struct {
		name, want string
		set        func(*fixture)
	}{
		{"dirty", "has uncommitted changes", func(x *fixture) { x.git.dirty = true }},
		{"forge not ready", "nothing was pushed: gh is not logged in", func(x *fixture) { x.fg.notReady = errors.New("gh is not logged in") }},
		{"no such remote", `the repository has no remote "upstream"`, func(x *fixture) {}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newFixture(t)
			c.set(x)
			opts := SubmitOptions{}
			if c.name == "no such remote" {
				opts.Remote = "upstream"
			}
			before := x.load(t)
			_, err := x.sv.Submit(context.Background(), x.sn.Task.Slug, opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("submit: %v, want %q", err, c.want)
			}
			if after := x.load(t); after.Commit != before.Commit || len(x.git.pushes) != 0 {
				t.Fatalf("a refused submit changed the record or pushed: %v", x.git.pushes)
			}
		})
	}
}

// A remote named like one of git's options (from --remote, or from a
// record the store would refuse to load) never reaches git: it is
// refused before git is asked anything.
func TestARemoteThatIsAnOptionNeverReachesGit(t *testing.T) {
	x := newFixture(t)
	_, err := x.sv.Submit(context.Background(), x.sn.Task.Slug, SubmitOptions{Remote: "--upload-pack=touch /tmp/owned"})
	if err == nil || !strings.Contains(err.Error(), "is not a remote name") {
		t.Fatalf("submit to an option: %v", err)
	}
	for _, c := range x.git.gitCalls {
		if strings.Contains(c, "upload-pack") {
			t.Fatalf("git was asked about the option: %v", x.git.gitCalls)
		}
	}
	if len(x.git.pushes) != 0 || len(x.configs) != 0 {
		t.Fatalf("pushed %v, opened a forge %v", x.git.pushes, x.configs)
	}
	if got := x.load(t); got.Task.Status != machine.Blocked || got.Task.Forge != nil {
		t.Fatalf("a refused submit recorded %s %+v", got.Task.Status, got.Task.Forge)
	}
}

// New feedback on a pull request is recorded as a feedback turn, marked
// delivered in the same commit; with fix set the task goes back to work
// on it, the feedback its next prompt. The same feedback is never
// delivered twice.
func TestForgeFeedbackIsRecordedThenLaunched(t *testing.T) {
	x := newFixture(t)
	ctx := context.Background()
	if _, err := x.sv.Submit(ctx, x.sn.Task.Slug, SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	pr := &forge.PR{Number: 7, URL: "https://github.com/o/r/pull/7", State: forge.StateOpen, HeadSHA: tip1,
		Comments: []forge.Comment{{ID: "review:1", Author: "amy", Body: "rename it", URL: "https://github.com/o/r/pull/7", Review: "changes_requested"}}}
	sn, err := x.sv.DeliverForgeFeedback(ctx, x.sn.Task.ID, pr, true)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Task.Status != machine.Working || !slices.Equal(x.launched, []string{x.sn.Task.ID}) || !sn.Task.Forge.WasDelivered("review:1") {
		t.Fatalf("after the feedback: %s, launched %v, forge %+v", sn.Task.Status, x.launched, sn.Task.Forge)
	}
	turns, err := x.e.Store.Turns(sn)
	if err != nil {
		t.Fatal(err)
	}
	last := turns[len(turns)-1]
	if last.Kind != "forge-feedback" || last.Actor != machine.System || !strings.Contains(last.Content, "Review (changes requested) by @amy") {
		t.Fatalf("the feedback turn: %+v", last)
	}
	var c proto.Command
	if err := proto.ForTask(x.e.Repo.LazyDir(), x.sn.Task.ID).Read(proto.CommandFile, &c); err != nil {
		t.Fatal(err)
	}
	if c.Kind != "unblock" || !strings.HasPrefix(c.Prompt, last.Content) || c.SyncFrom != "main" {
		t.Fatalf("command.json of the fix: %+v", c)
	}
	if again, err := x.sv.DeliverForgeFeedback(ctx, x.sn.Task.ID, pr, true); again != nil || err != nil || len(x.launched) != 1 {
		t.Fatalf("the same feedback again: %v %v, launched %v", again, err, x.launched)
	}
}

// An ended task's open pull request is closed with why and lazy's
// marker, and the record says so; a forge that refuses leaves the task
// ended, says to close it on the forge, and records that too.
func TestClosePRSaysWhatHappened(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		x := newFixture(t)
		ctx := context.Background()
		if _, err := x.sv.Submit(ctx, x.sn.Task.Slug, SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
		if refuse {
			x.fg.closeErr = errors.New("forbidden")
		}
		err := x.sv.ClosePR(ctx, x.load(t), "not wanted")
		if !slices.Equal(x.fg.closed, []string{"#7 lazy: not wanted\n\n" + forgeMarker}) {
			t.Fatalf("closed %q", x.fg.closed)
		}
		got := x.load(t)
		comments, cerr := x.e.Store.Comments(got)
		if cerr != nil {
			t.Fatal(cerr)
		}
		last := comments[len(comments)-1].Text
		if refuse {
			if err == nil || !strings.Contains(err.Error(), "is still open; close it on the forge") || got.Task.Forge.State != forge.StateOpen ||
				!strings.HasPrefix(last, "could not close pull request #7") {
				t.Fatalf("a refused close: %v, state %s, comment %q", err, got.Task.Forge.State, last)
			}
			continue
		}
		if err != nil || got.Task.Forge.State != forge.StateClosed || last != "closed pull request #7 (https://github.com/o/r/pull/7)" {
			t.Fatalf("close: %v, state %s, comment %q", err, got.Task.Forge.State, last)
		}
	}
}

// Without landing wired in, a task an interrupted accept holds in a
// local merge is refused, naming lazy doctor, and not changed.
func TestSubmitOfAStrandedMergeIsRefusedWithoutLanding(t *testing.T) {
	x := newFixture(t)
	ctx := context.Background()
	if _, _, err := x.e.Store.Update(ctx, x.sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Status = machine.Merging
		s.Task.Accept = &task.AcceptRecord{ID: "a1", Into: "main", IntoSHA: tip2, Host: "ops-test"}
		return &task.Op{Name: "test", Actor: machine.Human}, nil
	}); err != nil {
		t.Fatal(err)
	}
	before := x.load(t)
	if _, err := x.sv.Submit(ctx, x.sn.Task.Slug, SubmitOptions{}); err == nil || !strings.Contains(err.Error(), "recover it first with lazy doctor") {
		t.Fatalf("submit of a stranded merge: %v", err)
	}
	if after := x.load(t); after.Commit != before.Commit || len(x.git.pushes) != 0 {
		t.Fatal("a refused submit changed the record or pushed")
	}
}
