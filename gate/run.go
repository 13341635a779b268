package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lazyorch/lazy/internal/proc"
	"github.com/lazyorch/lazy/internal/words"
)

// TailBytes is how much of the end of a command's output a Result keeps.
const TailBytes = 4096

// Command is one gate command as it ran.
type Command struct {
	Cmd        string `json:"cmd"`
	Exit       int    `json:"exit"` // -1 when killed by a signal or never started
	DurationMS int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	Missing    bool   `json:"missing,omitempty"` // exit 127: the command was not found — a failure, never "pre-existing"
}

// Result is what a run of the gate found.
type Result struct {
	Commands   []Command `json:"commands"`
	Passed     bool      `json:"passed"`
	DurationMS int64     `json:"duration_ms"`
	// Tail is the last TailBytes of the combined output of the failing
	// command (or of the last command when all pass), made valid UTF-8.
	// It is the command's own text: escape it before a terminal shows it.
	Tail   string `json:"tail,omitempty"`
	Failed string `json:"failed,omitempty"` // the failing command, if any
	// Refused says why a run whose commands all exited 0 did not pass
	// (faster than MinDuration).
	Refused string `json:"refused,omitempty"`
}

// Spec is one run of the gate.
type Spec struct {
	Dir      string        // the scratch worktree the commands run in
	Commands []string      // run in order with sh -c
	Timeout  time.Duration // for the whole gate; 0: no limit but ctx's
	// Log receives the whole output of every command, with a header line
	// per command ("$ cmd" and, after, "exit N in 1.2s"); may be nil.
	// A Log that fails is dropped; the gate goes on.
	Log io.Writer
	// Wrap is the sandbox wrapper: it turns ["/bin/sh", "-c", cmd] into
	// the argv to run. nil: run as is.
	Wrap func(argv []string) ([]string, error)
	// Env is the commands' environment; nil: Environ(os.Environ()).
	Env []string
	// Mark is the run's mark, an environment entry "NAME=value" unique
	// to this run, and Scope an entry naming the repository ("" for
	// none): every process of the run inherits both, so one that left
	// the command's process group (setsid, a double fork) is still found
	// by it in /proc and ended with the command. "": only the group is
	// ended.
	Mark, Scope string
	// MinDuration: a run whose commands all exit 0 in less time fails
	// (lazy.gate.minDuration; 0: no minimum).
	MinDuration time.Duration
	// Reaper is the argv prefix of the reaper each command runs under
	// (lazy gate-reap --, which calls Reap): everything still running
	// under the command when it exits is ended, whatever it did to its
	// group and environment. nil: the group and the Mark only.
	Reaper []string
}

// How long the ending of a process group may take.
const (
	// termGrace is how long a group has after SIGTERM before SIGKILL.
	termGrace = 2 * time.Second
	// killWait bounds the wait for a SIGKILLed group to be gone: a
	// process in uninterruptible sleep dies only when it wakes.
	killWait = 5 * time.Second
	// drainWait bounds the reading of output after the group is gone: a
	// process that left the group (setsid) may still hold the pipe.
	drainWait = time.Second
	pollEvery = 10 * time.Millisecond
)

// Environ is env without git's and lazy's own variables (GIT_DIR and the
// like would point the commands at lazy's repository, LAZY_* at its
// task), plus LAZY_GATE=1 so a command can tell it runs in the gate.
func Environ(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "LAZY_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LAZY_GATE=1")
}

// ErrNoCommand is the error of a gate with no command to run: it proves
// nothing, so it never passes.
var ErrNoCommand = errors.New("the gate has no command to run, and a gate that runs nothing never passes")

// Run runs the commands in order with sh -c in s.Dir, stdin /dev/null,
// each in its own process group, and stops at the first failure: later
// commands are neither run nor listed. When a command ends, whatever it
// left running in its group is ended too, and so is every process that
// carries the run's Mark (one that left the group). On timeout or ctx's
// end the running command's whole group is killed (SIGTERM, then
// SIGKILL after 2s) and waited for, and it is listed with Exit -1
// (TimedOut when the gate's own Timeout ran out; a caller tells
// cancellation by ctx.Err()). A run whose commands all exit 0 faster
// than MinDuration does not pass (Refused says why).
//
// The error is only for failing to run at all (no command, no such Dir,
// the wrapper or the shell failing to start); a failing command is
// Passed false.
func Run(ctx context.Context, s Spec) (Result, error) {
	start := time.Now()
	res := Result{Commands: []Command{}, Passed: true}
	if len(s.Commands) == 0 {
		res.Passed = false
		return res, ErrNoCommand
	}
	if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		res.Passed = false
		return res, fmt.Errorf("the gate cannot run in %s: %w; the scratch checkout must exist", s.Dir, err)
	}
	env := s.Env
	if env == nil {
		env = Environ(os.Environ())
	}
	for _, kv := range []string{s.Mark, s.Scope} {
		if kv != "" && !slices.Contains(env, kv) {
			env = append(slices.Clip(env), kv)
		}
	}
	gctx := ctx
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		gctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	log := &logWriter{w: s.Log}
	for _, c := range s.Commands {
		r := runner{ctx: ctx, gctx: gctx, spec: &s, env: env, log: log, timeout: s.Timeout}
		cmd, tail, err := r.run(c)
		res.Commands = append(res.Commands, cmd)
		res.Tail = tail
		if err != nil || cmd.Exit != 0 {
			res.Passed, res.Failed = false, c
			res.DurationMS = time.Since(start).Milliseconds()
			return res, err
		}
	}
	took := time.Since(start)
	res.DurationMS = took.Milliseconds()
	if s.MinDuration > 0 && took < s.MinDuration {
		res.Passed = false
		res.Refused = fmt.Sprintf("%s exited 0 in %s, less than lazy.gate.minDuration (%s): a gate that fast is not trusted to have checked anything",
			words.Plural(len(res.Commands), "its one command", "all its "+words.Count(len(res.Commands), "command", "commands")), took.Round(time.Millisecond), s.MinDuration)
		log.printf("not passed: %s\n", res.Refused)
	}
	return res, nil
}

// runner runs one command of a gate.
type runner struct {
	ctx, gctx context.Context // the caller's, and with the gate's timeout
	spec      *Spec
	env       []string
	log       *logWriter
	timeout   time.Duration
}

// timedOut says whether the gate's own time ran out (not the caller's).
func (r *runner) timedOut() bool {
	return r.ctx.Err() == nil && errors.Is(r.gctx.Err(), context.DeadlineExceeded)
}

// stopped is how a command that was killed or never started is logged.
func (r *runner) stopped() string {
	if r.timedOut() {
		return fmt.Sprintf(" (killed: the gate's %s ran out)", r.timeout)
	}
	return " (killed: the gate was stopped)"
}

func (r *runner) run(c string) (Command, string, error) {
	res := Command{Cmd: c, Exit: -1}
	r.log.printf("$ %s\n", c)
	if r.gctx.Err() != nil {
		res.TimedOut = r.timedOut()
		r.log.printf("not started%s\n", r.stopped())
		return res, "", nil
	}
	argv := []string{"/bin/sh", "-c", c}
	if r.spec.Wrap != nil {
		var err error
		if argv, err = r.spec.Wrap(argv); err != nil {
			r.log.printf("not started: %v\n", err)
			return res, "", fmt.Errorf("confine the gate command %q: %w", c, err)
		}
		if len(argv) == 0 {
			return res, "", fmt.Errorf("confine the gate command %q: the wrapper gave no argv", c)
		}
	}
	if len(r.spec.Reaper) > 0 {
		argv = append(slices.Clone(r.spec.Reaper), argv...)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return res, "", fmt.Errorf("start the gate command %q: %w", c, err)
	}
	defer func() { _ = pr.Close() }()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = r.spec.Dir, r.env
	// One pipe for both streams, as a terminal interleaves them; an
	// *os.File goes to the child as is, so Wait does not wait on it.
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	began := time.Now()
	err = cmd.Start()
	_ = pw.Close()
	if err != nil {
		r.log.printf("not started: %v\n", err)
		return res, "", fmt.Errorf("start the gate command %q: %w", c, err)
	}
	pgid := cmd.Process.Pid
	tail := &tailBuffer{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r.log.copy(tail, pr)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var werr error
	killed := false
	select {
	case werr = <-waited:
		// Whatever it started and left behind goes with it.
		if groupAlive(pgid) {
			_ = endGroup(pgid, nil)
		}
	case <-r.gctx.Done():
		killed = true
		werr = endGroup(pgid, waited)
	}
	// What left the group (setsid, a daemonizing double fork) still
	// carries the run's mark: it goes too, before the output is drained
	// (it may hold the pipe).
	var escaped []int
	if r.spec.Mark != "" {
		escaped = proc.KillMarkedIn(r.spec.Mark, r.spec.Scope)
	}
	select {
	case <-readDone:
	case <-time.After(drainWait):
		_ = pr.SetReadDeadline(time.Now())
		<-readDone
	}
	// The log is the copy's until it ends: say it now.
	if len(escaped) > 0 {
		r.log.printf("ended %d process(es) the command left running outside its process group\n", len(escaped))
	}
	res.DurationMS = time.Since(began).Milliseconds()
	switch {
	case killed:
		res.TimedOut = r.timedOut()
	default:
		res.Exit = exitCode(werr)
		res.Missing = res.Exit == 127
	}
	took := time.Since(began).Round(100 * time.Millisecond)
	switch {
	case killed:
		r.log.printf("exit %d in %s%s\n", res.Exit, took, r.stopped())
	case res.Missing:
		r.log.printf("exit %d in %s (command not found)\n", res.Exit, took)
	default:
		r.log.printf("exit %d in %s\n", res.Exit, took)
	}
	return res, tail.String(), nil
}

// exitCode is a finished process's exit status, -1 if a signal ended it.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1
		}
		return ee.ExitCode()
	}
	return -1
}

// endGroup ends process group pgid: SIGTERM, then SIGKILL if anything of
// it is still running after termGrace. If waited is not nil it carries
// the leader's Wait, which endGroup returns once the leader is reaped.
func endGroup(pgid int, waited <-chan error) error {
	var werr error
	reaped := waited == nil
	reap := func(block bool) {
		if reaped {
			return
		}
		if block {
			werr, reaped = <-waited, true
			return
		}
		select {
		case werr = <-waited:
			reaped = true
		default:
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	_ = syscall.Kill(-pgid, syscall.SIGCONT) // a stopped process sees SIGTERM only once it runs
	for deadline := time.Now().Add(termGrace); ; {
		reap(false)
		if reaped && !groupAlive(pgid) {
			return werr
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(pollEvery)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	reap(true)
	for deadline := time.Now().Add(killWait); groupAlive(pgid) && time.Now().Before(deadline); {
		time.Sleep(pollEvery)
	}
	return werr
}

// groupAlive reports whether a process of group pgid is still running.
// A zombie is not: where nothing reaps orphans (a container's init may
// not), a killed child stays one, and it holds nothing open.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: the signal check is all there is
	}
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) S ppid pgrp ...": comm may hold parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			return true
		}
	}
	return false
}

// logWriter is the gate's log; after its first failed write it is
// dropped, so a full disk never stalls a command on a full pipe.
type logWriter struct {
	w   io.Writer
	err error
}

func (l *logWriter) Write(p []byte) {
	if l.w == nil || l.err != nil {
		return
	}
	_, l.err = l.w.Write(p)
}

func (l *logWriter) printf(format string, a ...any) {
	if l.w != nil && l.err == nil {
		l.Write(fmt.Appendf(nil, format, a...))
	}
}

// copy reads r to its end (or until its read deadline) into the log and
// tail.
func (l *logWriter) copy(tail *tailBuffer, r io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			tail.Write(buf[:n])
			l.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// tailBuffer keeps the last bytes written to it: at least TailBytes plus
// room to find where a character starts.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) {
	const keep = TailBytes + utf8.UTFMax
	if len(p) >= keep {
		t.b = append(t.b[:0], p[len(p)-keep:]...)
		return
	}
	t.b = append(t.b, p...)
	if len(t.b) > 2*keep {
		t.b = append(t.b[:0], t.b[len(t.b)-keep:]...)
	}
}

// String is the last TailBytes at most, cut at a character's start and
// with invalid UTF-8 replaced.
func (t *tailBuffer) String() string {
	b := t.b
	if len(b) > TailBytes {
		b = b[len(b)-TailBytes:]
		// Skip the rest of a character cut in two.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if len(s) > TailBytes {
		s = s[len(s)-TailBytes:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
	}
	return s
}
