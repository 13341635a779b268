package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/proc"
)

// run runs the gate and fails the test if it does not return within a
// minute: a gate that waits forever on a pipe is the bug to catch.
func run(t *testing.T, ctx context.Context, s Spec) (Result, error) {
	t.Helper()
	type out struct {
		r   Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := Run(ctx, s)
		done <- out{r, err}
	}()
	select {
	case o := <-done:
		return o.r, o.err
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
		return Result{}, nil
	}
}

// marked is the gate environment with a marker every process the test's
// commands start inherits, so the test can find them all in /proc.
func marked(t *testing.T) ([]string, string) {
	t.Helper()
	mark := fmt.Sprintf("LAZYGATETEST=%s-%d", t.Name(), time.Now().UnixNano())
	return append(Environ(os.Environ()), mark), mark
}

// waitGone polls until no process carries the mark and none of pids
// runs (a zombie, which nothing may reap here, is not running).
func waitGone(t *testing.T, mark string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := proc.WithEnv(mark)
		for _, p := range pids {
			if proc.Alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pidsIn reads the pids a command wrote, one a line.
func pidsIn(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p)
	}
	return pids
}

// waitFile polls until path holds at least n lines. It runs beside the
// gate, off the test's goroutine, so it reports with Errorf.
func waitFile(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Count(string(b), "\n") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s never got %d lines", path, n)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunPasses(t *testing.T) {
	var log bytes.Buffer
	r, err := run(t, context.Background(), Spec{Dir: t.TempDir(), Commands: []string{"echo one", "echo two >&2"}, Timeout: time.Minute, Log: &log})
	if err != nil || !r.Passed || r.Failed != "" || len(r.Commands) != 2 {
		t.Fatalf("%+v %v", r, err)
	}
	for _, c := range r.Commands {
		if c.Exit != 0 || c.TimedOut || c.Missing {
			t.Errorf("%+v", c)
		}
	}
	if r.Tail != "two\n" {
		t.Errorf("tail %q, want the last command's output", r.Tail)
	}
	l := log.String()
	for _, want := range []string{"$ echo one\none\nexit 0 in ", "$ echo two >&2\ntwo\nexit 0 in "} {
		if !strings.Contains(l, want) {
			t.Errorf("log %q lacks %q", l, want)
		}
	}
	b, _ := json.Marshal(Result{Commands: []Command{}})
	if string(b) != `{"commands":[],"passed":false,"duration_ms":0}` {
		t.Errorf("json %s", b)
	}
}

func TestRunStopsAtTheFirstFailure(t *testing.T) {
	dir := t.TempDir()
	r, err := run(t, context.Background(), Spec{Dir: dir, Commands: []string{"true", "echo bad; exit 3", "touch ran"}, Timeout: time.Minute})
	if err != nil || r.Passed || r.Failed != "echo bad; exit 3" || r.Tail != "bad\n" {
		t.Fatalf("%+v %v", r, err)
	}
	if len(r.Commands) != 2 || r.Commands[1].Exit != 3 || r.Commands[1].Missing {
		t.Fatalf("commands %+v", r.Commands)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
		t.Fatal("a command after the failure ran")
	}
}

func TestRunMissingCommand(t *testing.T) {
	r, err := run(t, context.Background(), Spec{Dir: t.TempDir(), Commands: []string{"lazy-gate-no-such-command --check"}, Timeout: time.Minute})
	if err != nil || r.Passed || len(r.Commands) != 1 {
		t.Fatalf("%+v %v", r, err)
	}
	if c := r.Commands[0]; c.Exit != 127 || !c.Missing {
		t.Fatalf("%+v, want exit 127 and missing", c)
	}
	if !strings.Contains(r.Tail, "lazy-gate-no-such-command") {
		t.Errorf("tail %q", r.Tail)
	}
}

// TestRunTimeoutKillsTheWholeGroup: the command leaves a background
// sleep holding the output pipe, and waits; the timeout must end both
// and Run must not wait on the pipe.
func TestRunTimeoutKillsTheWholeGroup(t *testing.T) {
	t.Parallel() // each run carries a mark of its own, and what it waits for is sleep
	dir := t.TempDir()
	env, mark := marked(t)
	var log bytes.Buffer
	began := time.Now()
	r, err := run(t, context.Background(), Spec{
		Dir:      dir,
		Commands: []string{"sleep 1000 & echo $! > pids; echo $$ >> pids; echo started; wait", "touch ran"},
		Timeout:  1500 * time.Millisecond,
		Env:      env,
		Log:      &log,
	})
	if err != nil || r.Passed || len(r.Commands) != 1 || r.Failed == "" {
		t.Fatalf("%+v %v", r, err)
	}
	if c := r.Commands[0]; c.Exit != -1 || !c.TimedOut || c.Missing {
		t.Fatalf("%+v, want killed by the timeout", c)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("took %s", took)
	}
	if r.Tail != "started\n" || !strings.Contains(log.String(), "ran out") {
		t.Errorf("tail %q, log %q", r.Tail, log.String())
	}
	pids := pidsIn(t, filepath.Join(dir, "pids"))
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	waitGone(t, mark, pids...)
}

// TestRunEndsWhatAPassingCommandLeftBehind: a command that exits 0 but
// leaves a child holding the pipe passes, promptly, and the child is
// ended.
func TestRunEndsWhatAPassingCommandLeftBehind(t *testing.T) {
	t.Parallel() // each run carries a mark of its own, and what it waits for is sleep
	dir := t.TempDir()
	env, mark := marked(t)
	r, err := run(t, context.Background(), Spec{
		Dir:      dir,
		Commands: []string{"sleep 1000 & echo $! > pids; echo done"},
		Timeout:  time.Hour,
		Env:      env,
	})
	if err != nil || !r.Passed || r.Commands[0].Exit != 0 || r.Tail != "done\n" {
		t.Fatalf("%+v %v", r, err)
	}
	waitGone(t, mark, pidsIn(t, filepath.Join(dir, "pids"))...)
}

// TestRunKillsWhatIgnoresSIGTERM: SIGKILL follows when SIGTERM is not
// enough.
func TestRunKillsWhatIgnoresSIGTERM(t *testing.T) {
	t.Parallel() // each run carries a mark of its own, and what it waits for is sleep
	dir := t.TempDir()
	env, mark := marked(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		waitFile(t, filepath.Join(dir, "pids"), 2)
		cancel()
	}()
	r, err := run(t, ctx, Spec{
		Dir:      dir,
		Commands: []string{"trap '' TERM; sleep 1000 & echo $! > pids; echo $$ >> pids; wait"},
		Timeout:  time.Hour,
		Env:      env,
	})
	if err != nil || r.Passed || r.Commands[0].Exit != -1 {
		t.Fatalf("%+v %v", r, err)
	}
	waitGone(t, mark, pidsIn(t, filepath.Join(dir, "pids"))...)
}

func TestRunCancelled(t *testing.T) {
	t.Parallel() // each run carries a mark of its own, and what it waits for is sleep
	dir := t.TempDir()
	env, mark := marked(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		waitFile(t, filepath.Join(dir, "pids"), 1)
		cancel()
	}()
	r, err := run(t, ctx, Spec{Dir: dir, Commands: []string{"echo $$ > pids; sleep 1000", "touch ran"}, Timeout: time.Hour, Env: env})
	if err != nil || r.Passed || len(r.Commands) != 1 {
		t.Fatalf("%+v %v", r, err)
	}
	if c := r.Commands[0]; c.Exit != -1 || c.TimedOut {
		t.Fatalf("%+v, want killed, not timed out", c)
	}
	waitGone(t, mark, pidsIn(t, filepath.Join(dir, "pids"))...)

	// A gate whose context is over starts nothing.
	r, err = run(t, ctx, Spec{Dir: dir, Commands: []string{"touch ran"}})
	if err != nil || r.Passed || len(r.Commands) != 1 || r.Commands[0].Exit != -1 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
		t.Fatal("a command ran after the cancel")
	}
}

func TestRunTailIsTheLastBytesInValidUTF8(t *testing.T) {
	// 3000 two-byte characters then END: 6003 bytes, and the cut at 4096
	// from the end falls inside a character.
	cmd := `i=0; while [ $i -lt 3000 ]; do printf 'é'; i=$((i+1)); done; printf 'END'; exit 1`
	r, err := run(t, context.Background(), Spec{Dir: t.TempDir(), Commands: []string{cmd}, Timeout: time.Minute})
	if err != nil || r.Passed {
		t.Fatalf("%+v %v", r, err)
	}
	if !utf8.ValidString(r.Tail) || len(r.Tail) > TailBytes || len(r.Tail) < TailBytes-1 || !strings.HasSuffix(r.Tail, "ééEND") {
		t.Fatalf("tail of %d bytes, valid %v, ends %q", len(r.Tail), utf8.ValidString(r.Tail), r.Tail[len(r.Tail)-10:])
	}
	if strings.Trim(strings.TrimSuffix(r.Tail, "END"), "é") != "" {
		t.Fatal("the tail holds something that was not printed")
	}

	r, _ = run(t, context.Background(), Spec{Dir: t.TempDir(), Commands: []string{`printf 'a\377b\n'`}})
	if r.Tail != "a\uFFFDb\n" {
		t.Fatalf("invalid UTF-8: %q", r.Tail)
	}
}

func TestTailBuffer(t *testing.T) {
	for name, chunks := range map[string][]string{
		"big write":    {strings.Repeat("€", 5000)},
		"small writes": strings.Split(strings.Repeat("€", 5000), ""),
		"mixed":        {"x", strings.Repeat("é\xe2", 3000), "€"},
		// A run of invalid bytes reads as one U+FFFD, as in strings.ToValidUTF8.
		"invalid": {strings.Repeat("\xff", 10000), strings.Repeat("a", TailBytes)},
	} {
		var tb tailBuffer
		all := ""
		for _, c := range chunks {
			tb.Write([]byte(c))
			all += c
		}
		got := tb.String()
		if !utf8.ValidString(got) || len(got) > TailBytes || len(got) < TailBytes-3 {
			t.Errorf("%s: %d bytes, valid %v", name, len(got), utf8.ValidString(got))
		}
		if len(tb.b) > 2*(TailBytes+utf8.UTFMax) {
			t.Errorf("%s: kept %d bytes", name, len(tb.b))
		}
		if want := strings.ToValidUTF8(all, "\uFFFD"); !strings.HasSuffix(want, got[min(len(got), 8):]) {
			t.Errorf("%s: the tail is not the end of the output", name)
		}
	}
}

func TestRunEnvironment(t *testing.T) {
	t.Setenv("GIT_DIR", "/elsewhere/.git")
	t.Setenv("GIT_INDEX_FILE", "/elsewhere/index")
	t.Setenv("LAZY_TASK_ID", "abc")
	t.Setenv("LAZY_GATE", "0")
	t.Setenv("GATE_TEST_KEPT", "kept")
	dir := t.TempDir()
	r, err := run(t, context.Background(), Spec{Dir: dir, Commands: []string{"env > env.txt; pwd > pwd.txt; cat > stdin.txt"}, Timeout: time.Minute})
	if err != nil || !r.Passed {
		t.Fatalf("%+v %v", r, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var gate []string
	for _, kv := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "LAZY_") {
			gate = append(gate, kv)
		}
	}
	if len(gate) != 1 || gate[0] != "LAZY_GATE=1" || !strings.Contains(string(b), "GATE_TEST_KEPT=kept\n") {
		t.Fatalf("git and lazy variables in the gate: %q", gate)
	}
	if pwd, _ := os.ReadFile(filepath.Join(dir, "pwd.txt")); strings.TrimSpace(string(pwd)) != dir {
		t.Errorf("ran in %q, want %q", pwd, dir)
	}
	if in, _ := os.ReadFile(filepath.Join(dir, "stdin.txt")); len(in) != 0 {
		t.Errorf("stdin gave %q", in)
	}
}

func TestRunWrap(t *testing.T) {
	dir := t.TempDir()
	var seen []string
	wrap := func(argv []string) ([]string, error) {
		seen = argv
		return append([]string{"env", "WRAPPED=yes"}, argv...), nil
	}
	r, err := run(t, context.Background(), Spec{Dir: dir, Commands: []string{"echo $WRAPPED"}, Wrap: wrap})
	if err != nil || !r.Passed || r.Tail != "yes\n" {
		t.Fatalf("%+v %v", r, err)
	}
	if strings.Join(seen, " ") != "/bin/sh -c echo $WRAPPED" {
		t.Fatalf("wrapper saw %q", seen)
	}
	refuse := func([]string) ([]string, error) { return nil, fmt.Errorf("no bwrap") }
	r, err = run(t, context.Background(), Spec{Dir: dir, Commands: []string{"true"}, Wrap: refuse})
	if err == nil || !strings.Contains(err.Error(), "no bwrap") || r.Passed {
		t.Fatalf("a failing wrapper: %+v %v", r, err)
	}
}

func TestRunRefusesAMissingDir(t *testing.T) {
	r, err := run(t, context.Background(), Spec{Dir: filepath.Join(t.TempDir(), "nope"), Commands: []string{"true"}})
	if err == nil || r.Passed || len(r.Commands) != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, context.Background(), Spec{Dir: f, Commands: []string{"true"}}); err == nil {
		t.Fatal("ran in a file")
	}
}

// TestRunNoCommandNeverPasses: a gate that ran nothing proved nothing.
func TestRunNoCommandNeverPasses(t *testing.T) {
	r, err := run(t, context.Background(), Spec{Dir: t.TempDir()})
	if !errors.Is(err, ErrNoCommand) || r.Passed {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestRunFasterThanMinDurationFails: commands that all exit 0 sooner
// than lazy.gate.minDuration do not pass; slower ones do.
func TestRunFasterThanMinDurationFails(t *testing.T) {
	var log bytes.Buffer
	r, err := run(t, context.Background(), Spec{Dir: t.TempDir(), Commands: []string{"true"}, MinDuration: time.Minute, Log: &log})
	if err != nil || r.Passed || r.Commands[0].Exit != 0 || !strings.Contains(r.Refused, "less than lazy.gate.minDuration (1m0s)") {
		t.Fatalf("%+v %v", r, err)
	}
	if !strings.Contains(log.String(), "not passed: its one command exited 0") {
		t.Errorf("log %q", log.String())
	}
	r, err = run(t, context.Background(), Spec{Dir: t.TempDir(), Commands: []string{"sleep 0.3"}, MinDuration: 200 * time.Millisecond})
	if err != nil || !r.Passed || r.Refused != "" {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestRunEndsWhatLeftTheGroup: a command that starts a child in a new
// session (setsid: out of its process group, which the group kill
// cannot reach) leaves nothing running, whether it passes or the
// gate's timeout ends it: the run's mark finds the escapee.
func TestRunEndsWhatLeftTheGroup(t *testing.T) {
	t.Parallel() // each run carries a mark of its own, and what it waits for is sleep
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here")
	}
	for _, tc := range []struct {
		name    string
		cmd     string
		timeout time.Duration
		passed  bool
	}{
		{"at its end", "setsid sh -c 'echo $$ > escaped; exec sleep 1000' </dev/null >/dev/null 2>&1 & while [ ! -s escaped ]; do sleep 0.01; done; echo done", time.Hour, true},
		{"at its timeout", "setsid sh -c 'echo $$ > escaped; exec sleep 1000' </dev/null >/dev/null 2>&1 & while [ ! -s escaped ]; do sleep 0.01; done; sleep 1000", 1500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mark := fmt.Sprintf("LAZY_GATE_RUN=test-%d", time.Now().UnixNano())
			var log bytes.Buffer
			r, err := run(t, context.Background(), Spec{Dir: dir, Commands: []string{tc.cmd}, Timeout: tc.timeout, Mark: mark, Log: &log})
			if err != nil || r.Passed != tc.passed {
				t.Fatalf("%+v %v", r, err)
			}
			pids := pidsIn(t, filepath.Join(dir, "escaped"))
			// Run returns only once they are gone: no polling needed.
			for _, p := range pids {
				if proc.Alive(p) {
					t.Fatalf("the setsid child %d outlived the gate", p)
				}
			}
			if left := proc.WithEnv(mark); len(left) > 0 {
				t.Fatalf("marked processes left: %v", left)
			}
			if !strings.Contains(log.String(), "outside its process group") {
				t.Errorf("the log does not say an escapee was ended: %q", log.String())
			}
		})
	}
}
