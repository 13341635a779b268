package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/pool"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/worktree"
)

// Options configure lazy runner.
type Options struct {
	Remote   string
	Labels   []string
	MaxTasks int
	// Once ends the runner when it holds no working task and finds
	// nothing to claim.
	Once        bool
	Lease, Poll time.Duration
	// MaxLease is lazy.pool.maxLease: the longest lease the pool
	// accepts; a claim whose lease runs out later than this from now
	// counts as expired (0: pool.DefaultMaxLease).
	MaxLease time.Duration
	// Agents are the agents this machine's configuration lets a runner
	// run (lazy.runner.agents): a task asking for another is left alone.
	Agents []string
	// Input is how this machine runs agent: its command, permissions,
	// sandbox and worktree directory, from its own configuration.
	Input func(agent string) (session.StartInput, error)
	// Reconcile records the turns of this runner's tasks that ended.
	Reconcile func(ctx context.Context, id string)
	// Say tells the user what the runner does, a line at a time.
	Say func(msg string)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Defaults of lazy runner.
const (
	DefaultLease = 2 * time.Minute
	DefaultPoll  = 10 * time.Second
)

// OnceRounds bounds a --once runner: it stops after this many rounds in
// a row that failed, or that found work it could claim but neither won
// a claim nor had a turn running. Whatever the remote holds (claims
// that keep moving, refs that cannot be read, a push the remote always
// refuses), a CI job's runner ends.
const OnceRounds = 5

// runner is one lazy runner process: the claims it holds and when it
// last renewed them.
type runner struct {
	s       *Service
	e       *session.Env
	o       Options
	p       Pool
	id      string
	held    map[string]pool.Held
	renewed time.Time
	started time.Time
	claims  map[string]pool.Held // as last fetched
	// backoff holds the tasks this runner could not run, until when it
	// leaves them to others.
	backoff map[string]time.Time
	// pushed is the record of each task this runner last pushed.
	pushed map[string]string
	// adopted says the claims this runner held before a restart were
	// taken back.
	adopted bool
	// reported are the skipped pool refs already said, by ref and object.
	reported map[string]bool
	// won counts the claims won; failed and fruitless the rounds in a
	// row that failed or came to nothing (see OnceRounds).
	won, failed, fruitless int
}

// RunPool runs this machine as a runner of the pool on o.Remote until
// ctx ends (or, with Once, until it is idle): it fetches, claims the
// eligible tasks it has room for by compare-and-swap pushes, runs their
// turns here, renews its leases in one push per round, and pushes each
// task's record and branch fenced by its claim.
func (s *Service) RunPool(ctx context.Context, o Options) error {
	r, err := s.newRunner(o)
	if err != nil {
		return err
	}
	for {
		won := r.won
		err := r.round(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return r.stop()
			}
			r.say("round failed (trying again in %s): %v", r.o.Poll, err)
		}
		if r.o.Once {
			if r.idle() {
				r.say("nothing left to run here; stopping (--once)")
				return r.stop()
			}
			if done, err := r.onceBound(err, won); done {
				return errors.Join(err, r.stop())
			}
		}
		select {
		case <-ctx.Done():
			return r.stop()
		case <-time.After(r.o.Poll):
		}
	}
}

func (s *Service) newRunner(o Options) (*runner, error) {
	e := s.Env
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Poll > o.Lease/3 {
		return nil, fmt.Errorf("--poll %s must be at most a third of --lease %s, so leases are renewed in time", o.Poll, o.Lease)
	}
	if o.MaxTasks <= 0 {
		o.MaxTasks = 1
	}
	if o.MaxLease <= 0 {
		o.MaxLease = pool.DefaultMaxLease
	}
	if o.Lease > o.MaxLease {
		return nil, fmt.Errorf("--lease %s is longer than lazy.pool.maxLease (%s), so every runner would count this runner's claims as expired; shorten --lease, or raise lazy.pool.maxLease on every machine of the pool", o.Lease, o.MaxLease)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Say == nil {
		o.Say = func(string) {}
	}
	if len(o.Agents) == 0 {
		return nil, errors.New("this machine allows its runner no agent: set git config lazy.runner.agents (claude, codex or exec, comma-separated)")
	}
	p, err := s.openPool(o.Remote, o.MaxLease)
	if err != nil {
		return nil, err
	}
	return &runner{s: s, e: e, o: o, p: p, id: e.Store.Host(), held: map[string]pool.Held{}, backoff: map[string]time.Time{}, pushed: map[string]string{},
		reported: map[string]bool{}, started: o.Now()}, nil
}

func (r *runner) say(format string, args ...any) { r.o.Say(fmt.Sprintf(format, args...)) }

// onceBound counts a --once runner's rounds in a row that failed (err)
// or came to nothing (no claim won since won, no turn running here),
// and says whether it must stop now: OnceRounds of either. A runner that
// stops on failures returns the last error, so its CI job fails.
func (r *runner) onceBound(err error, won int) (bool, error) {
	if err != nil {
		r.failed++
		if r.failed >= OnceRounds {
			r.say("%d rounds in a row failed; stopping (--once)", r.failed)
			return true, fmt.Errorf("the runner stopped after %d failed rounds in a row (--once): %w", r.failed, err)
		}
		return false, nil
	}
	r.failed = 0
	if r.won > won || r.working() > 0 {
		r.fruitless = 0
		return false, nil
	}
	r.fruitless++
	if r.fruitless >= OnceRounds {
		r.say("%d rounds in a row found work but won no claim of it; leaving it to other runners and stopping (--once)", r.fruitless)
		return true, nil
	}
	return false, nil
}

// round is one pass: take in what others did, tend the tasks held here,
// renew the leases, claim more.
//
// The leases are renewed before the tasks are tended and again after
// each step that can take long (tending a task, starting one it won):
// on a loaded machine a whole round can outlast a lease, and a renewal
// only at its end let other runners take over tasks whose turns ran
// here, so the agent ran twice. renew pushes only once a third of the
// lease has passed, so the extra calls cost nothing on a quick round.
func (r *runner) round(ctx context.Context) error {
	if err := r.fetch(ctx); err != nil {
		return err
	}
	if !r.adopted {
		r.adopt()
		r.adopted = true
	}
	r.checkHeld(ctx)
	if err := r.renew(ctx, false); err != nil {
		return err
	}
	for id := range r.held {
		r.o.Reconcile(ctx, id)
		r.tend(ctx, id)
		if err := r.renew(ctx, false); err != nil {
			return err
		}
	}
	return r.claimMore(ctx)
}

// fetch takes in the remote's task records (feedback from other clones,
// new tasks) and its pool refs.
func (r *runner) fetch(ctx context.Context) error {
	if err := r.s.Sync.Pull(ctx, r.o.Remote); err != nil {
		return err
	}
	if err := r.p.Fetch(ctx); err != nil {
		return err
	}
	claims, problems, err := r.p.Claims(ctx, r.o.Now())
	if err != nil {
		return err
	}
	r.claims = claims
	for _, p := range problems {
		if key := p.Ref + " " + p.Object; !r.reported[key] {
			r.reported[key] = true
			r.say("skipped the pool ref %s: %s", p.Ref, p.Reason)
		}
	}
	return nil
}

// checkHeld drops the tasks whose claim moved on the remote: another
// runner took them over after this one's lease ran out. Their turn is
// ended here and this machine's session record dropped; the work stays
// in the worktree and branch, and nothing of it is pushed.
func (r *runner) checkHeld(ctx context.Context) {
	for id, h := range r.held {
		c, ok := r.claims[id]
		if ok && c.Commit == h.Commit {
			continue
		}
		r.lose(ctx, id, c)
	}
}

func (r *runner) lose(ctx context.Context, id string, now pool.Held) {
	delete(r.held, id)
	_, _ = r.e.Supervisors().StopTurn(ctx, id)
	_ = r.e.Sessions().Forget(id)
	name := id
	if sn, err := r.e.Store.Load(id); err == nil {
		name = sn.Task.Slug
	}
	who := "another runner took its claim over"
	switch {
	case now.Problem != "":
		who = "its claim was replaced by one lazy does not accept (" + now.Problem + ")"
	case now.Released:
		who = fmt.Sprintf("%s released its claim (generation %d)", now.Runner, now.Generation)
	case now.Runner != "":
		who = fmt.Sprintf("runner %s holds it (generation %d)", now.Runner, now.Generation)
	}
	r.say("lost %s: %s; its turn here is ended and nothing of it is pushed; its work stays in its worktree and branch here", name, who)
}

// adopt takes back the live claims this runner's id holds on the remote
// (a runner restarted on the same clone) whose sessions run here. A
// runner id is public: a claim naming it proves nothing, so a task whose
// session this machine does not own is left to run out its lease.
func (r *runner) adopt() {
	now := r.o.Now()
	for id, h := range r.claims {
		if _, held := r.held[id]; held || h.Runner != r.id || !h.Live(now) {
			continue
		}
		if sn, err := r.e.Store.Load(id); err == nil && r.e.Owns(sn) {
			r.held[id] = h
			r.say("holding %s again (generation %d), as before this runner restarted", id, h.Generation)
		}
	}
}

// tend moves one held task on: its results go to the remote, feedback
// left for it starts the next turn, and a finished task is let go.
func (r *runner) tend(ctx context.Context, id string) {
	sn, err := r.e.Store.Load(id)
	if err != nil {
		return
	}
	if err := r.pushResults(ctx, sn); err != nil {
		r.say("push %s: %v", sn.Task.Slug, err)
		return
	}
	switch st := sn.Task.Status; {
	case st.IsTerminal():
		if err := r.p.Release(ctx, r.held[id], r.o.Now()); err == nil {
			delete(r.held, id)
			r.say("%s is %s; released", sn.Task.Slug, st)
		}
	case st == machine.Blocked:
		if ok, err := r.s.DeliverLeft(ctx, id); err != nil {
			r.say("deliver the feedback left for %s: %v", sn.Task.Slug, err)
		} else if ok {
			r.say("%s: delivering the feedback left for it", sn.Task.Slug)
		}
	case st == machine.Interrupted && r.e.Launch != nil:
		// The circuit breaker and the retry ladder decide, as for any
		// interrupted task here (the reconciler auto-resumes).
	}
}

// pushResults sends the task's record and branch, when the record here
// differs from the remote's, in one push fenced by its claim.
func (r *runner) pushResults(ctx context.Context, sn *task.Snapshot) error {
	id := sn.Task.ID
	local := sn.Commit.String()
	remote := r.s.Sync.Fetched(ctx, r.o.Remote, id)
	if local == remote || local == r.pushed[id] {
		return nil
	}
	ups := []pool.Update{{Ref: r.s.Sync.TaskRef(id), New: local}}
	if s, err := r.e.Owned(sn); err == nil {
		if tip, err := r.s.worktrees().BranchTip(ctx, r.e.Dir(), s.Branch); err == nil && tip != "" {
			ups = append(ups, pool.Update{Ref: "refs/heads/" + s.Branch, New: tip})
		}
	}
	if u, ok := r.logUpdate(ctx, id); ok {
		ups = append(ups, u)
	}
	next, err := r.p.Fenced(ctx, r.held[id], r.o.Lease, r.o.Now(), ups)
	switch {
	case errors.Is(err, pool.ErrLost):
		r.lose(ctx, id, pool.Held{})
		return err
	case errors.Is(err, pool.ErrBehind):
		// Someone wrote to the task meanwhile (feedback): the next round
		// merges it and pushes again.
		return nil
	case err != nil:
		return err
	}
	r.held[id] = next
	r.pushed[id] = local
	return nil
}

// renew extends every lease held here, with the runner's record, in one
// push, once a third of the lease has passed (or always, when forced).
func (r *runner) renew(ctx context.Context, force bool) error {
	now := r.o.Now()
	if !force && now.Sub(r.renewed) < r.o.Lease/3 {
		return nil
	}
	held := make([]pool.Held, 0, len(r.held))
	for _, h := range r.held {
		held = append(held, h)
	}
	next, err := r.p.Renew(ctx, held, r.record(false), r.o.Lease, now)
	if errors.Is(err, pool.ErrLost) {
		// A claim moved: the next round's fetch says which, and drops it.
		return nil
	}
	if err != nil {
		return err
	}
	for _, h := range next {
		r.held[h.Task] = h
	}
	r.renewed = now
	return nil
}

// record is what the pool is told about this runner.
func (r *runner) record(stopped bool) pool.Runner {
	holding := make([]string, 0, len(r.held))
	for id := range r.held {
		holding = append(holding, id)
	}
	sort.Strings(holding)
	labels := append([]string{}, r.o.Labels...) // [] in JSON, never null
	return pool.Runner{ID: r.id, Labels: labels, MaxTasks: r.o.MaxTasks, Agents: r.o.Agents, Started: r.started, Holding: holding, Stopped: stopped}
}

// working counts the held tasks whose turn runs: a task parked for a
// human takes no room.
func (r *runner) working() int {
	n := 0
	for id := range r.held {
		if sn, err := r.e.Store.Load(id); err == nil && (sn.Task.Status.IsActive() || sn.Task.Status == machine.Backlog) {
			n++
		}
	}
	return n
}

// idle reports whether nothing runs here and nothing is left that this
// runner could claim. A task it could not run (it let it go, see
// backoff) is left to other runners: it does not keep a --once runner
// going, which would claim it and let it go again every lease, forever.
func (r *runner) idle() bool {
	if r.working() > 0 {
		return false
	}
	for _, c := range r.eligible() {
		if _, failed := r.backoff[c.sn.Task.ID]; !failed {
			return false
		}
	}
	return true
}

// stop ends this runner: a turn still running here is stopped (the
// task parks blocked with its work kept, as lazy stop leaves it, so no
// other runner runs it a second time beside an orphan), every task it
// holds gets its results pushed and is let go, and the pool is told.
func (r *runner) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for id := range r.held {
		if sn, err := r.e.Store.Load(id); err == nil && sn.Task.Status == machine.Working {
			if _, err := r.s.Lifecycle.Stop(ctx, id, "the runner that ran it stopped"); err != nil {
				r.say("stop the turn of %s: %v (its claim runs out; the turn goes on here)", sn.Task.Slug, err)
			}
		}
	}
	for id := range r.held {
		if sn, err := r.e.Store.Load(id); err == nil && !sn.Task.Status.IsActive() {
			_ = r.pushResults(ctx, sn)
			if r.p.Release(ctx, r.held[id], r.o.Now()) == nil {
				delete(r.held, id)
			}
		}
	}
	rec := r.record(true)
	held := make([]pool.Held, 0, len(r.held))
	for _, h := range r.held {
		held = append(held, h)
	}
	_, err := r.p.Renew(ctx, held, rec, r.o.Lease, r.o.Now())
	if err != nil && !errors.Is(err, pool.ErrLost) {
		return err
	}
	return nil
}

// poolCandidate is a pooled task this runner could take.
type poolCandidate struct {
	sn   *task.Snapshot
	prev *pool.Held
}

// eligible lists the pooled tasks this runner may claim now, best
// first: priority, then age. A task is eligible when its labels are
// among the runner's, its agent is one this machine allows, the tasks it
// waits for are complete, and no live claim holds it; a backlog task is
// started, a held one whose lease ran out is taken over.
func (r *runner) eligible() []poolCandidate {
	entries, err := r.e.Store.List()
	if err != nil {
		return nil
	}
	now := r.o.Now()
	var out []poolCandidate
	for i := range entries {
		en := &entries[i]
		if en.Err != nil || en.Status.IsTerminal() {
			continue
		}
		if _, mine := r.held[en.ID]; mine {
			continue
		}
		sn, err := r.e.Store.Load(en.ID)
		if err != nil || sn.Task.Pool == nil || r.refuse(sn) != "" {
			continue
		}
		c := poolCandidate{sn: sn}
		if h, ok := r.claims[en.ID]; ok {
			if h.Live(now) {
				continue
			}
			c.prev = &h
		} else if sn.Task.Status != machine.Backlog {
			continue // started outside the pool
		}
		if !r.s.PoolWork(sn) {
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b poolCandidate) int {
		if pa, pb := a.sn.Task.Pool.Priority, b.sn.Task.Pool.Priority; pa != pb {
			return pb - pa
		}
		return a.sn.Task.CreatedAt.Compare(b.sn.Task.CreatedAt)
	})
	return out
}

// refuse says why this runner will not take sn ("" when it may).
func (r *runner) refuse(sn *task.Snapshot) string {
	p := sn.Task.Pool
	for _, l := range p.Labels {
		if !slices.Contains(r.o.Labels, l) {
			return "it asks for the label " + l
		}
	}
	if a := r.agentFor(sn); !slices.Contains(r.o.Agents, a) {
		return "it asks for the agent " + a + ", which lazy.runner.agents does not allow here"
	}
	if err := lifecycle.DepsDone(r.e.Store, sn); err != nil {
		return err.Error()
	}
	return ""
}

// agentFor is the agent a pooled task runs with: the one it asks for,
// else the first this runner allows.
func (r *runner) agentFor(sn *task.Snapshot) string {
	if a := sn.Task.Pool.Agent; a != "" {
		return a
	}
	return r.o.Agents[0]
}

// claimMore claims eligible tasks while this runner has room, and starts
// each it wins.
func (r *runner) claimMore(ctx context.Context) error {
	for _, c := range r.eligible() {
		if r.working() >= r.o.MaxTasks {
			return nil
		}
		id := c.sn.Task.ID
		if until, ok := r.backoff[id]; ok && r.o.Now().Before(until) {
			continue
		}
		if c.prev != nil && c.prev.Problem != "" {
			// Not a claim lazy accepts: the generation that follows it is
			// the one after the newest this machine trusts, the task's
			// own stamp, never the rejected claim's (bounded, so it
			// cannot wrap).
			c.prev.Generation = trustedGeneration(c.sn)
			r.say("taking over %s, whose claim lazy does not accept (%s)", c.sn.Task.Slug, c.prev.Problem)
		}
		h, err := r.p.Take(ctx, id, r.id, c.prev, r.o.Lease, r.o.Now())
		if errors.Is(err, pool.ErrLost) || errors.Is(err, pool.ErrHeld) {
			if r.o.Once {
				// Another runner was first, or the claim keeps moving: a
				// --once runner leaves it to them rather than try again.
				r.backoff[id] = r.o.Now().Add(r.o.Lease)
			}
			continue // another runner was first
		}
		if err != nil {
			return err
		}
		r.won++
		r.held[id] = h
		r.say("claimed %s (generation %d)", c.sn.Task.Slug, h.Generation)
		if err := r.begin(ctx, c.sn, h); err != nil {
			r.say("could not run %s here, letting it go (and leaving it to other runners for %s): %v", c.sn.Task.Slug, r.o.Lease, err)
			r.backoff[id] = r.o.Now().Add(r.o.Lease)
			if r.p.Release(ctx, h, r.o.Now()) == nil {
				delete(r.held, id)
			}
		}
		// Starting a turn can take long: the leases held before it are
		// renewed now, not at the next round (see round).
		if err := r.renew(ctx, false); err != nil {
			return err
		}
	}
	return nil
}

// begin runs a task this runner just claimed: a backlog task is started,
// one another runner held is taken over (its branch fetched first) and
// resumed if its turn was cut off. The record is pushed at once, fenced.
func (r *runner) begin(ctx context.Context, sn *task.Snapshot, h pool.Held) error {
	in, err := r.o.Input(r.agentFor(sn))
	if err != nil {
		return err
	}
	if err := r.stamp(ctx, sn.Task.ID, h); err != nil {
		return err
	}
	switch {
	case sn.Task.Status == machine.Backlog:
		if _, err := r.s.Lifecycle.Start(ctx, sn.Task.ID, in); err != nil {
			return err
		}
	case r.e.Owns(sn):
		// This machine runs its session already (it held the task before
		// and let it go): it goes on here with the same session.
		if sn.Task.Status == machine.Interrupted {
			if _, err := r.s.Lifecycle.Resume(ctx, sn.Task.ID); err != nil {
				return err
			}
		}
	default:
		if err := r.takeOver(ctx, sn, in); err != nil {
			return err
		}
	}
	fresh, err := r.e.Store.Load(sn.Task.ID)
	if err != nil {
		return err
	}
	return r.pushResults(ctx, fresh)
}

// stamp records on the task the claim this runner writes under.
func (r *runner) stamp(ctx context.Context, id string, h pool.Held) error {
	_, _, err := r.e.Store.Update(ctx, id, func(s *task.Snapshot) (*task.Op, error) {
		if s.Task.Pool == nil {
			return nil, errNotPooled
		}
		s.Task.Pool.Runner, s.Task.Pool.Generation = h.Runner, h.Generation
		return &task.Op{Name: "claim", Actor: r.e.Actor, Reason: fmt.Sprintf("runner %s, generation %d", h.Runner, h.Generation)}, nil
	})
	return err
}

// takeOver makes a task another runner held run here: its branch as the
// remote has it, a new session, and its cut-off turn resumed.
func (r *runner) takeOver(ctx context.Context, sn *task.Snapshot, in session.StartInput) error {
	branch := worktree.Branch(sn.Task.Slug)
	if err := r.s.worktrees().FetchBranch(ctx, r.e.Dir(), r.o.Remote, branch); err != nil {
		return fmt.Errorf("fetch its branch %s: %w", branch, err)
	}
	taken, err := r.s.Lifecycle.TakeOver(ctx, sn.Task.ID, in)
	if err != nil {
		return err
	}
	r.say("took %s over from host %s", sn.Task.Slug, sn.Session.Host)
	if taken.Task.Status == machine.Interrupted {
		_, err = r.s.Lifecycle.Resume(ctx, sn.Task.ID)
	}
	return err
}

// PoolRunnerID is the id a runner on this machine goes by.
func (s *Service) PoolRunnerID() string { return s.Env.Store.Host() }

// PoolWork reports whether a pooled task no live claim holds has work
// for a runner: a backlog task to start, a turn cut off to resume, or
// feedback another clone left for it. A task parked for a human's
// review has none until the human gives it some.
func (s *Service) PoolWork(sn *task.Snapshot) bool {
	switch sn.Task.Status {
	case machine.Backlog, machine.Working, machine.Interrupted:
		return true
	case machine.Blocked:
		_, ok, err := s.newFeedback(sn)
		return ok && err == nil
	}
	return false
}

// logUpdate is the push of the task's newest agent log (its last
// pool.MaxLog bytes), so lazy logs on any clone can show a turn a runner
// ran.
func (r *runner) logUpdate(ctx context.Context, id string) (pool.Update, bool) {
	b, err := os.ReadFile(proto.ForTask(r.e.Repo.LazyDir(), id).Path(proto.LogFile))
	if err != nil || len(b) == 0 {
		return pool.Update{}, false
	}
	// The pool's remote is shared: the log leaves without the secrets an
	// agent printed.
	commit, err := r.p.WriteLog(ctx, id, r.e.Secrets().Log(pool.LogTail(b)))
	if err != nil {
		return pool.Update{}, false
	}
	return pool.Update{Ref: pool.LogsPrefix + id, New: commit, Force: true}, true
}
