package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lazyorch/lazy/agent"
	"github.com/lazyorch/lazy/link"
	"github.com/lazyorch/lazy/pair"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// interactive opens the repository for a command that hands the human's
// terminal to an agent (pair, chat), refusing before anything changes
// when stdin is not a terminal.
func (a *app) interactive() (*os.File, *wire.Env, error) {
	if err := a.openForWrite(); err != nil {
		return nil, nil, err
	}
	in, ok := a.io.in.(*os.File)
	if !ok || !isTerminal(in) {
		return nil, nil, pair.ErrNoTerminal
	}
	env, err := a.env()
	return in, env, err
}

// PairCmd hands the terminal to the task's agent in its worktree.
type PairCmd struct {
	Task string `arg:"" help:"Slug or id prefix." predictor:"task"`
}

// Run implements lazy pair.
func (c *PairCmd) Run(a *app, ctx context.Context) error {
	in, env, err := a.interactive()
	if err != nil {
		return err
	}
	p, err := env.Conversation().BeginPair(ctx, c.Task)
	if err != nil {
		return err
	}
	s := p.Snapshot
	if path, err := env.Handoff().WriteFile(ctx, s); err == nil {
		fmt.Fprintf(a.io.errOut, "· where the work stands, for you: %s (lazy handoff %s --print)\n", path, s.Task.Slug)
	}
	fmt.Fprintf(a.io.errOut, "· pairing on %s in %s (%s); exit the agent to hand the task back\n", s.Task.Slug, s.Session.Worktree, p.Argv[0])
	environ := append(os.Environ(), "LAZY_TASK_ID="+s.Task.ID, "LAZY_WORKTREE="+s.Session.Worktree, "LAZY_PAIRING=1")
	argv, mcpEnv, revoke := a.pairMCP(ctx, s, p.Argv)
	defer revoke()
	environ = append(environ, mcpEnv...)
	code, runErr := pair.Run(context.WithoutCancel(ctx), argv, s.Session.Worktree, environ, in, rawWriter(a.io.out))
	if runErr != nil {
		code = -1
	}
	// Whatever happened to the agent, the task is handed back.
	sn, err := env.Conversation().EndPair(context.WithoutCancel(ctx), p, code)
	if err != nil {
		return err
	}
	turns, _ := a.store.Turns(sn)
	summary := ""
	if len(turns) > 0 {
		summary = turns[len(turns)-1].Content
	}
	fmt.Fprintf(a.io.errOut, "· %s; %s is now %s\n", summary, sn.Task.Slug, sn.Task.Status)
	if runErr != nil {
		return fmt.Errorf("pairing ended: %w", runErr)
	}
	return nil
}

// pairMCP gives the paired agent lazy's MCP tools, as a supervised turn
// has them: a token minted for this pairing (live only while the task
// pairs, revoked when it ends), the MCP flags of its CLI, and
// LAZY_MCP_COMMAND for a shell. Without a daemon or a token the pairing
// still runs, without lazy's tools, and says so.
func (a *app) pairMCP(ctx context.Context, s *task.Snapshot, argv []string) ([]string, []string, func()) {
	none := func() {}
	lazyDir := a.repo.LazyDir()
	if a.getenv("LAZY_NO_DAEMON") == "" {
		if _, err := a.ensureDaemon(ctx); err != nil {
			fmt.Fprintf(a.io.errOut, "lazy: the agent gets no lazy tools while pairing: %v\n", err)
			return argv, nil, none
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return argv, nil, none
	}
	token, err := link.MintToken(lazyDir, link.Identity{Task: s.Task.ID, Session: s.Session.ID, Turn: s.Session.Turn, Kind: "pair"})
	if err != nil {
		fmt.Fprintf(a.io.errOut, "lazy: the agent gets no lazy tools while pairing: %v\n", err)
		return argv, nil, none
	}
	m := &agent.MCPServer{Command: exe, Args: []string{"-C", filepath.Dir(lazyDir), "mcp-proxy"}, EnvVars: []string{link.TokenEnv}}
	env := []string{link.TokenEnv + "=" + token}
	if b, err := json.Marshal(append([]string{exe}, m.Args...)); err == nil {
		env = append(env, "LAZY_MCP_COMMAND="+string(b))
	}
	if flags := agent.MCPFlags(s.Session.Agent, m); len(flags) > 0 && len(argv) > 0 && argv[0] == s.Session.Agent {
		argv = append(append(append([]string(nil), argv[0]), flags...), argv[1:]...)
	}
	return argv, env, func() { link.RevokeToken(lazyDir, token) }
}
