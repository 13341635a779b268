package landing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// keptStashRefs is where lazy records each stash of the user's changes
// it made and has not given back yet: refs/lazy-kept/stash/<task>/<sha>.
// A ref is written atomically, survives a kill, is shared by every
// checkout of the repository, and keeps the stash commit reachable even
// if the stash list is edited or cleared.
const keptStashRefs = "refs/lazy-kept/stash/"

// owedRefs holds, for each branch whose checkout accepts stashed, the
// one stash lazy owes the user there once several were folded together:
// refs/lazy-kept/owed/<16 hex of the branch name's SHA-256>. However many
// accepts were killed, a checkout's changes are then in one place, one
// git stash apply away.
const owedRefs = "refs/lazy-kept/owed/"

// owedRef is the ref of branch's folded stash.
func owedRef(branch string) string {
	sum := sha256.Sum256([]byte(branch))
	return owedRefs + hex.EncodeToString(sum[:8])
}

// stashSubjectPrefix starts the message of every stash an accept makes.
const stashSubjectPrefix = "lazy accept "

// OwedStash is a stash of the user's uncommitted changes that an accept
// made and has not given back: lazy doctor, lazy status and lazy stash
// report it, with the command that restores it, until the changes are
// back. Several owed in one checkout are folded into one (Parts).
type OwedStash struct {
	SHA    string    `json:"sha"`
	TaskID string    `json:"task_id,omitempty"`
	At     time.Time `json:"at"`
	// Dir is the checkout the changes came from (where to restore them).
	Dir string `json:"dir"`
	// Target is the branch checked out there when they were stashed.
	Target string `json:"target,omitempty"`
	// Restore is the command that gives the changes back.
	Restore string `json:"restore"`
	// Ref is the record under refs/lazy-kept/, or "" for a stash found
	// only in the stash list (an accept killed before its record).
	Ref string `json:"ref,omitempty"`
	// Parts are the stashes folded into this one, oldest first; Restore
	// gives them back in that order. Empty when none was folded.
	Parts []StashPart `json:"parts,omitempty"`
	// Conflicts are files two parts changed differently: the restore
	// leaves both versions there between conflict markers.
	Conflicts []string `json:"conflicts,omitempty"`
}

// StashPart is one stash folded into an owed one.
type StashPart struct {
	SHA    string    `json:"sha"`
	TaskID string    `json:"task_id,omitempty"`
	At     time.Time `json:"at"`
}

// Describe is one sentence about the stash for a report.
func (o OwedStash) Describe() string {
	discard := "drop it from git stash list"
	if o.Ref != "" {
		discard = "git update-ref -d " + o.Ref
	}
	if len(o.Parts) < 2 {
		return fmt.Sprintf("your uncommitted changes in %s from %s are only in stash %s, which lazy made during an accept; restore them with: %s (lazy forgets the stash once they are back; to discard them instead: %s)",
			o.Dir, o.At.UTC().Format(time.RFC3339), o.SHA, o.Restore, discard)
	}
	var parts []string
	for _, p := range o.Parts {
		parts = append(parts, p.SHA[:min(12, len(p.SHA))]+" "+p.At.UTC().Format(time.RFC3339))
	}
	clash := ""
	if len(o.Conflicts) > 0 {
		clash = "; " + strings.Join(o.Conflicts, ", ") + " will hold both versions between conflict markers, to resolve"
	}
	return fmt.Sprintf("your uncommitted changes in %s from %d interrupted accepts (oldest first: %s) are kept together in stash %s, which lazy folded them into; restore them all with: %s (the older changes first, the newer on top%s; lazy forgets the stash once they are back; to discard them instead: %s)",
		o.Dir, len(o.Parts), strings.Join(parts, ", "), o.SHA, o.Restore, clash, discard)
}

// Stashing is git's stash in the destination: the user's uncommitted
// changes set aside across a merge, given back, folded into one when an
// accept owes several.
type Stashing interface {
	StashPush(ctx context.Context, dir, msg string) (string, error)
	StashApply(ctx context.Context, dir, sha string) error
	StashApplies(ctx context.Context, dir, sha string) error
	StashDrop(ctx context.Context, dir, sha string) error
	Stashes(ctx context.Context, dir string) ([]worktree.Stash, error)
	StashInWorktree(ctx context.Context, dir, sha string) bool
	FoldStashes(ctx context.Context, dir, branch, older, newer string, count int, conflicts []string) (worktree.Folded, error)
	StashStore(ctx context.Context, dir, sha, msg string) error
	StashParts(ctx context.Context, dir, sha string) ([]string, []string, error)
}

// StashRefs is where a kept stash is recorded (lazy's refs beside the
// branches) and what its report reads: the stash commit's date and
// subject, and the checkout of the branch it goes back to.
type StashRefs interface {
	CreateRef(ctx context.Context, dir, ref, sha, why string) error
	SwapRef(ctx context.Context, dir, ref, sha, old, why string) error
	DeleteRef(ctx context.Context, dir, ref, sha string) error
	RefExists(ctx context.Context, dir, ref string) bool
	RefsUnder(ctx context.Context, dir, prefix string) ([]worktree.Ref, error)
	CommitInfo(ctx context.Context, dir, sha string) (time.Time, string, error)
	IsAncestor(ctx context.Context, repoDir, ancestor, of string) bool
	CheckedOutAt(ctx context.Context, repoDir, branch string) (string, error)
}

// StashGit is what the kept stashes ask of git: the stash itself and the
// refs that keep it, together.
type StashGit interface {
	Stashing
	StashRefs
}

// git is git in the kept stashes' role.
func (e *Stashes) git() StashGit { return e.worktrees() }

// keepStash records stash sha of task id durably, before anything else
// can lose it.
func (e *Stashes) keepStash(ctx context.Context, dir, id, sha string) error {
	if !task.ValidHex(sha) || !validRefPart(id) {
		return fmt.Errorf("cannot record stash %q of task %q", sha, id)
	}
	return e.git().CreateRef(ctx, dir, keptStashRefs+id+"/"+sha, sha, "lazy: stash kept")
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
func (e *Stashes) keptFor(ctx context.Context, dir, id, sha string) bool {
	if !task.ValidHex(sha) || !validRefPart(id) {
		return false
	}
	return e.git().RefExists(ctx, dir, keptStashRefs+id+"/"+sha)
}

// forgetStash removes the record of stash sha: its changes are back.
func (e *Stashes) forgetStash(ctx context.Context, dir, sha string) {
	for _, prefix := range []string{keptStashRefs, owedRefs} {
		refs, err := e.git().RefsUnder(ctx, dir, prefix)
		if err != nil {
			continue
		}
		for _, ref := range refs {
			if ref.SHA == sha || strings.HasSuffix(ref.Name, "/"+sha) {
				_ = e.git().DeleteRef(ctx, dir, ref.Name, sha)
			}
		}
	}
}

// OwedStashes lists the stashes accepts made of the user's changes and
// have not given back, oldest first: those recorded under
// refs/lazy-kept/, and any stash in the stash list with an accept's
// message (an accept killed between its stash and its record). A stash
// whose accept is still running is not owed yet: that accept holds the
// task lock and gives it back itself. With mend, an unrecorded stash is
// recorded, a recorded one whose changes are all back in its checkout
// is forgotten, and the stashes owed in one checkout are folded into one
// (see foldOwed); without it (lazy status, lazy doctor --dry-run)
// nothing is written.
func (e *Stashes) OwedStashes(ctx context.Context, mend bool) ([]OwedStash, error) {
	out, err := e.owedStashes(ctx, mend, "")
	if err != nil || !mend {
		return out, err
	}
	folded := false
	for _, target := range foldable(out) {
		release, err := e.Recovery().tryDestination(target)
		if err != nil {
			continue // an accept into it runs, and folds them when it can
		}
		folded = e.foldOwed(ctx, target, "") != "" || folded
		release()
	}
	if !folded {
		return out, nil
	}
	return e.owedStashes(ctx, false, "")
}

// foldable lists the targets with more than one owed stash.
func foldable(owed []OwedStash) []string {
	n := map[string]int{}
	var out []string
	for _, o := range owed {
		if o.Target == "" {
			continue
		}
		if n[o.Target]++; n[o.Target] == 2 {
			out = append(out, o.Target)
		}
	}
	return out
}

// owedStashes is OwedStashes without the folding; the stash of task
// mine is owed even though this process holds its lock.
func (e *Stashes) owedStashes(ctx context.Context, mend bool, mine string) ([]OwedStash, error) {
	byRef, err := e.keptStashes(ctx)
	if err != nil {
		return nil, err
	}
	e.addUnrecordedStashes(ctx, byRef)
	var out []OwedStash
	for sha, ref := range byRef {
		if o, owed := e.checkOwed(ctx, sha, ref, mend, mine); owed {
			out = append(out, o)
		}
	}
	out = e.dropFolded(ctx, out, mend)
	sort.Slice(out, func(i, j int) bool {
		return out[i].At.Before(out[j].At) || out[i].At.Equal(out[j].At) && out[i].SHA < out[j].SHA
	})
	return out, nil
}

// dropFolded leaves out the stashes already folded into their target's
// owed stash (a fold killed before it let go of them): with mend, their
// records and stash list entries go too.
func (e *Stashes) dropFolded(ctx context.Context, owed []OwedStash, mend bool) []OwedStash {
	heads := map[string]string{} // target -> its folded stash
	for _, o := range owed {
		if o.Target != "" && o.Ref == owedRef(o.Target) {
			heads[o.Target] = o.SHA
		}
	}
	var out []OwedStash
	for _, o := range owed {
		head := heads[o.Target]
		if head == "" || head == o.SHA || !e.git().IsAncestor(ctx, e.Dir(), o.SHA, head) {
			out = append(out, o)
			continue
		}
		if mend {
			if o.Ref != "" {
				_ = e.git().DeleteRef(ctx, e.Dir(), o.Ref, o.SHA)
			}
			_ = e.git().StashDrop(ctx, e.Dir(), o.SHA)
		}
	}
	return out
}

// keptStashes maps each recorded stash to its ref under keptStashRefs
// or owedRefs.
func (e *Stashes) keptStashes(ctx context.Context) (map[string]string, error) {
	byRef := map[string]string{}
	for _, prefix := range []string{keptStashRefs, owedRefs} {
		refs, err := e.git().RefsUnder(ctx, e.Dir(), prefix)
		if err != nil {
			return nil, fmt.Errorf("list the stashes lazy keeps: %w", err)
		}
		for _, ref := range refs {
			byRef[ref.SHA] = ref.Name
		}
	}
	return byRef, nil
}

// addUnrecordedStashes adds the accept stashes in the stash list that
// have no record (byRef maps them to the ref one would have, "" until it
// is written): an accept's, by the task its message names, and a folded
// one, by the branch its message names.
func (e *Stashes) addUnrecordedStashes(ctx context.Context, byRef map[string]string) {
	list, err := e.git().Stashes(ctx, e.Dir())
	if err != nil {
		return
	}
	for _, st := range list {
		sha, subject := st.SHA, st.Subject
		if _, ok := byRef[sha]; ok || !task.ValidHex(sha) {
			continue
		}
		switch {
		case isAcceptStash(subject):
			byRef[sha] = keptStashRefs + stashTask(subject) + "/" + sha
		case foldedTarget(subject) != "":
			byRef[sha] = owedRef(foldedTarget(subject))
		}
	}
}

// foldedTarget is the branch of a folded stash's subject, or "".
func foldedTarget(subject string) string {
	b, msg, ok := strings.Cut(strings.TrimPrefix(subject, "On "), ": ")
	if !ok || !strings.HasPrefix(subject, "On ") || !strings.HasPrefix(msg, worktree.FoldedSubject) || task.ValidBranchName(b) != nil {
		return ""
	}
	return b
}

// checkOwed decides whether stash sha is owed, under its task's lock so
// that no accept of the task is between its stash and its record or
// return meanwhile (this process holds the lock of task mine itself);
// with mend it records or forgets the stash.
func (e *Stashes) checkOwed(ctx context.Context, sha, ref string, mend bool, mine string) (OwedStash, bool) {
	o := e.describeStash(ctx, sha, ref)
	if validRefPart(o.TaskID) && o.TaskID != mine {
		unlock, err := e.TryLockTask(o.TaskID)
		if errors.Is(err, flock.ErrHeld) {
			return o, false // its accept is running and will give it back
		}
		if err == nil {
			defer unlock()
		}
	}
	if o.Dir != "" && e.git().StashInWorktree(ctx, o.Dir, sha) && e.git().StashApplies(ctx, o.Dir, sha) != nil {
		// Every byte of it is back in the checkout.
		if mend {
			e.dropStash(ctx, o.Dir, sha)
		}
		return o, false
	}
	if !e.refExists(ctx, e.Dir(), ref) && (!mend || e.record(ctx, o) != nil) {
		o.Ref = "" // in the stash list only
	}
	return o, true
}

// record writes the ref of an owed stash found only in the stash list:
// an accept's under its task, a folded one as its target's owed stash
// when that has none.
func (e *Stashes) record(ctx context.Context, o OwedStash) error {
	if strings.HasPrefix(o.Ref, owedRefs) {
		return e.git().CreateRef(ctx, e.Dir(), o.Ref, o.SHA, "lazy: folded stash kept")
	}
	return e.keepStash(ctx, e.Dir(), o.TaskID, o.SHA)
}

// refExists is true when ref names an object.
func (e *Stashes) refExists(ctx context.Context, dir, ref string) bool {
	return e.git().RefExists(ctx, dir, ref)
}

// describeStash reads what a kept stash is from the stash commit itself.
func (e *Stashes) describeStash(ctx context.Context, sha, ref string) OwedStash {
	o := OwedStash{SHA: sha, Ref: ref}
	if !strings.HasPrefix(ref, owedRefs) {
		o.TaskID = strings.TrimSuffix(strings.TrimPrefix(ref, keptStashRefs), "/"+sha)
	}
	dir := e.Dir()
	if at, subject, err := e.git().CommitInfo(ctx, dir, sha); err == nil {
		o.At = at
		// "On <branch>: lazy accept ...": the checkout of that branch.
		if b, _, ok := strings.Cut(strings.TrimPrefix(subject, "On "), ": "); ok && strings.HasPrefix(subject, "On ") && task.ValidBranchName(b) == nil {
			o.Target = b
			if d, err := e.git().CheckedOutAt(ctx, dir, b); err == nil && d != "" {
				o.Dir = d
			}
		}
	}
	if foldedTarget := strings.HasPrefix(ref, owedRefs); foldedTarget {
		e.describeParts(ctx, &o)
	}
	if o.Dir == "" {
		o.Dir = dir
	}
	o.Restore = "git -C " + shellQuote(o.Dir) + " stash apply " + sha
	return o
}

// describeParts reads the stashes folded into o, oldest first: when
// and for which task each was made, and where they clash.
func (e *Stashes) describeParts(ctx context.Context, o *OwedStash) {
	parts, conflicts, err := e.git().StashParts(ctx, e.Dir(), o.SHA)
	if err != nil || len(parts) < 2 {
		return
	}
	o.Conflicts = conflicts
	for _, p := range parts {
		part := StashPart{SHA: p}
		if at, subject, err := e.git().CommitInfo(ctx, e.Dir(), p); err == nil {
			part.At, part.TaskID = at, stashTask(subject)
		}
		o.Parts = append(o.Parts, part)
	}
	// The changes owed since the oldest of them.
	o.At = o.Parts[0].At
}

// foldOwed folds the stashes owed in the checkout of target into one,
// under target's accept lock, which the caller holds (so no accept
// stashes or gives back there meanwhile); mine is a task whose lock the
// caller holds and whose stash is owed. A stash of a task still merging
// is left for its recovery, which may give it back whole. The stashes
// are folded in order, the target's folded stash (if any) first and
// then by age, and the result is recorded as target's owed stash before
// any of them is let go: a kill at any point leaves every change
// reachable from a record (see dropFolded). It returns the folded stash,
// or "" when there was nothing to fold or it could not.
func (e *Stashes) foldOwed(ctx context.Context, target, mine string) string {
	ctx = context.WithoutCancel(ctx)
	owed, err := e.owedStashes(ctx, true, mine)
	if err != nil {
		return ""
	}
	var list []OwedStash
	for _, o := range owed {
		if o.Target != target || o.Ref == "" {
			continue
		}
		if o.TaskID != "" {
			if sn, err := e.Store.Load(o.TaskID); err == nil && sn.Task.Status == machine.Merging {
				continue
			}
		}
		list = append(list, o)
	}
	if len(list) < 2 {
		return ""
	}
	ref := owedRef(target)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Ref == ref && list[j].Ref != ref })
	cur := ""
	if list[0].Ref == ref {
		cur = list[0].SHA
	}
	acc, count := list[0].SHA, max(1, len(list[0].Parts))
	conflicts := list[0].Conflicts
	for _, o := range list[1:] {
		count += max(1, len(o.Parts))
		f, err := e.git().FoldStashes(ctx, e.Dir(), target, acc, o.SHA, count, conflicts)
		if err != nil {
			return ""
		}
		acc, conflicts = f.SHA, f.Conflicts
	}
	// The record first: from here the folded stash holds every part.
	if err := e.git().SwapRef(ctx, e.Dir(), ref, acc, cur, "lazy: stashes folded"); err != nil {
		return ""
	}
	_ = e.git().StashStore(ctx, e.Dir(), acc, fmt.Sprintf("On %s: %s%d interrupted accepts, oldest first", target, worktree.FoldedSubject, count))
	for _, o := range list {
		if o.Ref != ref {
			_ = e.git().DeleteRef(ctx, e.Dir(), o.Ref, o.SHA)
		}
		_ = e.git().StashDrop(ctx, e.Dir(), o.SHA)
	}
	return acc
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

// ErrNothingOwed says lazy keeps no changes of the user's for a branch.
var ErrNothingOwed = errors.New("lazy keeps none of your uncommitted changes there")

// RestoreOwed gives back the user's changes lazy keeps for the checkout
// of target (lazy stash restore): its owed stashes are folded into one
// first, then applied in that checkout if they apply without touching
// anything the user has there now, and forgotten once they are back. It
// returns what it restored (Conflicts: files that now hold two versions
// between conflict markers).
func (e *Stashes) RestoreOwed(ctx context.Context, target string) (*OwedStash, error) {
	if err := task.ValidBranchName(target); err != nil {
		return nil, err
	}
	release, err := e.Recovery().tryDestination(target)
	if errors.Is(err, flock.ErrHeld) {
		return nil, fmt.Errorf("an accept into %s is running; run lazy stash restore %s again once it has finished", target, target)
	}
	if err != nil {
		return nil, err
	}
	defer release()
	e.foldOwed(ctx, target, "")
	owed, err := e.owedStashes(ctx, true, "")
	if err != nil {
		return nil, err
	}
	var mine []OwedStash
	for _, o := range owed {
		if o.Target == target {
			mine = append(mine, o)
		}
	}
	switch {
	case len(mine) == 0:
		return nil, fmt.Errorf("lazy stash restore %s: %w", target, ErrNothingOwed)
	case len(mine) > 1:
		return nil, fmt.Errorf("lazy stash restore %s: lazy keeps %d stashes there it could not fold into one (an accept's is still being recovered); run lazy doctor, then lazy stash restore %s again", target, len(mine), target)
	}
	o := mine[0]
	if err := e.git().StashApplies(ctx, o.Dir, o.SHA); err != nil {
		return nil, fmt.Errorf("lazy stash restore %s: the changes were not applied, since %s has uncommitted changes of its own or they would conflict with it (%w); commit or stash what is there, then run lazy stash restore %s again (nothing was changed)", target, o.Dir, err, target)
	}
	if err := e.git().StashApply(ctx, o.Dir, o.SHA); err != nil {
		return nil, fmt.Errorf("lazy stash restore %s: git stash apply %s in %s: %w (lazy keeps the stash)", target, o.SHA, o.Dir, err)
	}
	e.dropStash(ctx, o.Dir, o.SHA)
	return &o, nil
}
