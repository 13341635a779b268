package wire

import (
	"github.com/lazyorch/lazy/landing"
)

// Landing is the landing capability over e's core: accept and its
// preview, the gate, the merge queue's train, the accept through the
// forge, stranded accepts, clean-ups and kept stashes, with what only
// accept uses (the crash hook, the gate's reaper).
func (e *Env) Landing() *landing.Service {
	l := landing.New(&e.Env)
	l.CrashAt, l.GateReaper = e.CrashAt, e.GateReaper
	return l
}

// CrashPoint is landing.CrashPoint: the test-only crash hook WithAccept
// sets.
type CrashPoint = landing.CrashPoint
