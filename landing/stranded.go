package landing

import (
	"context"
	"errors"
	"fmt"

	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
)

// Accepts is this machine's record of the local accepts it began and
// has not ended (see package owned): what makes a merging task its own.
func (e *Service) Accepts() owned.Accepts { return owned.AcceptsFor(e.Repo.LazyDir()) }

// ForeignAcceptError refuses to recover a merging task whose accept this
// machine did not begin. A host id is public (every record commit names
// it), so a record's accept.host proves nothing: a crafted record must
// not make this machine take an accept lock, run git in a checkout,
// commit an abort or apply or drop a stash.
type ForeignAcceptError struct {
	Slug, Host, OurHost string
}

func (e *ForeignAcceptError) Error() string {
	if e.Host != "" && e.Host != e.OurHost {
		return fmt.Sprintf("%s is merging on another machine (host %s); lazy leaves it alone here: finish or undo the accept on that machine, or, if no accept of it runs anywhere, lazy doctor --release-merge %s", e.Slug, e.Host, e.Slug)
	}
	claim := "names no host"
	if e.Host != "" {
		claim = "claims this host (" + e.Host + ")"
	}
	return fmt.Sprintf("%s is merging, but this machine did not start that accept (its record %s, but no local accept matches it: a record written elsewhere, or an accept begun by an older lazy); lazy takes no lock, touches no checkout and applies no stash for it; if no accept of it runs anywhere, lazy doctor --release-merge %s records it blocked again", e.Slug, claim, e.Slug)
}

// ownAccept binds a merging task's accept record to this machine's own
// record of that accept, in memory: into, its tip, the prior status and
// whether the checkout was dirty are what this machine decided, never
// what the record says. It fails with ForeignAcceptError for an accept
// this machine did not begin.
func (e *Recovery) ownAccept(sn *task.Snapshot) error {
	local, err := e.localAccept(sn)
	if err != nil {
		return err
	}
	bound := *sn.Task.Accept
	bound.From, bound.DestDirty = machine.Status(local.From), local.DestDirty
	sn.Task.Accept = &bound
	return nil
}

// localAccept returns this machine's record of sn's accept, which must
// name the same accept id, branch and tip as the task's record.
func (e *Recovery) localAccept(sn *task.Snapshot) (owned.Accept, error) {
	rec := sn.Task.Accept
	if rec == nil {
		return owned.Accept{}, owned.ErrNoAccept
	}
	foreign := &ForeignAcceptError{Slug: sn.Task.Slug, Host: rec.Host, OurHost: e.Store.Host()}
	if rec.Host != e.Store.Host() {
		return owned.Accept{}, foreign
	}
	local, err := e.Accepts().Match(sn.Task.ID, rec.ID)
	if errors.Is(err, owned.ErrNoAccept) {
		return owned.Accept{}, foreign
	}
	if err != nil {
		return owned.Accept{}, err
	}
	if local.Into != rec.Into || local.IntoSHA != rec.IntoSHA {
		return owned.Accept{}, foreign
	}
	return local, nil
}

// ForeignMerge says why a merging task is left alone on this machine:
// its local accept is not one this machine began (a ForeignAcceptError).
// It is nil for a task not in a local merge, and for this machine's own.
func (e *Recovery) ForeignMerge(sn *task.Snapshot) error {
	if sn.Task.Status != machine.Merging || sn.Task.Accept == nil || sn.Task.ForgePending() {
		return nil
	}
	_, err := e.localAccept(sn)
	return err
}

// OwnsAccept reports whether sn's accept was begun on this machine: only
// such a merging task is ever recovered here.
func (e *Recovery) OwnsAccept(sn *task.Snapshot) bool {
	_, err := e.localAccept(sn)
	return err == nil
}

// MergeLanded reports whether the local accept recorded on a merging
// task committed its squash merge: a commit above the recorded tip of
// the destination whose message carries the task's Lazy-Task trailer.
func MergeLanded(ctx context.Context, repoDir string, sn *task.Snapshot) (bool, error) {
	return mergeLanded(ctx, Git{}, repoDir, sn)
}

// mergeLanded is MergeLanded asking git through g: the recovery asks
// the Service's git, which the tests fake.
func mergeLanded(ctx context.Context, g RecoveryGit, repoDir string, sn *task.Snapshot) (bool, error) {
	rec := sn.Task.Accept
	if rec == nil || rec.Into == "" || rec.IntoSHA == "" {
		return false, nil
	}
	if err := task.ValidBranchName(rec.Into); err != nil || !task.ValidHex(rec.IntoSHA) {
		return false, fmt.Errorf("the accept record of %s is damaged (into %q at %q)", sn.Task.Slug, rec.Into, rec.IntoSHA)
	}
	landed, err := g.HasCommitWith(ctx, repoDir, session.AcceptTrailer(sn.Task.ID), rec.IntoSHA, rec.Into)
	if err != nil {
		return false, fmt.Errorf("look for the merge of %s on %s: %w", sn.Task.Slug, rec.Into, err)
	}
	return landed, nil
}

// EscapeStranded returns a task stranded in a local merge (merging with
// an accept record, while the caller holds the lifecycle lock, so no
// accept is running) to a resting status before a command does its job
// (spec: reject, close, submit and unblock escape a stranded merge). A
// merge that landed is finished instead, and session.ErrAlreadyAccepted says so.
// A forge-pending merge is left alone: it is not stranded.
func (e *Recovery) EscapeStranded(ctx context.Context, sn *task.Snapshot, verb string) (*task.Snapshot, error) {
	if sn.Task.Status != machine.Merging || sn.Task.Accept == nil || sn.Task.ForgePending() {
		return sn, nil
	}
	if err := e.ownAccept(sn); err != nil {
		return nil, fmt.Errorf("%s %s: %w", verb, sn.Task.Slug, err)
	}
	out, landed, _, err := e.RecoverStrandedAccept(ctx, sn)
	if err != nil {
		return nil, fmt.Errorf("%s %s: recover its interrupted accept first: %w", verb, sn.Task.Slug, err)
	}
	if landed {
		return nil, fmt.Errorf("%s %s: a stranded accept had already merged it; it is now complete: %w", verb, sn.Task.Slug, session.ErrAlreadyAccepted)
	}
	return out, nil
}

// ReleaseForeignMerge is a human's decision about a merging task whose
// accept this machine did not begin (and so never recovers): no accept
// of it runs anywhere, so the record goes back to blocked. Only the
// record changes: no lock on the destination, no git in any checkout,
// no stash, since nothing here is known to belong to that accept.
func (e *Recovery) ReleaseForeignMerge(ctx context.Context, name string) (*task.Snapshot, error) {
	sn, unlock, err := e.LockedLoad(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if e.ForeignMerge(sn) == nil {
		return nil, fmt.Errorf("release %s: it is %s, not merging by an accept begun elsewhere; lazy doctor recovers this machine's own interrupted accepts", sn.Task.Slug, sn.Task.Status)
	}
	if err := machine.Validate(machine.Merging, machine.Blocked, e.Actor); err != nil {
		return nil, fmt.Errorf("release %s: %w", sn.Task.Slug, err)
	}
	out, _, err := e.Store.Update(ctx, sn.Task.ID, func(x *task.Snapshot) (*task.Op, error) {
		if x.Task.Status != machine.Merging || e.ForeignMerge(x) == nil {
			return nil, fmt.Errorf("release %s: it changed meanwhile (now %s); run lazy doctor again", x.Task.Slug, x.Task.Status)
		}
		x.Task.Status, x.Task.Accept = machine.Blocked, nil
		return &task.Op{Name: "release-merge", Actor: e.Actor, Reason: "a human released an accept this machine did not begin"}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
