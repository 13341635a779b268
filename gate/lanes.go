package gate

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/lazyorch/lazy/internal/allowpath"
)

// Lanes (lazy.gate.lanes): entries of a merge train whose changes touch
// disjoint paths gate and land independently, each lane a train of its
// own. A value is either a named lane, NAME=GLOB[,GLOB...] (globs as
// lazy.gate.protect reads them: "docs" and "docs/**" mean the same), or
// the word diff: the lanes come from the entries' actual diffs, entries
// whose changed paths are disjoint being independent. Paths matching no
// named lane go to the DefaultLane.

const keyLanes = "lazy.gate.lanes"

// DefaultLane is the lane of the paths no named lane's glob matches.
const DefaultLane = "default"

// MaxLanes bounds the named lanes of lazy.gate.lanes.
const MaxLanes = 64

// Lane is one named lane: the paths its globs match.
type Lane struct {
	Name  string
	Globs []string
}

// Matches reports whether path is in the lane.
func (l Lane) Matches(path string) bool {
	return len(l.Globs) > 0 && allowpath.Allowed(l.Globs, path)
}

// LaneRule is how lazy.gate.lanes groups paths: by named lanes, by the
// actual diffs (ByDiff), or not at all (the zero value: one train).
type LaneRule struct {
	ByDiff bool
	Named  []Lane
}

// Enabled reports whether trains are split into lanes.
func (r LaneRule) Enabled() bool { return r.ByDiff || len(r.Named) > 0 }

// LaneOf is the lane path belongs to under named lanes: the first whose
// globs match it, in the order they were configured, else DefaultLane.
func (r LaneRule) LaneOf(path string) string {
	for _, l := range r.Named {
		if l.Matches(path) {
			return l.Name
		}
	}
	return DefaultLane
}

var laneName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)

// parseLanes reads the values of lazy.gate.lanes; an empty value clears
// those before it.
func parseLanes(vals []string) (LaneRule, error) {
	var r LaneRule
	seen := map[string]bool{}
	for _, v := range vals {
		s := strings.TrimSpace(v)
		if s == "" {
			r, seen = LaneRule{}, map[string]bool{}
			continue
		}
		if strings.EqualFold(s, "diff") {
			r.ByDiff = true
		} else {
			l, err := parseLane(s)
			if err != nil {
				return LaneRule{}, fmt.Errorf("git config %s = %q: %w; give NAME=GLOB[,GLOB...] such as \"docs=docs/,*.md\", or diff", keyLanes, short(v), err)
			}
			if seen[l.Name] {
				return LaneRule{}, fmt.Errorf("git config %s names the lane %q twice; give each lane one value with all its globs, comma-separated", keyLanes, l.Name)
			}
			seen[l.Name] = true
			r.Named = append(r.Named, l)
		}
		if r.ByDiff && len(r.Named) > 0 {
			return LaneRule{}, fmt.Errorf("git config %s mixes diff with named lanes; keep either the named lanes or the single value diff", keyLanes)
		}
	}
	if len(r.Named) > MaxLanes {
		return LaneRule{}, fmt.Errorf("git config %s has %d lanes, more than %d; group paths into fewer lanes", keyLanes, len(r.Named), MaxLanes)
	}
	return r, nil
}

// parseLane reads one NAME=GLOB[,GLOB...].
func parseLane(s string) (Lane, error) {
	name, globs, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	switch {
	case !ok:
		return Lane{}, fmt.Errorf("it has no = between the lane's name and its globs")
	case !laneName.MatchString(name):
		return Lane{}, fmt.Errorf("the lane's name %q is not 1 to 32 letters, digits, '.', '_' or '-'", short(name))
	case strings.EqualFold(name, DefaultLane):
		return Lane{}, fmt.Errorf("%q is the lane of the paths no lane names; pick another name", DefaultLane)
	}
	l := Lane{Name: name}
	for _, g := range strings.Split(globs, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		if err := checkGlob(g); err != nil {
			return Lane{}, fmt.Errorf("the glob %q: %w", short(g), err)
		}
		l.Globs = append(l.Globs, strings.TrimPrefix(g, "./"))
	}
	if len(l.Globs) == 0 {
		return Lane{}, fmt.Errorf("the lane %s has no glob", name)
	}
	return l, nil
}

// CheckLanes checks one value of lazy.gate.lanes as Load does (lazy
// config refuses what the gate would refuse to read).
func CheckLanes(value string) error {
	_, err := parseLanes([]string{value})
	return err
}
