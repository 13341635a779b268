package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/cost"
	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/testfakes/testrepo"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/session"
)

// These tests run the commands' handlers as gh tests its commands: each
// gets Options the test fills (streams of buffers, a store, a clock), no
// app and no parse, and the test reads what the handler wrote.

// testStreams are streams on buffers, with stdin reading in.
func testStreams(in string) (ioStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return ioStreams{in: strings.NewReader(in), out: &out, errOut: &errOut, getenv: func(string) string { return "" }}, &out, &errOut
}

func TestTextInputReadsTheFlagThenStdin(t *testing.T) {
	streams, _, _ := testStreams("from stdin\n\n")
	ti := textInput{io: streams, editor: func() string { t.Fatal("no editor on a pipe"); return "" }}
	flag := "from the flag"
	if got, _, err := ti.read(&flag, "comment", true); err != nil || got != "from the flag" {
		t.Errorf("-m: %q %v", got, err)
	}
	dash := "-"
	if got, _, err := ti.read(&dash, "comment", true); err != nil || got != "from stdin" {
		t.Errorf("-m -: %q %v", got, err)
	}
	streams.in = strings.NewReader(strings.Repeat("x", session.MaxText+1))
	ti.io = streams
	if _, _, err := ti.read(nil, "comment", true); err == nil || !strings.Contains(err.Error(), "comment on stdin is over") {
		t.Errorf("too long: %v", err)
	}
}

// With nothing piped and no terminal, a required text is a usage error
// that says how to give it; an optional one is empty.
func TestTextInputWithNothingToRead(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = null.Close() }()
	ti := textInput{io: ioStreams{in: null, out: null, errOut: null}, editor: func() string { t.Fatal("no editor off a terminal"); return "" }}
	if got, _, err := ti.read(nil, "reason", false); err != nil || got != "" {
		t.Errorf("optional: %q %v", got, err)
	}
	_, _, err = ti.read(nil, "feedback", true)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no feedback given: pass -m TEXT") {
		t.Errorf("required: %v", err)
	}
}

func TestSpawnerStartsNothingInATest(t *testing.T) {
	err := spawner{gitDir: t.TempDir(), noSpawn: true}.detached(nil, "housekeep", "--auto")
	if err == nil || !strings.HasPrefix(err.Error(), "lazy housekeep --auto: this run starts no lazy process") {
		t.Errorf("noSpawn: %v", err)
	}
}

func TestSyncReportPrintsOnTheGivenStreams(t *testing.T) {
	streams, out, errOut := testStreams("")
	o := syncOptions{io: streams}
	rep := &gitstore.SyncReport{Remote: "origin", Pushed: 3, PushedTasks: 3, NewOnRemote: 1, UpToDate: 2, Rejected: []string{"refs/lazy/tasks/x"}}
	if err := o.report("Pushed to", rep, false); err != nil {
		t.Fatal(err)
	}
	if want := "Pushed to origin: 3 tasks sent (1 new there, 2 updated); 2 tasks already up to date there\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if want := "lazy: the remote rejected refs/lazy/tasks/x\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	out.Reset()
	if err := o.report("Pulled from", &gitstore.SyncReport{Remote: "up"}, true); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["remote"] != "up" || back["created"] == nil {
		t.Errorf("--json: %v %s", err, out)
	}
}

// Pull and push name the remote they would use, or say why there is
// none, before they touch the store.
func TestPullAndPushPickTheRemote(t *testing.T) {
	dir := testrepo.New(t)
	gitDir := filepath.Join(dir, ".git")
	streams, _, _ := testStreams("")
	o := syncOptions{io: streams, gitDir: gitDir, repoDir: dir}
	ctx := context.Background()
	if err := (&PullCmd{}).run(ctx, o); err == nil || err.Error() != "this repository has no remote; add one with git remote add" {
		t.Errorf("pull with no remote: %v", err)
	}
	if err := (&PushCmd{Remote: "up"}).run(ctx, o); err == nil || !strings.Contains(err.Error(), `there is no remote named "up" (this repository has none)`) {
		t.Errorf("push to a missing remote: %v", err)
	}
	testrepo.Git(t, dir, "remote", "add", "a", "/nowhere/a")
	testrepo.Git(t, dir, "remote", "add", "b", "/nowhere/b")
	if got, err := defaultRemote(ctx, gitDir, ""); err == nil || !strings.Contains(err.Error(), "no origin and several remotes (a, b)") {
		t.Errorf("two remotes: %q %v", got, err)
	}
	if got, err := defaultRemote(ctx, gitDir, "b"); err != nil || got != "b" {
		t.Errorf("named b: %q %v", got, err)
	}
}

func TestNotifyListsOnTheGivenStreams(t *testing.T) {
	l := newLazy(t)
	streams, out, errOut := testStreams("")
	o := notifyOptions{io: streams, store: l.store(), dir: l.dir, now: time.Now}
	if err := (&NotifyCmd{Action: "list"}).run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "No notification targets: add one") || errOut.Len() != 0 {
		t.Errorf("no targets: %q %q", out, errOut)
	}
	testrepo.Git(t, l.dir, "config", "--add", "lazy.notify", "banana")
	out.Reset()
	err := (&NotifyCmd{Action: "list"}).run(context.Background(), o)
	var quiet silentExit
	if !errors.As(err, &quiet) || quiet.code != 1 || !strings.HasPrefix(out.String(), "No valid notification targets") || !strings.Contains(errOut.String(), "banana") {
		t.Errorf("a bad target: %v %q %q", err, out, errOut)
	}
}

// lazy.notify.command runs for a task an action newly parked for a
// human, in the directory Options name, with the task in its
// environment; never for one that needs nobody.
func TestNotifyCommandRunsForWhatNeedsAHuman(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte("[lazy \"notify\"]\n\tcommand = printf '%s' \\\"$LAZY_MESSAGE\\\" > \\\"$LAZY_TASK_SLUG\\\".tmp && mv \\\"$LAZY_TASK_SLUG\\\".tmp \\\"$LAZY_TASK_SLUG\\\".out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := gitrepo.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	streams, _, errOut := testStreams("")
	notifyOptions{io: streams, cfg: cfg, repoDir: dir}.command([]reconcile.Action{
		{TaskID: "1", Slug: "quiet", From: machine.Working, To: machine.Complete},
		{TaskID: "2", Slug: "stuck", From: machine.Working, To: machine.Interrupted},
	})
	want := "lazy: stuck is interrupted and needs you (lazy show stuck)"
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "stuck.out"))
		if err == nil {
			if string(b) != want {
				t.Errorf("message %q, want %q", b, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lazy.notify.command never wrote stuck.out (stderr %q)", errOut)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, "quiet.out")); err == nil {
		t.Error("lazy.notify.command ran for a task that needs nobody")
	}
}

// lazy cost checks its flags before it opens the store.
func TestCostChecksItsFlagsFirst(t *testing.T) {
	streams, _, _ := testStreams("")
	o := costOptions{io: streams, now: time.Now, store: func() (*gitstore.Store, error) {
		t.Fatal("the store was opened for bad flags")
		return nil, nil
	}}
	var ue usageError
	if err := (&CostCmd{By: "colour"}).run(o); !errors.As(err, &ue) {
		t.Errorf("--by colour: %v", err)
	}
	if err := (&CostCmd{By: "task", Since: "banana"}).run(o); !errors.As(err, &ue) {
		t.Errorf("--since banana: %v", err)
	}
}

// printCostJSON writes what printJSON would, each row on a line.
func TestPrintCostJSONIsTheReport(t *testing.T) {
	rep := cost.Report{By: cost.ByTask, Rows: []cost.Row{{Key: "a"}, {Key: "b <c>"}}}
	var got bytes.Buffer
	if err := printCostJSON(&got, rep); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(got.String(), "\n    {"); lines != 2 {
		t.Errorf("%d rows on lines of their own:\n%s", lines, got.String())
	}
	var back, want any
	var plain bytes.Buffer
	if err := (ioStreams{out: &plain}).printJSON(rep); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got.Bytes(), &back); err != nil {
		t.Fatalf("%v:\n%s", err, got.String())
	}
	_ = json.Unmarshal(plain.Bytes(), &want)
	if b1, _ := json.Marshal(back); string(b1) != string(mustJSON(t, want)) || !strings.Contains(got.String(), "b <c>") {
		t.Errorf("printCostJSON:\n%s\nprintJSON:\n%s", got.String(), plain.String())
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
