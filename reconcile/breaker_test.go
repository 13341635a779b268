package reconcile

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// The tests in this file run the reconciler's auto-resume decision on
// its seams alone: the task store in memory, the lifecycle's resume
// faked (its circuit breaker, AutoResumeRefusal, the real one), and PATH
// emptied so that any git process a step would start fails the test.

const memSession = "5e55105e55105e55"

// fakeLifecycle is the real lifecycle's judgement of an auto-resume with
// the resume itself recorded instead of run (it would merge upstream in
// a worktree and launch a supervisor).
type fakeLifecycle struct {
	*lifecycle.Service // the breaker's judgement and the system's steps
	resumed            []string
	// refuse makes the resume refuse, as it does under the lock when
	// another process acted first.
	refuse func(id string)
}

func (l *fakeLifecycle) AutoResume(ctx context.Context, id string) (*task.Snapshot, error) {
	if l.refuse != nil {
		l.refuse(id)
		return nil, errors.New("auto-resume: refused under the lock")
	}
	l.resumed = append(l.resumed, id)
	sn, err := l.Env.Store.Load(id)
	if err != nil {
		return nil, err
	}
	sn.Task.Status = machine.Working
	return sn, nil
}

func (l *fakeLifecycle) ResumeAfterLimit(context.Context, string, time.Time) (*task.Snapshot, error) {
	return nil, errors.New("not in these tests")
}

// memReconciler is a reconciler of the system over a store in memory
// and a lazy directory of its own, with a launcher that must never run
// (the fake lifecycle resumes).
func memReconciler(t *testing.T) (*Reconciler, *fakeLifecycle) {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git, no agent CLI: nothing may need one
	env := &wire.Env{Env: session.Env{
		Store: memstore.New(memstore.WithHost("reconcile-test")),
		Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
		Actor: machine.System,
		Launch: func(id string) error {
			t.Errorf("launched %s: the fake lifecycle resumes", id)
			return nil
		},
	}}
	fl := &fakeLifecycle{Service: lifecycle.New(&env.Env, nil, nil)}
	return &Reconciler{Env: env, Lifecycle: fl}, fl
}

// interrupted makes a task interrupted after n interruptions in a row,
// on a session this machine started when ours.
func interrupted(t *testing.T, r *Reconciler, n int, ours bool) string {
	t.Helper()
	st := r.store()
	sn, err := st.Create(task.CreateSpec{Title: fmt.Sprintf("interrupted %d", n), TargetBranch: "main", Actor: machine.Human})
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []machine.Status{machine.Working, machine.Interrupted} {
		if _, _, err := st.Update(context.Background(), sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
			if s.Session == nil {
				s.Session = &task.Session{ID: memSession, Number: 1, Host: "reconcile-test", Agent: "exec", Turn: 1}
				s.Task.Sessions = 1
			}
			s.Task.Status = to
			s.Session.ConsecutiveInterruptions = n
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if ours {
		if err := r.Env.Sessions().Save(owned.Session{TaskID: sn.Task.ID, SessionID: memSession, Agent: "exec",
			Worktree: filepath.Join(r.Env.Repo.CommonDir, "wt", sn.Task.Slug), Branch: "lazy/" + sn.Task.Slug}); err != nil {
			t.Fatal(err)
		}
	}
	return sn.Task.ID
}

// An interrupted task of this machine is auto-resumed while the circuit
// breaker allows it, and left for a human once the interruptions in a
// row reach the limit, when auto-resume is off, when nothing can launch
// a turn, and when its session runs elsewhere.
func TestTheCircuitBreakerDecidesAutoResume(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		ours       bool
		noAuto     bool
		noLauncher bool
		resumed    bool
	}{
		{"first interruption", 1, true, false, false, true},
		{"one below the breaker", lifecycle.MaxConsecutiveInterruptions - 1, true, false, false, true},
		{"the breaker trips", lifecycle.MaxConsecutiveInterruptions, true, false, false, false},
		{"past the breaker", lifecycle.MaxConsecutiveInterruptions + 2, true, false, false, false},
		{"lazy.autoResume false", 1, true, true, false, false},
		{"no launcher", 1, true, false, true, false},
		{"another machine's session", 1, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, fl := memReconciler(t)
			id := interrupted(t, r, tc.n, tc.ours)
			r.NoAutoResume = tc.noAuto
			if tc.noLauncher {
				r.Env.Launch = nil
			}
			acts, err := r.sweepInterrupted(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.resumed {
				if len(acts) != 0 || len(fl.resumed) != 0 {
					t.Fatalf("resumed: %+v %v", acts, fl.resumed)
				}
				if sn, _ := r.store().Load(id); sn.Task.Status != machine.Interrupted {
					t.Fatalf("the task is %s", sn.Task.Status)
				}
				return
			}
			if len(fl.resumed) != 1 || fl.resumed[0] != id {
				t.Fatalf("resumed %v", fl.resumed)
			}
			want := Action{TaskID: id, From: machine.Interrupted, To: machine.Working, Why: "auto-resumed after an interruption"}
			if len(acts) != 1 || acts[0].TaskID != want.TaskID || acts[0].From != want.From || acts[0].To != want.To || acts[0].Why != want.Why {
				t.Fatalf("actions %+v, want %+v", acts, want)
			}
		})
	}
}

// The breaker's reasons, as a human reads them on the task.
func TestTheBreakerSaysWhyAHumanMustResume(t *testing.T) {
	r, fl := memReconciler(t)
	id := interrupted(t, r, lifecycle.MaxConsecutiveInterruptions, true)
	sn, err := r.store().Load(id)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("circuit breaker: %d consecutive interruptions; a human must resume or unblock it", lifecycle.MaxConsecutiveInterruptions)
	if why := fl.AutoResumeRefusal(sn); why != want {
		t.Fatalf("refusal %q, want %q", why, want)
	}
	other := interrupted(t, r, 1, false)
	if sn, _ := r.store().Load(other); fl.AutoResumeRefusal(sn) != "its session was not started on this machine" {
		t.Fatalf("another machine's session: %q", fl.AutoResumeRefusal(sn))
	}
}

// A resume refused under the lock because another process acted first
// is no error and no action; one refused for another reason is said.
func TestAResumeRefusedUnderTheLock(t *testing.T) {
	r, fl := memReconciler(t)
	id := interrupted(t, r, 1, true)
	fl.refuse = func(id string) {
		// another reconciler resumed it meanwhile
		if _, _, err := r.store().Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
			s.Task.Status = machine.Working
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if acts, err := r.resumer().autoResume(context.Background(), id); err != nil || len(acts) != 0 {
		t.Fatalf("acted first elsewhere: %+v %v", acts, err)
	}

	id = interrupted(t, r, 1, true)
	fl.refuse = func(string) {} // refused, though the breaker still allows it
	if acts, err := r.resumer().autoResume(context.Background(), id); err == nil || len(acts) != 0 {
		t.Fatalf("a refusal for another reason: %+v %v", acts, err)
	}
}
