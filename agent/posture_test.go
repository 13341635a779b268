package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The posture table gives a work turn what finishing work takes, and an
// ask nothing that writes, in every posture.
func TestTurnPermissions(t *testing.T) {
	off := Grants{Allow: []string{"go test ./..."}, WritableRoots: []string{"/r/.git/objects", "/r/.git/worktrees/x"}}
	on := Grants{Sandboxed: true}
	cases := []struct {
		agent    string
		readOnly bool
		g        Grants
		want     string
	}{
		{"claude", false, off, "--permission-mode acceptEdits --allowedTools=Bash(git add:*),Bash(git commit:*),"},
		{"claude", false, Grants{PermissionMode: "auto"}, "--permission-mode auto --allowedTools="},
		{"claude", false, on, "--permission-mode bypassPermissions CLAUDE_CODE_BUBBLEWRAP=1"},
		{"claude", true, off, "--permission-mode dontAsk --disallowedTools=Edit,Write,MultiEdit,NotebookEdit,Bash"},
		{"claude", true, on, "--permission-mode dontAsk --disallowedTools=Edit,Write,MultiEdit,NotebookEdit,Bash"},
		{"codex", false, off, "-s workspace-write --add-dir /r/.git/objects --add-dir /r/.git/worktrees/x"},
		{"codex", false, on, "--dangerously-bypass-approvals-and-sandbox"},
		{"codex", true, off, "-s read-only"},
		{"codex", true, on, "-s read-only"},
		{"exec", false, off, "(no flags)"},
		{"exec", true, on, "LAZY_READ_ONLY=1"},
	}
	for _, c := range cases {
		got := TurnPermissions(c.agent, c.readOnly, c.g).String()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s readOnly=%v sandboxed=%v: %q, want prefix %q", c.agent, c.readOnly, c.g.Sandboxed, got, c.want)
		}
	}
	p := TurnPermissions("claude", false, off)
	if !slices.Contains(p.AllowedTools, "Bash(go test ./...:*)") || slices.ContainsFunc(p.AllowedTools, func(s string) bool { return strings.Contains(s, "push") }) {
		t.Errorf("allowed tools %q", p.AllowedTools)
	}
	for _, ro := range []Permissions{TurnPermissions("claude", true, off), TurnPermissions("codex", true, off)} {
		if strings.Contains(ro.String(), "Bash(") || strings.Contains(ro.String(), "--add-dir") || strings.Contains(ro.String(), "bypass") {
			t.Errorf("an ask may write: %s", ro)
		}
	}
	if rows := PostureTable(); len(rows) != 12 || rows[0].Posture != AllowList || rows[11].Posture != Sandboxed {
		t.Errorf("table %+v", rows)
	}
}

func TestCheckAllow(t *testing.T) {
	if err := CheckAllow([]string{"go test ./...", "npm run lint"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", " ", "Bash(go:*)", "a,b", "x:*", "a\nb"} {
		if err := CheckAllow([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The README's posture table is this table: every row is there, as the
// code gives it.
func TestREADMEShowsThePostureTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, row := range PostureTable() {
		cell := "`" + row.Flags + "`"
		if row.Flags == "(no flags)" {
			cell = row.Flags
		}
		want := " | " + row.Agent + " | " + row.Kind + " | " + cell + " |"
		if !slices.ContainsFunc(lines, func(l string) bool {
			return strings.HasPrefix(l, "| "+string(row.Posture)) && strings.HasSuffix(l, want)
		}) {
			t.Errorf("README.md lacks the row %q%s", row.Posture, want)
		}
	}
}
