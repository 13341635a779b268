package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/lazyorch/lazy/gate"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
)

// GateCmd runs the merge gate on a task now, without landing it.
type GateCmd struct {
	Task string `arg:"" help:"Slug or id prefix." predictor:"task"`
	JSON bool   `help:"Print the result as JSON."`
}

// Run implements lazy gate.
func (c *GateCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	opts, err := (&AcceptCmd{}).options(a)
	if err != nil {
		return err
	}
	res, err := env.Landing().Gates().Gate(ctx, c.Task, opts)
	if err != nil {
		return err
	}
	failed := res.Run != nil && !res.Run.Passed
	if c.JSON {
		if err := a.io.printJSON(map[string]any{"into": res.Into, "no_gate": res.NoGate, "reused": res.Reused, "run": res.Run, "passed": !failed && !res.NoGate}); err != nil {
			return err
		}
	} else {
		w := a.io.out
		switch {
		case res.NoGate:
			fmt.Fprintf(w, "No gate: neither git config lazy.gate nor .lazy/gate at the tip of %s names a command; lazy accept lands without one.\n", sanitize.Field(res.Into))
		case res.Reused != "":
			fmt.Fprintf(w, "The gate passed on this exact tree already (run %s); lazy accept %s lands it without running it again while %s stays where it is.\n", res.Reused, sanitize.Field(c.Task), sanitize.Field(res.Into))
		case failed:
			fmt.Fprintf(w, "Gate failed (run %s) on %s: %s\nlazy show %s has the output's tail; the whole log is %s\n", res.Run.ID, sanitize.Field(res.Into), sanitize.Field(res.Run.Failed+res.Run.Error), sanitize.Field(c.Task), sanitize.Field(res.Run.Log))
		default:
			fmt.Fprintf(w, "Gate passed (run %s, %s, %.1fs) on %s; lazy accept %s lands this tree without running it again while %s stays where it is.\n", res.Run.ID, words.Count(len(res.Run.Commands), "command", "commands"), float64(res.Run.DurationMS)/1000, sanitize.Field(res.Into), sanitize.Field(c.Task), sanitize.Field(res.Into))
		}
	}
	if failed {
		return silentExit{code: 1, err: fmt.Errorf("the gate failed")}
	}
	return nil
}

// GateReapCmd runs one gate command under gate.Reap: its child
// subreaper, which ends everything still running under it when the
// command exits (lazy runs every gate command this way).
type GateReapCmd struct {
	Argv []string `arg:"" passthrough:"" help:"The gate command."`
}

// Run implements lazy gate-reap.
func (c *GateReapCmd) Run() error {
	argv := c.Argv
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	code, err := gate.Reap(argv)
	if err != nil {
		// Into the gate's output, where its log and tail show it.
		fmt.Fprintf(os.Stderr, "lazy gate-reap: %v\n", err)
	}
	switch {
	case code < 0 || err != nil && code == 0:
		code = 1
	case code == 0:
		return nil
	}
	// The command's own status, said by the command itself already.
	return silentExit{code: code, err: fmt.Errorf("the gate command exited with status %d", code)}
}

// gateReaper is the argv prefix every gate command runs under (lazy
// gate-reap --), or nil when this binary cannot name itself or may start
// no lazy process (then the gate ends what its commands leave by their
// group and mark only).
func (a *app) gateReaper() []string {
	if a.noSpawn {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{exe, "gate-reap", "--"}
}
