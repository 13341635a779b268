package gitstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/owned"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// A status that arrives from a remote is data anyone with push access
// could have written. Pull takes it in only when every status change in
// the pulled commits is a transition the state machine allows the actor
// that claims it, and when the end state agrees with what this machine
// can check for itself: a completion with a merge it can see, and a
// session it runs with what it ran. Anything else is refused, with a
// reason, and the local record stays where it was.

// Unverified is a pulled status this machine took in without being able
// to confirm it (the task's branch or target is not here): nothing is
// removed or deleted on its word (see VerifyAccepted).
type Unverified struct {
	Task   string `json:"task"`
	Reason string `json:"reason"`
}

// pulledHistoryFactor bounds the commits one pull judges for a task, as
// a multiple of the entries a read shows: a crafted history of millions
// of commits must not cost the victim minutes and gigabytes, while a
// long-lived task of lazy's own (an operation is a commit) still passes.
const pulledHistoryFactor = 10

// pulledJudge caches what judging one pulled tip reads.
type pulledJudge struct {
	s      *Store
	id     string
	snaps  map[gitrepo.OID]*task.Snapshot
	states map[gitrepo.OID]*pulledState
	// accept is the newest accept record the pulled commits carried: the
	// branch a completion claims to be merged into.
	accept *task.AcceptRecord
	clock  uint64
}

func (j *pulledJudge) load(h gitrepo.OID) (*task.Snapshot, error) {
	if sn, ok := j.snaps[h]; ok {
		return sn, nil
	}
	sn, err := j.s.loadAt(j.id, h)
	if err != nil {
		return nil, err
	}
	j.snaps[h] = sn
	return sn, nil
}

// checkHistory checks every commit reachable from tip and not from stop
// (nil: the whole history, for a task new here). It returns the first
// refusal, or nil.
func (j *pulledJudge) checkHistory(tip gitrepo.OID, stop map[gitrepo.OID]bool) (*task.Refused, error) {
	seen := map[gitrepo.OID]bool{}
	queue := []gitrepo.OID{tip}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if stop[h] || seen[h] {
			continue
		}
		seen[h] = true
		if len(seen) > pulledHistoryFactor*j.s.bounds.entries {
			return nil, fmt.Errorf("refused: task %s brings more than %d new commits of history, %w; it was not taken in", j.id, pulledHistoryFactor*j.s.bounds.entries, ErrOverBounds)
		}
		c, err := j.s.objs.ReadCommit(h)
		if err != nil {
			return nil, corruptAt(j.id, h, err)
		}
		queue = append(queue, c.ParentHashes...)
		r, err := j.checkCommit(h, c.ParentHashes)
		if err != nil || r != nil {
			return r, err
		}
	}
	return nil, nil
}

// pulledState is what judging a commit needs of its record.
type pulledState struct {
	entries map[string]treeEntry
	Status  machine.Status     `json:"status"`
	Clock   uint64             `json:"clock"`
	Accept  *task.AcceptRecord `json:"accept"`
}

// state reads commit h's status, clock and accept record, and no more:
// a new task's whole history is judged, commit by commit.
func (j *pulledJudge) state(h gitrepo.OID) (*pulledState, error) {
	if st, ok := j.states[h]; ok {
		return st, nil
	}
	tree, corrupt, err := j.s.snapshotTree(j.id, h)
	if err != nil {
		return nil, err
	}
	st := &pulledState{entries: make(map[string]treeEntry, len(tree.Entries))}
	for _, e := range tree.Entries {
		st.entries[e.Name] = treeEntry{Name: e.Name, Hash: e.Hash, Dir: !e.Mode.IsFile()}
	}
	if err := j.s.decodeEntry(st.entries, fileTask, st, true); err != nil {
		return nil, corrupt(err)
	}
	if !st.Status.Valid() {
		return nil, corrupt(fmt.Errorf("task.json has an unknown status %q", st.Status))
	}
	j.states[h] = st
	return st, nil
}

// checkCommit judges one pulled commit against its parents.
func (j *pulledJudge) checkCommit(h gitrepo.OID, parents []gitrepo.OID) (*task.Refused, error) {
	st, err := j.state(h)
	if err != nil {
		return nil, err
	}
	if a := st.Accept; a != nil && st.Clock >= j.clock {
		j.accept, j.clock = a, st.Clock
	}
	refuse := func(from machine.Status, why string) *task.Refused {
		var op task.Op
		_ = j.s.decodeEntry(st.entries, fileOp, &op, false)
		return &task.Refused{Commit: h.String(), Op: op.Name, Actor: op.Actor, From: from, To: st.Status,
			Clock: st.Clock, Host: op.Host, Reason: why}
	}
	switch len(parents) {
	case 0:
		if st.Status != machine.Backlog {
			return refuse("", fmt.Sprintf("its first commit creates the task %s, but every task starts in backlog", st.Status)), nil
		}
	case 1:
		prev, err := j.state(parents[0])
		if err != nil {
			return nil, err
		}
		if prev.Status != st.Status {
			var op task.Op
			if err := j.s.decodeEntry(st.entries, fileOp, &op, true); err != nil {
				return refuse(prev.Status, "its operation record is unreadable: "+err.Error()), nil
			}
			if err := machine.Validate(prev.Status, st.Status, op.Actor); err != nil {
				return refuse(prev.Status, err.Error()), nil
			}
		}
	case 2:
		// A merge carries no decision of its own: replaying its parents
		// must give the status it records.
		m, _, err := j.s.merger().mergeState(j.id, parents[0], parents[1])
		if err != nil {
			return nil, err
		}
		if m.status != st.Status {
			return refuse(m.status, fmt.Sprintf("a merge commit records %s, but replaying the histories it merges gives %s", st.Status, m.status)), nil
		}
	default:
		return refuse("", "a commit with more than two parents is not one lazy writes"), nil
	}
	return nil, nil
}

// judgePulled decides whether the pulled tip next of task id (local is
// the local record, nil when the task is new here) may be taken in: it
// returns a refusal, or a reason the result is taken in unverified.
func (pv Provenance) judgePulled(ctx context.Context, remote, id string, local *task.Snapshot, next gitrepo.OID, history bool) (*task.Refused, string, error) {
	s := pv.st
	j := &pulledJudge{s: s, id: id, snaps: map[gitrepo.OID]*task.Snapshot{}, states: map[gitrepo.OID]*pulledState{}}
	nsn, err := j.load(next)
	if err != nil {
		return nil, "", err
	}
	if history {
		var stop map[gitrepo.OID]bool
		if local != nil {
			if stop, err = s.merger().ancestors(local.Commit); err != nil {
				return nil, "", err
			}
		}
		if r, err := j.checkHistory(next, stop); err != nil || r != nil {
			return r, "", err
		}
	}
	refuse := func(why string) *task.Refused {
		var op task.Op
		_ = s.decodeEntry(entriesOf(nsn), fileOp, &op, false)
		r := &task.Refused{Commit: next.String(), Op: op.Name, Actor: op.Actor, To: nsn.Task.Status, Clock: nsn.Task.Clock, Host: op.Host, Reason: why}
		if local != nil {
			r.From = local.Task.Status
		}
		return r
	}
	mine := pv.ownedSession(local)
	if why := pv.checkOwnSession(local, nsn, mine); why != "" {
		return refuse(why), "", nil
	}
	changed := local == nil || local.Task.Status != nsn.Task.Status
	if !changed || nsn.Task.Status != machine.Complete {
		return nil, "", nil
	}
	branch := ""
	switch {
	case mine != nil:
		branch = mine.Branch
	case nsn.Session != nil:
		branch = nsn.Session.Branch
	}
	acc := j.accept
	if acc == nil {
		acc = pv.lastAccept(nsn)
	}
	into, since := pv.claimedInto(ctx, nsn, acc)
	v := pv.verifyMerged(ctx, nsn.Task.ID, branch, into, since, remote)
	switch {
	case v.merged:
		return nil, "", nil
	case v.refute != "":
		return refuse(v.refute), "", nil
	}
	return nil, v.unknown, nil
}

// ownedSession is the local session of local's current session, when
// this machine started it (nil otherwise).
func (pv Provenance) ownedSession(local *task.Snapshot) *owned.Session {
	s := pv.st
	if local == nil || local.Session == nil || s.host == "" || local.Session.Host != s.host {
		return nil
	}
	o, err := owned.For(s.repo.LazyDir()).Match(local.Task.ID, local.Session.ID)
	if err != nil {
		return nil
	}
	return &o
}

// checkOwnSession refuses a pulled record that speaks for a session this
// machine runs: only this machine starts, pairs or interrupts its turns,
// and only it replaces its session with another of this host's.
func (pv Provenance) checkOwnSession(local, next *task.Snapshot, mine *owned.Session) string {
	s := pv.st
	if mine == nil {
		return ""
	}
	if next.Session == nil || next.Session.ID != local.Session.ID {
		if next.Session != nil && next.Session.Host == s.host {
			return fmt.Sprintf("it replaces this machine's session %s of the task with a session %s that this machine never started", local.Session.ID, next.Session.ID)
		}
		// Another host took the task over (lazy start --take-over): its
		// turns are that host's to judge, and this machine's local
		// session no longer matches, so nothing here acts on it.
		return ""
	}
	if local.Task.Status == next.Task.Status {
		return ""
	}
	switch next.Task.Status {
	case machine.Working, machine.Pairing, machine.Interrupted:
		return fmt.Sprintf("it makes the task %s, but the task's session runs on this machine (host %s), which started no such turn", next.Task.Status, s.host)
	}
	return ""
}

// mergeVerdict is what this machine can tell about a claimed merge.
type mergeVerdict struct {
	merged  bool
	refute  string // the claim is false here
	unknown string // the claim cannot be checked here
}

// verifyMerged checks a claim that task id's branch was merged into
// into: the branch's tip is an ancestor of into, or into (locally, or
// as last fetched from remote) has a commit above since carrying the
// task's Lazy-Task trailer, which lazy accept's squash commit does.
func (pv Provenance) verifyMerged(ctx context.Context, id, branch, into, since, remote string) mergeVerdict {
	s := pv.st
	if into == "" || task.ValidBranchName(into) != nil {
		return mergeVerdict{unknown: "the record does not say which branch the task was merged into, so this machine cannot check the merge"}
	}
	var targets []string
	for _, ref := range []string{"refs/heads/" + into, "refs/remotes/" + remote + "/" + into} {
		if remote == "" && strings.HasPrefix(ref, "refs/remotes/") {
			continue
		}
		if pv.refCommit(ctx, ref) != "" {
			targets = append(targets, ref)
		}
	}
	if len(targets) == 0 {
		return mergeVerdict{unknown: fmt.Sprintf("the branch %s it was merged into is not here, so this machine cannot check the merge", into)}
	}
	tip := ""
	if branch != "" && task.ValidBranchName(branch) == nil {
		tip = pv.refCommit(ctx, "refs/heads/"+branch)
	}
	if since != "" && (!task.ValidHex(since) || pv.refCommit(ctx, since) == "") {
		since = ""
	}
	for _, target := range targets {
		// Accept squashes, so a task's tip lands in a target only by a
		// merge of the target itself, never another task's branch (which
		// may contain it without it being merged anywhere).
		if tip != "" && into != branch && !strings.HasPrefix(into, "lazy/") {
			if _, err := git(ctx, s.Sync().remoteDir(), "merge-base", "--is-ancestor", tip, target); err == nil {
				return mergeVerdict{merged: true}
			}
		}
		args := []string{"log", "-1", "--format=%H", "--fixed-strings", "--grep=Lazy-Task: " + id, target}
		if since != "" {
			args = append(args, "^"+since)
		}
		if out, err := git(ctx, s.Sync().remoteDir(), args...); err == nil && len(strings.TrimSpace(string(out))) > 0 {
			return mergeVerdict{merged: true}
		}
	}
	if tip == "" {
		return mergeVerdict{unknown: fmt.Sprintf("neither the task's branch nor a squash commit of it is on %s here (update %s, then lazy doctor can check it)", into, into)}
	}
	return mergeVerdict{refute: fmt.Sprintf("it says the task was accepted, but %s here has neither the task's branch %s nor a squash commit of it: nothing was merged", into, branch)}
}

// refCommit resolves a ref or commit id to a commit id, "" when it does
// not name a commit here.
func (pv Provenance) refCommit(ctx context.Context, rev string) string {
	s := pv.st
	out, err := git(ctx, s.Sync().remoteDir(), "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// VerifyAccepted reports whether this machine can confirm that sn, a
// complete task, was merged: branch (the task's branch here) or a squash
// commit of it is on the local branch it was merged into. It says why
// not. Cleanup acts on a completion only when this holds: the record may
// have come from anywhere.
func (pv Provenance) VerifyAccepted(ctx context.Context, sn *task.Snapshot, branch string) (bool, string) {
	into, since := pv.claimedInto(ctx, sn, pv.lastAccept(sn))
	v := pv.verifyMerged(ctx, sn.Task.ID, branch, into, since, "")
	if v.merged {
		return true, ""
	}
	if v.refute != "" {
		return false, v.refute
	}
	return false, v.unknown
}

// claimedInto is the branch a completion says the task was merged into,
// and that branch's tip before the merge: the accept record's, else the
// task's target branch, else the branch checked out in the main work
// tree (where lazy accept merges a task without either).
func (pv Provenance) claimedInto(ctx context.Context, sn *task.Snapshot, acc *task.AcceptRecord) (into, since string) {
	s := pv.st
	switch {
	case acc != nil && acc.Into != "":
		return acc.Into, acc.IntoSHA
	case sn.Task.TargetBranch != "":
		return sn.Task.TargetBranch, ""
	}
	out, err := git(ctx, s.Sync().remoteDir(), "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return "", ""
	}
	return strings.TrimSpace(string(out)), ""
}

// lastAccept finds the newest accept record in the commits behind sn (a
// bounded walk: an accept writes it a commit or two before completing).
func (pv Provenance) lastAccept(sn *task.Snapshot) *task.AcceptRecord {
	s := pv.st
	var best *task.AcceptRecord
	var clock uint64
	seen := map[gitrepo.OID]bool{}
	queue := []gitrepo.OID{sn.Commit}
	for n := 0; len(queue) > 0 && n < maxStatusWalk; n++ {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := s.objs.ReadCommit(h)
		if err != nil {
			continue
		}
		queue = append(queue, c.ParentHashes...)
		if p, err := s.loadAt(sn.Task.ID, h); err == nil && p.Task.Accept != nil && (best == nil || p.Task.Clock > clock) {
			best, clock = p.Task.Accept, p.Task.Clock
		}
	}
	return best
}

// maxStatusWalk bounds how far back cleanup looks for the operation that
// gave a task its status: far beyond the few commits an accept or close
// writes.
const maxStatusWalk = 64

// noteFinished records, outside the refs anyone can push, that this
// machine itself made task id terminal with commit: the evidence cleanup
// needs before it removes what a close or reject leaves (StatusMadeHere).
// It is best effort: without it cleanup only keeps more.
func (pv Provenance) noteFinished(id string, commit gitrepo.OID) {
	s := pv.st
	dir := s.repo.LazyDir("finished")
	if !task.ValidID(id) || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	_ = renameio.WriteFile(filepath.Join(dir, id), []byte(commit.String()+"\n"), 0o600)
}

// StatusMadeHere reports whether the operation that gave sn its terminal
// status was made on this machine, not pulled from another: the commit
// that introduced the status (found along the parents that already had
// it) is the one this machine recorded when it wrote it (noteFinished).
// What a record says about its host proves nothing: anyone can write it.
func (pv Provenance) StatusMadeHere(sn *task.Snapshot) bool {
	s := pv.st
	if !task.ValidID(sn.Task.ID) {
		return false
	}
	b, err := os.ReadFile(filepath.Join(s.repo.LazyDir("finished"), sn.Task.ID))
	if err != nil {
		return false
	}
	mine, _ := gitrepo.ParseOID(strings.TrimSpace(string(b)))
	h := sn.Commit
	for i := 0; i < maxStatusWalk; i++ {
		if h == mine {
			return true
		}
		c, err := s.objs.ReadCommit(h)
		if err != nil {
			return false
		}
		var next gitrepo.OID
		for _, p := range c.ParentHashes {
			if ps, err := s.loadAt(sn.Task.ID, p); err == nil && ps.Task.Status == sn.Task.Status {
				next = p
				break
			}
		}
		if next.IsZero() {
			return false // h introduced the status, and this machine did not write it
		}
		h = next
	}
	return false
}

// Provenance judges records that came from elsewhere and vouches for
// what this host did: whether a pulled record may be taken in, whether a
// claimed merge really happened, and whether a status was set here.
type Provenance struct{ st *Store }

// Provenance is the judgement of what s's records say happened where.
func (s *Store) Provenance() Provenance { return Provenance{st: s} }
