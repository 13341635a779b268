package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/marks"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/task"
)

func TestSettingsForgeSync(t *testing.T) {
	fs, err := testSettings(t, "", nil).forgeSync()
	if err != nil || fs.Interval != 0 || !fs.AutoDeliver || fs.AutoFix {
		t.Errorf("defaults: %+v %v", fs, err)
	}
	fs, err = testSettings(t, "[lazy \"forge\"]\n\tsyncInterval = 5m\n\tautoDeliver = false\n\tautoFix = true\n", nil).forgeSync()
	if err != nil || fs.Interval != 5*time.Minute || fs.AutoDeliver || !fs.AutoFix {
		t.Errorf("set: %+v %v", fs, err)
	}
	if _, err := testSettings(t, "[lazy \"forge\"]\n\tsyncInterval = soon\n", nil).forgeSync(); err == nil || !strings.Contains(err.Error(), "lazy.forge.syncInterval") {
		t.Errorf("bad interval: %v", err)
	}
}

// lazy logs of a task with no session says so; logSize is where the
// next turn's output begins, 0 for a task or a log that is not there.
func TestLogsOnTheGivenOptions(t *testing.T) {
	l := newLazy(t)
	tk := l.create("log me")
	store := l.store()
	streams, out, _ := testStreams("")
	o := logsOptions{io: streams, store: store, lazyDir: t.TempDir()}
	sn, err := store.Load(tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	err = (&LogsCmd{Task: tk.Slug}).run(context.Background(), o, sn)
	if err == nil || err.Error() != "log-me has not started, so there is no agent output yet; lazy start log-me" || out.Len() != 0 {
		t.Errorf("logs of a backlog task: %v %q", err, out)
	}
	if n := o.logSize(tk.Slug); n != 0 {
		t.Errorf("no log: size %d", n)
	}
	log := proto.ForTask(o.lazyDir, tk.ID).Path(proto.LogFile)
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := o.logSize(tk.Slug); n != 5 {
		t.Errorf("a 5-byte log: size %d", n)
	}
	if n := o.logSize("no-such-task"); n != 0 {
		t.Errorf("no such task: size %d", n)
	}
}

// The daemon's wait for a turn returns a settled task at once, and
// gives up on a working one at its timeout, having reconciled it.
func TestTurnPollWaitsOnTheStore(t *testing.T) {
	l := newLazy(t)
	tk := l.create("poll me")
	swept := 0
	p := turnPoll{store: l.store(), reconcile: func(_ context.Context, entries []task.Entry) bool {
		if len(entries) != 1 || entries[0].ID != tk.ID {
			t.Errorf("reconciled %+v", entries)
		}
		swept++
		return false
	}}
	if sn, err := p.wait(context.Background(), tk.ID, time.Minute); err != nil || sn.Task.Status != machine.Backlog || swept != 0 {
		t.Errorf("settled: %v %v, %d sweeps", sn, err, swept)
	}
	l.setStatus(tk.ID, machine.Working)
	_, err := p.wait(context.Background(), tk.ID, 250*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no answer within 250ms; poll-me stays working") || swept < 1 {
		t.Errorf("working: %v, %d sweeps", err, swept)
	}
	if err := liveToken(p.store)(link.Identity{Task: tk.ID, Session: "gone", Turn: 1}); err == nil {
		t.Error("a token of a session the task never had is live")
	}
}

// A live view lists what keep keeps, counts every status, and puts
// attempts under their group.
func TestLiveRowsKeepAndCount(t *testing.T) {
	l := newLazy(t)
	b := l.create("bee")
	l.create("ay")
	l.create("sea")
	l.setStatus(b.ID, machine.Working)
	entries, err := l.store().List()
	if err != nil {
		t.Fatal(err)
	}
	mk := &marks.Marks{LazyDir: t.TempDir(), Host: "test"}
	rows, counts := liveRows(mk, entries, func(machine.Status) bool { return true })
	var slugs []string
	for _, r := range rows {
		slugs = append(slugs, r.Slug)
	}
	if strings.Join(slugs, " ") != "ay bee sea" || counts[machine.Backlog] != 2 || counts[machine.Working] != 1 {
		t.Errorf("all: %v %v", slugs, counts)
	}
	rows, counts = liveRows(mk, entries, machine.Status.IsActive)
	if len(rows) != 1 || rows[0].Slug != "bee" || counts[machine.Backlog] != 2 {
		t.Errorf("active: %+v %v", rows, counts)
	}
	if got := poolLines(context.Background(), l.dir); got != nil {
		t.Errorf("pool lines with no pool fetched: %q", got)
	}
}
