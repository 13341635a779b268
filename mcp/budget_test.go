package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/wire"
)

// A builder gives a task a budget over MCP; lazy_show reads it back;
// a negative one is refused with what to give instead.
func TestCreateWithABudget(t *testing.T) {
	d, _ := repoDispatcher(t, testrepo.New(t))
	ctx := context.Background()
	if _, err := d.Call(ctx, Caller{Actor: machine.Builder}, "lazy_create", json.RawMessage(`{"title":"costly","budget_usd":12.5}`)); err != nil {
		t.Fatal(err)
	}
	out, err := d.Call(ctx, Caller{Actor: machine.Builder}, "lazy_show", json.RawMessage(`{"task":"costly"}`))
	if err != nil || !strings.Contains(string(out), `"budget_usd":12.5`) {
		t.Fatalf("lazy_show: %s %v", out, err)
	}
	if _, err := d.Call(ctx, Caller{Actor: machine.Builder}, "lazy_create", json.RawMessage(`{"title":"bad","budget_usd":-1}`)); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("a negative budget: %v", err)
	}
	// The CLI's bound holds here too: a number JSON can carry is not
	// therefore a budget.
	for _, huge := range []string{"1e308", "1000000000001"} {
		_, err := d.Call(ctx, Caller{Actor: machine.Builder}, "lazy_create", json.RawMessage(`{"title":"huge","budget_usd":`+huge+`}`))
		if err == nil || !strings.Contains(err.Error(), "more than the largest budget lazy takes ($1000000000000)") || !strings.Contains(err.Error(), "nothing was created") {
			t.Fatalf("budget_usd %s: %v", huge, err)
		}
	}
	// 0 is a budget that allows no spend, not "none".
	if _, err := d.Call(ctx, Caller{Actor: machine.Builder}, "lazy_create", json.RawMessage(`{"title":"frozen","budget_usd":0}`)); err != nil {
		t.Fatal(err)
	}
	out, err = d.Call(ctx, Caller{Actor: machine.Builder}, "lazy_show", json.RawMessage(`{"task":"frozen"}`))
	if err != nil || !strings.Contains(string(out), `"budget_usd":0`) {
		t.Fatalf("lazy_show of a $0 budget: %s %v", out, err)
	}
	entries, _ := d.Store.List()
	if len(entries) != 2 {
		t.Fatalf("%d tasks: a refused create made one", len(entries))
	}
}

// repoDispatcher is a dispatcher over the real repository in dir, whose
// operations run as the caller asks (the daemon's hooks, minus launching).
func repoDispatcher(t *testing.T, dir string) (*Dispatcher, *gitstore.Store) {
	t.Helper()
	repo, err := gitrepo.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := gitstore.Open(repo, gitstore.WithHost("mcp-test"))
	return &Dispatcher{Store: store, Hooks: Hooks{Env: func(actor machine.Actor, caller string) (*wire.Env, error) {
		return wire.New(store, session.Env{Actor: actor, CallerTask: caller, RepoDir: filepath.Dir(repo.CommonDir)}), nil
	}}}, store
}
