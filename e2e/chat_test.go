package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
)

func TestChatHoldsTheWorktreeAndLeavesTheStatus(t *testing.T) {
	r := newRepo(t)
	tk := workedTask(t, r, "chatty", "c.txt c")
	dir := t.TempDir()
	ro := filepath.Join(dir, "read-only")
	open := r.with("SHELL="+fakeAgentBin, script(t, "getenv LAZY_READ_ONLY "+ro, "hang"))
	cmd, _, _ := ptyRun(t, open, &pty.Winsize{Rows: 24, Cols: 80}, "chat", tk.Slug)
	waitFile(t, ro)
	if b, _ := os.ReadFile(ro); string(b) != "1" {
		t.Fatalf("the chat agent was not told it is read-only: %q", b)
	}
	for _, args := range [][]string{
		{"unblock", tk.Slug, "-m", "go on"},
		{"sync", tk.Slug},
		{"accept", tk.Slug},
	} {
		res := r.run(nil, args...)
		if res.Code == 0 || !strings.Contains(res.Stderr, "chat") {
			t.Fatalf("lazy %v during a chat: %s", args, res)
		}
	}
	second, _, out := ptyRun(t, open, &pty.Winsize{Rows: 24, Cols: 80}, "chat", tk.Slug)
	if err := second.Wait(); err == nil || !strings.Contains(out(), "a lazy chat") {
		t.Fatalf("a second chat: %v %q", err, out())
	}
	if got := r.refStatus(tk.ID); got != "blocked" {
		t.Fatalf("a chat changed the status to %s", got)
	}
	// The kernel releases the lock with the process.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	r.ok("sync", tk.Slug)
	r.waitStatus(tk.Slug, "blocked")

	// A chat that ends normally leaves a turn and the status as it was.
	done := r.with("SHELL="+fakeAgentBin, script(t, "print talked"))
	cmd, _, _ = ptyRun(t, done, &pty.Winsize{Rows: 24, Cols: 80}, "chat", tk.Slug)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s := r.showFull(tk.Slug)
	if last := s.TurnList[len(s.TurnList)-1]; s.Status != "blocked" || last.Kind != "chat" {
		t.Fatalf("after a chat: %s, %+v", s.Status, last)
	}
	if msg := r.fails(1, nil, "chat", tk.Slug); !strings.Contains(msg, "terminal") {
		t.Fatalf("chat without a terminal: %s", msg)
	}
}

// escapeClaude is Claude Code's session directory name for a cwd.
func escapeClaude(p string) string {
	var b strings.Builder
	for _, c := range p {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestChatOnAFinishedTaskResumesInTheProjectRoot(t *testing.T) {
	config := t.TempDir()
	r := withFakeClaude(t, newRepo(t)).with("CLAUDE_CONFIG_DIR=" + config)
	work := r.with(script(t, "claude-init sess-x", "write w.txt w", "commit claude: w", "claude-result done"))
	tk := work.create("claude work")
	work.ok("start", tk.Slug)
	s := work.waitStatus(tk.Slug, "blocked")
	// The session log Claude wrote for the worktree.
	logDir := filepath.Join(config, "projects", escapeClaude(s.Session.Worktree))
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logDir, "sess-x.jsonl"), []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.ok("accept", tk.Slug)
	argvFile := filepath.Join(t.TempDir(), "argv")
	chat := r.with(script(t, "argv "+argvFile, "print resumed"))
	cmd, _, output := ptyRun(t, chat, &pty.Winsize{Rows: 24, Cols: 80}, "chat", tk.Slug)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat: %v\n%s", err, output())
	}
	var got struct {
		Argv []string `json:"argv"`
		Cwd  string   `json:"cwd"`
	}
	b, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Cwd != r.dir || !strings.Contains(strings.Join(got.Argv, " "), "--resume=sess-x --permission-mode plan") {
		t.Fatalf("chat ran %q in %s", got.Argv, got.Cwd)
	}
	if _, err := os.Stat(filepath.Join(config, "projects", escapeClaude(r.dir), "sess-x.jsonl")); err != nil {
		t.Fatalf("the session log was not rehydrated for the project root: %v", err)
	}
	if st := r.show(tk.Slug).Status; st != "complete" {
		t.Fatalf("a chat changed a finished task to %s", st)
	}
}
