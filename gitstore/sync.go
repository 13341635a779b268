package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/task"
)

// RemoteNamespace is where lazy pull fetches a remote's task refs: never
// into refs/lazy/*, so fetching never touches local records.
func RemoteNamespace(remote string) string { return "refs/lazy-remotes/" + remote + "/" }

// ValidRemote checks a remote name before it reaches git argv: a letter
// or digit, then letters, digits, '.', '_' and '-', and no "..".
func ValidRemote(name string) error {
	return gitrepo.ValidRemote(name)
}

// SyncReport says what a pull or push did.
type SyncReport struct {
	Remote        string         `json:"remote"`
	Created       []string       `json:"created"`
	FastForwarded []string       `json:"fast_forwarded"`
	Merged        []string       `json:"merged"`
	LocalAhead    int            `json:"local_ahead"`
	UpToDate      int            `json:"up_to_date"`
	Refused       []task.Refused `json:"refused"`
	// Unverified lists statuses taken in that this machine could not
	// confirm (see Unverified).
	Unverified []Unverified `json:"unverified"`
	// Flagged lists the figures the pulled records brought that lazy
	// does not believe (see Flag): taken in, left out of every sum.
	Flagged []task.Flag `json:"flagged"`
	Skipped []Skip      `json:"skipped"`
	Renamed []Rename    `json:"renamed"`
	// Pushed counts the refs a push moved on the remote (task records
	// and their slug names); PushedTasks the task records among them,
	// and NewOnRemote those of the task records the remote did not have.
	// A push's UpToDate counts the task records the remote already had
	// as they are here.
	Pushed      int      `json:"pushed"`
	PushedTasks int      `json:"pushed_tasks"`
	NewOnRemote int      `json:"new_on_remote"`
	Rejected    []string `json:"rejected"`
	Retries     int      `json:"retries"`
}

// Rename is a local task that lost its slug to a remote task created
// with the same slug on another clone.
type Rename struct {
	ID     string `json:"id"`
	From   string `json:"from"`
	To     string `json:"to"`
	Winner string `json:"winner"` // the remote task that keeps From
}

// Skip is a remote record lazy did not take, and why.
type Skip struct {
	Ref    string `json:"ref"`
	Reason string `json:"reason"`
}

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errors.New("refusing a NUL byte in git argv")
		}
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()+" "+err.Error()))
	}
	return out, nil
}

// remoteDir is where git talks to remotes: the work tree when there is
// one, because a relative remote URL (../shared.git) is relative to it.
func (sy Sync) remoteDir() string {
	s := sy.st
	if s.repo.WorkTree != "" {
		return s.repo.WorkTree
	}
	return s.repo.CommonDir
}

// Fetch copies remote's refs/lazy/* into its remote namespace with the
// git CLI, so the user's credentials, ssh config and insteadOf apply.
func (sy Sync) Fetch(ctx context.Context, remote string) error {
	if err := ValidRemote(remote); err != nil {
		return err
	}
	_, err := git(ctx, sy.remoteDir(), "fetch", "--quiet", "--no-tags", "--prune", remote, "+refs/lazy/*:"+RemoteNamespace(remote)+"*")
	if err != nil {
		return &RemoteError{Op: "fetch from", Remote: remote, Err: err}
	}
	return nil
}

// RemoteError is a failed fetch or push, told in one sentence: git's
// fatal line and what to check, not its whole stderr.
type RemoteError struct {
	Op, Remote string
	Err        error
}

func (e *RemoteError) Error() string {
	fatal := gitFatal(e.Err)
	if strings.Contains(fatal, ".lock': File exists") {
		// A git killed while it updated a ref leaves its lock behind.
		return fmt.Sprintf("could not %s %s (%s); if no other lazy or git is running, a killed one left that lock: lazy doctor removes it once it is %d minutes old, or delete the file", e.Op, e.Remote, fatal, int(StaleLockAge.Minutes()))
	}
	return fmt.Sprintf("could not %s %s (%s); check its URL and your access with git remote -v", e.Op, e.Remote, fatal)
}

// StaleLockAge is how old a ref's .lock file must be before lazy doctor
// takes it for the leftover of a killed process: a live writer holds one
// for microseconds.
const StaleLockAge = 2 * time.Minute

func (e *RemoteError) Unwrap() error { return e.Err }

// gitFatal is the first "fatal:" (or "error:") line of a git error,
// without the prefix: the one sentence worth showing a user.
func gitFatal(err error) string {
	msg := err.Error()
	for _, p := range []string{"fatal: ", "error: "} {
		if i := strings.Index(msg, p); i >= 0 {
			line := msg[i+len(p):]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			return strings.TrimSpace(line)
		}
	}
	return msg
}

// Pull fetches remote's task state and takes it in, task by task: a task
// new here is created, one that only moved there fast-forwards, and one
// that moved on both sides is merged (see Merge). A malformed remote
// record is skipped and reported; the rest of the pull goes on. The work
// after the fetch is proportional to the tasks that differ.
func (sy Sync) Pull(ctx context.Context, remote string) (*SyncReport, error) {
	if err := sy.Fetch(ctx, remote); err != nil {
		return nil, err
	}
	return sy.Integrate(ctx, remote)
}

// Integrate takes in what the last fetch of remote brought.
func (sy Sync) Integrate(ctx context.Context, remote string) (*SyncReport, error) {
	s := sy.st
	rep := &SyncReport{Remote: remote}
	ns := RemoteNamespace(remote)
	theirs, err := s.objs.ListRefs(ns + "tasks/")
	if err != nil {
		return nil, err
	}
	ours, err := s.objs.ListRefs(TasksPrefix)
	if err != nil {
		return nil, err
	}
	sy.settleSlugs(ns, rep)
	names := make([]string, 0, len(theirs))
	for ref := range theirs {
		names = append(names, ref)
	}
	sort.Strings(names)
	for _, ref := range names {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		id := strings.TrimPrefix(ref, ns+"tasks/")
		rh := theirs[ref]
		if !task.ValidID(id) {
			rep.Skipped = append(rep.Skipped, Skip{Ref: ref, Reason: "not a task id"})
			continue
		}
		lh, have := ours[TasksPrefix+id]
		if have && lh == rh {
			rep.UpToDate++
			continue
		}
		if err := sy.takeIn(ctx, remote, id, rh, rep); err != nil {
			rep.Skipped = append(rep.Skipped, Skip{Ref: ref, Reason: err.Error()})
		}
	}
	return rep, nil
}

// takeIn brings one remote task tip into the local ref, retrying when a
// local writer moves the ref meanwhile. Every status change it would
// take in is judged first (judgePulled); a refused one leaves the local
// ref where it was and is reported.
func (sy Sync) takeIn(ctx context.Context, remote, id string, rh gitrepo.OID, rep *SyncReport) error {
	s := sy.st
	ns := RemoteNamespace(remote)
	rs, err := s.loadAt(id, rh)
	if err != nil {
		return err
	}
	if err := task.ValidateRecord(rs); err != nil {
		return fmt.Errorf("malformed record: %w", err)
	}
	if err := s.sizer().CheckBounds(rs); err != nil {
		return fmt.Errorf("refused: %w; it was not taken in", err)
	}
	for attempt := 0; attempt < 8; attempt++ {
		lh, have, err := s.objs.ReadRef(TaskRef(id))
		if err != nil {
			return err
		}
		var local *task.Snapshot
		if have {
			if local, err = s.loadAt(id, lh); err != nil {
				return err
			}
		}
		var next gitrepo.OID
		var kind *[]string
		var refused []task.Refused
		history := true
		switch {
		case !have:
			next, kind = rh, &rep.Created
		case lh == rh:
			rep.UpToDate++
			return nil
		default:
			theirsAhead, err := sy.isAncestor(lh, rh)
			if err != nil {
				return err
			}
			oursAhead, err := sy.isAncestor(rh, lh)
			if err != nil {
				return err
			}
			switch {
			case oursAhead:
				rep.LocalAhead++
				return nil
			case theirsAhead:
				next, kind = rh, &rep.FastForwarded
			default:
				// The merge replays the pulled operations through the
				// state machine itself; what is left to judge is its end.
				m, r, err := s.merger().Merge(id, lh, rh)
				if err != nil {
					return err
				}
				next, kind, refused, history = m, &rep.Merged, r, false
			}
		}
		bad, unverified, err := s.Provenance().judgePulled(ctx, remote, id, local, next, history)
		if err != nil {
			return err
		}
		if bad != nil {
			bad.Task, bad.KeptLocal = rs.Task.Slug, true
			if local != nil {
				bad.Task = local.Task.Slug
			}
			rep.Refused = append(rep.Refused, *bad)
			return nil
		}
		err = s.publisher().casCommit(TaskRef(id), lh, next)
		if errors.Is(err, ErrStale) {
			continue // a local operation landed meanwhile: judge again
		}
		if err != nil {
			return err
		}
		for _, r := range refused {
			r.Task = rs.Task.Slug
			rep.Refused = append(rep.Refused, r)
		}
		if unverified != "" {
			rep.Unverified = append(rep.Unverified, Unverified{Task: rs.Task.Slug, Reason: unverified})
		}
		rep.Flagged = append(rep.Flagged, s.newFlags(local, rs)...)
		*kind = append(*kind, rs.Task.Slug)
		if !have {
			sy.adoptSlug(rs, ns, rep)
		}
		return nil
	}
	return fmt.Errorf("task %s kept changing locally; pull again", id)
}

// settleSlugs makes this clone agree with the remote on who owns each
// slug. Two clones can each create a task with the same slug; the first
// to push owns it on the remote. Here the remote's claim wins: a local
// task holding a slug the remote gives to another task is renamed to
// LoserSlug (an operation in its history, so the rename travels with the
// next push), and the local slug ref then names the remote's task, so the
// next push is a fast-forward of nothing and succeeds.
func (sy Sync) settleSlugs(ns string, rep *SyncReport) {
	s := sy.st
	theirs, err := s.objs.ListRefs(ns + "slugs/")
	if err != nil {
		return
	}
	names := make([]string, 0, len(theirs))
	for ref := range theirs {
		names = append(names, ref)
	}
	sort.Strings(names)
	for _, ref := range names {
		slug := strings.TrimPrefix(ref, ns+"slugs/")
		rh := theirs[ref]
		lh, have, err := s.objs.ReadRef(SlugsPrefix + slug)
		if err != nil || !have || lh == rh || !task.ValidSlug(slug) {
			continue
		}
		if err := sy.yieldSlug(ns, slug, lh, rh, rep); err != nil {
			rep.Skipped = append(rep.Skipped, Skip{Ref: SlugsPrefix + slug, Reason: err.Error()})
		}
	}
}

// yieldSlug hands slug (locally naming the blob lh) to the remote's claim
// rh, renaming the local task it named.
func (sy Sync) yieldSlug(ns, slug string, lh, rh gitrepo.OID, rep *SyncReport) error {
	s := sy.st
	read := func(h gitrepo.OID) string {
		b, err := s.objs.ReadBlob(h, "slug", limitFor("slug"))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	local, winner := read(lh), read(rh)
	if !task.ValidID(winner) {
		return fmt.Errorf("the remote's slug ref does not name a task id; %s keeps naming the local task", slug)
	}
	// A claim counts only for a task the remote (or this clone) has: a
	// bare slug ref cannot take a name away from a local task.
	// It counts only for a readable, valid record of the remote's that
	// has this slug: a bare or bogus slug ref, or a record pull will
	// refuse, cannot take a name away from a local task.
	wh, remoteHas, err := s.objs.ReadRef(ns + "tasks/" + winner)
	if err != nil {
		return err
	}
	if !remoteHas {
		if wh, remoteHas, err = s.objs.ReadRef(TaskRef(winner)); err != nil {
			return err
		}
	}
	if !remoteHas {
		return fmt.Errorf("the remote's slug ref names task %s, which the remote does not have; %s keeps naming the local task", winner, slug)
	}
	ws, err := s.loadAt(winner, wh)
	if err == nil {
		err = task.ValidateRecord(ws)
	}
	if err != nil || ws.Task.Slug != slug {
		return fmt.Errorf("the remote's slug ref names task %s, whose record is unreadable or has another slug; %s keeps naming the local task", winner, slug)
	}
	if task.ValidID(local) && local != winner {
		if _, ok, err := s.objs.ReadRef(TaskRef(local)); err != nil {
			return err
		} else if ok {
			to := task.LoserSlug(slug, local)
			why := fmt.Sprintf("slug %s went to task %s, created with the same slug on another clone", slug, winner)
			renamed, err := s.Slugs().renameTask(context.Background(), local, slug, to, why)
			if err != nil {
				return err
			}
			if renamed {
				rep.Renamed = append(rep.Renamed, Rename{ID: local, From: slug, To: to, Winner: winner})
			}
		}
	}
	return s.objs.CompareAndSwapVerified(SlugsPrefix+slug, lh, rh, nil)
}

// adoptSlug gives a task that arrived from a remote its slug here, unless
// a local task already has it (then the task answers to its id).
func (sy Sync) adoptSlug(sn *task.Snapshot, ns string, rep *SyncReport) {
	s := sy.st
	slug := sn.Task.Slug
	idBlob, err := s.objs.Write(gitrepo.Blob, []byte(sn.Task.ID+"\n"))
	if err != nil {
		return
	}
	if h, ok, _ := s.objs.ReadRef(ns + "slugs/" + slug); ok && h != idBlob {
		rep.Skipped = append(rep.Skipped, Skip{Ref: SlugsPrefix + slug, Reason: "the remote's slug ref does not name this task"})
	}
	if err := s.publisher().casBlob(SlugsPrefix+slug, idBlob, []byte(sn.Task.ID+"\n")); err != nil {
		cur, _, _ := s.objs.ReadRef(SlugsPrefix + slug)
		if cur != idBlob {
			rep.Skipped = append(rep.Skipped, Skip{Ref: SlugsPrefix + slug,
				Reason: fmt.Sprintf("slug %q is taken here by another task; %s answers to its id %s", slug, slug, sn.Task.ID)})
		}
	}
}

// isAncestor reports whether a is b or one of b's ancestors, as git
// merge-base --is-ancestor does. The walk from b stops at a: in a pull's
// fast-forward check a is a few commits back.
func (sy Sync) isAncestor(a, b gitrepo.OID) (bool, error) {
	s := sy.st
	if _, err := s.objs.ReadCommit(a); err != nil {
		return false, err
	}
	seen := map[gitrepo.OID]bool{}
	queue := []gitrepo.OID{b}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == a {
			return true, nil
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		cm, err := s.objs.ReadCommit(c)
		if err != nil {
			return false, err
		}
		queue = append(queue, cm.ParentHashes...)
	}
	return false, nil
}

// Push sends refs/lazy/* to remote without force. A rejected push (the
// remote moved) pulls, merges and tries again, a bounded number of times.
func (sy Sync) Push(ctx context.Context, remote, refspec string) (*SyncReport, error) {
	return sy.PushPhases(ctx, remote, refspec, nil)
}

// PushPhases is Push telling phase (when not nil) what it does as it
// goes: pushing, then for each rejection the pull and merge before the
// next try, so a terminal can show where a slow push is.
func (sy Sync) PushPhases(ctx context.Context, remote, refspec string, phase func(string)) (*SyncReport, error) {
	if phase == nil {
		phase = func(string) {}
	}
	if err := ValidRemote(remote); err != nil {
		return nil, err
	}
	if refspec == "" {
		refspec = "refs/lazy/*:refs/lazy/*"
	}
	if err := CheckPushRefspec(refspec); err != nil {
		return nil, err
	}
	rep := &SyncReport{Remote: remote}
	// moved keeps what each ref's push did, over the tries: a ref the
	// first try pushed is up to date on the next, and is counted once.
	moved := map[string]byte{}
	defer func() { rep.Pushed, rep.PushedTasks, rep.NewOnRemote, rep.UpToDate = pushCounts(moved) }()
	const attempts = 4
	for attempt := 1; ; attempt++ {
		if attempt == 1 {
			phase("pushing")
		} else {
			phase(fmt.Sprintf("pushing again (try %d of %d)", attempt, attempts))
		}
		out, err := git(ctx, sy.remoteDir(), "push", "--porcelain", remote, refspec)
		rejected := parsePorcelain(string(out), moved)
		if len(rejected) == 0 {
			if err != nil {
				return rep, &RemoteError{Op: "push to", Remote: remote, Err: err}
			}
			rep.Rejected = nil
			return rep, nil
		}
		rep.Rejected = rejected
		if attempt == attempts {
			return rep, fmt.Errorf("the remote kept rejecting %s after %d merges: %s", words.Count(len(rejected), "ref", "refs"), attempts-1, strings.Join(rejected, ", "))
		}
		rep.Retries++
		phase(fmt.Sprintf("the remote moved: merging its records into the %s it rejected", words.Count(len(rejected), "ref", "refs")))
		pr, perr := sy.Pull(ctx, remote)
		if perr != nil {
			return rep, perr
		}
		rep.Merged = append(rep.Merged, pr.Merged...)
		rep.FastForwarded = append(rep.FastForwarded, pr.FastForwarded...)
		rep.Created = append(rep.Created, pr.Created...)
		rep.Refused = append(rep.Refused, pr.Refused...)
		rep.Unverified = append(rep.Unverified, pr.Unverified...)
		rep.Skipped = append(rep.Skipped, pr.Skipped...)
		rep.Renamed = append(rep.Renamed, pr.Renamed...)
	}
}

// pushCounts reads what a push did from each ref's last porcelain flag:
// the refs moved, the task records among them, those new on the remote,
// and the task records the remote already had.
func pushCounts(moved map[string]byte) (refs, tasks, created, upToDate int) {
	for ref, flag := range moved {
		task := strings.HasPrefix(ref, TasksPrefix)
		if flag == '=' {
			if task {
				upToDate++
			}
			continue
		}
		refs++
		if task {
			tasks++
			if flag == '*' {
				created++
			}
		}
	}
	return refs, tasks, created, upToDate
}

// parsePorcelain records in moved what git push did to each ref (its
// porcelain flag: '*' new, ' ' fast-forward, '+' forced, '-' deleted,
// '=' up to date) and lists the refs the remote rejected. A ref pushed by
// an earlier try keeps that flag when a later try finds it up to date.
func parsePorcelain(out string, moved map[string]byte) (rejected []string) {
	for _, line := range strings.Split(out, "\n") {
		if len(line) < 2 || line[1] != '\t' {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) < 2 {
			continue
		}
		ref := fields[1]
		if i := strings.IndexByte(ref, ':'); i >= 0 {
			ref = ref[i+1:]
		}
		switch line[0] {
		case ' ', '+', '*', '-':
			moved[ref] = line[0]
		case '=':
			if _, pushed := moved[ref]; !pushed {
				moved[ref] = '='
			}
		case '!':
			rejected = append(rejected, ref)
		}
	}
	return rejected
}

// CheckPushRefspec refuses a lazy.pushRefspec lazy will not push: one
// that forces, reads as an option, or pushes more than refs/lazy/. lazy
// push and lazy config apply it alike.
func CheckPushRefspec(refspec string) error {
	if strings.HasPrefix(refspec, "+") || strings.HasPrefix(refspec, "-") {
		return fmt.Errorf("lazy.pushRefspec %q would force or be read as an option; lazy pushes without force", refspec)
	}
	if src, _, _ := strings.Cut(refspec, ":"); !strings.HasPrefix(src, "refs/lazy/") {
		// This machine's own records (refs/lazy-kept/, the kept stashes
		// of the user's changes, among them) never leave it.
		return fmt.Errorf("lazy.pushRefspec %q pushes more than lazy's task records; set it to refs/lazy/*:refs/lazy/* (or another source under refs/lazy/)", refspec)
	}
	return nil
}

// Sync is the store's exchange with a remote: fetching task and slug
// refs into the remote's namespace, taking pulled records in (judged,
// merged or refused), settling slug collisions, and pushing. It owns no
// state of its own; the Store it was taken from holds the repository.
type Sync struct{ st *Store }

// Sync is s's exchange with its remotes.
func (s *Store) Sync() Sync { return Sync{st: s} }

// Fetched is the commit of task id's record as remote had it at the
// last fetch, "" when it had none (or the name is not one lazy reads),
// read in process: a runner asks it of every task it holds each round.
func (sy Sync) Fetched(remote, id string) string {
	if ValidRemote(remote) != nil || !task.ValidID(id) {
		return ""
	}
	h, ok, err := sy.st.objs.ReadRef(RemoteNamespace(remote) + "tasks/" + id)
	if err != nil || !ok {
		return ""
	}
	return h.String()
}
