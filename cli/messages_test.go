package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/pool"
)

// goSyntax is what Go's fmt leaves in a message that printed a value
// instead of words: a slice, a map, a struct pointer, a bad verb.
var goSyntax = []string{"[]", "map[", "&{", "%!", "(s)"}

func checkNoGoSyntax(t *testing.T, what, text string) {
	t.Helper()
	for _, g := range goSyntax {
		if strings.Contains(text, g) {
			t.Errorf("%s shows %q: %q", what, g, text)
		}
	}
}

// TestSyncSummariesSayWhatMoved: push and pull say what moved in words,
// leaving out what did not happen, with no "(s)".
func TestSyncSummariesSayWhatMoved(t *testing.T) {
	for _, c := range []struct {
		rep        gitstore.SyncReport
		push, pull string
	}{
		{gitstore.SyncReport{Pushed: 18, PushedTasks: 9, NewOnRemote: 9},
			"9 tasks sent (new there)", "nothing new"},
		{gitstore.SyncReport{Pushed: 3, PushedTasks: 2, NewOnRemote: 1, UpToDate: 7},
			"2 tasks sent (1 new there, 1 updated); 7 tasks already up to date there", "nothing new; 7 tasks unchanged"},
		{gitstore.SyncReport{UpToDate: 1},
			"nothing to send; 1 task already up to date there", "nothing new; 1 task unchanged"},
		{gitstore.SyncReport{Pushed: 1},
			"1 task name sent, no task record changed", "nothing new"},
		{gitstore.SyncReport{Pushed: 1, PushedTasks: 1, Retries: 2, Merged: []string{"a"}, Created: []string{"b", "c"}},
			"1 task sent; the remote had moved, so lazy merged its records in first (twice): 2 new tasks, 1 merged (changed on both sides)",
			"2 new tasks, 1 merged (changed on both sides)"},
		{gitstore.SyncReport{FastForwarded: []string{"a"}, LocalAhead: 1, UpToDate: 3},
			"nothing to send; 3 tasks already up to date there", "1 updated; 3 tasks unchanged, 1 newer here (lazy push sends it)"},
		{gitstore.SyncReport{LocalAhead: 2},
			"nothing to send", "nothing new; 2 newer here (lazy push sends them)"},
	} {
		if got := pushSummary(&c.rep); got != c.push {
			t.Errorf("push of %+v:\n got %q\nwant %q", c.rep, got, c.push)
		}
		if got := pullSummary(&c.rep); got != c.pull {
			t.Errorf("pull of %+v:\n got %q\nwant %q", c.rep, got, c.pull)
		}
	}
}

// TestPoolWordsLabels: a runner's labels and agents are words, and no
// labels says so (never "labels []").
func TestPoolWordsLabels(t *testing.T) {
	now := time.Now()
	var b bytes.Buffer
	renderPool(&b, &poolView{Remote: "origin", Runners: []pool.Runner{
		{ID: "bare", Seen: now, MaxTasks: 1},
		{ID: "gpu-box", Labels: []string{"gpu", "linux"}, Agents: []string{"claude", "codex"}, Seen: now, MaxTasks: 2},
	}}, now)
	out := b.String()
	for _, want := range []string{"bare                 no labels  agents none  up to 1", "gpu-box              labels gpu, linux  agents claude and codex  up to 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("lazy pool lacks %q:\n%s", want, out)
		}
	}
	checkNoGoSyntax(t, "lazy pool", out)
}
