package ops

import (
	"context"
	"fmt"
	"time"

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
	if sn.Task.Status != machine.Merging || sn.Task.Accept == nil {
		return sn, nil
	}
	if rec := sn.Task.Accept; rec.Host != "" && rec.Host != e.Store.Host() {
		return nil, fmt.Errorf("%s %s: an accept on host %s is merging it; finish there", verb, sn.Task.Slug, rec.Host)
	}
	landed, err := MergeLanded(ctx, e.repoDir(), sn)
	if err != nil {
		return nil, err
	}
	out, _, err := e.Store.Update(ctx, sn.Task.ID, func(s *gitstore.Snapshot) (*gitstore.Op, error) {
		if s.Task.Status != machine.Merging || s.Task.Accept == nil {
			return nil, nil
		}
		now := time.Now().UTC().Truncate(time.Second)
		if landed {
			FinishAccepted(s, now)
			return &gitstore.Op{Name: "accept-recovered", Actor: e.Actor, Reason: "a stranded accept had merged"}, nil
		}
		RestoreFromAccept(s)
		s.AddComment(gitstore.Comment{Actor: e.Actor, At: now, Text: "a stranded accept never merged; status before the accept restored before " + verb})
		return &gitstore.Op{Name: "accept-abort", Actor: e.Actor, Reason: "stranded accept recovered before " + verb}, nil
	})
	if err != nil {
		return nil, err
	}
	if landed {
		return nil, fmt.Errorf("%s %s: a stranded accept had already merged it; it is now complete: %w", verb, sn.Task.Slug, ErrAlreadyAccepted)
	}
	return out, nil
}
