package notify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lazyorch/lazy/internal/redact"
	"github.com/lazyorch/lazy/task"
)

// Config keys.
const (
	KeyTargets   = "lazy.notify"           // repeatable: one target per value
	KeyPerMinute = "lazy.notify.perMinute" // events per target per minute
	KeyEvents    = "lazy.notify.events"    // the kinds to announce, comma-separated
)

// Config is what Load reads: lazy's git config (gitrepo.Config
// satisfies it).
type Config interface {
	Get(key string) (string, bool)
	All(key string) []string
}

// Settings are lazy.notify*: the targets, what each may receive in a
// minute, the kinds announced.
type Settings struct {
	Targets []Target
	// Problems are the values that name no target, worded for the user.
	Problems  []string
	PerMinute int
	// Events are the kinds to announce; nil announces every kind.
	Events map[Kind]bool
	// Secrets takes out of events the paths and queries of the URLs that
	// any lazy.notify value names (Policy.Secrets carries it to Derive).
	Secrets *redact.Redactor
}

// Load reads the settings; commands run in dir.
func Load(cfg Config, dir string) Settings {
	s := Settings{PerMinute: DefaultPerMinute, Secrets: redact.New(cfg.All(KeyTargets)...)}
	for _, v := range cfg.All(KeyTargets) {
		if strings.TrimSpace(v) == "" {
			continue
		}
		t, err := ParseTarget(v)
		if err != nil {
			s.Problems = append(s.Problems, err.Error())
			continue
		}
		t.Dir = dir
		s.Targets = append(s.Targets, t)
	}
	if v, ok := cfg.Get(KeyPerMinute); ok {
		if n, err := ParsePerMinute(v); err == nil {
			s.PerMinute = n
		} else {
			s.Problems = append(s.Problems, fmt.Sprintf("%v; using %d", err, DefaultPerMinute))
		}
	}
	for _, v := range cfg.All(KeyEvents) {
		kinds, problems := ParseEvents(v)
		s.Problems = append(s.Problems, problems...)
		if kinds == nil {
			continue
		}
		if s.Events == nil {
			s.Events = map[Kind]bool{}
		}
		for k := range kinds {
			s.Events[k] = true
		}
	}
	return s
}

// ParsePerMinute reads a lazy.notify.perMinute value: a number above 0.
func ParsePerMinute(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s %q is not a number above 0", KeyPerMinute, Clean(v, 20))
	}
	return n, nil
}

// ParseEvents reads one lazy.notify.events value: kinds separated by
// commas (the key may be repeated; Load takes every kind any value
// names). It returns the kinds it names (nil for an empty value) and a
// problem, worded for the user, per name that is not a kind.
func ParseEvents(v string) (map[Kind]bool, []string) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	kinds := map[Kind]bool{}
	var problems []string
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if !slices.Contains(Kinds(), Kind(k)) {
			problems = append(problems, fmt.Sprintf("%s names %q, which is not a kind (%s)", KeyEvents, Clean(k, 20), kindList()))
			continue
		}
		kinds[Kind(k)] = true
	}
	return kinds, problems
}

func kindList() string {
	var parts []string
	for _, k := range Kinds() {
		parts = append(parts, string(k))
	}
	return strings.Join(parts, ", ")
}

// LogFile is the delivery log under the notify directory: a line per
// delivery, with the target redacted.
const LogFile = "notify.log"

// maxLog is the size past which the log is rotated to LogFile.1.
const maxLog = 1 << 20

// Notifier is the daemon's notifications: it derives events from the
// listings it is handed, remembers what it announced in Dir, and sends.
// Its methods are safe for one caller at a time.
type Notifier struct {
	// Dir is the repository's notify directory (.git/lazy/notify).
	Dir string
	// Repo names the repository in events (gitrepo.Location.Name).
	Repo string
	// Now is the clock (time.Now if nil).
	Now func() time.Time

	mu    sync.Mutex
	state *State
	// baseline: the state was just begun; the next pass takes every
	// task as it is and announces nothing.
	baseline bool
	// off: Off found notifications off and the state forgotten.
	off    bool
	seen   map[string]string // task id -> the record commit last observed
	limits map[string]*limiter
	noted  map[string]bool
	// pruned is when Prune last ran.
	pruned time.Time
}

func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

// Active reports whether the notifier holds a state: a pass has taken
// its baseline, so later passes announce what changes.
func (n *Notifier) Active() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state != nil && !n.baseline
}

// Off forgets the state, on disk too, when notifications are off (no
// target): turned on again, they announce only what happens from then
// on, as they do the first time. Calls after the first do nothing until
// a Pass.
func (n *Notifier) Off() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.off {
		return nil
	}
	if err := Forget(n.Dir); err != nil {
		return err
	}
	n.state, n.seen, n.baseline, n.off = nil, nil, false, true
	return nil
}

// Pass derives the events of one listing of every task: one per task
// whose record moved into something to announce since the last
// announcement this host made. load reads a changed entry's observation.
//
// The first pass with no state on disk (notifications just turned on,
// or their state lost) is the baseline: every task is taken as it is and
// nothing is announced, so turning notifications on announces only what
// happens afterwards, across daemon restarts too. The state is saved
// before the events are returned (the baseline's before any later
// pass), so a crash after may lose an event but a restart never repeats
// one.
func (n *Notifier) Pass(entries []task.Entry, p Policy, only map[Kind]bool, load func(*task.Entry) (Observation, error)) ([]Event, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	n.off = false
	if n.state == nil {
		st, begun, err := LoadState(n.Dir, now)
		if err != nil {
			return nil, err
		}
		n.state, n.seen, n.baseline = st, map[string]string{}, begun
	}
	baseline := n.baseline
	changed := baseline // a baseline is saved even when it holds no task
	present := make(map[string]bool, len(entries))
	var out []Event
	for i := range entries {
		e := &entries[i]
		present[e.ID] = true
		commit := e.Commit.String()
		if e.Err != nil || n.seen[e.ID] == commit {
			continue
		}
		o, err := load(e)
		if err != nil {
			continue // read again on the next pass
		}
		n.seen[e.ID] = commit
		prev, known := n.state.Tasks[e.ID]
		ev, next := Derive(prev, o, p)
		if baseline {
			ev = nil // as it was when notifications began: taken, not announced
		} else if !known {
			if upd, err := time.Parse(task.TimeLayout, e.Updated); err == nil && upd.Before(n.state.Since) {
				ev = nil // as it was before notifications began: taken, not announced
			}
		}
		if !sameKeys(prev, next) || !known {
			n.state.Tasks[e.ID] = next
			changed = true
		}
		if ev != nil && wanted(only, ev.Kind) {
			ev.Repo, ev.Time = n.Repo, Stamp(now)
			out = append(out, *ev)
		}
	}
	for id := range n.state.Tasks {
		if !present[id] {
			delete(n.state.Tasks, id)
			delete(n.seen, id)
			changed = true
		}
	}
	if changed {
		if err := n.state.Save(n.Dir); err != nil {
			return nil, err
		}
	}
	n.baseline = false
	return out, nil
}

// Once keeps of evs the events no other machine sharing the remote
// announced first: each event's mark is claimed on shared (a nil shared
// keeps them all: the dedup stays on this host). When the remote cannot
// decide (offline, refusing) the events are kept and the error says
// why: news is never lost, at worst announced on two machines.
func (n *Notifier) Once(ctx context.Context, shared Shared, evs []Event) ([]Event, error) {
	if shared == nil || len(evs) == 0 {
		return evs, nil
	}
	var marks []Mark
	for _, ev := range evs {
		if ev.mark.Task != "" {
			marks = append(marks, ev.mark)
		}
	}
	if len(marks) == 0 {
		return evs, nil
	}
	taken, err := shared.Claim(ctx, marks)
	out := evs[:0:0]
	for _, ev := range evs {
		if ev.mark.Task != "" && taken[ev.mark.Ref()] {
			continue // another machine announced it
		}
		out = append(out, ev)
	}
	return out, err
}

// Retention is how long after a task finished its markers stay on the
// shared remote. A machine that sees the finish only later than that
// (offline for a week) may announce it once more; any machine that first
// sees the task then takes it as it is (its record predates the baseline).
const Retention = 7 * 24 * time.Hour

// pruneEvery is how often a notifier prunes the shared markers.
const pruneEvery = 6 * time.Hour

// Prune deletes, at most every pruneEvery, the shared markers of the
// tasks in entries finished more than Retention ago, so the markers on
// the remote are bounded by the tasks still open or recently finished.
func (n *Notifier) Prune(ctx context.Context, shared Shared, entries []task.Entry) (int, error) {
	if shared == nil {
		return 0, nil
	}
	n.mu.Lock()
	now := n.now()
	if !n.pruned.IsZero() && now.Sub(n.pruned) < pruneEvery {
		n.mu.Unlock()
		return 0, nil
	}
	n.pruned = now
	n.mu.Unlock()
	done := map[string]bool{}
	for _, e := range entries {
		if e.Err != nil || !e.Status.IsTerminal() {
			continue
		}
		if upd, err := time.Parse(task.TimeLayout, e.Updated); err == nil && now.Sub(upd) > Retention {
			done[e.ID] = true
		}
	}
	return shared.Prune(ctx, done)
}

// Announces reports whether events of kind k are sent (lazy notify
// lists them): what lazy.notify.events names, or every kind.
func (s Settings) Announces(k Kind) bool { return wanted(s.Events, k) }

// wanted reports whether lazy.notify.events (only; nil: every kind)
// lets an event of kind k through. A pick stands in for the blocked
// events of its group's attempts, so naming blocked lets it through too.
func wanted(only map[Kind]bool, k Kind) bool {
	return only == nil || only[k] || (k == KindPick && only[KindBlocked])
}

func sameKeys(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Result is how one delivery went.
type Result struct {
	Target string `json:"target"` // redacted
	Kind   Kind   `json:"kind"`
	Slug   string `json:"slug,omitempty"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	// Skipped: the target is not available here (no notify-send).
	Skipped bool `json:"skipped,omitempty"`
}

// Pending reports whether a target holds events the rate limit kept
// back: Deliver with no events sends their collapse when it may.
func (n *Notifier) Pending() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.limits {
		if l.pending() {
			return true
		}
	}
	return false
}

// Deliver sends evs to every target, each held to perMinute events a
// minute (the excess goes later as one "more" event), the targets in
// parallel, and logs each delivery.
func (n *Notifier) Deliver(ctx context.Context, targets []Target, perMinute int, evs []Event) []Result {
	n.mu.Lock()
	if n.limits == nil {
		n.limits = map[string]*limiter{}
	}
	now := n.now()
	evs = withoutSecrets(targets, evs)
	batches := make([][]Event, len(targets))
	for i, t := range targets {
		key := t.Kind + "\x00" + t.Command + "\x00"
		if t.URL != nil {
			key += t.URL.String()
		}
		l := n.limits[key]
		if l == nil || l.max != perMinute {
			if l == nil {
				l = newLimiter(perMinute)
			}
			l.max = max(perMinute, 1)
			n.limits[key] = l
		}
		batches[i] = l.admit(now, evs)
	}
	n.mu.Unlock()
	results := make([][]Result, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		if len(batches[i]) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ev := range batches[i] {
				results[i] = append(results[i], send(ctx, t, ev))
			}
		}()
	}
	wg.Wait()
	var out []Result
	for _, rs := range results {
		for _, r := range rs {
			n.log(r)
			out = append(out, r)
		}
	}
	return out
}

// TestEvent is the sample event lazy notify test sends.
func TestEvent(repo string, now time.Time) Event {
	return Event{Kind: KindTest, Slug: "example-task", Title: "a sample notification from lazy notify test", Status: "blocked",
		Reason: "lazy notify test: if you read this, the target works", Repo: repo, Time: Stamp(now)}
}

// Test sends one sample event (TestEvent) to every target, unlimited and
// unlogged.
func Test(ctx context.Context, targets []Target, repo string, now time.Time) []Result {
	ev := TestEvent(repo, now)
	out := make([]Result, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = send(ctx, t, ev)
		}()
	}
	wg.Wait()
	return out
}

// withoutSecrets is evs with the paths and queries of every target's URL
// taken out of their text, whichever target each goes to: an event made
// without Policy.Secrets must not carry one target's secret to another.
func withoutSecrets(targets []Target, evs []Event) []Event {
	var values []string
	for _, t := range targets {
		if t.URL != nil {
			values = append(values, t.URL.String())
		}
		values = append(values, t.Command)
	}
	r := redact.New(values...)
	out := make([]Event, len(evs))
	for i, ev := range evs {
		ev.Title, ev.Reason, ev.Outcome = r.Line(ev.Title), r.Line(ev.Reason), r.Line(ev.Outcome)
		out[i] = ev
	}
	return out
}

func send(ctx context.Context, t Target, ev Event) Result {
	r := Result{Target: t.String(), Kind: ev.Kind, Slug: ev.Slug, OK: true}
	if err := t.Send(ctx, ev); err != nil {
		r.OK, r.Error, r.Skipped = false, err.Error(), errors.Is(err, ErrUnavailable)
	}
	return r
}

// log appends r to the delivery log; a target not available here is
// logged once per notifier.
func (n *Notifier) log(r Result) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r.Skipped {
		if n.noted == nil {
			n.noted = map[string]bool{}
		}
		if n.noted[r.Target] {
			return
		}
		n.noted[r.Target] = true
	}
	path := filepath.Join(n.Dir, LogFile)
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLog {
		_ = os.Rename(path, path+".1")
	}
	if err := os.MkdirAll(n.Dir, 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	what := "ok"
	switch {
	case r.Skipped:
		what = "skipped: " + r.Error
	case !r.OK:
		what = "failed: " + r.Error
	}
	fmt.Fprintf(f, "%s %s %s %s %s\n", Stamp(n.now()), r.Target, r.Kind, r.Slug, Clean(what, 400))
}
