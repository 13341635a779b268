package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/reconcile"
	"github.com/lazyorch/lazy/render"
	"github.com/lazyorch/lazy/sandbox"
	"github.com/lazyorch/lazy/wire"
)

// DoctorCmd reports and repairs what the reconciler would, and the debris
// it does not look at on every pass.
type DoctorCmd struct {
	Task   string `arg:"" optional:"" help:"Only this task (slug or id prefix)."`
	DryRun bool   `name:"dry-run" short:"n" help:"Report only; change nothing."`
	JSON   bool   `help:"Print the findings as JSON."`
	// ReleaseMerge is the human's way out of a foreign-merge finding.
	ReleaseMerge string `name:"release-merge" placeholder:"TASK" help:"Record TASK blocked again when it is merging by an accept this machine did not begin and none runs anywhere (a foreign-merge finding); only the record changes." predictor:"task"`
}

// errProblemsRemain makes doctor exit 1 when anything is left unrepaired:
// everything in a dry run, what needs a human or a failed repair
// otherwise.
var errProblemsRemain = errors.New("problems remain")

// Run implements lazy doctor.
func (c *DoctorCmd) Run(a *app, ctx context.Context) error {
	if err := a.open(); err != nil {
		return err
	}
	if c.ReleaseMerge != "" {
		return c.releaseMerge(a, ctx)
	}
	only := ""
	if c.Task != "" {
		id, err := a.store.Resolve(c.Task)
		if err != nil {
			return err
		}
		only = id
	}
	r, err := a.reconciler()
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	entries, err := a.store.List()
	if err != nil {
		return err
	}
	findings, err := r.Doctor(ctx, entries, only, !c.DryRun)
	if err != nil {
		return err
	}
	sb, err := sandboxStatus(ctx, a.settings())
	if err != nil {
		return err
	}
	if sb.Configured && !sb.Available {
		findings = append(findings, reconcile.Finding{Kind: "sandbox-unavailable",
			Detail: "lazy.sandbox is on, so sandboxed tasks will not start: " + sb.Detail})
	}
	findings = append(findings, owedStashFindings(ctx, a.env, only, !c.DryRun)...)
	if env, err := a.env(); err == nil && only == "" {
		if !c.DryRun {
			for _, d := range env.Landing().Gates().SweepGateLeftovers(ctx) {
				findings = append(findings, reconcile.Finding{Kind: "gate-leftover", Detail: d, Repaired: true})
			}
		}
		findings = append(findings, gateSurvivorFindings(env, !c.DryRun)...)
	}
	remain := 0
	for _, f := range findings {
		if !f.Repaired && !f.Note {
			remain++
		}
		if f.Repaired {
			a.wrote = true
		}
	}
	if c.JSON {
		if findings == nil {
			findings = []reconcile.Finding{}
		}
		if err := a.io.printJSON(map[string]any{"findings": findings, "dry_run": c.DryRun, "remaining": remain, "sandbox": sb}); err != nil {
			return err
		}
	} else {
		if len(findings) == 0 {
			fmt.Fprintln(a.io.out, "No problems found.")
		}
		for _, f := range findings {
			who := f.Slug
			if who == "" {
				who = render.ShortID(f.TaskID)
			}
			if who != "" {
				who += ": "
			}
			line := fmt.Sprintf("%s%s: %s", who, f.Kind, f.Detail)
			switch {
			case f.Error != "":
				line += "\n    repair failed: " + f.Error
			case f.Action != "":
				line += "\n    " + f.Action
			default:
				line += "\n    needs a human"
			}
			fmt.Fprintln(a.io.out, strings.TrimSpace(line))
		}
		fmt.Fprintf(a.io.out, "Sandbox: %s\n", sb)
	}
	if remain > 0 {
		if !c.JSON {
			fmt.Fprintf(a.io.errOut, "lazy: %s left unrepaired\n", words.Count(remain, "problem", "problems"))
		}
		return silentExit{code: 1, err: errProblemsRemain}
	}
	return nil
}

// sandboxState says whether agents can be sandboxed here and whether
// lazy.sandbox asks for it.
type sandboxState struct {
	Configured bool   `json:"configured"`
	Available  bool   `json:"available"`
	Detail     string `json:"detail"`
}

func (s sandboxState) String() string {
	on := "off (lazy.sandbox)"
	if s.Configured {
		on = "on (lazy.sandbox)"
	}
	if s.Available {
		return "can run here (bubblewrap); " + on
	}
	return "cannot run here: " + s.Detail + "; " + on
}

// sandboxStatus is whether s asks for a sandbox and whether one can run
// here.
func sandboxStatus(ctx context.Context, s settings) (sandboxState, error) {
	spec, err := s.sandbox("")
	if err != nil {
		return sandboxState{}, err
	}
	st := sandboxState{Configured: spec != nil, Available: true, Detail: "bubblewrap works"}
	if err := sandbox.Check(ctx); err != nil {
		st.Available, st.Detail = false, err.Error()
	}
	return st, nil
}

// owedStashFindings reports every stash of the user's changes an accept
// made and has not given back: it needs the user (only they know whether
// the checkout is ready for it), so it stays a problem until restored.
func owedStashFindings(ctx context.Context, envOf func() (*wire.Env, error), only string, mend bool) []reconcile.Finding {
	env, err := envOf()
	if err != nil {
		return nil
	}
	owed, err := env.Landing().Stashes().OwedStashes(ctx, mend)
	if err != nil {
		return []reconcile.Finding{{Kind: "owed-stash", Detail: "could not list the stashes lazy keeps", Error: err.Error()}}
	}
	var out []reconcile.Finding
	for _, o := range owed {
		if only != "" && o.TaskID != only {
			continue
		}
		out = append(out, reconcile.Finding{TaskID: o.TaskID, Kind: "owed-stash", Detail: sanitize.Display(o.Describe())})
	}
	return out
}

// releaseMerge runs lazy doctor --release-merge.
func (c *DoctorCmd) releaseMerge(a *app, ctx context.Context) error {
	if c.DryRun || c.Task != "" {
		return fmt.Errorf("--release-merge takes no task argument and no --dry-run; run lazy doctor --release-merge TASK alone")
	}
	env, err := a.env()
	if err != nil {
		return err
	}
	sn, err := env.Landing().Recovery().ReleaseForeignMerge(ctx, c.ReleaseMerge)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.io.printJSON(map[string]any{"released": sn.Task.Slug, "status": sn.Task.Status})
	}
	_, err = fmt.Fprintf(a.io.out, "Released %s: it is blocked again; no checkout, branch or stash was touched\n", sanitize.Display(sn.Task.Slug))
	return err
}

// gateSurvivorFindings reports each process that outlived its gate run
// (gate-survivor), with its pid and command, and ends it when repairing.
func gateSurvivorFindings(env *wire.Env, repair bool) []reconcile.Finding {
	var out []reconcile.Finding
	for _, s := range env.Landing().Gates().GateSurvivors() {
		f := reconcile.Finding{Kind: "gate-survivor",
			Detail: fmt.Sprintf("process %d (%s) of gate run %s is still running after its gate ended", s.PID, s.Cmd, s.Run),
			Action: "would end it"}
		if repair {
			if env.Landing().Gates().EndGateSurvivor(s) {
				f.Action, f.Repaired = "ended it", true
			} else {
				f.Action = "it was gone, or its gate runs again, when doctor came to end it"
				f.Repaired = true
			}
		}
		out = append(out, f)
	}
	return out
}
