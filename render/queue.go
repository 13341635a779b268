package render

import "github.com/lazyorch/lazy/internal/sanitize"

// Lanes is the line lazy queue and lazy watch show for a queue whose
// train is split into lanes (lazy.gate.lanes): "Lanes: lane docs: 2
// entries, gating; lane api: landed". lanes is queue.View.Lanes; "" when
// the queue has no lanes, and then nothing is shown. The lane names come
// from git config, which a cloned repository's hooks or a pasted command
// can fill with anything, so the line is escaped for a terminal here,
// once, for every surface.
func Lanes(lanes string) string {
	if lanes == "" {
		return ""
	}
	return "Lanes: " + sanitize.Field(lanes)
}
