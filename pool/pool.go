// Package pool keeps the runner pool's shared state on the git remote
// itself: who holds each pooled task (a claim with a lease and a
// generation), which runners there are, and the newest log of each
// pooled task. Every change is one atomic push whose claim refs are
// leased on the values this machine last saw (--force-with-lease), so
// the remote's compare-and-swap decides every race: exactly one runner
// wins a claim, and a runner whose claim was taken over cannot push a
// result over the new owner's.
//
// The refs live under refs/lazy-pool/, outside refs/lazy/, so lazy push
// and pull never move them; they are fetched into a namespace of their
// own, refs/lazy-pool-remotes/<remote>/.
package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/task"
)

// Where the pool's refs live on the remote.
const (
	Prefix        = "refs/lazy-pool/"
	ClaimsPrefix  = Prefix + "claims/"
	RunnersPrefix = Prefix + "runners/"
	LogsPrefix    = Prefix + "logs/"
)

// TrackPrefix is where a fetch of remote keeps its pool refs here.
func TrackPrefix(remote string) string { return "refs/lazy-pool-remotes/" + remote + "/" }

// Claim is claim.json: a runner's hold on a pooled task.
type Claim struct {
	Task   string `json:"task"`
	Runner string `json:"runner"`
	// Generation grows by one with every new holder: a result written
	// under generation g is refused once the claim is at g+1.
	Generation uint64    `json:"generation"`
	Expires    time.Time `json:"lease_expires"`
	ClaimedAt  time.Time `json:"claimed_at"`
	RenewedAt  time.Time `json:"renewed_at"`
	// Released says the holder let the task go (it finished, or its turn
	// cannot run there): anyone may claim it at once.
	Released bool `json:"released,omitempty"`
}

// Live reports whether the claim still holds the task at now.
func (c Claim) Live(now time.Time) bool { return !c.Released && now.Before(c.Expires) }

// Held is a claim as the remote holds it: the claim and the commit
// its ref points at, which the next update of it is leased on.
type Held struct {
	Claim
	Commit string `json:"commit"`
	// Problem says why lazy did not accept the claim the ref holds (see
	// Claims); then nothing of it but its task is kept, and it holds
	// nothing.
	Problem string `json:"problem,omitempty"`
}

// Runner is runner.json: a runner as it last told the pool.
type Runner struct {
	ID       string    `json:"id"`
	Labels   []string  `json:"labels"`
	MaxTasks int       `json:"max_tasks"`
	Agents   []string  `json:"agents"`
	Started  time.Time `json:"started_at"`
	Seen     time.Time `json:"seen_at"`
	Holding  []string  `json:"holding"`
	// Stopped says the runner ended on its own (--once, or a signal).
	Stopped bool `json:"stopped,omitempty"`
}

// Remote is the pool on one git remote, seen from the repository at Dir.
type Remote struct {
	Dir  string // where git runs: the main checkout (relative remote URLs are relative to it)
	Name string // the remote
	// MaxLease is lazy.pool.maxLease: a claim whose lease runs out
	// later than this from now counts as expired (0: DefaultMaxLease).
	MaxLease time.Duration
	// Objects, when set, stores the pool's commits in process (the
	// repository's own object writer) rather than through three git
	// processes per ref: a runner renews every claim it holds each
	// quarter lease, and on a busy machine those processes were most of
	// an idle runner's work.
	Objects gitrepo.ObjectWriter
}

// New returns the pool on remote, after checking the name.
func New(dir, remote string) (*Remote, error) {
	if err := gitrepo.ValidRemote(remote); err != nil {
		return nil, err
	}
	return &Remote{Dir: dir, Name: remote}, nil
}

func fetchCmd(dir, remote string) *gitcli.Cmd {
	return gitcli.New(dir, "fetch", "--quiet", "--no-tags", "--prune", remote, "+"+Prefix+"*:"+TrackPrefix(remote)+"*")
}

// Fetch brings the remote's pool refs here, one round trip.
func (r *Remote) Fetch(ctx context.Context) error {
	if err := fetchCmd(r.Dir, r.Name).Run(ctx); err != nil {
		return fmt.Errorf("fetch the pool from %s: %w", r.Name, err)
	}
	return nil
}

func listCmd(dir, prefix string) *gitcli.Cmd {
	return gitcli.New(dir, "for-each-ref", "--format=%(objectname) %(refname)", prefix)
}

// typedListCmd lists at most count refs under prefix with what they
// point at.
func typedListCmd(dir, prefix string, count int) *gitcli.Cmd {
	return gitcli.New(dir, "for-each-ref", fmt.Sprintf("--count=%d", count), "--format=%(objectname) %(objecttype) %(refname)", prefix)
}

// MaxRefs bounds how many refs of one kind (claims, runners, logs) lazy
// reads from a pool: anyone who can push can add refs.
const MaxRefs = 10000

// entry is one pool ref as last fetched: its name below its kind's
// prefix (a task id, a runner id), the object it points at, and either
// its file or why lazy would not read it.
type entry struct {
	name, object string
	data         []byte
	problem      string
}

// read reads the file of each ref under the fetched prefix kind
// ("claims/"), or only of the ref named only when that is set. Every
// ref is data anyone who can push wrote: a ref that is not a commit, a
// commit without the file, or a file over limit is returned with its
// problem, and only what is within limit is ever read, its size taken
// from the object's header first (gitrepo's ReadFiles, the one object
// reader held to git's answers). Two git processes in all, whatever the
// number of refs.
func (r *Remote) read(ctx context.Context, kind, file string, limit int, only string) ([]entry, []Problem, error) {
	return r.readAt(ctx, TrackPrefix(r.Name), kind, file, limit, only)
}

// readAt is read of the refs fetched under root.
func (r *Remote) readAt(ctx context.Context, root, kind, file string, limit int, only string) ([]entry, []Problem, error) {
	prefix := root + kind
	pattern := prefix
	if only != "" {
		pattern = prefix + only
	}
	out, err := typedListCmd(r.Dir, pattern, MaxRefs+1).Output(ctx)
	if err != nil {
		return nil, nil, err
	}
	var ents []entry
	var problems []Problem
	var commits []int // the entries whose file is asked of git
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || !hexID(f[0]) {
			continue
		}
		name := strings.TrimPrefix(f[2], prefix)
		if only != "" && name != only {
			continue
		}
		if len(ents) == MaxRefs {
			problems = append(problems, Problem{Ref: Prefix + kind, Reason: fmt.Sprintf("the pool holds more than %d refs here; lazy reads the first %d by name and leaves the rest", MaxRefs, MaxRefs)})
			break
		}
		e := entry{name: name, object: f[0]}
		if f[1] != "commit" {
			e.problem = fmt.Sprintf("it points at a %s, not a commit lazy writes", f[1])
		} else {
			commits = append(commits, len(ents))
		}
		ents = append(ents, e)
	}
	if len(commits) == 0 {
		return ents, problems, nil
	}
	files, err := r.files()
	if err != nil {
		return nil, nil, err
	}
	ids := make([]gitrepo.OID, len(commits))
	for k, i := range commits {
		if ids[k], err = gitrepo.ParseOID(ents[i].object); err != nil {
			return nil, nil, fmt.Errorf("git for-each-ref answered %q: %w", ents[i].object, err)
		}
	}
	err = files.ReadFiles(ids, file, int64(limit), func(k int, f gitrepo.File) error {
		e := &ents[commits[k]]
		switch {
		case errors.Is(f.Err, gitrepo.ErrMissing):
			e.problem = "its commit holds no " + file
		case errors.Is(f.Err, gitrepo.ErrWrongType):
			e.problem = fmt.Sprintf("its %s is a %s, not a file", file, f.Type)
		case errors.Is(f.Err, gitrepo.ErrOversize):
			e.problem = fmt.Sprintf("its %s is %d bytes, over lazy's limit of %d (lazy did not read it)", file, f.Size, limit)
		case f.Err != nil:
			e.problem = "git could not read it (" + f.Err.Error() + ")"
		default:
			e.data = bytes.Clone(f.Content)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ents, problems, nil
}

// files is the object reader of the repository at r.Dir.
func (r *Remote) files() (gitrepo.FileReader, error) {
	loc, err := gitrepo.Discover(r.Dir)
	if err != nil {
		return nil, err
	}
	return gitrepo.OpenGitFor(loc.CommonDir, loc.ObjectFormat)
}

// maxRecord bounds a claim or runner record: they come from anyone who
// can push.
const maxRecord = 64 << 10

// Claims returns the claims as last fetched, by task id, and what lazy
// skipped. A claim ref of a task whose content lazy does not accept
// (not a commit, no claim.json, over 64 KiB, not JSON of a claim, a
// claim naming another task, an out-of-range generation, a lease longer
// than the pool's maximum from now) is returned with its Problem set and
// nothing of its content: it holds no task (Live is false) and a runner
// takes it over, leased on its commit. A ref whose name is not a task
// id is only reported.
func (r *Remote) Claims(ctx context.Context, now time.Time) (map[string]Held, []Problem, error) {
	return r.claimsAt(ctx, TrackPrefix(r.Name), now)
}

// CheckPrefix is where Current keeps the claims it fetched for reader.
func CheckPrefix(remote, reader string) string {
	return "refs/lazy-pool-check/" + remote + "/" + reader + "/"
}

// Current is the claims as the remote holds them now, read as Claims
// reads them, fetched into refs of reader's own (CheckPrefix) rather
// than Fetch's: two fetches into the same refs at once fail on each
// other's ref locks, or show a reader a claim half updated, so a reader
// that runs beside Fetch (a runner's renewer) checks its claims here.
func (r *Remote) Current(ctx context.Context, reader string, now time.Time) (map[string]Held, error) {
	root := CheckPrefix(r.Name, reader)
	if err := gitcli.New(r.Dir, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", r.Name, "+"+ClaimsPrefix+"*:"+root+"claims/*").Run(ctx); err != nil {
		return nil, fmt.Errorf("fetch the pool's claims from %s: %w", r.Name, err)
	}
	claims, _, err := r.claimsAt(ctx, root, now)
	return claims, err
}

func (r *Remote) claimsAt(ctx context.Context, root string, now time.Time) (map[string]Held, []Problem, error) {
	ents, problems, err := r.readAt(ctx, root, "claims/", "claim.json", maxRecord, "")
	if err != nil {
		return nil, nil, fmt.Errorf("read the pool's claims: %w", err)
	}
	out := map[string]Held{}
	for _, e := range ents {
		ref := ClaimsPrefix + e.name
		if !task.ValidID(e.name) {
			problems = append(problems, Problem{Ref: ref, Object: e.object, Reason: "its name is not a task id"})
			continue
		}
		h := Held{Claim: Claim{Task: e.name}, Commit: e.object}
		if e.problem == "" {
			var c Claim
			if err := json.Unmarshal(e.data, &c); err != nil {
				e.problem = "it is not a claim lazy writes (" + err.Error() + ")"
			} else if e.problem = checkClaim(e.name, c, now, r.maxLease()); e.problem == "" {
				h.Claim = c
			}
		}
		if e.problem != "" {
			h.Problem = e.problem
			problems = append(problems, Problem{Ref: ref, Object: e.object, Task: e.name, Reason: e.problem})
		}
		out[e.name] = h
	}
	sortProblems(problems)
	return out, problems, nil
}

// Runners returns the runners as last fetched, by id order, and the
// runner records lazy skipped.
func (r *Remote) Runners(ctx context.Context, now time.Time) ([]Runner, []Problem, error) {
	ents, problems, err := r.read(ctx, "runners/", "runner.json", maxRecord, "")
	if err != nil {
		return nil, nil, fmt.Errorf("read the pool's runners: %w", err)
	}
	var out []Runner
	for _, e := range ents {
		var rn Runner
		if e.problem == "" {
			if err := json.Unmarshal(e.data, &rn); err != nil {
				e.problem = "it is not a runner record lazy writes (" + err.Error() + ")"
			} else {
				e.problem = checkRunner(e.name, rn, now, r.maxLease())
			}
		}
		if e.problem != "" {
			problems = append(problems, Problem{Ref: RunnersPrefix + e.name, Object: e.object, Reason: e.problem})
			continue
		}
		out = append(out, rn)
	}
	slices.SortFunc(out, func(a, b Runner) int { return strings.Compare(a.ID, b.ID) })
	sortProblems(problems)
	return out, problems, nil
}

func hashCmd(dir string, b []byte) *gitcli.Cmd {
	return gitcli.New(dir, "hash-object", "-w", "--stdin").Stdin(b)
}

func mktreeCmd(dir string, in []byte) *gitcli.Cmd {
	return gitcli.New(dir, "mktree").Stdin(in)
}

func commitTreeCmd(dir, tree, msg string) *gitcli.Cmd {
	return gitcli.New(dir, "commit-tree", tree, "-F", "-").Stdin([]byte(msg)).AsLazy()
}

// write makes a parentless commit holding file with content b: the
// value of one pool ref.
func (r *Remote) write(ctx context.Context, file string, b []byte, msg string) (string, error) {
	if r.Objects != nil {
		return writeObjects(r.Objects, file, b, msg, time.Now())
	}
	blob, err := hashCmd(r.Dir, b).String(ctx)
	if err != nil {
		return "", err
	}
	tree, err := mktreeCmd(r.Dir, []byte("100644 blob "+blob+"\t"+file+"\n")).String(ctx)
	if err != nil {
		return "", err
	}
	return commitTreeCmd(r.Dir, tree, msg).String(ctx)
}

// writeObjects is write through w: the same blob, a one-entry tree and a
// parentless commit that git commit-tree makes as lazy (gitcli.AsLazy),
// dated at.
func writeObjects(w gitrepo.ObjectWriter, file string, b []byte, msg string, at time.Time) (string, error) {
	blob, err := w.Write(gitrepo.Blob, b)
	if err != nil {
		return "", fmt.Errorf("write the pool's %s: %w", file, err)
	}
	tree, err := gitrepo.WriteTree(w, []gitrepo.TreeEntry{{Name: file, Hash: blob}})
	if err != nil {
		return "", fmt.Errorf("write the pool's %s: %w", file, err)
	}
	sig := fmt.Sprintf("%s <%s> %d +0000", gitcli.LazyName, gitcli.LazyEmail, at.Unix())
	commit, err := w.Write(gitrepo.Commit, gitrepo.EncodeCommit(tree, gitrepo.OID{}, sig, msg))
	if err != nil {
		return "", fmt.Errorf("write the pool's %s: %w", file, err)
	}
	return commit.String(), nil
}

// WriteClaim makes the commit of claim c.
func (r *Remote) WriteClaim(ctx context.Context, c Claim) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	verb := "holds"
	if c.Released {
		verb = "released"
	}
	return r.write(ctx, "claim.json", b, fmt.Sprintf("lazy pool: %s %s %s (generation %d)\n", c.Runner, verb, c.Task, c.Generation))
}

// WriteRunner makes the commit of runner rn.
func (r *Remote) WriteRunner(ctx context.Context, rn Runner) (string, error) {
	b, err := json.Marshal(rn)
	if err != nil {
		return "", err
	}
	return r.write(ctx, "runner.json", b, "lazy pool: runner "+rn.ID+"\n")
}

// WriteLog makes the commit of a task's newest log (the caller bounds it).
func (r *Remote) WriteLog(ctx context.Context, task string, log []byte) (string, error) {
	return r.write(ctx, "log.jsonl", log, "lazy pool: the newest log of "+task+"\n")
}

// Update is one ref of an atomic push: New is what it becomes; a leased
// update (the pool's own refs) goes through only if the remote still
// holds Old there ("" means the ref must not exist), while an unleased
// one (a task's record or branch) must fast-forward.
type Update struct {
	Ref, New, Old string
	Leased        bool
	// Force replaces the ref whatever it holds: only for a ref one
	// writer owns (a runner's own record).
	Force bool
}

func pushCmd(dir, remote string, ups []Update) *gitcli.Cmd {
	args := []string{"push", "--atomic", "--porcelain", "--no-verify"}
	for _, u := range ups {
		if u.Leased {
			args = append(args, "--force-with-lease="+u.Ref+":"+u.Old)
		}
	}
	args = append(args, remote)
	for _, u := range ups {
		spec := u.New + ":" + u.Ref
		if u.Force {
			spec = "+" + spec
		}
		args = append(args, spec)
	}
	return gitcli.New(dir, args...)
}

// ErrLost is a push the remote refused because a leased ref had moved:
// another runner changed the claim (took the task over, or claimed it
// first). Nothing of the push was applied.
var ErrLost = errors.New("the claim changed on the remote")

// ErrBehind is a push the remote refused because a task's record or
// branch moved there: fetch, merge and try again.
var ErrBehind = errors.New("the remote moved")

// Push applies ups on the remote in one atomic push: all or nothing.
func (r *Remote) Push(ctx context.Context, ups []Update) error {
	for _, u := range ups {
		if err := checkUpdate(u); err != nil {
			return err
		}
	}
	out, err := pushCmd(r.Dir, r.Name, ups).Output(ctx)
	if err == nil {
		return nil
	}
	switch reason := rejection(string(out)); {
	case strings.Contains(reason, "stale info"),
		// Two pushes of one ref at the same moment: the remote let the
		// other one through.
		strings.Contains(reason, "remote rejected") && strings.Contains(reason, Prefix) && lockRace(string(out)+err.Error()):
		return fmt.Errorf("%w (%s)", ErrLost, reason)
	case strings.Contains(reason, "fetch first"), strings.Contains(reason, "non-fast-forward"):
		return fmt.Errorf("%w (%s)", ErrBehind, reason)
	}
	return fmt.Errorf("push to %s: %w", r.Name, err)
}

// checkUpdate refuses what git would read as something else.
func checkUpdate(u Update) error {
	switch {
	case !strings.HasPrefix(u.Ref, "refs/"):
		return fmt.Errorf("refusing to push %q: not a ref", u.Ref)
	case !hexID(u.New):
		return fmt.Errorf("refusing to push %q to %s: not an object id", u.New, u.Ref)
	case u.Old != "" && !hexID(u.Old):
		return fmt.Errorf("refusing to lease %s on %q: not an object id", u.Ref, u.Old)
	case strings.ContainsAny(u.Ref, ": \t\n"):
		return fmt.Errorf("refusing to push the ref %q", u.Ref)
	}
	return nil
}

// rejection is what git --porcelain said about the refs it rejected
// for their own reason (not the atomic push's collateral).
func rejection(out string) string {
	var reasons []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "!\t") || strings.Contains(line, "atomic push failed") {
			continue
		}
		reasons = append(reasons, strings.TrimPrefix(line, "!\t"))
	}
	return strings.Join(reasons, "; ")
}

func hexID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// lockRace reports whether git said a pool ref was being changed by
// another push at the same moment.
func lockRace(msg string) bool {
	return strings.Contains(msg, "cannot lock ref") || strings.Contains(msg, "reference already exists") ||
		strings.Contains(msg, "failed to update ref") || strings.Contains(msg, "failed to lock")
}

// MaxLog bounds the log of a task a runner pushes: its newest part.
const MaxLog = 1 << 20

// Log returns the newest log a runner pushed for task id, as last fetched
// (nil when there is none).
func (r *Remote) Log(ctx context.Context, id string) ([]byte, error) {
	if !task.ValidID(id) {
		return nil, fmt.Errorf("%q is not a task id", id)
	}
	ents, _, err := r.read(ctx, "logs/", "log.jsonl", MaxLog, id)
	if err != nil {
		return nil, fmt.Errorf("read the pool's logs: %w", err)
	}
	if len(ents) == 0 {
		return nil, nil
	}
	if e := ents[0]; e.problem != "" {
		return nil, fmt.Errorf("the pool's log of %s (%s) was skipped: %s", id, LogsPrefix+id, e.problem)
	}
	return ents[0].data, nil
}

// LogTail is the part of a log a runner pushes: its last MaxLog bytes,
// from a line's start.
func LogTail(b []byte) []byte {
	if len(b) <= MaxLog {
		return b
	}
	b = b[len(b)-MaxLog:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return b
}

func maxLeaseCmd(dir string) *gitcli.Cmd {
	return gitcli.New(dir, "config", "--get", MaxLeaseKey)
}

// MaxLeaseKey is the git config key of the longest lease the pool
// accepts.
const MaxLeaseKey = "lazy.pool.maxLease"

// ConfiguredMaxLease is git config lazy.pool.maxLease at dir, for a
// summary line (lazy watch, the web view): DefaultMaxLease when it is
// unset or not a duration above 0. lazy pool and lazy runner read it
// themselves and refuse a bad value.
func ConfiguredMaxLease(ctx context.Context, dir string) time.Duration {
	v, err := maxLeaseCmd(dir).String(ctx)
	if err != nil {
		return DefaultMaxLease
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return DefaultMaxLease
	}
	return d
}

// Fetched lists the remotes whose pool was fetched here.
func Fetched(ctx context.Context, dir string) ([]string, error) {
	out, err := listCmd(dir, "refs/lazy-pool-remotes/").Output(ctx)
	if err != nil {
		return nil, err
	}
	var remotes []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		_, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(ref, "refs/lazy-pool-remotes/"), "/")
		if gitrepo.ValidRemote(name) == nil && !slices.Contains(remotes, name) {
			remotes = append(remotes, name)
		}
	}
	return remotes, nil
}

// Brief is a pool in one line, as last fetched: its live runners and
// claims, and how many refs lazy skipped.
func Brief(ctx context.Context, dir, remote string, now time.Time) (string, error) {
	r, err := New(dir, remote)
	if err != nil {
		return "", err
	}
	r.MaxLease = ConfiguredMaxLease(ctx, dir)
	runners, rp, err := r.Runners(ctx, now)
	if err != nil {
		return "", err
	}
	claims, cp, err := r.Claims(ctx, now)
	if err != nil {
		return "", err
	}
	live := 0
	for _, rn := range runners {
		if !rn.Stopped && now.Sub(rn.Seen) < 10*time.Minute {
			live++
		}
	}
	held := 0
	for _, c := range claims {
		if c.Live(now) {
			held++
		}
	}
	skipped := ""
	if n := len(rp) + len(cp); n > 0 {
		skipped = fmt.Sprintf(", %s skipped", words.Count(n, "ref", "refs"))
	}
	return fmt.Sprintf("pool on %s: %s live, %s claimed%s (as last fetched; lazy pool)", remote, words.Count(live, "runner", "runners"), words.Count(held, "task", "tasks"), skipped), nil
}
