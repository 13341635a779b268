package marks

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/task"
)

// daemonLike starts a process whose command line names "daemon", as a
// marker's writer must to be believed; it is killed and reaped when the
// test ends.
func daemonLike(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 600", "daemon")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func TestWaitsAndProgressBelieveOnlyALiveWriter(t *testing.T) {
	dir := t.TempDir()
	writer := daemonLike(t)
	w := &Marks{LazyDir: dir, PID: writer.Process.Pid}
	r := &Marks{LazyDir: dir} // a reader: lazy list, the web view
	const taskID, sub = "0123456789abcdef", "fedcba9876543210"

	res, err := w.SetProgress(taskID, "  building\r\n the  index ")
	if err != nil || res.Recorded != "building the index" {
		t.Fatalf("SetProgress: %+v %v", res, err)
	}
	if got := r.Progress(taskID); got != "building the index" {
		t.Fatalf("progress read back as %q", got)
	}
	done := w.StartWait(taskID, &task.Snapshot{Task: task.Task{ID: sub, Slug: "the-sub"}})
	if ws := r.Waits(taskID); len(ws) != 1 || ws[0].On != sub || ws[0].Slug != "the-sub" {
		t.Fatalf("waits while waiting: %+v", ws)
	}
	done(context.Canceled)
	if ws := r.Waits(taskID); len(ws) != 0 {
		t.Fatalf("waits after settling: %+v", ws)
	}
	ivs, err := Intervals(dir)
	if err != nil || len(ivs) != 1 || ivs[0].Outcome == nil || *ivs[0].Outcome != "canceled" || ivs[0].On != sub {
		t.Fatalf("intervals: %+v %v", ivs, err)
	}

	// The writer dies (a SIGKILLed daemon): its marker is disbelieved.
	_ = writer.Process.Kill()
	_ = writer.Wait()
	if got := r.Progress(taskID); got != "" {
		t.Fatalf("a dead writer's progress is still believed: %q", got)
	}
}

func TestNoTaskOrNoMarksRecordsNothing(t *testing.T) {
	dir := t.TempDir()
	sn := &task.Snapshot{Task: task.Task{ID: "fedcba9876543210"}}
	var none *Marks
	none.StartWait("0123456789abcdef", sn)(nil)
	(&Marks{LazyDir: dir, PID: 1}).StartWait("", sn)(nil) // a human caller
	if ivs, err := Intervals(dir); err != nil || len(ivs) != 0 {
		t.Fatalf("intervals recorded for no agent: %+v %v", ivs, err)
	}
}

func TestCleanProgressCapsAndEscapes(t *testing.T) {
	long := strings.Repeat("é", MaxProgress+5)
	got, cut := CleanProgress(long)
	if !cut || len([]rune(got)) != MaxProgress || !strings.HasSuffix(got, "…") {
		t.Fatalf("long line: cut=%v, %d runes", cut, len([]rune(got)))
	}
	got, cut = CleanProgress("red \x1b[31m")
	if cut || strings.ContainsRune(got, 0x1b) {
		t.Fatalf("escape kept: %q", got)
	}
	if _, err := (&Marks{LazyDir: t.TempDir()}).SetProgress("0123456789abcdef", " \t\n"); err == nil {
		t.Fatal("an empty progress line was accepted")
	}
}
