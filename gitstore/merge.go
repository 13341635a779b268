package gitstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/task"
)

// opPatch is what one operation commit changed relative to its first
// parent.
type opPatch struct {
	commit gitrepo.OID
	op     task.Op
	task   map[string]json.RawMessage // changed task.json fields
	status bool                       // the op changed the status (op.From -> op.To)
	// session is the session after the op when it changed (nil with
	// sessionGone false: unchanged); sessionTurn is the identity of the
	// turn its Turn field points at.
	session     *task.Session
	sessionGone bool
	sessionTurn string
	violations  *task.Violations
	goal        *string
	turns       []task.Turn // added, in order
	consumed    []string    // identities whose feedback became consumed
	comments    []task.Comment
}

// recordIdentity identifies a turn or comment independently of its
// sequence number and of fields later edits change.
func turnIdentity(t task.Turn) string {
	t.Seq, t.FeedbackDelivery = 0, ""
	b, _ := json.Marshal(t)
	sum := sha256.Sum256(b)
	return string(sum[:])
}

func commentIdentity(c task.Comment) string {
	c.Seq = 0
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return string(sum[:])
}

// fullSnapshot is a snapshot with its turns, comments and goal read.
type fullSnapshot struct {
	*task.Snapshot
	turns    []task.Turn
	comments []task.Comment
	goal     string
}

func (mg merger) loadFull(id string, h gitrepo.OID) (*fullSnapshot, error) {
	s := mg.st
	sn, err := s.loadAt(id, h)
	if err != nil {
		return nil, err
	}
	// A merge rewrites every entry, so it needs them all: a record one
	// read cannot load whole is refused, never merged short.
	if err := s.sizer().CheckBounds(sn); err != nil {
		return nil, err
	}
	f := &fullSnapshot{Snapshot: sn}
	if f.turns, err = s.Turns(sn); err != nil {
		return nil, err
	}
	if f.comments, err = s.Comments(sn); err != nil {
		return nil, err
	}
	if f.goal, err = sn.Goal(); err != nil {
		return nil, err
	}
	return f, nil
}

// Merge combines two histories of task id, neither an ancestor of the
// other, into a merge commit (written, not referenced). Both sides'
// operations since their merge base are replayed onto the base in a
// deterministic order - Lamport clock, then host, then commit hash -
// through the state machine. Turns and comments are append-only and
// never conflict; a feedback turn consumed on either side is consumed.
// An operation whose transition is invalid after reordering is refused
// and listed on the task. The commit depends only on the two inputs, so
// two machines merging the same pair produce the same hash.
func (mg merger) Merge(id string, local, remote gitrepo.OID) (gitrepo.OID, []task.Refused, error) {
	s := mg.st
	m, refused, err := mg.mergeState(id, local, remote)
	if err != nil {
		return gitrepo.OID{}, nil, err
	}
	ls, err := s.loadAt(id, local)
	if err != nil {
		return gitrepo.OID{}, nil, err
	}
	rs, err := s.loadAt(id, remote)
	if err != nil {
		return gitrepo.OID{}, nil, err
	}
	lc, err := s.objs.ReadCommit(local)
	if err != nil {
		return gitrepo.OID{}, nil, err
	}
	rc, err := s.objs.ReadCommit(remote)
	if err != nil {
		return gitrepo.OID{}, nil, err
	}
	at := lc.Committer.When
	if rc.Committer.When.After(at) {
		at = rc.Committer.When
	}
	clock := max(ls.Task.Clock, rs.Task.Clock) + 1
	h, err := mg.writeMerge(m, local, remote, clock, at.UTC(), refused)
	return h, refused, err
}

// mergeState replays both histories of task id since their merge base
// (see Merge) and returns the state they combine into, unwritten.
func (mg merger) mergeState(id string, local, remote gitrepo.OID) (*merged, []task.Refused, error) {
	bases, err := mg.mergeBases(local, remote)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: find the merge base: %w", id, err)
	}
	if len(bases) == 0 {
		return nil, nil, fmt.Errorf("task %s: the two histories share no commit; refusing to merge unrelated records", id)
	}
	// With criss-cross histories several bases qualify; the smallest hash
	// is as good as any and the same everywhere.
	sort.Slice(bases, func(i, j int) bool { return bases[i].String() < bases[j].String() })
	base := bases[0]
	stop, err := mg.ancestors(base)
	if err != nil {
		return nil, nil, err
	}
	var patches []opPatch
	seen := map[gitrepo.OID]bool{}
	for _, tip := range []gitrepo.OID{local, remote} {
		if err := mg.walkOps(id, tip, stop, seen, &patches); err != nil {
			return nil, nil, err
		}
	}
	sort.Slice(patches, func(i, j int) bool {
		a, b := patches[i], patches[j]
		if a.op.Clock != b.op.Clock {
			return a.op.Clock < b.op.Clock
		}
		if a.op.Host != b.op.Host {
			return a.op.Host < b.op.Host
		}
		return a.commit.String() < b.commit.String()
	})
	bf, err := mg.loadFull(id, base)
	if err != nil {
		return nil, nil, err
	}
	m, refused := replay(bf, patches)
	return m, refused, nil
}

// mergeBases returns the best common ancestors of a and b, as git
// merge-base --all does: the commits both reach (each reaches itself)
// that no other such commit reaches.
func (mg merger) mergeBases(a, b gitrepo.OID) ([]gitrepo.OID, error) {
	ofA, err := mg.history(a)
	if err != nil {
		return nil, err
	}
	ofB, err := mg.history(b)
	if err != nil {
		return nil, err
	}
	var common []gitrepo.OID
	for h := range ofA {
		if _, ok := ofB[h]; ok {
			common = append(common, h)
		}
	}
	// A common commit that another common commit reaches is not a best
	// one. Each walk stops at commits an earlier walk marked: their
	// ancestors are marked already.
	reached := map[gitrepo.OID]bool{}
	for _, c := range common {
		stack := append([]gitrepo.OID(nil), ofA[c]...)
		for len(stack) > 0 {
			h := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if reached[h] {
				continue
			}
			reached[h] = true
			stack = append(stack, ofA[h]...)
		}
	}
	var best []gitrepo.OID
	for _, c := range common {
		if !reached[c] {
			best = append(best, c)
		}
	}
	return best, nil
}

// history maps h and every commit it reaches to their parents.
func (mg merger) history(h gitrepo.OID) (map[gitrepo.OID][]gitrepo.OID, error) {
	s := mg.st
	out := map[gitrepo.OID][]gitrepo.OID{}
	queue := []gitrepo.OID{h}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if _, ok := out[c]; ok {
			continue
		}
		cm, err := s.objs.ReadCommit(c)
		if err != nil {
			return nil, err
		}
		out[c] = cm.ParentHashes
		queue = append(queue, cm.ParentHashes...)
	}
	return out, nil
}

// ancestors returns every commit reachable from h (h included).
func (mg merger) ancestors(h gitrepo.OID) (map[gitrepo.OID]bool, error) {
	s := mg.st
	out := map[gitrepo.OID]bool{}
	queue := []gitrepo.OID{h}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if out[c] {
			continue
		}
		out[c] = true
		cm, err := s.objs.ReadCommit(c)
		if err != nil {
			return nil, err
		}
		queue = append(queue, cm.ParentHashes...)
	}
	return out, nil
}

// walkOps collects the patches of every operation commit reachable from
// tip and not from the base (stop). Merge commits carry no operation of
// their own: the operations they combined are collected individually.
func (mg merger) walkOps(id string, tip gitrepo.OID, stop, seen map[gitrepo.OID]bool, out *[]opPatch) error {
	s := mg.st
	queue := []gitrepo.OID{tip}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if stop[h] || seen[h] {
			continue
		}
		seen[h] = true
		c, err := s.objs.ReadCommit(h)
		if err != nil {
			return corruptAt(id, h, err)
		}
		queue = append(queue, c.ParentHashes...)
		if len(c.ParentHashes) != 1 {
			continue // a merge (or a root, which the base always covers)
		}
		p, err := mg.patch(id, c.ParentHashes[0], h)
		if err != nil {
			return err
		}
		*out = append(*out, *p)
	}
	return nil
}

var mergeSkipFields = map[string]bool{"status": true, "clock": true, "updated_at": true, "version": true, "turns": true, "comments": true, "merge_refused": true}

func (mg merger) patch(id string, parent, h gitrepo.OID) (*opPatch, error) {
	s := mg.st
	prev, err := mg.loadFull(id, parent)
	if err != nil {
		return nil, err
	}
	cur, err := mg.loadFull(id, h)
	if err != nil {
		return nil, err
	}
	p := &opPatch{commit: h, task: map[string]json.RawMessage{}}
	if err := s.decodeEntry(entriesOf(cur.Snapshot), fileOp, &p.op, true); err != nil {
		return nil, corruptAt(id, h, err)
	}
	p.op.Clock = cur.Task.Clock
	p.status = prev.Task.Status != cur.Task.Status
	p.op.From, p.op.To = prev.Task.Status, cur.Task.Status
	pm, cm := fields(&prev.Task), fields(&cur.Task)
	for k, v := range cm {
		if !mergeSkipFields[k] && !bytes.Equal(pm[k], v) {
			p.task[k] = v
		}
	}
	for k := range pm {
		if _, ok := cm[k]; !ok && !mergeSkipFields[k] {
			p.task[k] = nil // the field was cleared
		}
	}
	switch {
	case cur.Session == nil && prev.Session != nil:
		p.sessionGone = true
	case cur.Session != nil && (prev.Session == nil || !jsonEqual(prev.Session, cur.Session)):
		p.session = cur.Session
		for _, t := range cur.turns {
			if t.Seq == cur.Session.Turn {
				p.sessionTurn = turnIdentity(t)
			}
		}
	}
	if !jsonEqual(&prev.Violations, &cur.Violations) {
		v := cur.Violations
		p.violations = &v
	}
	if prev.goal != cur.goal {
		g := cur.goal
		p.goal = &g
	}
	before := map[string]task.Turn{}
	for _, t := range prev.turns {
		before[turnIdentity(t)] = t
	}
	for _, t := range cur.turns {
		ident := turnIdentity(t)
		old, ok := before[ident]
		switch {
		case !ok:
			p.turns = append(p.turns, t)
		case old.FeedbackDelivery != task.FeedbackConsumed && t.FeedbackDelivery == task.FeedbackConsumed:
			p.consumed = append(p.consumed, ident)
		}
	}
	had := map[string]bool{}
	for _, c := range prev.comments {
		had[commentIdentity(c)] = true
	}
	for _, c := range cur.comments {
		if !had[commentIdentity(c)] {
			p.comments = append(p.comments, c)
		}
	}
	return p, nil
}

func fields(t *task.Task) map[string]json.RawMessage {
	b, _ := json.Marshal(t)
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(b, &m)
	return m
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// merged is the state a replay builds.
type merged struct {
	task       map[string]json.RawMessage
	status     machine.Status
	session    *task.Session
	violations task.Violations
	goal       string
	turns      []task.Turn
	index      map[string]int // turn identity -> position
	comments   []task.Comment
	known      map[string]bool // comment identities
}

func replay(base *fullSnapshot, patches []opPatch) (*merged, []task.Refused) {
	m := &merged{task: fields(&base.Task), status: base.Task.Status, violations: base.Violations, goal: base.goal,
		index: map[string]int{}, known: map[string]bool{}}
	if base.Session != nil {
		sess := *base.Session
		m.session = &sess
	}
	for _, t := range base.turns {
		m.addTurn(t)
	}
	for _, c := range base.comments {
		m.addComment(c)
	}
	var refused []task.Refused
	for _, p := range patches {
		// A transition replays only from the status it was made in (or is
		// a no-op when the other side already made it); anything else
		// would apply a decision to a state nobody decided about.
		if p.status && m.status != p.op.From && m.status != p.op.To {
			reason := fmt.Sprintf("it moved the task %s -> %s, but after the other machine's operations the task was %s", p.op.From, p.op.To, m.status)
			if err := machine.Validate(m.status, p.op.To, p.op.Actor); err != nil {
				reason += " (" + err.Error() + ")"
			}
			refused = append(refused, refusal(p, reason))
			continue
		}
		// Histories come from other machines: a transition the state
		// machine does not allow its actor is refused, not replayed.
		if p.status && m.status == p.op.From {
			if err := machine.Validate(p.op.From, p.op.To, p.op.Actor); err != nil {
				refused = append(refused, refusal(p, err.Error()))
				continue
			}
		}
		if p.status {
			m.status = p.op.To
		}
		for k, v := range p.task {
			if v == nil {
				delete(m.task, k)
			} else {
				m.task[k] = v
			}
		}
		for _, t := range p.turns {
			m.addTurn(t)
		}
		for _, ident := range p.consumed {
			if i, ok := m.index[ident]; ok {
				m.turns[i].FeedbackDelivery = task.FeedbackConsumed
			}
		}
		for _, c := range p.comments {
			m.addComment(c)
		}
		switch {
		case p.sessionGone:
			m.session = nil
		case p.session != nil:
			sess := *p.session
			if i, ok := m.index[p.sessionTurn]; ok {
				sess.Turn = m.turns[i].Seq // the pointer follows the renumbering
			}
			m.session = &sess
		}
		if p.violations != nil {
			m.violations = *p.violations
		}
		if p.goal != nil {
			m.goal = *p.goal
		}
	}
	return m, refused
}

func refusal(p opPatch, reason string) task.Refused {
	return task.Refused{Commit: p.commit.String(), Op: p.op.Name, Actor: p.op.Actor, From: p.op.From, To: p.op.To,
		Clock: p.op.Clock, Host: p.op.Host, Reason: reason}
}

func (m *merged) addTurn(t task.Turn) {
	ident := turnIdentity(t)
	if i, ok := m.index[ident]; ok {
		if t.FeedbackDelivery == task.FeedbackConsumed {
			m.turns[i].FeedbackDelivery = task.FeedbackConsumed
		}
		return
	}
	t.Seq = len(m.turns) + 1
	m.index[ident] = len(m.turns)
	m.turns = append(m.turns, t)
}

func (m *merged) addComment(c task.Comment) {
	ident := commentIdentity(c)
	if m.known[ident] {
		return
	}
	m.known[ident] = true
	c.Seq = len(m.comments) + 1
	m.comments = append(m.comments, c)
}

// writeMerge writes the merged snapshot as a commit with both parents,
// in a byte-for-byte deterministic way.
func (mg merger) writeMerge(m *merged, local, remote gitrepo.OID, clock uint64, at time.Time, refused []task.Refused) (gitrepo.OID, error) {
	s := mg.st
	raw, err := json.Marshal(m.task)
	if err != nil {
		return gitrepo.OID{}, err
	}
	var t task.Task
	if err := json.Unmarshal(raw, &t); err != nil {
		return gitrepo.OID{}, fmt.Errorf("merge task fields: %w", err)
	}
	t.Status = m.status
	t.Clock = clock
	t.UpdatedAt = at.Truncate(time.Second)
	t.Version = task.SchemaVersion
	t.Turns, t.Comments = len(m.turns), len(m.comments)
	t.MergeRefused = appendRefused(t.MergeRefused, refused)
	if m.violations.Pending == nil {
		m.violations.Pending = []string{}
	}
	op := task.Op{Name: "merge", Actor: machine.System, To: t.Status, Clock: clock, Host: task.MergeHost, At: t.UpdatedAt}
	if len(refused) > 0 {
		op.Reason = fmt.Sprintf("%s refused after reordering", words.Count(len(refused), "operation", "operations"))
	}
	var entries []treeEntry
	blob := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		h, err := s.objs.Write(gitrepo.Blob, append(b, '\n'))
		if err != nil {
			return err
		}
		entries = append(entries, treeEntry{Name: name, Hash: h})
		return nil
	}
	if err := blob(fileTask, &t); err != nil {
		return gitrepo.OID{}, err
	}
	if m.session != nil {
		if err := blob(fileSession, m.session); err != nil {
			return gitrepo.OID{}, err
		}
	}
	if err := blob(fileViolations, &m.violations); err != nil {
		return gitrepo.OID{}, err
	}
	if err := blob(fileOp, &op); err != nil {
		return gitrepo.OID{}, err
	}
	if m.goal != "" {
		h, err := s.objs.Write(gitrepo.Blob, []byte(m.goal))
		if err != nil {
			return gitrepo.OID{}, err
		}
		entries = append(entries, treeEntry{Name: fileGoal, Hash: h})
	}
	dir := func(name string, n int, item func(int) any) error {
		if n == 0 {
			return nil
		}
		var sub []treeEntry
		for i := 0; i < n; i++ {
			b, err := json.MarshalIndent(item(i), "", "  ")
			if err != nil {
				return err
			}
			h, err := s.objs.Write(gitrepo.Blob, append(b, '\n'))
			if err != nil {
				return err
			}
			sub = append(sub, treeEntry{Name: seqName(i + 1), Hash: h})
		}
		h, err := gitrepo.WriteTree(s.objs, sub)
		if err != nil {
			return err
		}
		entries = append(entries, treeEntry{Name: name, Hash: h, Dir: true})
		return nil
	}
	if err := dir(dirTurns, len(m.turns), func(i int) any { return &m.turns[i] }); err != nil {
		return gitrepo.OID{}, err
	}
	if err := dir(dirComments, len(m.comments), func(i int) any { return &m.comments[i] }); err != nil {
		return gitrepo.OID{}, err
	}
	tree, err := gitrepo.WriteTree(s.objs, entries)
	if err != nil {
		return gitrepo.OID{}, err
	}
	parents := []gitrepo.OID{local, remote}
	sort.Slice(parents, func(i, j int) bool { return parents[i].String() < parents[j].String() })
	var b bytes.Buffer
	fmt.Fprintf(&b, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	sig := fmt.Sprintf("lazy <%s@lazy.invalid> %d +0000", task.MergeHost, t.UpdatedAt.Unix())
	fmt.Fprintf(&b, "author %s\ncommitter %s\n\n%s", sig, sig, commitMessage(&t, &op))
	return s.objs.Write(gitrepo.Commit, b.Bytes())
}

func appendRefused(have []task.Refused, more []task.Refused) []task.Refused {
	seen := map[string]bool{}
	for _, r := range have {
		seen[r.Commit] = true
	}
	for _, r := range more {
		if !seen[r.Commit] {
			seen[r.Commit] = true
			have = append(have, r)
		}
	}
	return have
}

// merger is the three-way merge of a task's diverged records: finding
// their merge bases, replaying the remote's operations onto the local
// record, and writing the merged commit.
type merger struct{ st *Store }

// merger is the merge of s's diverged records.
func (s *Store) merger() merger { return merger{st: s} }
