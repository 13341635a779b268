package wire

import (
	"context"
	"errors"
	"github.com/lazyorch/lazy/attempts"
	"github.com/lazyorch/lazy/handoff"
	"github.com/lazyorch/lazy/landing"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// These tests hold "confinement is inherited, never lowered by an
// agent" (SECURITY.md): an agent (actor agent, its task proven by its
// token: Env.CallerTask) starts, tries and hands off work; the work runs
// at least as confined as the agent's own session, which this machine's
// session record says.

// needBwrap skips a test that starts a sandboxed session where bubblewrap
// cannot run, unless LAZY_REQUIRE_BWRAP says it must.
func needBwrap(t *testing.T) {
	t.Helper()
	if err := sandbox.Check(context.Background()); err != nil {
		if os.Getenv("LAZY_REQUIRE_BWRAP") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// asAgent is e as the agent of task caller, as the daemon builds it for
// a call carrying that agent's token.
func asAgent(e *Env, caller string) *Env {
	a := *e
	a.Actor, a.CallerTask = machine.Agent, caller
	return &a
}

// trueCmd is an exec agent's command that exists everywhere.
var trueCmd = []string{"/bin/true"}

// runningHere makes task id's record name a working session that this
// machine started as s says (agent, mode, sandbox), with its branch: the
// agent session an MCP token would belong to.
func runningHere(t *testing.T, e *Env, id string, s owned.Session) {
	t.Helper()
	sid, err := task.NewID()
	if err != nil {
		t.Fatal(err)
	}
	sn, _, err := e.Store.Update(context.Background(), id, func(sn *task.Snapshot) (*task.Op, error) {
		sn.Task.Sessions++
		sn.Session = &task.Session{ID: sid, Number: sn.Task.Sessions, Host: e.Store.Host(), Agent: s.Agent, Branch: "lazy/" + sn.Task.Slug}
		sn.Task.Status = machine.Working
		return &task.Op{Name: "test-start", Actor: machine.System}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	testrepo.Git(t, e.RepoDir, "branch", "lazy/"+sn.Task.Slug)
	s.TaskID, s.SessionID, s.Worktree, s.Branch = id, sid, t.TempDir(), "lazy/"+sn.Task.Slug
	if err := e.Sessions().Save(s); err != nil {
		t.Fatal(err)
	}
}

// parked moves task id to blocked, as the end of its turn would.
func parked(t *testing.T, e *Env, id string) {
	t.Helper()
	if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Status = machine.Blocked
		return &task.Op{Name: "test-park", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, e *Env, in lifecycle.CreateInput) *task.Snapshot {
	t.Helper()
	sn, err := e.Lifecycle().Create(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

// refusedUntouched checks that err refuses with want and that task id
// was left as it was: still in backlog, no session recorded here, and no
// supervisor launched.
func refusedUntouched(t *testing.T, e *Env, launched *[]string, id string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("not refused (want %q)", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("refusal %q lacks %q", err, w)
		}
	}
	sn, lerr := e.Store.Load(id)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if sn.Task.Status != machine.Backlog || sn.Session != nil {
		t.Fatalf("a refused start changed the task: %s, session %+v", sn.Task.Status, sn.Session)
	}
	if _, lerr := e.Sessions().Load(id); !errors.Is(lerr, owned.ErrNotOwned) {
		t.Fatalf("a refused start recorded a session here: %v", lerr)
	}
	if slices.Contains(*launched, id) {
		t.Fatal("a refused start launched a supervisor")
	}
}

// A sandboxed agent's subtask runs in at least its sandbox (network off,
// its hidden paths, its permission mode), though git config has the
// sandbox off; the agent may tighten it and may not loosen it in any
// dimension; a human may.
func TestAgentStartedWorkInheritsTheAgentsConfinement(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e, launched := attemptsRepo(t)
	ctx := context.Background()
	parent := create(t, e, lifecycle.CreateInput{Title: "parent"})
	boxed := &proto.Sandbox{Network: confine.NetworkOff, Hidden: []string{"/srv/keys"}}
	runningHere(t, e, parent.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd, PermissionMode: "default", Sandbox: boxed})
	ag := asAgent(e, parent.Task.ID)
	sub := create(t, ag, lifecycle.CreateInput{Title: "sub", Parent: parent.Task.ID})
	// What lazy.sandbox off and lazy.claude.permissionMode acceptEdits
	// give a start.
	config := session.StartInput{Agent: "exec", ExecCommand: trueCmd, PermissionMode: "acceptEdits", SandboxIfAsked: &proto.Sandbox{Network: "on"}}
	for _, req := range []confine.Request{
		{Sandbox: "off"},
		{Network: "on"},
		{Network: "evil.example"},
		{PermissionMode: "bypassPermissions"},
	} {
		in := config
		in.Request = req
		_, err := ag.Lifecycle().Start(ctx, sub.Task.ID, in)
		refusedUntouched(t, e, launched, sub.Task.ID, err, "start sub", "less confined", "only a human loosens", "nothing was started")
	}
	// The human's explicit --sandbox off does not come through an agent.
	in := config
	in.SandboxExplicit = true
	if _, err := ag.Lifecycle().Start(ctx, sub.Task.ID, in); err != nil {
		t.Fatal(err)
	}
	local, err := e.Sessions().Load(sub.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if local.Sandbox == nil || local.Sandbox.Network != confine.NetworkOff || !slices.Contains(local.Sandbox.Hidden, "/srv/keys") || local.PermissionMode != "default" {
		t.Fatalf("the subtask's session is %+v (sandbox %+v), want the agent's sandbox and mode", local, local.Sandbox)
	}
	var cmd proto.Command
	if err := proto.ForTask(e.Repo.LazyDir(), sub.Task.ID).Read(proto.CommandFile, &cmd); err != nil {
		t.Fatal(err)
	}
	if cmd.Sandbox == nil || cmd.Sandbox.Network != confine.NetworkOff || cmd.PermissionMode != "default" {
		t.Fatalf("the turn's command runs %+v in mode %q", cmd.Sandbox, cmd.PermissionMode)
	}
	snSub, _ := e.Store.Load(sub.Task.ID)
	if p := e.Permissions(ctx, snSub, config); p == nil || p.Work.Posture != "sandboxed" || p.Network != "off" {
		t.Fatalf("lazy show's permissions: %+v", p)
	}

	// Tighter is granted: an allowlist becomes off, bypass becomes plan.
	tight := create(t, ag, lifecycle.CreateInput{Title: "tight", Parent: parent.Task.ID})
	in = config
	in.Request = confine.Request{PermissionMode: "plan"}
	if _, err := ag.Lifecycle().Start(ctx, tight.Task.ID, in); err != nil {
		t.Fatal(err)
	}
	if l, _ := e.Sessions().Load(tight.Task.ID); l.PermissionMode != "plan" || l.Sandbox == nil {
		t.Fatalf("a tighter mode: %+v", l)
	}

	// The asking agent's session holds what it starts even off its own
	// subtree (MCP's scope never lets it, and this does not rely on it).
	top := create(t, e, lifecycle.CreateInput{Title: "top level"})
	if _, err := ag.Lifecycle().Start(ctx, top.Task.ID, config); err != nil {
		t.Fatal(err)
	}
	if l, _ := e.Sessions().Load(top.Task.ID); l.Sandbox == nil || l.Sandbox.Network != confine.NetworkOff {
		t.Fatalf("work the agent started outside its subtree runs %+v", l.Sandbox)
	}

	// A human starting a subtask inherits the sandbox too, and may
	// loosen it, explicitly.
	inherit := create(t, e, lifecycle.CreateInput{Title: "human inherits", Parent: parent.Task.ID})
	if _, err := e.Lifecycle().Start(ctx, inherit.Task.ID, config); err != nil {
		t.Fatal(err)
	}
	if l, _ := e.Sessions().Load(inherit.Task.ID); l.Sandbox == nil || l.Sandbox.Network != confine.NetworkOff {
		t.Fatalf("a human's start did not inherit the parent's sandbox: %+v", l.Sandbox)
	}
	loose := create(t, e, lifecycle.CreateInput{Title: "human loosens", Parent: parent.Task.ID})
	in = config
	in.SandboxExplicit = true // lazy start --sandbox off
	if _, err := e.Lifecycle().Start(ctx, loose.Task.ID, in); err != nil {
		t.Fatal(err)
	}
	if l, _ := e.Sessions().Load(loose.Task.ID); l.Sandbox != nil {
		t.Fatalf("lazy start --sandbox off by a human: %+v", l.Sandbox)
	}
	// ... and the agent cannot give that looser session a turn; the
	// human can.
	parked(t, e, loose.Task.ID)
	_, err = ag.Lifecycle().Unblock(ctx, loose.Task.ID, "write ~/.bashrc for me", lifecycle.Decisions{})
	if err == nil || !strings.Contains(err.Error(), "less confined than the asking agent's own") || !strings.Contains(err.Error(), "lazy unblock human-loosens") {
		t.Fatalf("an agent unblocked a looser session: %v", err)
	}
	for name, call := range map[string]func() (*task.Snapshot, error){
		"ask":  func() (*task.Snapshot, error) { return ag.Conversation().Ask(ctx, loose.Task.ID, "what is in ~/.ssh?") },
		"sync": func() (*task.Snapshot, error) { return ag.Conversation().Sync(ctx, loose.Task.ID) },
	} {
		if _, err := call(); err == nil || !strings.Contains(err.Error(), "less confined") {
			t.Fatalf("an agent's %s of a looser session: %v", name, err)
		}
	}
	if sn, _ := e.Store.Load(loose.Task.ID); sn.Task.Status != machine.Blocked {
		t.Fatalf("a refused agent turn moved the task to %s", sn.Task.Status)
	}
	if _, err := e.Lifecycle().Unblock(ctx, loose.Task.ID, "carry on", lifecycle.Decisions{}); err != nil {
		t.Fatalf("the human's unblock: %v", err)
	}
}

// Without the sandbox, an agent held to its CLI's permissions (Claude's
// allow-list) cannot start the exec agent, which runs any command as the
// user; asking for the sandbox makes the same start confined, and so
// allowed.
func TestAnAgentCannotStartAnyCommandOutsideTheSandbox(t *testing.T) {
	t.Parallel()
	e, launched := attemptsRepo(t)
	ctx := context.Background()
	parent := create(t, e, lifecycle.CreateInput{Title: "claude parent"})
	runningHere(t, e, parent.Task.ID, owned.Session{Agent: "claude"})
	ag := asAgent(e, parent.Task.ID)
	sub := create(t, ag, lifecycle.CreateInput{Title: "escape", Parent: parent.Task.ID})
	_, err := ag.Lifecycle().Start(ctx, sub.Task.ID, session.StartInput{Agent: "exec", ExecCommand: []string{"/bin/sh", "-c", "echo pwned > ~/.bashrc"}})
	refusedUntouched(t, e, launched, sub.Task.ID, err, "any command", "only a human loosens")
	needBwrap(t)
	if _, err := ag.Lifecycle().Start(ctx, sub.Task.ID, session.StartInput{Agent: "exec", ExecCommand: trueCmd, Request: confine.Request{Sandbox: "on"}}); err != nil {
		t.Fatalf("the same command, sandboxed: %v", err)
	}
	if l, _ := e.Sessions().Load(sub.Task.ID); l.Sandbox == nil {
		t.Fatal("sandbox: on did not sandbox the session")
	}
	// An exec agent's own subtasks may run exec: nothing is loosened.
	execParent := create(t, e, lifecycle.CreateInput{Title: "exec parent"})
	runningHere(t, e, execParent.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd})
	sub2 := create(t, asAgent(e, execParent.Task.ID), lifecycle.CreateInput{Title: "exec child", Parent: execParent.Task.ID})
	if _, err := asAgent(e, execParent.Task.ID).Lifecycle().Start(ctx, sub2.Task.ID, session.StartInput{Agent: "exec", ExecCommand: trueCmd}); err != nil {
		t.Fatal(err)
	}
}

// Where the sandbox cannot run (no bwrap on PATH), a sandboxed agent's
// work is refused with the reason, never run unconfined: a start, its
// attempts, and a gate run for its task.
func TestSandboxThatCannotRunRefusesTheWork(t *testing.T) {
	e, launched := attemptsRepo(t)
	ctx := context.Background()
	parent := create(t, e, lifecycle.CreateInput{Title: "parent"})
	runningHere(t, e, parent.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd, Sandbox: &proto.Sandbox{Network: "on"}})
	ag := asAgent(e, parent.Task.ID)
	sub := create(t, ag, lifecycle.CreateInput{Title: "sub", Parent: parent.Task.ID})
	bin := t.TempDir()
	git, err := lookBin("git")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(git, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	_, err = ag.Lifecycle().Start(ctx, sub.Task.ID, session.StartInput{Agent: "exec", ExecCommand: trueCmd})
	refusedUntouched(t, e, launched, sub.Task.ID, err, "bwrap", "nothing was started")
	_, err = ag.Attempts().Start(ctx, sub.Task.ID, attempts.Input{N: 2, Base: session.StartInput{Agent: "exec", ExecCommand: trueCmd}})
	refusedUntouched(t, e, launched, sub.Task.ID, err, "bwrap", "nothing was started")
	if sn, _ := e.Store.Load(sub.Task.ID); sn.Task.IsAttemptGroup() {
		t.Fatal("refused attempts recorded the group")
	}
	psn, _ := e.Store.Load(parent.Task.ID)
	if _, err := e.GateSandbox(ctx, psn, nil); err == nil || !strings.Contains(err.Error(), "bwrap") {
		t.Fatalf("the gate of a sandboxed task without bwrap: %v", err)
	}
	// An agent whose session this machine has no record of is not
	// taken for an unconfined one.
	stranger := asAgent(e, "0123456789abcdef")
	_, err = stranger.Lifecycle().Start(ctx, sub.Task.ID, session.StartInput{Agent: "exec", ExecCommand: trueCmd})
	refusedUntouched(t, e, launched, sub.Task.ID, err, "unknown here")
}

// lookBin finds a binary as the test starts (before PATH is narrowed).
func lookBin(name string) (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// Attempts an agent starts and a handoff it asks for inherit its
// confinement as a start does; asking for less refuses before anything
// is recorded.
func TestAgentAttemptsAndHandoffInherit(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e, launched := attemptsRepo(t)
	ctx := context.Background()
	parent := create(t, e, lifecycle.CreateInput{Title: "parent"})
	runningHere(t, e, parent.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd, Sandbox: &proto.Sandbox{Network: confine.NetworkOff}})
	ag := asAgent(e, parent.Task.ID)
	sub := create(t, ag, lifecycle.CreateInput{Title: "tried twice", Parent: parent.Task.ID})
	base := session.StartInput{Agent: "exec", ExecCommand: trueCmd}
	loose := base
	loose.Request = confine.Request{Network: "on"}
	_, err := ag.Attempts().Start(ctx, sub.Task.ID, attempts.Input{N: 2, Base: loose})
	refusedUntouched(t, e, launched, sub.Task.ID, err, "less confined")
	res, err := ag.Attempts().Start(ctx, sub.Task.ID, attempts.Input{N: 2, Base: base})
	if err != nil || len(res.Started) != 2 {
		t.Fatalf("attempts: %+v, %v", res, err)
	}
	for _, a := range res.Started {
		if l, _ := e.Sessions().Load(a.Task.ID); l.Sandbox == nil || l.Sandbox.Network != confine.NetworkOff {
			t.Fatalf("attempt %s runs %+v", a.Task.Slug, l.Sandbox)
		}
	}
	a1 := res.Started[0].Task.ID
	parked(t, e, a1)
	_, err = ag.Handoff().HandOff(ctx, a1, handoff.Input{StartInput: session.StartInput{Agent: "exec", ExecCommand: trueCmd, Request: confine.Request{Sandbox: "off"}}})
	if err == nil || !strings.Contains(err.Error(), "hand off") || !strings.Contains(err.Error(), "only a human loosens") {
		t.Fatalf("an agent's handoff out of the sandbox: %v", err)
	}
	before, _ := e.Sessions().Load(a1)
	if _, err := ag.Handoff().HandOff(ctx, a1, handoff.Input{StartInput: session.StartInput{Agent: "exec", ExecCommand: trueCmd}}); err != nil {
		t.Fatal(err)
	}
	after, _ := e.Sessions().Load(a1)
	if after.SessionID == before.SessionID || after.Sandbox == nil || after.Sandbox.Network != confine.NetworkOff {
		t.Fatalf("the handed-off session runs %+v", after.Sandbox)
	}
}

// An agent cannot escape its budget through subtasks: a subtask's own
// budget may not exceed what the parent has left (a human's may), and a
// subtask with none, or its attempts, still turn under the parent's.
func TestAgentCannotEscapeItsBudgetThroughSubtasks(t *testing.T) {
	t.Parallel()
	e, launched := attemptsRepo(t)
	ctx := context.Background()
	parent := create(t, e, lifecycle.CreateInput{Title: "parent", BudgetUSD: ptr(1.0)})
	runningHere(t, e, parent.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd})
	spend(t, e, parent.Task.ID, 0.9)
	ag := asAgent(e, parent.Task.ID)
	if _, err := ag.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "rich", Parent: parent.Task.ID, BudgetUSD: ptr(5.0)}); err == nil || !strings.Contains(err.Error(), "more than it has left ($0.10") {
		t.Fatalf("an agent's subtask with more budget than its parent has left: %v", err)
	}
	if _, err := ag.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "huge", Parent: parent.Task.ID, BudgetUSD: ptr(1e308)}); err == nil {
		t.Fatal("an agent's subtask with a budget of 1e308 was created")
	}
	if _, err := e.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "human's", Parent: parent.Task.ID, BudgetUSD: ptr(5.0)}); err != nil {
		t.Fatalf("a human may give any budget: %v", err)
	}
	small := create(t, ag, lifecycle.CreateInput{Title: "small", Parent: parent.Task.ID, BudgetUSD: ptr(0.05)})
	none := create(t, ag, lifecycle.CreateInput{Title: "none", Parent: parent.Task.ID})
	maxBudget := func(id string) float64 {
		t.Helper()
		var cmd proto.Command
		if err := proto.ForTask(e.Repo.LazyDir(), id).Read(proto.CommandFile, &cmd); err != nil {
			t.Fatal(err)
		}
		return cmd.MaxBudgetUSD
	}
	for _, c := range []struct {
		id   string
		want float64
	}{{small.Task.ID, 0.05}, {none.Task.ID, 0.1}} {
		if _, err := ag.Lifecycle().Start(ctx, c.id, session.StartInput{Agent: "exec", ExecCommand: trueCmd}); err != nil {
			t.Fatal(err)
		}
		if got := maxBudget(c.id); math.Abs(got-c.want) > 1e-9 {
			t.Fatalf("the turn may spend $%v, want $%v", got, c.want)
		}
	}
	tried := create(t, ag, lifecycle.CreateInput{Title: "tried", Parent: parent.Task.ID})
	res, err := ag.Attempts().Start(ctx, tried.Task.ID, attempts.Input{N: 2, Base: session.StartInput{Agent: "exec", ExecCommand: trueCmd}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Started {
		if got := maxBudget(a.Task.ID); got <= 0 || got > 0.1+1e-9 {
			t.Fatalf("attempt %s may spend $%v, more than the parent has left", a.Task.Slug, got)
		}
	}
	// Once the parent's budget is spent, nothing under it starts.
	spend(t, e, none.Task.ID, 0.1)
	last := create(t, ag, lifecycle.CreateInput{Title: "last", Parent: parent.Task.ID})
	_, err = ag.Lifecycle().Start(ctx, last.Task.ID, session.StartInput{Agent: "exec", ExecCommand: trueCmd})
	refusedUntouched(t, e, launched, last.Task.ID, err, "budget is spent")
	if _, err := ag.Lifecycle().Create(ctx, lifecycle.CreateInput{Title: "more", Parent: parent.Task.ID, BudgetUSD: ptr(0.01)}); err == nil || !strings.Contains(err.Error(), "is spent") {
		t.Fatalf("a budget under a spent parent: %v", err)
	}
}

// The gate run on a sandboxed task's tree runs in at least the task's
// sandbox (and the asking agent's), whatever lazy.sandbox says.
func TestTheGateOfASandboxedTaskIsConfined(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e, _ := attemptsRepo(t)
	ctx := context.Background()
	parent := create(t, e, lifecycle.CreateInput{Title: "parent"})
	runningHere(t, e, parent.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd, Sandbox: &proto.Sandbox{Network: confine.NetworkOff, Hidden: []string{"/srv/a"}}})
	sub := create(t, e, lifecycle.CreateInput{Title: "sub", Parent: parent.Task.ID})
	runningHere(t, e, sub.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd, Sandbox: &proto.Sandbox{Network: confine.NetworkOn, Hidden: []string{"/srv/b"}}})
	sn, _ := e.Store.Load(sub.Task.ID)
	sb, err := e.GateSandbox(ctx, sn, nil)
	if err != nil || sb == nil || sb.Network != confine.NetworkOn || !slices.Equal(sb.Hidden, []string{"/srv/b"}) {
		t.Fatalf("a human's accept: the gate runs %+v, %v", sb, err)
	}
	sb, err = asAgent(e, parent.Task.ID).GateSandbox(ctx, sn, nil)
	if err != nil || sb == nil || sb.Network != confine.NetworkOff || !slices.Equal(sb.Hidden, []string{"/srv/b", "/srv/a"}) {
		t.Fatalf("the parent agent's accept: the gate runs %+v, %v", sb, err)
	}
	plain := create(t, e, lifecycle.CreateInput{Title: "plain"})
	runningHere(t, e, plain.Task.ID, owned.Session{Agent: "exec", Exec: trueCmd})
	psn, _ := e.Store.Load(plain.Task.ID)
	if sb, err := e.GateSandbox(ctx, psn, nil); err != nil || sb != nil {
		t.Fatalf("an unsandboxed task's gate, lazy.sandbox off: %+v, %v", sb, err)
	}
}

// The gate on a sandboxed task's tree runs in the task's sandbox though
// lazy.sandbox is off, whoever accepts: a gate command that writes the
// main checkout fails there (the same gate passes for a task that runs
// unconfined).
func TestTheGateRunsInTheTasksSandbox(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	ctx := context.Background()
	for _, boxed := range []bool{false, true} {
		r := newGateRepo(t)
		escaped := filepath.Join(r.dir, "escaped-by-the-gate")
		r.config(t, "lazy.gate", "touch "+escaped)
		sn := r.task(t, "gated", map[string]string{"feature.txt": "ok\n"})
		if boxed {
			local, err := r.e.Sessions().Load(sn.Task.ID)
			if err != nil {
				t.Fatal(err)
			}
			local.Sandbox = &proto.Sandbox{Network: confine.NetworkOff}
			if err := r.e.Sessions().Save(local); err != nil {
				t.Fatal(err)
			}
		}
		_, err := r.e.Landing().Accept(ctx, sn.Task.ID, nil, landing.AcceptOptions{})
		_, statErr := os.Stat(escaped)
		switch {
		case boxed && (err == nil || statErr == nil):
			t.Fatalf("the sandboxed task's gate wrote the main checkout: accept %v, file %v", err, statErr)
		case !boxed && (err != nil || statErr != nil):
			t.Fatalf("the unconfined task's gate: accept %v, file %v", err, statErr)
		}
	}
}

// A session this machine takes over (lazy start --take-over, a pool
// runner) is confined as a start here would be: a task created with
// --sandbox runs sandboxed though lazy.sandbox is off on this machine.
func TestATakenOverTaskKeepsItsSandbox(t *testing.T) {
	t.Parallel()
	e, _ := attemptsRepo(t)
	ctx := context.Background()
	tk := create(t, e, lifecycle.CreateInput{Title: "asks for a sandbox", Sandbox: true})
	walk(t, e, tk.Task.ID, machine.Working, machine.Blocked) // a session another machine ran
	testrepo.Git(t, e.RepoDir, "branch", "lazy/"+tk.Task.Slug)
	if _, err := e.Lifecycle().TakeOver(ctx, tk.Task.ID, session.StartInput{Agent: "exec", ExecCommand: trueCmd, SandboxIfAsked: &proto.Sandbox{Network: "on"}}); err != nil {
		t.Fatal(err)
	}
	if l, err := e.Sessions().Load(tk.Task.ID); err != nil || l.Sandbox == nil {
		t.Fatalf("the taken-over session runs %+v (%v), want the sandbox its task asks for", l.Sandbox, err)
	}
}
