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
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/gitcli"
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
}

// New returns the pool on remote, after checking the name.
func New(dir, remote string) (*Remote, error) {
	if err := gitstore.ValidRemote(remote); err != nil {
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

func batchCmd(dir string, in []byte) *gitcli.Cmd {
	return gitcli.New(dir, "cat-file", "--batch").Stdin(in)
}

// read returns, for each ref under the fetched prefix kind ("claims/"),
// its name below the prefix, its commit and the file name in it,
// reading every file with one git process.
func (r *Remote) read(ctx context.Context, kind, file string) (map[string][2]string, error) {
	prefix := TrackPrefix(r.Name) + kind
	out, err := listCmd(r.Dir, prefix).Output(ctx)
	if err != nil {
		return nil, err
	}
	type ent struct{ name, commit string }
	var ents []ent
	var in bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		commit, ref, ok := strings.Cut(line, " ")
		if !ok || !hexID(commit) {
			continue
		}
		name := strings.TrimPrefix(ref, prefix)
		ents = append(ents, ent{name, commit})
		fmt.Fprintf(&in, "%s:%s\n", commit, file)
	}
	res := map[string][2]string{}
	if len(ents) == 0 {
		return res, nil
	}
	raw, err := batchCmd(r.Dir, in.Bytes()).Output(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		header, rest, ok := bytes.Cut(raw, []byte{'\n'})
		if !ok {
			break
		}
		f := strings.Fields(string(header))
		if len(f) != 3 || f[1] != "blob" {
			raw = rest // "<name> missing": the ref holds no such file
			continue
		}
		n, err := strconv.Atoi(f[2])
		if limit := maxRecord; err != nil || n > max(limit, MaxLog) || n+1 > len(rest) || (file != "log.jsonl" && n > limit) {
			return nil, fmt.Errorf("the pool ref %s%s holds a %s larger than lazy writes", prefix, e.name, file)
		}
		res[e.name] = [2]string{e.commit, string(rest[:n])}
		raw = rest[n+1:]
	}
	return res, nil
}

// maxRecord bounds a claim or runner record: they come from anyone who
// can push.
const maxRecord = 64 << 10

// Claims returns the claims as last fetched, by task id. A claim that
// does not parse, or names another task than its ref, is left out.
func (r *Remote) Claims(ctx context.Context) (map[string]Held, error) {
	files, err := r.read(ctx, "claims/", "claim.json")
	if err != nil {
		return nil, fmt.Errorf("read the pool's claims: %w", err)
	}
	out := map[string]Held{}
	for id, f := range files {
		var c Claim
		if json.Unmarshal([]byte(f[1]), &c) != nil || c.Task != id || !gitstore.ValidID(id) {
			continue
		}
		out[id] = Held{Claim: c, Commit: f[0]}
	}
	return out, nil
}

// Runners returns the runners as last fetched, by id order.
func (r *Remote) Runners(ctx context.Context) ([]Runner, error) {
	files, err := r.read(ctx, "runners/", "runner.json")
	if err != nil {
		return nil, fmt.Errorf("read the pool's runners: %w", err)
	}
	var out []Runner
	for name, f := range files {
		var rn Runner
		if json.Unmarshal([]byte(f[1]), &rn) != nil || rn.ID != name {
			continue
		}
		out = append(out, rn)
	}
	slices.SortFunc(out, func(a, b Runner) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func hashCmd(dir string, b []byte) *gitcli.Cmd {
	return gitcli.New(dir, "hash-object", "-w", "--stdin").Stdin(b)
}

func mktreeCmd(dir string, in []byte) *gitcli.Cmd {
	return gitcli.New(dir, "mktree").Stdin(in)
}

func commitTreeCmd(dir, tree, msg string) *gitcli.Cmd {
	return gitcli.New(dir, "commit-tree", tree, "-F", "-").Stdin([]byte(msg)).
		Env("GIT_AUTHOR_NAME=lazy", "GIT_AUTHOR_EMAIL=lazy@localhost", "GIT_COMMITTER_NAME=lazy", "GIT_COMMITTER_EMAIL=lazy@localhost")
}

// write makes a parentless commit holding file with content b: the
// value of one pool ref.
func (r *Remote) write(ctx context.Context, file string, b []byte, msg string) (string, error) {
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

// WriteClaim makes the commit of claim c.
func (r *Remote) WriteClaim(ctx context.Context, c Claim) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return r.write(ctx, "claim.json", b, fmt.Sprintf("lazy pool: %s holds %s (generation %d)\n", c.Runner, c.Task, c.Generation))
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

// Log returns the newest log a runner pushed for task, as last fetched
// (nil when there is none).
func (r *Remote) Log(ctx context.Context, task string) ([]byte, error) {
	if !gitstore.ValidID(task) {
		return nil, fmt.Errorf("%q is not a task id", task)
	}
	files, err := r.read(ctx, "logs/", "log.jsonl")
	if err != nil {
		return nil, fmt.Errorf("read the pool's logs: %w", err)
	}
	f, ok := files[task]
	if !ok {
		return nil, nil
	}
	return []byte(f[1]), nil
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
		if gitstore.ValidRemote(name) == nil && !slices.Contains(remotes, name) {
			remotes = append(remotes, name)
		}
	}
	return remotes, nil
}

// Brief is a pool in one line, as last fetched: its live runners and
// claims.
func Brief(ctx context.Context, dir, remote string, now time.Time) (string, error) {
	r, err := New(dir, remote)
	if err != nil {
		return "", err
	}
	runners, err := r.Runners(ctx)
	if err != nil {
		return "", err
	}
	claims, err := r.Claims(ctx)
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
	return fmt.Sprintf("pool on %s: %d runner(s) live, %d task(s) claimed (as last fetched; lazy pool)", remote, live, held), nil
}
