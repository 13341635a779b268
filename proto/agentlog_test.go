package proto

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLogLineRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 999, time.FixedZone("X", 3600))
	l := LogLine{Lazy: LogNote, Turn: 3, Kind: NoteBudget, Agent: "claude", Model: "opus", Run: 2, Why: "retry", At: at, Text: "held", Next: "lazy unblock t --budget +5"}
	b := l.Bytes()
	if !strings.HasPrefix(string(b), LogLinePrefix) || !strings.HasSuffix(string(b), "}\n") || strings.Count(string(b), "\n") != 1 {
		t.Fatalf("Bytes = %q: one line, beginning as lazy's lines do", b)
	}
	got, ok := ParseLogLine(string(b))
	if !ok {
		t.Fatalf("ParseLogLine refused %q", b)
	}
	// The time is stored in UTC to the second.
	want := l
	want.At = at.UTC().Truncate(time.Second)
	if got != want {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	// Zero fields are left out; a zero time too.
	if b := (LogLine{Lazy: LogTurn}).Bytes(); string(b) != `{"lazy":"turn"}`+"\n" {
		t.Errorf("a bare frame is %q", b)
	}
	// A CRLF line end (a log copied through Windows) still reads.
	if _, ok := ParseLogLine(strings.TrimSuffix(string(b), "\n") + "\r\n"); !ok {
		t.Error("a CRLF line was refused")
	}
}

// TestParseLogLineRefusesAgentLines: only lazy's own lines parse; an
// agent line that merely begins like one, or is not JSON, is the agent's.
func TestParseLogLineRefusesAgentLines(t *testing.T) {
	for _, line := range []string{
		`{"type":"assistant","message":{}}`,
		`{"lazy":"`,
		`{"lazy":"note" but not json`,
		`{"lazy":""}`,
		` {"lazy":"note"}`,
		`plain text`,
		``,
	} {
		if l, ok := ParseLogLine(line); ok {
			t.Errorf("%q parsed as lazy's: %+v", line, l)
		}
	}
}

func TestStartLaunchFramesAndIndexesEachLaunch(t *testing.T) {
	d := testDir(t)
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	f, err := d.StartLaunch(LogLine{Turn: 1, Kind: "start", Agent: "claude", Run: 1, At: at})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's output, cut mid-line (a killed supervisor).
	if _, err := f.WriteString(`{"type":"assistant"}` + "\npartial"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	f, err = d.StartLaunch(LogLine{Turn: 1, Kind: "start", Agent: "claude", Run: 2, Why: "watchdog", At: at.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if err := d.AppendLogNote(LogLine{Turn: 1, Kind: NoteGate, Text: "the gate failed", Next: "lazy accept t --skip-gate"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(d.Path(LogFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 5 || lines[2] != "partial" {
		t.Fatalf("the log is\n%s", b)
	}
	first, ok1 := ParseLogLine(lines[0])
	second, ok2 := ParseLogLine(lines[3])
	note, ok3 := ParseLogLine(lines[4])
	if !ok1 || !ok2 || !ok3 || first.Lazy != LogTurn || second.Lazy != LogTurn || second.Run != 2 || second.Why != "watchdog" {
		t.Fatalf("frames: %+v %+v", first, second)
	}
	if note.Lazy != LogNote || note.Kind != NoteGate || note.At.IsZero() || note.Next != "lazy accept t --skip-gate" {
		t.Errorf("note: %+v (a note without a time gets now)", note)
	}
	marks := d.LogMarks()
	if len(marks) != 2 || marks[0].Offset != 0 || marks[0].Seq != 1 || marks[0].Kind != "start" || !marks[0].At.Equal(at) {
		t.Fatalf("marks: %+v", marks)
	}
	// The second launch begins after the newline that ended "partial".
	if want := int64(len(lines[0]) + len(lines[1]) + len(lines[2]) + 3); marks[1].Offset != want {
		t.Errorf("the second launch is indexed at %d, want %d", marks[1].Offset, want)
	}
	if string(b[marks[1].Offset:marks[1].Offset+int64(len(LogLinePrefix))]) != LogLinePrefix {
		t.Errorf("the index does not point at the second frame")
	}
	if n := d.Launches(1, "start"); n != 2 {
		t.Errorf("Launches(1, start) = %d", n)
	}
	if n := d.Launches(1, "unblock") + d.Launches(2, "start"); n != 0 {
		t.Errorf("launches of other turns: %d", n)
	}
}

// TestLogMarksSkipsWhatIsTorn: an index line half written (a crash) or
// hand-damaged is skipped, and the others still read.
func TestLogMarksSkipsWhatIsTorn(t *testing.T) {
	d := testDir(t)
	if got := d.LogMarks(); got != nil {
		t.Fatalf("no index: %+v", got)
	}
	if err := os.MkdirAll(d.LogDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	idx := strings.Join([]string{
		"1 start 0 2026-01-01T00:00:00Z",
		"2 unblock 100",
		"x start 5 2026-01-01T00:00:00Z",
		"3 resume y 2026-01-01T00:00:00Z",
		"4 resume 7 yesterday",
		"",
		"5 ask 200 2026-01-02T00:00:00Z",
		"6 ask 3",
	}, "\n")
	if err := os.WriteFile(d.Path(LogIndexFile), []byte(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	marks := d.LogMarks()
	if len(marks) != 2 || marks[0].Seq != 1 || marks[1].Seq != 5 || marks[1].Offset != 200 || marks[1].Kind != "ask" {
		t.Fatalf("marks: %+v", marks)
	}
	if err := d.MarkLog(7, "start", 300, time.Date(2026, 1, 3, 0, 0, 0, 0, time.FixedZone("Y", -7200))); err != nil {
		t.Fatal(err)
	}
	// The torn last line ("6 ask 3", no newline) is ended first, so the
	// new mark reads.
	marks = d.LogMarks()
	if len(marks) != 3 || marks[2].Seq != 7 || marks[2].Offset != 300 || !marks[2].At.Equal(time.Date(2026, 1, 3, 2, 0, 0, 0, time.UTC)) {
		b, _ := os.ReadFile(d.Path(LogIndexFile))
		t.Errorf("after MarkLog: %+v\n%s", marks, b)
	}
}

// TestOpenLogMovesAnOlderLog: a task that ran under an older lazy kept its
// log in the protocol directory; it moves where the log lives now.
func TestOpenLogMovesAnOlderLog(t *testing.T) {
	d := testDir(t)
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(string(d), LogFile), []byte("old output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(string(d), LogIndexFile), []byte("1 start 0 2026-01-01T00:00:00Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenLog()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("new output\n")
	_ = f.Close()
	b, err := os.ReadFile(d.Path(LogFile))
	if err != nil || string(b) != "old output\nnew output\n" {
		t.Fatalf("the log is %q (%v)", b, err)
	}
	if len(d.LogMarks()) != 1 {
		t.Error("the index did not move with the log")
	}
	if _, err := os.Stat(filepath.Join(string(d), LogFile)); !os.IsNotExist(err) {
		t.Errorf("the old log is still in the protocol directory: %v", err)
	}
	// A log already where it belongs is never replaced by an old one.
	if err := os.WriteFile(filepath.Join(string(d), LogFile), []byte("stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err = d.OpenLog()
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if b, _ := os.ReadFile(d.Path(LogFile)); string(b) != "old output\nnew output\n" {
		t.Errorf("an old log replaced the current one: %q", b)
	}
}

func TestLogWritesFailClearly(t *testing.T) {
	// The logs directory cannot be made where a file is.
	lazy := t.TempDir()
	if err := os.WriteFile(filepath.Join(lazy, "logs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := ForTask(lazy, "t")
	if _, err := d.StartLaunch(LogLine{Turn: 1}); err == nil || !strings.Contains(err.Error(), "agent log") {
		t.Errorf("StartLaunch: %v", err)
	}
	if err := d.AppendLogNote(LogLine{Turn: 1}); err == nil || !strings.Contains(err.Error(), "agent log") {
		t.Errorf("AppendLogNote: %v", err)
	}
}

// A task's protocol directory knows the lazy directory it is in.
func TestADirKnowsItsLazyDir(t *testing.T) {
	lazyDir := filepath.Join(t.TempDir(), ".git", "lazy")
	if got := ForTask(lazyDir, "0123456789abcdef").LazyDir(); got != lazyDir {
		t.Fatalf("LazyDir = %q, want %q", got, lazyDir)
	}
}
