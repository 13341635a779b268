package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/gitcli"
	"github.com/lazyorch/lazy/task"
)

// KeyRemote is the git remote whose marker refs make each event fire
// once across every machine that shares it (default: lazy.pool.remote,
// else origin or the only remote); "none" keeps the dedup on this host.
const KeyRemote = "lazy.notify.remote"

// MarkPrefix is the namespace of the markers on the remote: outside
// refs/lazy/, so lazy pull never fetches them.
const MarkPrefix = "refs/lazy-notified/"

// Mark is one announcement a machine claims on the shared remote: the
// task and the dedup slot and key of the event (Derive's).
type Mark struct {
	Task, Slot, Key string
	Kind            Kind
}

// Ref is the marker's ref: the task's id and a digest of the slot and
// key, so no text of the record reaches a ref name or git's argv.
func (m Mark) Ref() string {
	sum := sha256.Sum256([]byte(m.Slot + "\x00" + m.Key))
	return MarkPrefix + m.Task + "/" + hex.EncodeToString(sum[:12])
}

// Marker is what a marker's blob holds: who announced the event, when,
// and which.
type Marker struct {
	Host  string `json:"host"`
	Time  string `json:"time"`
	Task  string `json:"task"`
	Event Kind   `json:"event"`
	Slot  string `json:"slot"`
	Key   string `json:"key"`
}

// Shared claims announcements on a remote every machine of the
// repository shares: of any number of machines announcing one event,
// the first to claim it announces, the others skip it.
type Shared interface {
	// Claim tries to create each mark's marker on the remote, each only
	// if it is absent. It returns the marks another machine had claimed
	// first; any mark it cannot decide (the remote offline, or refusing
	// for another reason) is left out of taken, so it is announced here:
	// news is never lost, at worst announced twice.
	Claim(ctx context.Context, marks []Mark) (taken map[string]bool, err error)
	// Prune deletes the markers of the tasks done names (finished long
	// enough ago that no machine still announces them).
	Prune(ctx context.Context, done map[string]bool) (int, error)
}

// GitShared is Shared on a git remote, with git alone: a marker is a
// blob under MarkPrefix, created by a push leased on the ref's absence
// (--force-with-lease=REF:), which git applies for exactly one of the
// machines racing.
type GitShared struct {
	// Dir is the repository's git directory; Remote the remote's name.
	Dir, Remote string
	// Host is this machine's lazy host id, recorded in its markers.
	Host string
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// claimTimeout bounds a claim: an unreachable remote delays news by at
// most this long, then it is announced here.
const claimTimeout = 15 * time.Second

// Claim implements Shared.
func (g *GitShared) Claim(ctx context.Context, marks []Mark) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	args := []string{"push", "--porcelain", "--no-verify"}
	var specs []string
	want := map[string]string{} // ref -> mark key
	for _, m := range marks {
		if !task.ValidID(m.Task) {
			continue // never a ref name lazy did not make
		}
		b, err := json.Marshal(Marker{Host: g.Host, Time: Stamp(now()), Task: m.Task, Event: m.Kind, Slot: m.Slot, Key: m.Key})
		if err != nil {
			return nil, err
		}
		oid, err := gitcli.New(g.Dir, "hash-object", "-w", "--stdin").Stdin(b).String(ctx)
		if err != nil {
			return nil, fmt.Errorf("write a notification marker: %w", err)
		}
		ref := m.Ref()
		args = append(args, "--force-with-lease="+ref+":")
		specs = append(specs, strings.TrimSpace(oid)+":"+ref)
		want[ref] = m.Task
	}
	if len(specs) == 0 {
		return map[string]bool{}, nil
	}
	args = append(append(args, "--", g.Remote), specs...)
	out, err := gitcli.New(g.Dir, args...).Output(ctx)
	taken := map[string]bool{}
	decided := 0
	var raced []string
	for _, line := range strings.Split(string(out), "\n") {
		// --porcelain: FLAG \t FROM:TO \t SUMMARY (REASON)
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 3 {
			continue
		}
		_, ref, ok := strings.Cut(f[1], ":")
		if !ok || want[ref] == "" {
			continue
		}
		switch {
		case f[0] == "*":
			decided++ // created here: this machine announces
		case f[0] == "!" && strings.Contains(f[2], "stale info"):
			// The marker is there: another machine announced first.
			taken[ref] = true
			decided++
		case f[0] == "!" && strings.Contains(f[2], "remote rejected"):
			raced = append(raced, ref)
		}
	}
	if len(raced) > 0 {
		// Two machines passed the lease at once and the remote let the
		// other's creation through (its ref lock said so): the marker is
		// there now if that is what happened, else it is undecided.
		if there, lerr := g.exist(ctx, raced); lerr == nil {
			for _, ref := range raced {
				if there[ref] {
					taken[ref] = true
					decided++
				}
			}
		}
	}
	if err != nil && decided == 0 {
		return taken, fmt.Errorf("claim notifications on %s: %w", g.Remote, err)
	}
	return taken, nil
}

// exist says which of refs the remote holds.
func (g *GitShared) exist(ctx context.Context, refs []string) (map[string]bool, error) {
	lw := &lineLimit{max: len(refs) + 1}
	args := append([]string{"ls-remote", "--refs", "--", g.Remote}, refs...)
	if err := gitcli.New(g.Dir, args...).Stream(ctx, lw); err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	out := map[string]bool{}
	for _, line := range lw.lines {
		if _, ref, ok := strings.Cut(line, "\t"); ok {
			out[ref] = true
		}
	}
	return out, nil
}

// maxListed bounds what Prune reads of the remote's markers, whatever
// it holds.
const maxListed = 20000

// pruneBatch is how many markers one push deletes.
const pruneBatch = 500

// Prune implements Shared: it lists the remote's markers (at most
// maxListed lines, names checked: a task id and a 24-hex digest, else
// skipped), and deletes those of the tasks in done. What the remote
// holds decides nothing: only markers of tasks this machine's records
// say are done are deleted.
func (g *GitShared) Prune(ctx context.Context, done map[string]bool) (int, error) {
	if len(done) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	lw := &lineLimit{max: maxListed}
	err := gitcli.New(g.Dir, "ls-remote", "--refs", "--", g.Remote, MarkPrefix+"*").Stream(ctx, lw)
	if err != nil && !errors.Is(err, errEnough) {
		return 0, fmt.Errorf("list the notification markers on %s: %w", g.Remote, err)
	}
	var del []string
	for _, line := range lw.lines {
		_, ref, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		id, ok := markTask(ref)
		if ok && done[id] {
			del = append(del, ":"+ref)
		}
	}
	n := 0
	for i := 0; i < len(del); i += pruneBatch {
		part := del[i:min(i+pruneBatch, len(del))]
		args := append([]string{"push", "--quiet", "--no-verify", "--", g.Remote}, part...)
		if err := gitcli.New(g.Dir, args...).Run(ctx); err != nil {
			return n, fmt.Errorf("delete the notification markers of finished tasks on %s: %w", g.Remote, err)
		}
		n += len(part)
	}
	return n, nil
}

// markTask is the task id of a marker ref lazy makes, and whether ref
// is one.
func markTask(ref string) (string, bool) {
	rest, ok := strings.CutPrefix(ref, MarkPrefix)
	if !ok {
		return "", false
	}
	id, digest, ok := strings.Cut(rest, "/")
	if !ok || !task.ValidID(id) || len(digest) != 24 {
		return "", false
	}
	if _, err := hex.DecodeString(digest); err != nil || strings.ToLower(digest) != digest {
		return "", false
	}
	return id, true
}

var errEnough = errors.New("enough lines")

// lineLimit keeps the first max lines written to it (each cut at 512
// bytes), then refuses, which stops git.
type lineLimit struct {
	max   int
	lines []string
	part  []byte
}

func (l *lineLimit) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := strings.IndexByte(string(p), '\n')
		if i < 0 {
			if len(l.part) < 512 {
				l.part = append(l.part, p[:min(len(p), 512-len(l.part))]...)
			}
			break
		}
		if len(l.part) < 512 {
			l.part = append(l.part, p[:min(i, 512-len(l.part))]...)
		}
		l.lines = append(l.lines, string(l.part))
		l.part = l.part[:0]
		p = p[i+1:]
		if len(l.lines) >= l.max {
			return n, errEnough
		}
	}
	return n, nil
}

var _ io.Writer = (*lineLimit)(nil)
