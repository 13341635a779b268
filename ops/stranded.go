package ops

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/gitcli"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
)

// MergeLanded reports whether the local accept recorded on a merging
// task committed its squash merge: a commit above the recorded tip of
// the destination whose message carries the task's Lazy-Task trailer.
func MergeLanded(ctx context.Context, repoDir string, sn *gitstore.Snapshot) (bool, error) {
	rec := sn.Task.Accept
	if rec == nil || rec.Into == "" || rec.IntoSHA == "" {
		return false, nil
	}
	if err := ValidBranchName(rec.Into); err != nil || !gitstore.ValidHex(rec.IntoSHA) {
		return false, fmt.Errorf("the accept record of %s is damaged (into %q at %q)", sn.Task.Slug, rec.Into, rec.IntoSHA)
	}
	out, err := gitcli.New(repoDir, "log", "--format=%H", "--fixed-strings", "--grep="+AcceptTrailer(sn.Task.ID),
		rec.IntoSHA+"..refs/heads/"+rec.Into).String(ctx)
	if err != nil {
		return false, fmt.Errorf("look for the merge of %s on %s: %w", sn.Task.Slug, rec.Into, err)
	}
	return out != "", nil
}

// AcceptTrailer is the trailer line lazy accept puts in a squash commit
// and lazy submit in a pull request's description.
func AcceptTrailer(taskID string) string { return "Lazy-Task: " + taskID }

// escapeStranded returns a task stranded in a local merge (merging with
// an accept record, while the caller holds the lifecycle lock, so no
// accept is running) to a resting status before a command does its job
// (spec: reject, close, submit and unblock escape a stranded merge). A
// merge that landed is finished instead, and ErrAlreadyAccepted says so.
// A forge-pending merge is left alone: it is not stranded.
func (e *Env) escapeStranded(ctx context.Context, sn *gitstore.Snapshot, verb string) (*gitstore.Snapshot, error) {
	if sn.Task.Status != machine.Merging || sn.Task.Accept == nil || sn.Task.ForgePending() {
		return sn, nil
	}
	if rec := sn.Task.Accept; rec.Host != "" && rec.Host != e.Store.Host() {
		return nil, fmt.Errorf("%s %s: an accept on host %s is merging it; finish there", verb, sn.Task.Slug, rec.Host)
	}
	out, landed, _, err := e.RecoverStrandedAccept(ctx, sn)
	if err != nil {
		return nil, fmt.Errorf("%s %s: recover its interrupted accept first: %w", verb, sn.Task.Slug, err)
	}
	if landed {
		return nil, fmt.Errorf("%s %s: a stranded accept had already merged it; it is now complete: %w", verb, sn.Task.Slug, ErrAlreadyAccepted)
	}
	return out, nil
}
