package conversation

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// The tests in this file run conversation on its seams alone: the task
// store in memory, git's side of a pairing's worktree faked (fakeGit),
// the supervisor's launch recorded (launches), and PATH emptied so that
// any git process a step would start fails the test.

// fakeGit is the Worktree of a pairing: HEAD at head, and what the
// pairing committed and changed since.
type fakeGit struct {
	head    string
	commits []string
	changed []string
}

func (g *fakeGit) Head(context.Context, string) (string, error) { return g.head, nil }

func (g *fakeGit) Commits(_ context.Context, _, base string) ([]string, error) {
	if base != g.head {
		return nil, fmt.Errorf("commits since %s, not since the pairing began", base)
	}
	return g.commits, nil
}

func (g *fakeGit) ChangedFiles(_ context.Context, _, base string) ([]string, error) {
	if base != g.head {
		return nil, fmt.Errorf("files changed since %s, not since the pairing began", base)
	}
	return g.changed, nil
}

// launches records the supervisors launched, and what the task's record
// said at that moment.
type launches struct {
	mu   sync.Mutex
	ids  []string
	seen []*task.Snapshot
	st   task.Store
}

func (l *launches) launch(id string) error {
	sn, err := l.st.Load(id)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, id)
	l.seen = append(l.seen, sn)
	return nil
}

// seamEnv is conversation over a store in memory and a lazy directory of
// its own, with git faked, a launcher, and no git on PATH.
func seamEnv(t *testing.T) (*session.Env, *Service, *fakeGit, *launches) {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git, no agent CLI: nothing may need one
	st := memstore.New(memstore.WithHost("ops-test"))
	l := &launches{st: st}
	e := &session.Env{Store: st, Repo: &gitrepo.Location{CommonDir: t.TempDir()}, Actor: machine.Human, Launch: l.launch}
	g := &fakeGit{head: "0123456789abcdef0123456789abcdef01234567"}
	return e, &Service{Env: e, Worktrees: g}, g, l
}

// parked is a task this machine started with the exec agent, parked
// blocked in a worktree of its own, merging into release.
func parked(t *testing.T, e *session.Env, title string, allowed ...string) *task.Snapshot {
	t.Helper()
	ctx := context.Background()
	sn, err := e.Store.Create(task.CreateSpec{Title: title, TargetBranch: "release", AllowedPaths: allowed, Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	wt := t.TempDir()
	if err := e.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: sid, Agent: "exec", Exec: []string{"/bin/true"}, Worktree: wt, Branch: "lazy/" + sn.Task.Slug}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []machine.Status{machine.Working, machine.Blocked} {
		sn, _, err = e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			s.Session = &task.Session{ID: sid, Number: 1, Host: "ops-test", Agent: "exec", ExecCommand: []string{"/bin/true"}, Worktree: wt, Branch: "lazy/" + sn.Task.Slug}
			s.Task.Sessions, s.Task.Status = 1, st
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return sn
}

// command reads the command.json a launch wrote for task id.
func command(t *testing.T, e *session.Env, id string) proto.Command {
	t.Helper()
	var c proto.Command
	if err := proto.ForTask(e.Repo.LazyDir(), id).Read(proto.CommandFile, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func turns(t *testing.T, e *session.Env, id string) []task.Turn {
	t.Helper()
	sn, err := e.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := e.Store.Turns(sn)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// An ask records the question as a pending turn and the task as working
// on an answer before the supervisor is launched, and the command asks
// the question alone, read-only work with nothing to prepare; the task
// cannot be asked again until it parks, and an empty question records
// nothing.
func TestAskRecordsTheQuestionThenLaunches(t *testing.T) {
	e, cv, _, l := seamEnv(t)
	ctx := context.Background()
	sn := parked(t, e, "asked")
	if _, err := cv.Ask(ctx, sn.Task.Slug, " \n"); err == nil || err.Error() != "ask needs a question (-m, stdin or $EDITOR)" || len(turns(t, e, sn.Task.ID)) != 0 || len(l.ids) != 0 {
		t.Fatalf("an empty question: %v, launches %v", err, l.ids)
	}
	got, err := cv.Ask(ctx, sn.Task.Slug, "why this way?")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.ids, []string{sn.Task.ID}) {
		t.Fatalf("launched %v, want the task once", l.ids)
	}
	at := l.seen[0]
	if at.Task.Status != machine.Working || at.Task.Substate != "agent:answering" || at.Session.TurnKind != "ask" || at.Session.Turn != got.Session.Turn {
		t.Fatalf("at launch the record was %s (%s), turn %d %q: the question must be recorded first", at.Task.Status, at.Task.Substate, at.Session.Turn, at.Session.TurnKind)
	}
	ts := turns(t, e, sn.Task.ID)
	if len(ts) != 1 || ts[0].Kind != "ask" || ts[0].Content != "why this way?" || ts[0].FeedbackDelivery != task.FeedbackPending || ts[0].Actor != machine.Human {
		t.Fatalf("the ask turn: %+v", ts)
	}
	if c := command(t, e, sn.Task.ID); c.Kind != "ask" || c.Prompt != "why this way?" || c.Prepare != nil || c.SyncFrom != "" || c.Seq != ts[0].Seq {
		t.Fatalf("command.json: %+v", c)
	}
	if _, err := cv.Ask(ctx, sn.Task.Slug, "and now?"); err == nil || !strings.Contains(err.Error(), "the task is working; ask works on blocked, conflict tasks") || len(l.ids) != 1 {
		t.Fatalf("an ask while it answers: %v, launches %v", err, l.ids)
	}
}

// A sync is a turn that merges the task's target (read from the task,
// asked of no git) into its branch, with no agent prompt of the human's.
func TestSyncMergesTheTargetAsATurn(t *testing.T) {
	e, cv, _, l := seamEnv(t)
	sn := parked(t, e, "synced")
	if _, err := cv.Sync(context.Background(), sn.Task.Slug); err != nil {
		t.Fatal(err)
	}
	if len(l.ids) != 1 || l.seen[0].Task.Status != machine.Working || l.seen[0].Task.Substate == "agent:answering" {
		t.Fatalf("launches %v: the sync must be recorded as a working turn first", l.ids)
	}
	if c := command(t, e, sn.Task.ID); c.Kind != "sync" || c.SyncFrom != "release" || c.Prompt != "[sync] merge upstream into the task branch" {
		t.Fatalf("command.json: %+v", c)
	}
}

// A pairing writes its lock file before the task enters pairing, and
// ends with the human's work as a turn of theirs: its commits and files,
// the files outside the allowed paths flagged, the task parked on them.
// A pairing whose task moved on meanwhile (the reconciler recovered it)
// records nothing and keeps the work.
func TestPairRecordsTheHumansWorkAndHoldsItToTheAllowedPaths(t *testing.T) {
	e, cv, g, l := seamEnv(t)
	ctx := context.Background()
	sn := parked(t, e, "paired", "src/**")
	pd := proto.ForTask(e.Repo.LazyDir(), sn.Task.ID)
	p, err := cv.BeginPair(ctx, sn.Task.Slug)
	if err != nil {
		t.Fatal(err)
	}
	var lock proto.Pairing
	if err := pd.Read(proto.PairingFile, &lock); err != nil || lock.PID != os.Getpid() || lock.Session != sn.Session.ID {
		t.Fatalf("the pairing lock: %+v %v", lock, err)
	}
	if p.Snapshot.Task.Status != machine.Pairing || p.StartSHA != g.head || p.Argv[0] == "" || len(l.ids) != 0 {
		t.Fatalf("pairing %+v (status %s), launches %v", p, p.Snapshot.Task.Status, l.ids)
	}
	g.commits, g.changed = []string{"abc1234 the fix"}, []string{"src/fix.go", "secrets.txt"}
	got, err := cv.EndPair(ctx, p, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got.Task.Status != machine.Conflict || !slices.Equal(got.Violations.Pending, []string{"secrets.txt"}) {
		t.Fatalf("after the pairing: %s, pending %v; a file outside src/** must be flagged", got.Task.Status, got.Violations.Pending)
	}
	ts := turns(t, e, sn.Task.ID)
	last := ts[len(ts)-1]
	if last.Kind != "pair" || last.Role != task.RoleHuman || !slices.Equal(last.Commits, g.commits) || !slices.Equal(last.ChangedFiles, g.changed) || last.ExitCode == nil || *last.ExitCode != 3 ||
		!strings.HasSuffix(last.Content, "; 1 commit; 2 files changed; the agent exited with code 3") {
		t.Fatalf("the pairing's turn: %+v", last)
	}
	if err := pd.Read(proto.PairingFile, &lock); err == nil {
		t.Fatal("the pairing lock outlived the pairing")
	}

	other := parked(t, e, "recovered")
	p, err = cv.BeginPair(ctx, other.Task.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Store.Update(ctx, other.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Status = machine.Blocked
		return &task.Op{Name: "stale-pairing", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
	before := len(turns(t, e, other.Task.ID))
	if _, err := cv.EndPair(ctx, p, 0); err == nil || !strings.Contains(err.Error(), "no longer pairing; the work in the worktree is kept") || len(turns(t, e, other.Task.ID)) != before {
		t.Fatalf("the end of a recovered pairing: %v", err)
	}
}

// A chat is read-only and holds the worktree: a second chat on the task
// waits for the first to end; its end is a turn that leaves the status
// as it was. A working task's agent is busy.
func TestChatHoldsTheWorktreeAndLeavesTheStatus(t *testing.T) {
	e, cv, _, l := seamEnv(t)
	ctx := context.Background()
	t.Setenv("SHELL", "/bin/test-shell")
	sn := parked(t, e, "chatted")
	c, err := cv.BeginChat(ctx, sn.Task.Slug)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Argv, []string{"/bin/test-shell"}) || c.Dir != sn.Session.Worktree || !slices.Contains(c.Env, "LAZY_READ_ONLY=1") || !slices.Contains(c.Env, "LAZY_CHAT=1") || c.Sandboxed {
		t.Fatalf("chat %+v", c)
	}
	if _, err := cv.BeginChat(ctx, sn.Task.Slug); err == nil || !strings.Contains(err.Error(), "a lazy chat (pid") {
		t.Fatalf("a second chat while one is open: %v", err)
	}
	got, err := cv.EndChat(ctx, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	ts := turns(t, e, sn.Task.ID)
	if got.Task.Status != machine.Blocked || len(ts) != 1 || ts[0].Kind != "chat" || !strings.HasSuffix(ts[0].Content, "(the agent exited with code 1)") || len(l.ids) != 0 {
		t.Fatalf("after the chat: %s, turns %+v, launches %v", got.Task.Status, ts, l.ids)
	}
	c, err = cv.BeginChat(ctx, sn.Task.Slug)
	if err != nil {
		t.Fatalf("a chat after the first ended: %v", err)
	}
	if _, err := cv.EndChat(ctx, c, 0); err != nil {
		t.Fatal(err)
	}

	if _, err := cv.Ask(ctx, sn.Task.Slug, "busy?"); err != nil {
		t.Fatal(err)
	}
	if _, err := cv.BeginChat(ctx, sn.Task.Slug); err == nil || !strings.Contains(err.Error(), "the task is working; its agent is busy") {
		t.Fatalf("a chat with a working agent: %v", err)
	}
}

// A journal entry is stamped with the actor and the session's turn, its
// items cleaned (blank ones dropped, control characters escaped), and it
// changes no status; one without a rationale, or with more items than a
// record holds, saves nothing.
func TestJournalEntriesAreCleanedAndBounded(t *testing.T) {
	e, cv, _, _ := seamEnv(t)
	ctx := context.Background()
	e.Actor = machine.Agent
	sn := parked(t, e, "journaled")
	if _, _, err := cv.Journal(ctx, sn.Task.Slug, JournalInput{Rationale: "  ", Decisions: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "needs a rationale") {
		t.Fatalf("no rationale: %v", err)
	}
	if _, _, err := cv.Journal(ctx, sn.Task.Slug, JournalInput{Rationale: "many", Deferrals: make([]string, 201)}); err != nil {
		t.Fatalf("201 blank items are dropped, not counted: %v", err)
	}
	many := slices.Repeat([]string{"d"}, 201)
	if _, _, err := cv.Journal(ctx, sn.Task.Slug, JournalInput{Rationale: "too many", Decisions: many}); err == nil || !strings.Contains(err.Error(), "at most 200 decisions and deferrals") {
		t.Fatalf("201 decisions: %v", err)
	}
	got, c, err := cv.Journal(ctx, sn.Task.Slug, JournalInput{Rationale: "chose the small fix", Decisions: []string{" keep the API ", "", "no \x1b[2Jclear"}, Deferrals: []string{"docs"}})
	if err != nil {
		t.Fatal(err)
	}
	j := c.Journal
	if j == nil || c.Actor != machine.Agent || c.Text != "chose the small fix" || j.Turn != sn.Session.Turn || !slices.Equal(j.Deferrals, []string{"docs"}) ||
		len(j.Decisions) != 2 || j.Decisions[0] != "keep the API" || strings.Contains(j.Decisions[1], "\x1b") {
		t.Fatalf("the entry: %+v %+v", c, j)
	}
	if got.Task.Status != machine.Blocked || got.Task.Comments != 2 {
		t.Fatalf("after two entries: %s with %d comments", got.Task.Status, got.Task.Comments)
	}
}
