package wire

import (
	"context"
	"fmt"

	"github.com/lazyorch/lazy/inbox"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/notify"
	"github.com/lazyorch/lazy/task"
)

// Inbox is the inbox over e's store: notify's policy read from the
// repository's settings (lazy.autoResume, the gate's automatic fix
// rounds, the circuit breaker), and landing's check of protected paths.
func (e *Env) Inbox() (*inbox.Service, error) {
	cfg, err := e.Store.Repo().Config()
	if err != nil {
		return nil, fmt.Errorf("read git config: %w", err)
	}
	auto, err := cfg.Bool("lazy.autoResume", true)
	if err != nil {
		return nil, err
	}
	policy := notify.Policy{BreakerAt: lifecycle.MaxConsecutiveInterruptions, NoAutoResume: !auto}
	gates := e.Landing().Gates()
	if gs, err := gates.GateSettings(); err == nil && gs.AutoFix {
		policy.GateFixRounds = gs.MaxAttempts
	}
	return &inbox.Service{Store: e.Env.Store, Policy: policy,
		Protected: func(ctx context.Context, sn *task.Snapshot) ([]string, error) {
			pv, err := gates.ProtectedChanges(ctx, sn)
			if err != nil || pv == nil {
				return nil, err
			}
			return pv.Files, nil
		}}, nil
}
