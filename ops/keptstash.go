package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/gitcli"
)

// keptStashRefs is where lazy records each stash of the user's changes
// it made and has not given back yet: refs/lazy-kept/stash/<task>/<sha>.
// A ref is written atomically, survives a kill, is shared by every
// checkout of the repository, and keeps the stash commit reachable even
// if the stash list is edited or cleared.
const keptStashRefs = "refs/lazy-kept/stash/"

// stashSubjectPrefix starts the message of every stash an accept makes.
const stashSubjectPrefix = "lazy accept "

// errStashConflicts says a stash was not applied because it would
// conflict with the checkout: nothing of it was written there.
var errStashConflicts = errors.New("they conflict with what is in the checkout now, so lazy did not apply them")

// OwedStash is a stash of the user's uncommitted changes that an accept
// made and has not given back: lazy doctor and lazy status report it,
// with the command that restores it, until the changes are back.
type OwedStash struct {
	SHA    string    `json:"sha"`
	TaskID string    `json:"task_id,omitempty"`
	At     time.Time `json:"at"`
	// Dir is the checkout the changes came from (where to restore them).
	Dir string `json:"dir"`
	// Restore is the command that gives the changes back.
	Restore string `json:"restore"`
	// Ref is the record under refs/lazy-kept/stash/, or "" for a stash
	// found only in the stash list (an accept killed before its record).
	Ref string `json:"ref,omitempty"`
}

// Describe is one sentence about the stash for a report.
func (o OwedStash) Describe() string {
	discard := "drop it from git stash list"
	if o.Ref != "" {
		discard = "git update-ref -d " + o.Ref
	}
	return fmt.Sprintf("your uncommitted changes in %s from %s are only in stash %s, which lazy made during an accept; restore them with: %s (lazy forgets the stash once they are back; to discard them instead: %s)",
		o.Dir, o.At.UTC().Format(time.RFC3339), o.SHA, o.Restore, discard)
}

// keepStash records stash sha of task id durably, before anything else
// can lose it.
func keepStash(ctx context.Context, dir, id, sha string) error {
	if !gitstore.ValidHex(sha) || !validRefPart(id) {
		return fmt.Errorf("cannot record stash %q of task %q", sha, id)
	}
	return gitcli.New(dir, "update-ref", "-m", "lazy: stash kept", keptStashRefs+id+"/"+sha, sha, "").Run(ctx)
}

// validRefPart is true of a task id usable as one ref path component.
func validRefPart(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !refPartRune(r) {
			return false
		}
	}
	return true
}

// keptFor says whether stash sha is one this machine kept for task id.
func keptFor(ctx context.Context, dir, id, sha string) bool {
	if !gitstore.ValidHex(sha) || !validRefPart(id) {
		return false
	}
	return gitcli.New(dir, "rev-parse", "--verify", "--quiet", keptStashRefs+id+"/"+sha).Run(ctx) == nil
}

// forgetStash removes the record of stash sha: its changes are back.
func forgetStash(ctx context.Context, dir, sha string) {
	refs, err := gitcli.New(dir, "for-each-ref", "--format=%(refname)", keptStashRefs).String(ctx)
	if err != nil {
		return
	}
	for _, ref := range strings.Split(refs, "\n") {
		if ref != "" && strings.HasSuffix(ref, "/"+sha) {
			_ = gitcli.New(dir, "update-ref", "-d", ref, sha).Run(ctx)
		}
	}
}

// stashApplies says whether stash sha can be given back in dir without a
// conflict, without touching dir: its tracked changes merge cleanly onto
// HEAD and none of its untracked files exists there.
func stashApplies(ctx context.Context, dir, sha string) error {
	if out, err := gitcli.New(dir, "status", "--porcelain", "--untracked-files=no").String(ctx); err != nil {
		return err
	} else if out != "" {
		return errStashConflicts
	}
	if err := gitcli.New(dir, "merge-tree", "--write-tree", "--no-messages", "HEAD", sha).Run(ctx); err != nil {
		var ge *gitcli.Error
		if errors.As(err, &ge) && ge.ExitCode() == 1 {
			return errStashConflicts
		}
		return err
	}
	untracked, err := gitcli.New(dir, "ls-tree", "-r", "-z", "--name-only", sha+"^3").Output(ctx)
	if err != nil {
		return nil // the stash holds no untracked files
	}
	for _, p := range strings.Split(strings.TrimSuffix(string(untracked), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		if !filepath.IsLocal(p) {
			return errStashConflicts
		}
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			return errStashConflicts
		}
	}
	return nil
}

// OwedStashes lists the stashes accepts made of the user's changes and
// have not given back: those recorded under refs/lazy-kept/stash/, and
// any stash in the stash list with an accept's message (an accept killed
// between its stash and its record). A stash whose accept is still
// running is not owed yet: that accept holds the task lock and gives it
// back itself. With mend, an unrecorded stash is recorded and a recorded
// one whose changes are all back in its checkout is forgotten; without
// it (lazy status, lazy doctor --dry-run) nothing is written.
func (e *Env) OwedStashes(ctx context.Context, mend bool) ([]OwedStash, error) {
	byRef, err := e.keptStashes(ctx)
	if err != nil {
		return nil, err
	}
	e.addUnrecordedStashes(ctx, byRef)
	var out []OwedStash
	for sha, ref := range byRef {
		if o, owed := e.checkOwed(ctx, sha, ref, mend); owed {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].At.Before(out[j].At) || out[i].At.Equal(out[j].At) && out[i].SHA < out[j].SHA
	})
	return out, nil
}

// keptStashes maps each recorded stash to its ref under keptStashRefs.
func (e *Env) keptStashes(ctx context.Context) (map[string]string, error) {
	refs, err := gitcli.New(e.repoDir(), "for-each-ref", "--format=%(refname) %(objectname)", keptStashRefs).String(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the stashes lazy keeps: %w", err)
	}
	byRef := map[string]string{}
	for _, line := range strings.Split(refs, "\n") {
		if ref, sha, ok := strings.Cut(line, " "); ok {
			byRef[sha] = ref
		}
	}
	return byRef, nil
}

// addUnrecordedStashes adds the accept stashes in the stash list that
// have no record (byRef maps them to "" until one is written).
func (e *Env) addUnrecordedStashes(ctx context.Context, byRef map[string]string) {
	list, err := gitcli.New(e.repoDir(), "stash", "list", "--format=%H %s").String(ctx)
	if err != nil {
		return
	}
	for _, line := range strings.Split(list, "\n") {
		sha, subject, _ := strings.Cut(line, " ")
		if _, ok := byRef[sha]; ok || !gitstore.ValidHex(sha) || !isAcceptStash(subject) {
			continue
		}
		byRef[sha] = keptStashRefs + stashTask(subject) + "/" + sha
	}
}

// checkOwed decides whether stash sha is owed, under its task's lock so
// that no accept of the task is between its stash and its record or
// return meanwhile; with mend it records or forgets the stash.
func (e *Env) checkOwed(ctx context.Context, sha, ref string, mend bool) (OwedStash, bool) {
	o := e.describeStash(ctx, sha, ref)
	if validRefPart(o.TaskID) {
		unlock, err := e.TryLockTask(o.TaskID)
		if errors.Is(err, flock.ErrHeld) {
			return o, false // its accept is running and will give it back
		}
		if err == nil {
			defer unlock()
		}
	}
	if o.Dir != "" && stashInWorktree(ctx, o.Dir, sha) && stashApplies(ctx, o.Dir, sha) != nil {
		// Every byte of it is back in the checkout.
		if mend {
			dropStash(ctx, o.Dir, sha)
		}
		return o, false
	}
	if !refExists(ctx, e.repoDir(), ref) && (!mend || keepStash(ctx, e.repoDir(), o.TaskID, sha) != nil) {
		o.Ref = "" // in the stash list only
	}
	return o, true
}

// refExists is true when ref names an object.
func refExists(ctx context.Context, dir, ref string) bool {
	return gitcli.New(dir, "rev-parse", "--verify", "--quiet", ref).Run(ctx) == nil
}

// describeStash reads what a kept stash is from the stash commit itself.
func (e *Env) describeStash(ctx context.Context, sha, ref string) OwedStash {
	o := OwedStash{SHA: sha, Ref: ref, TaskID: strings.TrimSuffix(strings.TrimPrefix(ref, keptStashRefs), "/"+sha)}
	dir := e.repoDir()
	if info, err := gitcli.New(dir, "log", "-1", "--format=%ct %s", sha).String(ctx); err == nil {
		ts, subject, _ := strings.Cut(info, " ")
		if n, err := strconv.ParseInt(ts, 10, 64); err == nil {
			o.At = time.Unix(n, 0).UTC()
		}
		// "On <branch>: lazy accept ...": the checkout of that branch.
		if b, _, ok := strings.Cut(strings.TrimPrefix(subject, "On "), ": "); ok && strings.HasPrefix(subject, "On ") && ValidBranchName(b) == nil {
			if d, err := checkedOutAt(ctx, dir, b); err == nil && d != "" {
				o.Dir = d
			}
		}
	}
	if o.Dir == "" {
		o.Dir = dir
	}
	o.Restore = "git -C " + shellQuote(o.Dir) + " stash apply " + sha
	return o
}

// isAcceptStash is true of a stash subject an accept wrote.
func isAcceptStash(subject string) bool {
	_, msg, ok := strings.Cut(subject, ": ")
	return ok && strings.HasPrefix(msg, stashSubjectPrefix) && stashTask(subject) != ""
}

// stashTask is the task id in an accept stash's subject, or "".
func stashTask(subject string) string {
	i := strings.LastIndex(subject, " (")
	if i < 0 {
		return ""
	}
	id, _, ok := strings.Cut(subject[i+2:], ")")
	if !ok || !validRefPart(id) {
		return ""
	}
	return id
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !alnum(r) && !strings.ContainsRune("/._-+=:,@", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// alnum is true of an ASCII letter or digit.
func alnum(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' }

// refPartRune is true of a rune lazy allows in one ref path component.
func refPartRune(r rune) bool { return alnum(r) || r == '-' || r == '_' }
