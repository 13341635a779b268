package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/internal/words"
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
	// Grace is how long a turn running when the runner is told to stop
	// (SIGTERM, SIGINT) may take to finish on its own before it is
	// stopped; 0 stops it at once.
	Grace time.Duration
	// RenewEvery is how often the leases are renewed (0: a quarter of
	// the lease).
	RenewEvery time.Duration
}

// Defaults of lazy runner.
const (
	DefaultLease = 2 * time.Minute
	DefaultPoll  = 10 * time.Second
	DefaultGrace = 30 * time.Second
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
	s  *Service
	e  *session.Env
	o  Options
	p  Pool
	id string
	// mu guards held, renewing and the counts the renewer shares with
	// the round; it is never held across a git call (see lease.go).
	mu   sync.Mutex
	held map[string]pool.Held
	// renewing is closed when the renewer's push in flight ends (nil
	// when none is).
	renewing chan struct{}
	// renewals counts the renewer's successful pushes.
	renewals int
	// lastRenewErr is the renewer's last failure said (said once).
	lastRenewErr string
	// stopRenewer ends the renewer and waits for it.
	stopRenewer func()
	// recheck is how long a wait goes at most without reading the
	// records of the turns it waits on (the const recheck; tests set it).
	recheck time.Duration
	// quit ends when the runner is told to stop: it takes no new task.
	quit    context.Context
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
	// stopStep, when set, replaces the const stopStep (tests).
	stopStep time.Duration
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
//
// When ctx ends (SIGTERM, SIGINT) the runner takes no new task, gives a
// turn running here o.Grace to finish and park on its own, then stops
// what still runs (its work kept, as lazy stop keeps it) and hands back
// every claim it holds with a fenced push: the task's record and branch,
// then the release, each leased on the claim this runner holds, so a
// runner that lost the claim cannot overwrite the new holder's. It
// returns nil only when every claim was handed back.
func (s *Service) RunPool(ctx context.Context, o Options) error {
	r, err := s.newRunner(o)
	if err != nil {
		return err
	}
	r.quit = ctx
	// The round's git work is not cut off by the signal: a push cut in
	// half would lose what the turn did. It ends at the runner's stop.
	work := context.WithoutCancel(ctx)
	r.startRenewer(work)
	defer r.stopRenewer()
	woke := false
	for {
		won := r.won
		err := r.pass(work, !woke)
		if err != nil {
			if ctx.Err() != nil {
				return r.drain(work)
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
		if ctx.Err() != nil {
			return r.drain(work)
		}
		var again bool
		if again, woke = r.waitRound(ctx, work); !again {
			return r.drain(work)
		}
	}
}

// wakeTick is how often a waiting runner looks whether a turn that ran
// here when the wait began may have ended (mayHaveEnded: a stat and a
// lock probe per turn, so the look can be frequent: the next task starts
// within about wakeTick of the agent's exit); the record is read only
// when one says so, or once a recheck in any case.
const (
	wakeTick = 20 * time.Millisecond
	recheck  = time.Second
)

// waitRound waits o.Poll for the next round. It returns false when ctx
// ended.
//
// A turn that ran here when the wait began and has ended cuts the wait
// short (woke): its end frees room for the next task, so the runner
// does not sit out the rest of --poll (10 s by default) before it
// starts one, and the pass that follows pushes what the turn left (a
// park reaches the remote within about wakeTick and a push, where
// every clone's inbox and notifications read it). Only those tasks are
// looked at every wakeTick: a task held here that waits for a human
// does not change between rounds, and a runner may hold many (looking
// at each of them five times a second was most of an idle runner's
// work). What only the remote can tell (new tasks, feedback) waits for
// the poll.
func (r *runner) waitRound(ctx, work context.Context) (again, woke bool) {
	next := time.NewTimer(r.o.Poll)
	defer next.Stop()
	busy := r.running()
	if len(busy) == 0 {
		select {
		case <-ctx.Done():
			return false, false
		case <-next.C:
			return true, false
		}
	}
	tick := time.NewTicker(min(wakeTick, r.o.Poll))
	defer tick.Stop()
	looked := time.Now()
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-next.C:
			return true, false
		case <-tick.C:
		}
		if !r.mayHaveEnded(busy) && time.Since(looked) < r.recheck {
			continue
		}
		looked = time.Now()
		if r.ended(work, busy) {
			return true, true
		}
	}
}

// mayHaveEnded reports whether a turn of ids may have ended, without
// reading a record: its supervisor left its response, or holds the
// task's supervisor lock no more (it exited, or has not taken it yet,
// which the record read next tells apart).
func (r *runner) mayHaveEnded(ids []string) bool {
	for _, id := range ids {
		if _, err := os.Stat(proto.ForTask(r.e.Repo.LazyDir(), id).Path(proto.ResponseFile)); err == nil {
			return true
		}
		if _, running := r.e.Supervisors().Running(id); !running {
			return true
		}
	}
	return false
}

// ended reports whether a turn of ids has ended: each task's record,
// brought up to date by the reconciler (a turn's end is recorded from
// what its supervisor left) while it still says working.
func (r *runner) ended(ctx context.Context, ids []string) bool {
	for _, id := range ids {
		sn, err := r.e.Store.Load(id)
		if err == nil && working(sn) && sn.Task.Status == machine.Working {
			r.o.Reconcile(ctx, id)
			sn, err = r.e.Store.Load(id)
		}
		if err != nil || !working(sn) {
			return true
		}
	}
	return false
}

// drainPoll is how often a stopping runner looks whether the turns it
// waits for ended.
const drainPoll = 200 * time.Millisecond

// drain is a runner told to stop: it gives the turns running here
// o.Grace to end on their own (their leases renewed meanwhile), then
// stops and hands back what it holds.
func (r *runner) drain(ctx context.Context) error {
	if n := r.working(); n > 0 && r.o.Grace > 0 {
		r.say("stopping: taking no new task; %s running here may take %s to finish (--grace) before it is stopped", words.Count(n, "turn", "turns"), r.o.Grace)
		deadline := time.NewTimer(r.o.Grace)
		defer deadline.Stop()
		tick := time.NewTicker(drainPoll)
		defer tick.Stop()
	wait:
		for r.working() > 0 {
			select {
			case <-deadline.C:
				r.say("the grace period of %s is over; stopping what still runs", r.o.Grace)
				break wait
			case <-tick.C:
			}
			for _, id := range r.heldIDs() {
				r.o.Reconcile(ctx, id)
			}
		}
	}
	return r.stop()
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
		return nil, fmt.Errorf("--poll %s must be at most a third of --lease %s, so a claim this runner lost is seen within a lease", o.Poll, o.Lease)
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
	if o.Grace < 0 {
		return nil, fmt.Errorf("--grace %s is negative; give 0 to stop a running turn at once", o.Grace)
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
		reported: map[string]bool{}, started: o.Now(), quit: context.Background(), stopRenewer: func() {}, recheck: recheck}, nil
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

// round is the pass after a poll: take in what others did, claim more
// (unless the runner is stopping), tend the tasks held here. The leases
// are the renewer's (lease.go), whatever the round's git work takes.
func (r *runner) round(ctx context.Context) error { return r.pass(ctx, true) }

// pass is a round, fetching only when fetch is set (or nothing was
// fetched yet). A pass a turn's end woke skips the fetch: the remote's
// claims and records are the last poll's, which is safe (a claim is a
// compare-and-swap push, refused if another runner moved it meanwhile)
// and saves the next task two git fetches; the next poll fetches again.
func (r *runner) pass(ctx context.Context, fetch bool) error {
	fetched := fetch || r.claims == nil
	if fetched {
		if err := r.fetch(ctx); err != nil {
			return err
		}
	}
	if !r.adopted {
		r.adopt()
		r.adopted = true
	}
	if fetched {
		// Only claims just fetched say whether one held here moved: the
		// last poll's predate this runner's own claims since.
		r.checkHeld(ctx)
	}
	held := r.heldIDs()
	// A pass a turn's end woke fetched nothing: the tasks parked here are
	// as the last round left them, and the look that woke it reconciled
	// the turn that ended. Only the turns still running are brought up to
	// date (room is counted from them): reconciling each parked task too
	// would hold the next task back by as many reconciler passes as this
	// runner holds tasks.
	look := held
	if !fetched {
		look = r.running()
	}
	for _, id := range look {
		r.o.Reconcile(ctx, id)
	}
	// The next task is claimed and started before what the ended turns
	// left is pushed: the pushes then overlap the next agent's turn
	// rather than hold it back (room is counted from the records here,
	// which the reconcile above brought up to date).
	var err error
	if r.quit.Err() == nil {
		err = r.claimMore(ctx, fetched)
	}
	for _, id := range held {
		r.tend(ctx, id)
	}
	return err
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
	for _, id := range r.heldIDs() {
		h, _ := r.holds(id)
		c, ok := r.claims[id]
		if ok && c.Commit == h.Commit {
			continue
		}
		if ok && c.Runner == h.Runner && c.Generation == h.Generation && !c.Released && c.Problem == "" {
			continue // this runner's renewal moved it after the fetch
		}
		r.lose(ctx, id, c)
	}
}

func (r *runner) lose(ctx context.Context, id string, now pool.Held) {
	if !r.drop(id) {
		return // the renewer or the round found it first
	}
	_, _ = r.e.Supervisors().StopTurn(ctx, id)
	_ = r.e.Sessions().Forget(id)
	name := id
	if sn, err := r.e.Store.Load(id); err == nil {
		name = sn.Task.Slug
	}
	// A refused fenced push knows only that the claim moved, not who
	// moved it; the message says what was seen, as the round's does.
	who := "the claim changed on the remote (another runner took it over)"
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
		if _, held := r.holds(id); held || h.Runner != r.id || !h.Live(now) {
			continue
		}
		if sn, err := r.e.Store.Load(id); err == nil && r.e.Owns(sn) {
			r.setHeld(id, h)
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
	if err := r.pushResults(ctx, sn); err != nil && !errors.Is(err, pool.ErrBehind) {
		r.say("push %s: %v", sn.Task.Slug, err)
		return
	}
	switch st := sn.Task.Status; {
	case st.IsTerminal():
		if err := r.release(ctx, id); err == nil {
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
	err := r.claimPush(ctx, id, false, func(h pool.Held) (pool.Held, error) {
		return r.p.Fenced(ctx, h, r.o.Lease, r.o.Now(), ups)
	})
	switch {
	case errors.Is(err, pool.ErrLost):
		r.lose(ctx, id, pool.Held{})
		return err
	case errors.Is(err, pool.ErrBehind):
		// Someone wrote to the task meanwhile (feedback): the next round
		// merges it and pushes again (ErrBehind says so to the caller).
		return err
	case err != nil:
		return err
	}
	r.pushed[id] = local
	return nil
}

// release hands id's claim back, leased on the claim held here: a
// runner that lost it (a higher generation holds it) is refused, and
// the new holder's claim stays.
func (r *runner) release(ctx context.Context, id string) error {
	return r.claimPush(ctx, id, true, func(h pool.Held) (pool.Held, error) {
		return pool.Held{}, r.p.Release(ctx, h, r.o.Now())
	})
}

// record is what the pool is told about this runner.
func (r *runner) record(stopped bool) pool.Runner {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recordLocked(stopped)
}

// recordLocked is record, with r.mu held.
func (r *runner) recordLocked(stopped bool) pool.Runner {
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
func (r *runner) working() int { return len(r.running()) }

// running lists the held tasks whose turns run here (or are about to).
func (r *runner) running() []string {
	var ids []string
	for _, id := range r.heldIDs() {
		if sn, err := r.e.Store.Load(id); err == nil && working(sn) {
			ids = append(ids, id)
		}
	}
	return ids
}

// working reports whether a held task takes a turn's room: it runs, or
// it is about to start.
func working(sn *task.Snapshot) bool {
	return sn.Task.Status.IsActive() || sn.Task.Status == machine.Backlog
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
// other runner runs it a second time beside an orphan), the renewer is
// ended, every task it holds gets its results pushed and its claim
// handed back, each fenced by the claim held here, and the pool is told.
// It fails, saying which, when a claim could not be handed back: its
// task waits for its lease to run out (or for lazy pool release).
func (r *runner) stop() error {
	ctx, cancel := r.stopCtx()
	defer cancel()
	for _, id := range r.heldIDs() {
		if sn, err := r.e.Store.Load(id); err == nil && sn.Task.Status == machine.Working {
			if _, err := r.s.Lifecycle.Stop(ctx, id, "the runner that ran it stopped"); err != nil {
				r.say("stop the turn of %s: %v (its claim runs out; the turn goes on here)", sn.Task.Slug, err)
			}
		}
	}
	// Handing back races no renewal of this runner's own.
	r.stopRenewer()
	var kept []string
	for _, id := range r.heldIDs() {
		name := id
		// Each claim gets a step's time of its own: with one budget for
		// all, a runner holding many parked tasks ran out of it partway
		// and kept the rest (eight --once runners stopping together).
		hctx, hcancel := r.stopCtx()
		err := r.handBack(hctx, id, &name)
		hcancel()
		if err != nil {
			kept = append(kept, name+" ("+err.Error()+")")
			continue
		}
		r.say("handed %s back", name)
	}
	rec := r.record(true)
	r.mu.Lock()
	held := make([]pool.Held, 0, len(r.held))
	for _, h := range r.held {
		held = append(held, h)
	}
	r.mu.Unlock()
	// Telling the pool is a step of its own too: the first step's time
	// is long gone after a dozen hand-backs on a busy machine (eight
	// runners stopping together failed here, after handing back every
	// claim, on a deadline that had passed before the push began).
	tctx, tcancel := r.stopCtx()
	_, err := r.p.Renew(tctx, held, rec, r.o.Lease, r.o.Now())
	tcancel()
	if len(kept) > 0 {
		sort.Strings(kept)
		return fmt.Errorf("the runner stopped without handing back %s: %s; another runner takes it over once its lease runs out, or release it with lazy pool release", words.Count(len(kept), "claim", "claims"), strings.Join(kept, "; "))
	}
	if err != nil && !errors.Is(err, pool.ErrLost) {
		return fmt.Errorf("the runner handed back its claims but could not tell the pool it stopped: %w", err)
	}
	return nil
}

// stopStep bounds each step of a runner's stop: stopping its turns,
// handing back one claim, telling the pool.
const stopStep = 30 * time.Second

// stopCtx is the context of one step of the runner's stop, bounded by
// stopStep (r.stopStep in tests).
func (r *runner) stopCtx() (context.Context, context.CancelFunc) {
	d := stopStep
	if r.stopStep > 0 {
		d = r.stopStep
	}
	return context.WithTimeout(context.Background(), d)
}

// handBack pushes a stopping runner's results of id and releases its
// claim, both fenced by it. A record the remote moved (feedback left
// meanwhile) is pulled in and pushed again, so the next runner continues
// from this turn's end.
func (r *runner) handBack(ctx context.Context, id string, name *string) error {
	sn, err := r.e.Store.Load(id)
	if err != nil {
		return err
	}
	*name = sn.Task.Slug
	if sn.Task.Status.IsActive() {
		return fmt.Errorf("its turn still runs here (%s)", sn.Task.Status)
	}
	err = r.pushResults(ctx, sn)
	if errors.Is(err, pool.ErrBehind) {
		if err = r.s.Sync.Pull(ctx, r.o.Remote); err == nil {
			if sn, err = r.e.Store.Load(id); err == nil {
				err = r.pushResults(ctx, sn)
			}
		}
	}
	switch {
	case errors.Is(err, pool.ErrLost):
		return errors.New("another runner holds its claim now; nothing of it was pushed")
	case err != nil:
		return fmt.Errorf("push its record: %w", err)
	}
	if err := r.release(ctx, id); err != nil {
		if errors.Is(err, pool.ErrLost) {
			r.drop(id)
			return errors.New("another runner holds its claim now; its release was refused")
		}
		return fmt.Errorf("release its claim: %w", err)
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
		if _, mine := r.holds(en.ID); mine {
			continue
		}
		sn, err := r.e.Store.Load(en.ID)
		if err != nil {
			continue
		}
		prev, ok := r.s.poolClaimable(sn, r.claims, now)
		if !ok || r.refuse(sn) != "" {
			continue
		}
		out = append(out, poolCandidate{sn: sn, prev: prev})
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
//
// fresh says the remote's records and claims were just fetched. Without
// it only tasks no runner ever claimed are taken: taking one over needs
// its record and branch as the remote has them now.
func (r *runner) claimMore(ctx context.Context, fresh bool) error {
	for _, c := range r.eligible() {
		if r.working() >= r.o.MaxTasks || r.quit.Err() != nil {
			return nil
		}
		if !fresh && (c.prev != nil || c.sn.Task.Pool.Generation > 0) {
			continue
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
		r.setHeld(id, h)
		r.say("claimed %s (generation %d)", c.sn.Task.Slug, h.Generation)
		if err := r.begin(ctx, c.sn, h); err != nil {
			r.say("could not run %s here, letting it go (and leaving it to other runners for %s): %v", c.sn.Task.Slug, r.o.Lease, err)
			r.backoff[id] = r.o.Now().Add(r.o.Lease)
			_ = r.release(ctx, id)
		}
		if r.quit.Err() != nil {
			return nil // stopping: no new task
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
