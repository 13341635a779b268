package task

import (
	"fmt"
	"regexp"
)

// PoolLabel is the shape of a runner label (gpu, codex, linux-arm64).
var PoolLabel = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,31}$`)

// Bounds of what a pooled task may ask for.
const (
	MaxPoolLabels = 16
	MaxAfter      = 64
)

// checkPool refuses a pool mark or dependency list lazy would not
// write: they come from anyone who can push, and a runner decides what
// to take by them.
func checkPool(t *Task) error {
	if len(t.After) > MaxAfter {
		return fmt.Errorf("task.json waits for %d tasks; lazy allows at most %d", len(t.After), MaxAfter)
	}
	for _, id := range t.After {
		if !ValidID(id) || id == t.ID {
			return fmt.Errorf("task.json waits for %q, which is not another task's id", id)
		}
	}
	p := t.Pool
	if p == nil {
		return nil
	}
	if len(p.Labels) > MaxPoolLabels {
		return fmt.Errorf("task.json asks the pool for %d labels; lazy allows at most %d", len(p.Labels), MaxPoolLabels)
	}
	for _, l := range p.Labels {
		if !PoolLabel.MatchString(l) {
			return fmt.Errorf("task.json asks the pool for the label %q; a label is lower-case letters, digits, '.', '_' and '-'", l)
		}
	}
	if p.Agent != "" && !PoolLabel.MatchString(p.Agent) {
		return fmt.Errorf("task.json asks the pool for the agent %q, which is no agent name", p.Agent)
	}
	return nil
}
