package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The record bomb: bombEntries comments entries that all name one blob of
// a bombBlob-byte comment. It costs the attacker one blob (a few tens of
// kilobytes compressed) and a tree of ~40 bytes per entry; read whole it
// would be bombEntries*bombBlob bytes (here 150 GB).
const (
	bombEntries = 5000
	bombBlob    = 30 << 20
	// outputBound is far above what a bounded view prints (two comments
	// of 30 MiB cut to 64 KiB each) and far below one uncut comment.
	outputBound = 4 << 20
	// timeBound is generous for a race-instrumented binary on a loaded
	// CI machine (a bounded read takes 1-2 s uninstrumented); a whole
	// read takes far longer, or the machine's memory.
	timeBound = 90 * time.Second
)

// rssBound is above a bounded read's peak (64 MiB of content, held as
// bytes and as decoded strings, plus the runtime: 160 MiB measured) and
// far below what reading the record whole takes. It is measured on a
// build without the race detector (plainLazy), whose shadow memory is
// several times the heap (640 MiB for the same read).
const rssBound = 400 << 20

// maxrssBin is the wrapper that measures a command's own peak RSS (see
// internal/testfakes/maxrss: read directly, a child's peak includes this
// test binary's).
var maxrssBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(lazyBin), "maxrss")
	out, err := exec.Command("go", "build", "-o", bin, "../internal/testfakes/maxrss").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build maxrss: %w\n%s", err, out)
	}
	return bin, nil
})

// plainLazy is a lazy built without the race detector: lazyBin itself
// when the suite built it so, else one more build beside it.
var plainLazy = sync.OnceValues(func() (string, error) {
	if os.Getenv("LAZY_E2E_NORACE") != "" || testing.Short() {
		return lazyBin, nil
	}
	bin := filepath.Join(filepath.Dir(lazyBin), "lazy-plain")
	out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// plantBomb writes, with git plumbing only, a commit on ref whose
// comments/ tree holds n entries naming one valid comment of size bytes.
func plantBomb(t *testing.T, r *runner, ref string, n, size int) {
	t.Helper()
	plumb := func(stdin []byte, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = r.dir
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	body := append([]byte(`{"seq":1,"actor":"human","at":"2026-01-01T00:00:00Z","text":"`), bytes.Repeat([]byte("A"), size)...)
	blob := plumb(append(body, `"}`...), "hash-object", "-w", "--stdin")
	var sub strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sub, "100644 blob %s\t%06d.json\n", blob, i)
	}
	comments := plumb([]byte(sub.String()), "mktree")
	var top strings.Builder
	for _, line := range strings.Split(plumb(nil, "ls-tree", ref), "\n") {
		if !strings.HasSuffix(line, "\tcomments") {
			top.WriteString(line + "\n")
		}
	}
	top.WriteString("040000 tree " + comments + "\tcomments\n")
	tree := plumb([]byte(top.String()), "mktree")
	// The message (lazy's trailers) of the commit it builds on, as a
	// careful attacker would write it.
	msg := plumb(nil, "log", "-1", "--format=%B", ref)
	commit := plumb([]byte(msg+"\n"), "commit-tree", tree, "-p", ref)
	plumb(nil, "update-ref", ref, commit)
}

// measured is one bounded run: how much it printed (and the start of
// it), how long it took, and its peak RSS.
type measured struct {
	head    string
	printed int64
	took    time.Duration
	rss     int64
	code    int
}

// countingHead keeps the first limit bytes written and counts the rest.
type countingHead struct {
	buf   bytes.Buffer
	limit int
	n     int64
}

func (c *countingHead) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// measure runs lazy without holding its output, so a run that prints
// gigabytes fails the size check rather than the test machine.
func measure(t *testing.T, r *runner, stdin []byte, args ...string) measured {
	t.Helper()
	wrapper, err := maxrssBin()
	if err != nil {
		t.Fatal(err)
	}
	rssFile := filepath.Join(t.TempDir(), "maxrss")
	cmd := exec.Command(wrapper, append([]string{rssFile, r.lazy()}, args...)...)
	cmd.Dir, cmd.Env = r.dir, r.environ()
	cmd.Stdin = bytes.NewReader(stdin)
	out := &countingHead{limit: outputBound}
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &errb
	start := time.Now()
	err = cmd.Run()
	m := measured{head: out.buf.String(), printed: out.n, took: time.Since(start)}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run lazy %v: %v", args, err)
	}
	m.code = cmd.ProcessState.ExitCode()
	if m.code == 0 {
		kib, err := os.ReadFile(rssFile)
		if err != nil {
			t.Fatalf("the peak RSS of lazy %v: %v", args, err)
		}
		if m.rss, err = strconv.ParseInt(string(kib), 10, 64); err != nil {
			t.Fatalf("the peak RSS of lazy %v: %v", args, err)
		}
		m.rss <<= 10 // KiB on Linux
	}
	if m.code != 0 {
		t.Fatalf("lazy %v: exit %d\n%s", args, m.code, errb.String())
	}
	return m
}

func (m measured) check(t *testing.T, what string, bound int64, want ...string) {
	t.Helper()
	t.Logf("%s: printed %d bytes in %v, peak RSS %d MiB", what, m.printed, m.took.Round(time.Millisecond), m.rss>>20)
	if m.printed > bound || m.took > timeBound || m.rss > rssBound {
		t.Fatalf("%s is not bounded: printed %d bytes in %v at %d MiB RSS", what, m.printed, m.took, m.rss>>20)
	}
	for _, w := range want {
		if !strings.Contains(m.head, w) {
			t.Fatalf("%s does not say %q:\n%.3000s", what, w, m.head)
		}
	}
}

// TestRecordBombIsBoundedEverywhere: an attacker pushes a task whose
// comments/ tree names one 30 MiB comment 5,000 times. lazy pull refuses
// it with the reason (text and --json). Where it arrives anyway (a plain
// git fetch, a clone, an older lazy), lazy show, show --json, an MCP
// lazy_show and the daemon's web task page each finish fast, print a few
// hundred kilobytes, stay within a bounded RSS, and say what they cut.
func TestRecordBombIsBoundedEverywhere(t *testing.T) {
	victim, attacker := clones(t)
	victim.create("honest work")
	victim.ok("push")
	attacker.ok("init")
	attacker.ok("pull")
	bomb := attacker.create("bomb")
	ref := "refs/lazy/tasks/" + bomb.ID
	plantBomb(t, attacker, ref, bombEntries, bombBlob)
	attacker.git("push", "-q", "origin", ref+":"+ref)

	res := victim.run(nil, "pull")
	if res.Code != 0 || !strings.Contains(res.Stderr, "skipped refs/lazy-remotes/origin/tasks/"+bomb.ID) || !strings.Contains(res.Stderr, "over lazy's limits for a whole record") {
		t.Fatalf("pull did not refuse the bomb:\n%s", res)
	}
	var rep struct {
		Skipped []struct{ Ref, Reason string } `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(victim.ok("pull", "--json")), &rep); err != nil || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, "5000 comments") {
		t.Fatalf("pull --json: %+v (%v)", rep, err)
	}

	victim.git("fetch", "-q", "origin", "+"+ref+":"+ref)
	plain, err := plainLazy()
	if err != nil {
		t.Fatal(err)
	}
	victim.bin = plain // memory is measured without the race detector's
	cut := "showing the last 2 of 5000 comments; the record is over lazy's limits"
	measure(t, victim, nil, "show", bomb.ID).check(t, "lazy show", outputBound, cut, "truncated, ", "--full shows it whole")
	measure(t, victim, nil, "show", "--json", bomb.ID).check(t, "lazy show --json", outputBound, cut, "truncated, ")
	measure(t, victim, nil, "show", "--full", bomb.ID).check(t, "lazy show --full", 65<<20, cut) // whole texts, within the 64 MiB a read loads
	mcpShow(t, victim, bomb.ID, cut)
	webPage(t, withDaemon(t, victim), bomb.ID, cut)
}

// mcpShow calls lazy_show through the MCP SDK's client and checks the
// result and the server's peak RSS are bounded.
func mcpShow(t *testing.T, r *runner, id, want string) {
	t.Helper()
	s, cmd := mcpClient(t, r, nil, "mcp")
	start := time.Now()
	out := call(t, s, "lazy_show", map[string]any{"task": id}, false)
	m := measured{head: out, printed: int64(len(out)), took: time.Since(start), rss: peakRSS(t, cmd.Process.Pid)}
	m.check(t, "MCP lazy_show", outputBound, want, "truncated, ")
}

// webPage gets the task page from the daemon's web view and checks the
// page and the daemon's peak RSS are bounded.
func webPage(t *testing.T, d *runner, id, want string) {
	t.Helper()
	var w struct{ URL string }
	if err := json.Unmarshal([]byte(d.ok("web", "--json")), &w); err != nil {
		t.Fatal(err)
	}
	base, token, _ := strings.Cut(w.URL, "/?token=")
	start := time.Now()
	resp, err := http.Get(base + "/task/" + id + "?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	page := &countingHead{limit: outputBound}
	_, err = io.Copy(page, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /task/%s: %d, %v", id, resp.StatusCode, err)
	}
	rss := peakRSS(t, d.daemonInfo().PID)
	m := measured{head: page.buf.String(), printed: page.n, took: time.Since(start), rss: rss}
	m.check(t, "web task page (daemon RSS)", outputBound, strings.ReplaceAll(want, "'", "&#39;"), "truncated, ")
}

// peakRSS is a process's peak resident set (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	t.Fatalf("no VmHWM for pid %d", pid)
	return 0
}
