package landing

import "context"

// AcceptAttempt lands attempt k of group name through the normal accept
// (its gate, its place in the target's queue), then completes the group
// and closes the other attempts (see Accept). Run again after a crash,
// it finishes what the first run left: an attempt already accepted is
// not merged twice (attempts.Service.Choose).
func (e *Service) AcceptAttempt(ctx context.Context, name string, k int, n Narrator, opts AcceptOptions) (*AcceptResult, error) {
	c, err := e.attempts().Choose(ctx, name, k)
	if c != nil && c.Landed {
		return &AcceptResult{Snapshot: c.Attempt, Warnings: c.Warnings}, err
	}
	if err != nil {
		return nil, err
	}
	return e.Accept(ctx, c.Attempt.Task.ID, n, opts)
}
