package proto

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// testDir is a task's protocol directory under a fresh lazy directory.
func testDir(t *testing.T) Dir {
	t.Helper()
	return ForTask(filepath.Join(t.TempDir(), "lazy"), "0123abcd")
}

func TestPathsKeepTheLogOutsideTheProtocolDirectory(t *testing.T) {
	lazy := filepath.Join(t.TempDir(), "lazy")
	d := ForTask(lazy, "t1")
	if string(d) != filepath.Join(lazy, "proto", "t1") {
		t.Fatalf("ForTask = %s", d)
	}
	if got := d.Path(CommandFile); got != filepath.Join(lazy, "proto", "t1", "command.json") {
		t.Errorf("command.json at %s", got)
	}
	// The log outlives the protocol directory (accept removes it).
	for _, name := range []string{LogFile, LogIndexFile} {
		if got := d.Path(name); got != filepath.Join(lazy, "logs", "t1", name) {
			t.Errorf("%s at %s, want under logs/t1", name, got)
		}
	}
	if got := SupervisorLock(lazy, "t1"); got != filepath.Join(lazy, "locks", "supervisor-t1.lock") {
		t.Errorf("supervisor lock at %s", got)
	}
	if got := KeptRef("t1", 3); got != "refs/lazy-kept/t1/ask-3" || strings.HasPrefix(got, "refs/lazy/") {
		t.Errorf("KeptRef = %s: it must stay outside refs/lazy/, which is pushed", got)
	}
}

// TestFilesRoundTrip: every file the supervisor and lazy exchange reads
// back as it was written, every field included, as indented JSON with a
// final newline.
func TestFilesRoundTrip(t *testing.T) {
	d := testDir(t)
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	turn := Turn{TaskID: "0123abcd", Session: "s1", Seq: 2}
	cmd := Command{
		Turn: turn, Kind: "unblock", Agent: "claude", Exec: []string{"a", "b c"}, ResumeID: "r1",
		PermissionMode: "acceptEdits", Model: "opus", Prompt: "do it\nnow é <tag> & \"quote\"", Worktree: "/w",
		BaseSHA: "abc", SyncFrom: "main", Env: map[string]string{"K": "V"},
		AllowedPaths: []string{"src/**"}, Approved: []string{"x"},
		Sandbox:      &Sandbox{Network: "allow", Allow: []string{"*.example.com"}, Hidden: []string{"~/.ssh"}, Expose: []string{"/opt"}},
		Policy:       Policy{Allow: []string{"go test"}, Uncommitted: UncommittedPushBack, Setup: "make", CopyFiles: []string{".env"}},
		Prepare:      &Prepare{From: "/main", CopyFiles: []string{".env"}, Setup: "make"},
		MaxBudgetUSD: 1.5, Timing: Timing{WatchdogTimeout: time.Minute, KillGrace: time.Second, RetryScale: 0.5, UnreachableTimeout: time.Hour},
		Written: at,
	}
	st := Status{Turn: turn, PID: 42, StartedAt: at, Phase: "agent", AgentPID: 43, BaseSHA: "abc", LastProgress: at, Progress: "editing",
		Attempt: 2, RetryFailureClass: "rate_limit", RetryFailureReason: "429", RetryNextDelayMS: 1500, AgentRetrying: true,
		ReadOnly: &TreeState{Ref: "refs/heads/x", Head: "h", Index: "i", Files: "f"}}
	resp := Response{Turn: turn, Status: Completed, Phase: "done", Result: "did it", AgentSessionID: "as1",
		Commits: []string{"c1"}, ChangedFiles: []string{"a.go"}, Violations: []string{"b.go"}, BaseSHA: "abc", ExitCode: 3,
		Error: "e", StderrTail: "tail", FailureClass: "crash", FailureReason: "segv", Attempts: 2, ResetAt: at,
		PushBack: &PushBack{Prompt: "commit", At: at, FirstResult: "first"},
		Watchdog: &Watchdog{Guard: "watchdog_output_timeout", Limit: time.Minute, Escalated: true, Relaunched: 1, AfterWork: true, Since: at},
		Usage:    &Usage{CostUSD: 0.25, InputTokens: 10, CachedInputTokens: 5, OutputTokens: 2, Model: "opus"},
		Tools:    &Tools{Calls: 4, Failed: 1}, FinishedAt: at}
	pairing := Pairing{Session: "s1", PID: 7, StartedAt: at}

	for name, in := range map[string]any{CommandFile: &cmd, StatusFile: &st, ResponseFile: &resp, PairingFile: &pairing} {
		if err := d.Write(name, in); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		out := reflect.New(reflect.TypeOf(in).Elem()).Interface()
		if err := d.Read(name, out); err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Errorf("%s read back as\n%+v\nwant\n%+v", name, out, in)
		}
		b, err := os.ReadFile(d.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "{\n  \"") || !strings.HasSuffix(string(b), "}\n") {
			t.Errorf("%s is not indented JSON ending in a newline:\n%s", name, b)
		}
		fi, err := os.Stat(d.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s is writable by others: %v", name, fi.Mode())
		}
	}
	// The MCP server is filled in by the supervisor, never stored: its
	// token must not reach the disk.
	cmd.MCP = &MCPServer{Command: "lazy", Args: []string{"mcp-proxy"}}
	if err := d.Write(CommandFile, &cmd); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(d.Path(CommandFile)); strings.Contains(string(b), "mcp-proxy") {
		t.Errorf("command.json carries the MCP server:\n%s", b)
	}
	// The field names are the protocol: a supervisor of another build
	// reads them.
	b, _ := os.ReadFile(d.Path(ResponseFile))
	for _, key := range []string{`"task_id"`, `"session"`, `"turn"`, `"status"`, `"failure_attempts"`, `"limit_ns"`, `"escalated_to_sigkill"`, `"finished_at"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("response.json lacks %s:\n%s", key, b)
		}
	}
}

func TestReadSaysWhatIsWrong(t *testing.T) {
	d := testDir(t)
	var st Status
	if err := d.Read(StatusFile, &st); !errors.Is(err, ErrAbsent) {
		t.Fatalf("a missing file: %v, want ErrAbsent", err)
	}
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "{", "not json", `{"pid": "forty-two"}`, "\x00\x01"} {
		if err := os.WriteFile(d.Path(StatusFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		err := d.Read(StatusFile, &st)
		if err == nil || errors.Is(err, ErrAbsent) || !strings.Contains(err.Error(), d.Path(StatusFile)+" is damaged") {
			t.Errorf("%q: %v, want an error naming the damaged file", bad, err)
		}
	}
	// A directory where the file should be is an error, not ErrAbsent.
	if err := os.MkdirAll(d.Path(ResponseFile), 0o755); err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := d.Read(ResponseFile, &resp); err == nil || errors.Is(err, ErrAbsent) {
		t.Errorf("a directory as response.json: %v", err)
	}
}

// TestReadIsBounded: a file past MaxFile (which lazy never writes) is
// refused before it is read into memory.
func TestReadIsBounded(t *testing.T) {
	d := testDir(t)
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(d.Path(StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk is used.
	if err := f.Truncate(MaxFile + 1); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	var st Status
	err = d.Read(StatusFile, &st)
	if err == nil || !strings.Contains(err.Error(), "over 256 MiB") || !strings.Contains(err.Error(), d.Path(StatusFile)) {
		t.Fatalf("an oversized status.json: %v", err)
	}
}

// TestWriteIsAtomic: a reader never sees a file half written, whatever
// it races with, and a write leaves no temporary file behind.
func TestWriteIsAtomic(t *testing.T) {
	d := testDir(t)
	versions := []Command{
		{Turn: Turn{TaskID: "t", Session: "a", Seq: 1}, Prompt: strings.Repeat("a", 64<<10)},
		{Turn: Turn{TaskID: "t", Session: "b", Seq: 2}, Prompt: strings.Repeat("b", 128<<10)},
	}
	if err := d.Write(CommandFile, versions[0]); err != nil {
		t.Fatal(err)
	}
	n := 200
	if testing.Short() {
		n = 50
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range n {
			if err := d.Write(CommandFile, versions[i%2]); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range n {
			var c Command
			if err := d.Read(CommandFile, &c); err != nil {
				errs <- fmt.Errorf("a read during writes: %w", err)
				return
			}
			ok := (c.Session == "a" && c.Prompt == versions[0].Prompt) || (c.Session == "b" && c.Prompt == versions[1].Prompt)
			if !ok {
				errs <- fmt.Errorf("a read saw a mix: session %q, prompt of %d bytes", c.Session, len(c.Prompt))
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(string(d))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != CommandFile {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("the directory holds %v, want only %s", names, CommandFile)
	}
}

func TestWriteRefusesWhatItCannotStore(t *testing.T) {
	d := testDir(t)
	if err := d.Write(StatusFile, map[string]any{"bad": make(chan int)}); err == nil || !strings.Contains(err.Error(), "encode status.json") {
		t.Errorf("an unencodable value: %v", err)
	}
	if _, err := os.Stat(d.Path(StatusFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed encode left a file: %v", err)
	}
	// The directory cannot be made under a file.
	blocked := Dir(filepath.Join(t.TempDir(), "file", "proto", "t"))
	if err := os.WriteFile(filepath.Dir(filepath.Dir(string(blocked))), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := blocked.Write(StatusFile, Status{}); err == nil || !strings.Contains(err.Error(), "protocol dir") {
		t.Errorf("a directory that cannot be made: %v", err)
	}
}

func TestRemove(t *testing.T) {
	d := testDir(t)
	if err := d.Write(ResponseFile, Response{Status: Completed}); err != nil {
		t.Fatal(err)
	}
	d.Remove(ResponseFile)
	var r Response
	if err := d.Read(ResponseFile, &r); !errors.Is(err, ErrAbsent) {
		t.Fatalf("after Remove: %v", err)
	}
	d.Remove(ResponseFile) // absent: no panic, nothing to say
}

func TestTimingDefaults(t *testing.T) {
	got := Timing{}.WithDefaults()
	want := Timing{WatchdogTimeout: DefaultWatchdogTimeout, KillGrace: DefaultKillGrace, RetryScale: 1, UnreachableTimeout: DefaultUnreachableTimeout}
	if got != want {
		t.Fatalf("zero timing: %+v", got)
	}
	// Negative values read as unset too; set ones are kept.
	if got := (Timing{WatchdogTimeout: -1, KillGrace: -1, RetryScale: -2, UnreachableTimeout: -1}).WithDefaults(); got != want {
		t.Errorf("negative timing: %+v", got)
	}
	set := Timing{WatchdogTimeout: time.Second, KillGrace: 2 * time.Second, RetryScale: 0.01, UnreachableTimeout: 3 * time.Second}
	if got := set.WithDefaults(); got != set {
		t.Errorf("set timing changed: %+v", got)
	}
}

func TestUsageAndToolsPlus(t *testing.T) {
	var none *Usage
	if got := none.Plus(nil); got != nil {
		t.Errorf("nil + nil = %+v", got)
	}
	if got := none.Plus(&Usage{}); got != nil {
		t.Errorf("nil + zero = %+v, want nil", got)
	}
	a := &Usage{CostUSD: 0.5, InputTokens: 10, CachedInputTokens: 1, OutputTokens: 2, Model: "a"}
	b := &Usage{CostUSD: 0.25, InputTokens: 5, OutputTokens: 1}
	got := a.Plus(b)
	if *got != (Usage{CostUSD: 0.75, InputTokens: 15, CachedInputTokens: 1, OutputTokens: 3, Model: "a"}) {
		t.Errorf("a + b = %+v (the model of the last attempt that said one)", got)
	}
	if got := a.Plus(&Usage{Model: "b"}); got.Model != "b" || got.CostUSD != 0.5 {
		t.Errorf("the later model wins: %+v", got)
	}
	if *a != (Usage{CostUSD: 0.5, InputTokens: 10, CachedInputTokens: 1, OutputTokens: 2, Model: "a"}) {
		t.Errorf("Plus changed its receiver: %+v", a)
	}

	var tools *Tools
	if tools.Plus(nil) != nil || tools.Plus(&Tools{Failed: 1}) != nil {
		t.Error("a turn without calls is nil")
	}
	if got := (&Tools{Calls: 2, Failed: 1}).Plus(&Tools{Calls: 3}); *got != (Tools{Calls: 5, Failed: 1}) {
		t.Errorf("tools sum %+v", got)
	}
}

func TestTail(t *testing.T) {
	var lines []string
	for i := 1; i <= 80; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	got := Tail(strings.Join(lines, "\r\n") + "\r\n")
	if strings.Contains(got, "\r") {
		t.Errorf("CRLF kept: %q", got)
	}
	out := strings.Split(got, "\n")
	if len(out) != LogTailLines || out[0] != "line 31" || out[len(out)-1] != "line 80" {
		t.Errorf("tail of 80 lines: %d lines, %q .. %q", len(out), out[0], out[len(out)-1])
	}
	if got := Tail("one\ntwo\n\n"); got != "one\ntwo" {
		t.Errorf("short: %q", got)
	}
	if got := Tail(""); got != "" {
		t.Errorf("empty: %q", got)
	}
}

func TestTurnEnvironment(t *testing.T) {
	if got := TurnMarker("abc"); got != "LAZY_TURN_TASK=abc" {
		t.Errorf("TurnMarker = %s", got)
	}
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	resolved, _ := filepath.EvalSymlinks(real)
	if TurnScope(link) != TurnScope(real) || TurnScope(real) != TurnRepoEnv+"="+resolved {
		t.Errorf("the scope of a repository reached through a symlink differs: %s, %s", TurnScope(link), TurnScope(real))
	}
	if got := TurnScope("/no/such/dir/"); got != TurnRepoEnv+"=/no/such/dir" {
		t.Errorf("an unresolvable path: %s", got)
	}
	env := []string{"PATH=/bin", TurnMarker("abc"), TurnScope(real), "LAZY_TURN_TASKX=keep", "HOME=/h"}
	got := WithoutTurnEnv(env)
	if strings.Join(got, " ") != "PATH=/bin LAZY_TURN_TASKX=keep HOME=/h" {
		t.Errorf("WithoutTurnEnv = %v", got)
	}
	if len(env) != 5 || env[1] != TurnMarker("abc") {
		t.Errorf("WithoutTurnEnv changed its input: %v", env)
	}
}

// The JSON of each file is what another build's supervisor reads: a
// field it does not know is ignored, one it lacks is zero.
func TestReadToleratesOtherBuilds(t *testing.T) {
	d := testDir(t)
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		t.Fatal(err)
	}
	raw := `{"task_id":"t","session":"s","turn":4,"pid":9,"phase":"agent","from_a_newer_lazy":{"x":1}}`
	if err := os.WriteFile(d.Path(StatusFile), []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := d.Read(StatusFile, &st); err != nil {
		t.Fatal(err)
	}
	if st.TaskID != "t" || st.Session != "s" || st.Seq != 4 || st.PID != 9 || st.Phase != "agent" || st.ReadOnly != nil {
		t.Errorf("read %+v", st)
	}
	b, err := json.Marshal(Status{})
	if err != nil {
		t.Fatal(err)
	}
	for _, omitted := range []string{"agent_pid", "read_only", "retry_failure_class", "agent_retrying"} {
		if strings.Contains(string(b), omitted) {
			t.Errorf("an empty status writes %s: %s", omitted, b)
		}
	}
}
