package session

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ClaudeProjectDir is where Claude Code keeps the sessions of a working
// directory: the realpath with every character outside [A-Za-z0-9]
// replaced by '-'.
func ClaudeProjectDir(cwd string) string {
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	var b strings.Builder
	for _, r := range cwd {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	base := os.Getenv("CLAUDE_CONFIG_DIR")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".claude")
	}
	return filepath.Join(base, "projects", b.String())
}

// RehydrateClaude copies a session log recorded in the (gone) worktree to
// the project root's session directory, since Claude resumes only from
// the directory a conversation started in.
func RehydrateClaude(worktreeDir, rootDir, sessionID string) error {
	return CopyClaudeSession(ClaudeProjectDir(worktreeDir), ClaudeProjectDir(rootDir), sessionID)
}

// CopyClaudeSession copies a session log from one of Claude Code's
// project directories to another.
func CopyClaudeSession(fromProject, toProject, sessionID string) error {
	if strings.ContainsAny(sessionID, "/\\") || strings.HasPrefix(sessionID, ".") {
		return fmt.Errorf("the recorded Claude session id %q is not a file name", sessionID)
	}
	src := filepath.Join(fromProject, sessionID+".jsonl")
	dst := filepath.Join(toProject, sessionID+".jsonl")
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("the Claude session log %s is gone, so the conversation cannot be resumed: %w", src, err)
	}
	defer func() { _ = in.Close() }()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
