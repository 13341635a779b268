package spending

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/memstore"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// The tests of this package run on the task store in memory, with the
// repository's git config a file the test writes (lazy reads it as git
// would) and PATH emptied, so that any git process a step would start
// fails the test.

// testEnv is the core as a process builds it, over a task store in
// memory and a lazy directory of its own, with the lifecycle beside it
// to create and edit tasks as a person would.
type testEnv struct {
	session.Env
	config [][2]string // git config, in the order it was set
}

// Spending is e's spending capability.
func (e *testEnv) Spending() *Service { return New(&e.Env) }

// Lifecycle is e's lifecycle (no landing, no forge above it).
func (e *testEnv) Lifecycle() *lifecycle.Service { return lifecycle.New(&e.Env, nil, nil) }

func env(t *testing.T) *testEnv {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // no git: nothing here may need one
	return &testEnv{Env: session.Env{
		Store: memstore.New(memstore.WithHost("ops-test")),
		Repo:  &gitrepo.Location{CommonDir: t.TempDir()},
		Actor: machine.Human,
	}}
}

// gitConfig does what git config does with args (KEY VALUE, --add KEY
// VALUE, --unset KEY) to the repository's config file, so the budgets
// and prices are read as lazy reads them.
func (e *testEnv) gitConfig(t *testing.T, args ...string) {
	t.Helper()
	switch {
	case len(args) == 2 && args[0] == "--unset":
		e.config = slices.DeleteFunc(e.config, func(kv [2]string) bool { return kv[0] == args[1] })
	case len(args) == 3 && args[0] == "--add":
		e.config = append(e.config, [2]string{args[1], args[2]})
	case len(args) == 2:
		e.config = slices.DeleteFunc(e.config, func(kv [2]string) bool { return kv[0] == args[0] })
		e.config = append(e.config, [2]string{args[0], args[1]})
	default:
		t.Fatalf("git config %q: the test's config knows KEY VALUE, --add KEY VALUE and --unset KEY", args)
	}
	var b strings.Builder
	for _, kv := range e.config {
		first, last := strings.Index(kv[0], "."), strings.LastIndex(kv[0], ".")
		if first < 0 {
			t.Fatalf("git config key %q has no section", kv[0])
		}
		if first == last {
			b.WriteString("[" + kv[0][:first] + "]\n")
		} else {
			b.WriteString("[" + kv[0][:first] + ` "` + kv[0][first+1:last] + `"]` + "\n")
		}
		v := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(kv[1])
		b.WriteString("\t" + kv[0][last+1:] + ` = "` + v + `"` + "\n")
	}
	if err := os.WriteFile(filepath.Join(e.Repo.CommonDir, "config"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// walk moves a task through statuses as the system would, giving it a
// session on the way, to reach states the CLI alone cannot reach yet.
func walk(t *testing.T, e *testEnv, id string, to ...machine.Status) {
	t.Helper()
	for _, st := range to {
		if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
			if s.Session == nil {
				s.Session = &task.Session{ID: "s1", Number: 1, Host: "ops-test"}
				s.Task.Sessions = 1
			}
			s.Task.Status = st
			return &task.Op{Name: "walk", Actor: machine.System}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// spend records usd as what task id's turns cost.
func spend(t *testing.T, e *testEnv, id string, usd float64) {
	t.Helper()
	if _, _, err := e.Store.Update(context.Background(), id, func(s *task.Snapshot) (*task.Op, error) {
		s.Task.Usage = &task.Usage{CostUSD: usd}
		return &task.Op{Name: "walk", Actor: machine.System}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
