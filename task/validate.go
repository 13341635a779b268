package task

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lazyorch/lazy/machine"
)

// ValidBranchName applies git's ref-name rules (git check-ref-format
// --branch) without spawning git, and additionally refuses a leading dash
// so a branch can never be read as an option.
func ValidBranchName(b string) error {
	bad := func(why string) error { return fmt.Errorf("invalid branch name %q: %s", b, why) }
	switch {
	case b == "" || b == "@":
		return bad("it is empty")
	case strings.HasPrefix(b, "-"):
		return bad("it starts with a dash")
	case strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") || strings.HasSuffix(b, "."):
		return bad("it starts or ends with / or ends with .")
	case strings.Contains(b, "..") || strings.Contains(b, "//") || strings.Contains(b, "@{"):
		return bad("it contains .., // or @{")
	case strings.HasSuffix(b, ".lock") || strings.Contains(b, ".lock/"):
		return bad("a component ends in .lock")
	case len(b) > 255:
		return bad("it is longer than 255 bytes")
	}
	for _, comp := range strings.Split(b, "/") {
		if strings.HasPrefix(comp, ".") {
			return bad("a component starts with a dot")
		}
	}
	for _, r := range b {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad(fmt.Sprintf("it contains %q", r))
		}
	}
	return nil
}

// ValidPattern checks an allowed-paths glob: relative, inside the
// repository, and unable to pose as an option.
func ValidPattern(p string) error {
	switch {
	case p == "":
		return errors.New("an allowed path may not be empty")
	case strings.HasPrefix(p, "-"):
		return fmt.Errorf("allowed path %q starts with a dash", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("allowed path %q is absolute; use a path relative to the repository", p)
	}
	for _, comp := range strings.Split(p, "/") {
		if comp == ".." {
			return fmt.Errorf("allowed path %q leaves the repository (..)", p)
		}
	}
	return nil
}

// ValidateRecord checks what a record from another machine could use to
// reach git argv or the filesystem. Records are untrusted: a malformed
// one is refused, never partially used.
func ValidateRecord(sn *Snapshot) error {
	t := &sn.Task
	if err := CheckTask(t); err != nil {
		return err
	}
	if t.TargetBranch != "" {
		if err := ValidBranchName(t.TargetBranch); err != nil {
			return fmt.Errorf("target branch: %w", err)
		}
	}
	for _, p := range t.AllowedPaths {
		if err := ValidPattern(p); err != nil {
			return err
		}
	}
	if a := t.Accept; a != nil {
		if err := ValidBranchName(a.Into); err != nil {
			return fmt.Errorf("accept record: %w", err)
		}
		if a.IntoSHA != "" && !ValidHex(a.IntoSHA) {
			return fmt.Errorf("accept record names %q, not a commit id", a.IntoSHA)
		}
		if a.ID != "" && !ValidID(a.ID) {
			return fmt.Errorf("accept record's id %q is not an accept id", a.ID)
		}
		if a.StashSHA != "" && !ValidHex(a.StashSHA) {
			return fmt.Errorf("accept record names the stash %q, not a commit id", a.StashSHA)
		}
		if a.Dest != "" && (!filepath.IsAbs(a.Dest) || filepath.Clean(a.Dest) != a.Dest) {
			return fmt.Errorf("accept record's checkout %q is not a clean absolute path", a.Dest)
		}
		if a.Host != "" && !validHost(a.Host) {
			return fmt.Errorf("accept record's host %q is not a host id", a.Host)
		}
	}
	if s := sn.Session; s != nil {
		if s.Branch != "" {
			if err := ValidBranchName(s.Branch); err != nil {
				return fmt.Errorf("session branch: %w", err)
			}
		}
		if s.Worktree != "" && (!filepath.IsAbs(s.Worktree) || filepath.Clean(s.Worktree) != s.Worktree) {
			return fmt.Errorf("session worktree %q is not a clean absolute path", s.Worktree)
		}
		if s.Host != "" && !validHost(s.Host) {
			return fmt.Errorf("session host %q is not a host id", s.Host)
		}
		if s.GitStartSHA != "" && !ValidHex(s.GitStartSHA) {
			return fmt.Errorf("session start %q is not a commit id", s.GitStartSHA)
		}
		if s.ID != "" && !ValidID(s.ID) {
			return fmt.Errorf("session id %q is not an id lazy mints", s.ID)
		}
		if s.AgentSessionID != "" && !ValidAgentSession(s.AgentSessionID) {
			return fmt.Errorf("agent session id %q could be read as an option or a path", s.AgentSessionID)
		}
		if s.ParkTo != "" && s.ParkTo != machine.Blocked && s.ParkTo != machine.Submitted {
			return fmt.Errorf("session park_to %q is not a status a turn parks back to", s.ParkTo)
		}
	}
	for _, p := range sn.Violations.Pending {
		if !filepath.IsLocal(p) || strings.HasPrefix(p, "-") {
			return fmt.Errorf("pending violation %q is not a path inside a worktree", p)
		}
	}
	for p, base := range sn.Violations.Bases {
		if !filepath.IsLocal(p) || !ValidHex(base) {
			return fmt.Errorf("violation base %q for %q is not a commit id and a path inside a worktree", base, p)
		}
	}
	for p := range sn.Violations.Decided {
		if !filepath.IsLocal(p) {
			return fmt.Errorf("violation decision for %q is not a path inside a worktree", p)
		}
	}
	return nil
}

// ValidAgentSession accepts the shape of an agent CLI's session or
// thread id: it goes into argv (--resume=<id>, codex resume <id>), so it
// may not start with a dash or hold anything but id characters.
func ValidAgentSession(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '-' || id[0] == '.' {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == ':'
		if !ok {
			return false
		}
	}
	return true
}

func validHost(h string) bool {
	if h == "" || len(h) > 64 || strings.HasPrefix(h, "-") {
		return false
	}
	for _, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_'
		if !ok {
			return false
		}
	}
	return true
}

// CheckTask validates a decoded task.json; records come from other
// machines and from hand edits, so nothing in them is trusted. That the
// record names the id it is stored under is the store's to check.
func CheckTask(t *Task) error {
	switch {
	case t.Version > SchemaVersion:
		return fmt.Errorf("task.json has schema version %d; this lazy understands up to %d (upgrade lazy)", t.Version, SchemaVersion)
	case !ValidSlug(t.Slug):
		return fmt.Errorf("task.json has an invalid slug %q", t.Slug)
	case !t.Status.Valid():
		return fmt.Errorf("task.json has an unknown status %q", t.Status)
	case t.Parent != "" && !ValidID(t.Parent):
		return fmt.Errorf("task.json has an invalid parent id %q", t.Parent)
	case t.AttemptOf != "" && !ValidID(t.AttemptOf):
		return fmt.Errorf("task.json has an invalid attempt group id %q", t.AttemptOf)
	case len(t.Attempts) > MaxAttempts:
		return fmt.Errorf("task.json lists %d attempts; lazy allows at most %d", len(t.Attempts), MaxAttempts)
	}
	for _, id := range t.Attempts {
		if !ValidID(id) {
			return fmt.Errorf("task.json lists an invalid attempt id %q", id)
		}
	}
	if err := checkGate(t.Gate); err != nil {
		return err
	}
	if err := checkPick(t.Pick); err != nil {
		return err
	}
	if err := checkPool(t); err != nil {
		return err
	}
	return checkForge(t.Forge)
}
