package landing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/flock"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// RecoveryGit is what the recovery of a stranded accept asks of git:
// whether its squash commit landed, the destination's checkout and
// whether it holds the half-made merge (undone) or the accept's stash.
type RecoveryGit interface {
	HasCommitWith(ctx context.Context, repoDir, text, since, branch string) (bool, error)
	CheckedOutAt(ctx context.Context, repoDir, branch string) (string, error)
	Dirty(ctx context.Context, dir string) (bool, error)
	HalfSquash(ctx context.Context, repoDir, dir, base, branch string) bool
	UndoSquash(ctx context.Context, dir, sha string) error
	Stashes(ctx context.Context, dir string) ([]worktree.Stash, error)
	StashInWorktree(ctx context.Context, dir, sha string) bool
}

// git is git in the recovery's role.
func (e *Recovery) git() RecoveryGit { return e.worktrees() }

// DestinationWait bounds how long an accept waits for another accept
// into the same branch to finish.
const DestinationWait = 10 * time.Minute

// lockDestination takes the accept lock of branch into: accepts into one
// branch (and so one checkout and one index) run one at a time. Lock
// order is always task lock, then destination lock; whoever holds a
// destination lock only ever tries other tasks' locks, never waits on
// them, so the two cannot deadlock.
func (e *Recovery) lockDestination(ctx context.Context, into string, waiting func(pid string)) (func(), error) {
	path := e.destinationLock(into)
	l, err := flock.TryLock(path)
	if errors.Is(err, flock.ErrHeld) {
		if waiting != nil {
			waiting(flock.Owner(path))
		}
		wait := e.destinationWait()
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		l, err = flock.Acquire(wctx, path)
		if err != nil {
			return nil, fmt.Errorf("another accept into %s (pid %s) has been running for over %s; try again when it finishes, or run lazy doctor if it is stuck: %w", into, flock.Owner(path), wait, err)
		}
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release() }, nil
}

// destinationWait is how long an accept waits for the one ahead of it:
// with a gate, the queue ahead may run it several times.
func (e *Recovery) destinationWait() time.Duration {
	if s, err := e.Gates().GateSettings(); err == nil {
		return DestinationWait + 4*s.Timeout
	}
	return DestinationWait
}

// destinationLock is the lock file of accepts into branch into.
func (e *Recovery) destinationLock(into string) string {
	sum := sha256.Sum256([]byte(into))
	return e.Repo.LazyDir("locks", "accept-into-"+hex.EncodeToString(sum[:8])+".lock")
}

// tryDestination takes the accept lock of into without waiting;
// flock.ErrHeld says an accept into it is running.
func (e *Recovery) tryDestination(into string) (func(), error) {
	l, err := flock.TryLock(e.destinationLock(into))
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release() }, nil
}

// stashMessage names the task, so that a stash an accept made before a
// crash let it record the stash's hash can still be found and given back.
func stashMessage(slug, id string) string {
	return "lazy accept " + slug + " (" + id + "): your uncommitted changes"
}

// RecoverStrandedAccept finishes or undoes a local accept that died: the
// task is merging with an accept record of this host and the caller holds
// its task lock, so no accept of it runs. A squash that landed finishes
// the task; otherwise the destination checkout is put back to exactly
// the state before the accept (a half-applied squash is reset only when
// it provably is lazy's: HEAD is the recorded pre-accept tip and the
// checkout holds exactly the squash of the task branch onto it), and the
// user's stash is re-applied. What cannot be proven is left alone and
// explained in the note, with the commands to finish by hand.
func (e *Recovery) RecoverStrandedAccept(ctx context.Context, sn *task.Snapshot) (*task.Snapshot, bool, string, error) {
	return e.recoverStranded(ctx, sn, true)
}

// TryRecoverStrandedAccept is RecoverStrandedAccept for the reconciler:
// when another accept into the same branch holds the destination, it
// does nothing (that accept recovers this one before it merges) rather
// than hold up a read.
func (e *Recovery) TryRecoverStrandedAccept(ctx context.Context, sn *task.Snapshot) (*task.Snapshot, bool, string, error) {
	return e.recoverStranded(ctx, sn, false)
}

func (e *Recovery) recoverStranded(ctx context.Context, sn *task.Snapshot, wait bool) (*task.Snapshot, bool, string, error) {
	rec := sn.Task.Accept
	if sn.Task.Status != machine.Merging || rec == nil {
		return sn, false, "", nil
	}
	// Only an accept this machine began is recovered here: the record's
	// host id is public, so a crafted record could name this host.
	if err := e.ownAccept(sn); err != nil {
		return nil, false, "", err
	}
	rec = sn.Task.Accept
	if rec.Into != "" {
		if err := task.ValidBranchName(rec.Into); err != nil {
			return nil, false, "", fmt.Errorf("the accept record of %s is damaged: %w", sn.Task.Slug, err)
		}
		var release func()
		var err error
		if wait {
			release, err = e.lockDestination(ctx, rec.Into, nil)
		} else {
			release, err = e.tryDestination(rec.Into)
			if errors.Is(err, flock.ErrHeld) {
				return sn, false, "", nil
			}
		}
		if err != nil {
			return nil, false, "", err
		}
		defer release()
	}
	return e.recoverLocked(ctx, sn, "")
}

// recoverLocked is RecoverStrandedAccept once the destination lock is
// held; before names what the recovery makes way for, if anything.
func (e *Recovery) recoverLocked(ctx context.Context, sn *task.Snapshot, before string) (*task.Snapshot, bool, string, error) {
	landed, err := mergeLanded(ctx, e.git(), e.Dir(), sn)
	if err != nil {
		return nil, false, "", err
	}
	note, left, owed := e.putBackDestination(ctx, sn, landed)
	if owed != nil {
		// The stash could not be given back and nothing of it was
		// applied: the task stays merging, so the next recovery (an
		// accept into the branch, the reconciler, doctor) tries again,
		// instead of ending the accept with the user's changes left in
		// a stash nothing would look for.
		return nil, false, "", owed
	}
	now := time.Now().UTC().Truncate(time.Second)
	var cl *owned.Cleanup
	if local, err := e.Accepts().Match(sn.Task.ID, sn.Task.Accept.ID); err == nil && landed {
		// As a finishing accept does: the cleanup to come is recorded
		// before the task is complete.
		cl = e.Cleanups().markCleanup(ctx, &local, sn, "")
	}
	out, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Status != machine.Merging || s.Task.Accept == nil || s.Task.Accept.ID != sn.Task.Accept.ID {
			return nil, nil
		}
		// The status before the accept is this machine's record of it.
		s.Task.Accept.From = sn.Task.Accept.From
		text := "a stranded accept never merged; status before the accept restored"
		if landed {
			text = "a stranded accept had merged; finished as accepted" + cleanupNote(cl)
		}
		if before != "" {
			text += " before " + before
		}
		if note != "" {
			text += "; " + note
		}
		s.AddComment(task.Comment{Actor: e.Actor, At: now, Text: text})
		if landed {
			FinishAccepted(s, now)
			return &task.Op{Name: "accept-recovered", Actor: e.Actor, Reason: "a stranded accept had merged"}, nil
		}
		RestoreFromAccept(s)
		return &task.Op{Name: "accept-abort", Actor: e.Actor, Reason: session.OneLine("stranded accept recovered " + before)}, nil
	})
	if err != nil {
		return nil, false, "", err
	}
	if landed && out != nil && out.Task.Status == machine.Complete {
		// The accept died before its cleanup: finish that too, before
		// the local record of the accept goes.
		for _, w := range e.cleanupAccepted(ctx, out) {
			note = strings.TrimPrefix(note+"; "+w, "; ")
		}
	}
	if out != nil && out.Task.Status != machine.Merging {
		e.Accepts().Forget(sn.Task.ID, sn.Task.Accept.ID)
		if left {
			// The user's changes stay owed: with any owed before in that
			// checkout, in one stash.
			if folded := e.Stashes().foldOwed(ctx, sn.Task.Accept.Into, sn.Task.ID); folded != "" {
				note += "; it is folded with your changes owed before into stash " + folded + " (git stash apply " + folded + " restores them all)"
			}
		}
	}
	return out, landed, note, nil
}

// putBackDestination undoes what a dead accept left in its destination
// and gives the user's stash back; it says what it could not do, and
// left says the stash stays owed to the user. owed is set when the stash
// could not be re-applied and nothing of it was (a git killed in that
// checkout left its index.lock, say): the stash is still owed, and the
// recovery must run again.
func (e *Recovery) putBackDestination(ctx context.Context, sn *task.Snapshot, landed bool) (note string, left bool, owed error) {
	rec := sn.Task.Accept
	dest, err := e.acceptDestination(ctx, sn)
	if err != nil || dest == "" {
		note := e.stashNote(ctx, sn, "")
		return note, note != "", nil
	}
	var notes []string
	dirty, err := e.git().Dirty(ctx, dest)
	if err != nil {
		return fmt.Sprintf("could not inspect %s (%v); check it with git -C %s status", dest, err, dest), e.acceptStash(ctx, sn, dest) != "", nil
	}
	if dirty && !landed {
		if e.halfSquash(ctx, sn, dest) {
			if err := e.git().UndoSquash(ctx, dest, rec.IntoSHA); err != nil {
				return fmt.Sprintf("the half-done squash merge in %s could not be undone (%v); undo it with git -C %s reset --hard %s only if nothing of yours is uncommitted there", dest, err, dest, rec.IntoSHA), e.acceptStash(ctx, sn, dest) != "", nil
			}
			notes = append(notes, "undid the half-done squash merge in "+dest)
			dirty = false
		} else {
			notes = append(notes, fmt.Sprintf("%s has uncommitted changes that lazy cannot prove are its own half-done squash merge, so it left them; inspect them with git -C %s status", dest, dest))
		}
	}
	stash := e.acceptStash(ctx, sn, dest)
	if stash == "" {
		return strings.Join(notes, "; "), false, nil
	}
	if dirty && e.git().StashInWorktree(ctx, dest, stash) {
		// The accept died after giving the changes back, before dropping
		// its stash: the checkout already holds all of it.
		e.Stashes().dropStash(ctx, dest, stash)
		notes = append(notes, "your uncommitted changes were already back in "+dest+"; dropped lazy's copy of them (stash "+stash+")")
		return strings.Join(notes, "; "), false, nil
	}
	if dirty {
		notes = append(notes, fmt.Sprintf("your uncommitted changes from before the accept are in stash %s; re-apply them with git -C %s stash apply %s once %s is clean", stash, dest, stash, dest))
		return strings.Join(notes, "; "), true, nil
	}
	if err := e.Stashes().stashPop(ctx, dest, stash); err != nil {
		// A stash that would conflict is never applied: it is kept under
		// refs/lazy-kept/stash, which doctor and status report, so the
		// recovery need not run again for it.
		if still, serr := e.git().Dirty(ctx, dest); serr == nil && !still && !errors.Is(err, worktree.ErrStashConflicts) {
			return "", true, fmt.Errorf("could not give your uncommitted changes (stash %s) back in %s yet: %w; nothing of them was applied and the recovery will run again (a git killed there leaves its index.lock, which lazy doctor removes once it is stale)", stash, dest, err)
		}
		notes = append(notes, fmt.Sprintf("your uncommitted changes did not re-apply cleanly (%v); they are safe in stash %s (git -C %s stash apply %s)", err, stash, dest, stash))
		return strings.Join(notes, "; "), true, nil
	}
	notes = append(notes, "re-applied your uncommitted changes (stash "+stash+") in "+dest)
	return strings.Join(notes, "; "), false, nil
}

// stashNote points at a stash the accept made when its checkout is gone.
func (e *Recovery) stashNote(ctx context.Context, sn *task.Snapshot, dest string) string {
	if stash := e.acceptStash(ctx, sn, dest); stash != "" {
		return "your uncommitted changes from before the accept are in stash " + stash + " (git stash apply " + stash + ")"
	}
	return ""
}

// acceptDestination is where the dead accept merged: the checkout of the
// branch it names now (never the path the record claims: the record is
// data), or the temporary checkout lazy made for it.
func (e *Recovery) acceptDestination(ctx context.Context, sn *task.Snapshot) (string, error) {
	rec := sn.Task.Accept
	if rec.Into == "" {
		return "", nil
	}
	dest, err := e.git().CheckedOutAt(ctx, e.Dir(), rec.Into)
	if err != nil || dest != "" {
		return dest, err
	}
	tmp := e.Repo.LazyDir("tmp", "accept-"+sn.Task.ID)
	if _, err := os.Stat(tmp); err == nil {
		return tmp, nil
	}
	return "", nil
}

// halfSquash says whether dest holds exactly lazy's squash of the task
// branch onto the recorded pre-accept tip, and nothing else.
func (e *Recovery) halfSquash(ctx context.Context, sn *task.Snapshot, dest string) bool {
	rec := sn.Task.Accept
	if !task.ValidHex(rec.IntoSHA) {
		return false
	}
	local, err := e.Owned(sn)
	if err != nil {
		return false
	}
	return e.git().HalfSquash(ctx, e.Dir(), dest, rec.IntoSHA, local.Branch)
}

// acceptStash finds the stash an accept made of the destination's
// changes: the recorded one, which must be one this machine kept for the
// task under refs/lazy-kept/stash (a record's stash_sha is data, and
// could name any stash of the user's), or, when the crash came before
// it was recorded, the one whose message names the task, if this
// machine's own accept record says the checkout was dirty. Only a stash
// still in the stash list counts (one given back is dropped from it).
func (e *Recovery) acceptStash(ctx context.Context, sn *task.Snapshot, dest string) string {
	rec := sn.Task.Accept
	dir := dest
	if dir == "" {
		dir = e.Dir()
	}
	if rec.StashSHA != "" && !e.Stashes().keptFor(ctx, dir, sn.Task.ID, rec.StashSHA) {
		return ""
	}
	list, err := e.git().Stashes(ctx, dir)
	if err != nil {
		return ""
	}
	for _, st := range list {
		sha, subject := st.SHA, st.Subject
		if sha == rec.StashSHA || (rec.StashSHA == "" && rec.DestDirty && strings.Contains(subject, "("+sn.Task.ID+")")) {
			return sha
		}
	}
	return ""
}

// recoverStrandedInto recovers the dead accepts of other tasks into the
// branch an accept (holding that branch's destination lock) is about to
// merge into, so that their leftovers are never stashed as the user's
// changes. A task whose lock is held is not stranded (its accept waits
// for the destination lock) and is left alone.
func (e *Recovery) recoverStrandedInto(ctx context.Context, into, self string) []string {
	entries, err := e.Store.List()
	if err != nil {
		return nil
	}
	var notes []string
	for _, en := range entries {
		if en.ID == self || en.Status != machine.Merging {
			continue
		}
		unlock, err := e.TryLockTask(en.ID)
		if err != nil {
			continue
		}
		func() {
			defer unlock()
			sn, err := e.Store.Load(en.ID)
			if err != nil || sn.Task.Status != machine.Merging || sn.Task.Accept == nil || sn.Task.Accept.Into != into || sn.Task.ForgePending() {
				return
			}
			if e.ownAccept(sn) != nil {
				return // not this machine's accept: left alone
			}
			// The destination lock is already ours: recover inline.
			if _, _, _, err := e.recoverLocked(ctx, sn, "another accept into "+into); err != nil {
				return
			}
			notes = append(notes, "recovered the interrupted accept of "+sn.Task.Slug)
		}()
	}
	return notes
}

// DescribeDestination says, for lazy doctor, what a stranded local accept
// left in its destination checkout and where the user's stash is; "" when
// the checkout is clean and no stash is owed.
func (e *Recovery) DescribeDestination(ctx context.Context, sn *task.Snapshot) string {
	if sn.Task.Accept == nil || sn.Task.ForgePending() || e.ownAccept(sn) != nil {
		return ""
	}
	dest, err := e.acceptDestination(ctx, sn)
	if err != nil || dest == "" {
		return e.stashNote(ctx, sn, "")
	}
	var parts []string
	if dirty, err := e.git().Dirty(ctx, dest); err == nil && dirty {
		if e.halfSquash(ctx, sn, dest) {
			parts = append(parts, dest+" holds lazy's half-done squash merge (a repair resets it)")
		} else {
			parts = append(parts, dest+" has uncommitted changes lazy cannot prove are its own (a repair leaves them)")
		}
	}
	if stash := e.acceptStash(ctx, sn, dest); stash != "" {
		parts = append(parts, "your uncommitted changes are in stash "+stash+" (a repair re-applies them)")
	}
	return strings.Join(parts, "; ")
}
