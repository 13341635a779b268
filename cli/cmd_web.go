package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lazyorch/lazy/daemon"
	"github.com/lazyorch/lazy/internal/configkeys"
	"github.com/lazyorch/lazy/landing"
	"github.com/lazyorch/lazy/lifecycle"
	"github.com/lazyorch/lazy/machine"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/web"
	"github.com/lazyorch/lazy/wire"
)

// WebCmd prints the URL of the web view.
type WebCmd struct {
	JSON    bool `help:"Print the URL as JSON."`
	Actions bool `help:"Print the URL that may also act (comment, unblock, ask, stop, accept, reject) as you, with actor human. Also on with git config lazy.web.actions true."`
}

// Help implements kong's help hook with examples.
func (c *WebCmd) Help() string {
	return `The daemon serves the view on 127.0.0.1; the token in the URL is its key, and
the page keeps it in a cookie. Reading needs no JavaScript; with it, the pages
update live. Examples:

  lazy web                      # the read-only URL
  lazy web --actions            # the URL whose session may act
  git config lazy.web.actions true && lazy web
  xdg-open "$(lazy web)"`
}

// randomToken is a fresh secret for the web view's URL.
func randomToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// webView builds the daemon's web view: a read token, and an actions
// token that lazy web discloses only when actions are enabled.
func (a *app) webView(addr string, srv *daemon.Server) (http.Handler, daemon.WebInfo) {
	read, act := randomToken(), randomToken()
	w := &web.Server{
		Store: a.store, Marks: a.marks(), RepoDir: a.repoDir(), LazyDir: a.repo.LazyDir(), Addr: addr,
		Env:   func() *wire.Env { return wire.New(a.store, session.Env{RepoDir: a.repoDir()}) },
		Token: read, ActionsToken: act, Actions: &webActions{a: a},
		Events: srv.Subscribe,
	}
	if n, err := strconv.Atoi(a.getenv("LAZY_WEB_PAGE_SIZE")); err == nil && n > 0 {
		w.PageSize = n // tests page small lists
	}
	base := "http://" + addr + "/?token="
	return w.Handler(), daemon.WebInfo{URL: base + read, ActionsURL: base + act}
}

// Run implements lazy web.
func (c *WebCmd) Run(a *app, ctx context.Context) error {
	if err := a.openForWrite(); err != nil {
		return err
	}
	info, err := a.ensureDaemon(ctx)
	if err != nil {
		return err
	}
	var w daemon.WebInfo
	b, err := os.ReadFile(filepath.Join(a.repo.LazyDir(), daemon.WebFile))
	if err == nil {
		err = json.Unmarshal(b, &w)
	}
	if err != nil || w.PID != info.PID {
		return fmt.Errorf("the daemon (pid %d) serves no web view yet; try again in a moment", info.PID)
	}
	actions := c.Actions
	if v, ok := a.cfg.Get("lazy.web.actions"); ok && !actions {
		on, perr := strconv.ParseBool(v)
		if perr != nil {
			return configkeys.Invalid("lazy.web.actions", v, "is not true or false")
		}
		actions = on
	}
	url := w.URL
	if actions {
		if w.ActionsURL == "" {
			return fmt.Errorf("the daemon (pid %d) is of a lazy without web actions; lazy daemon --stop, then lazy web --actions", info.PID)
		}
		url = w.ActionsURL
	}
	if c.JSON {
		return a.io.printJSON(struct {
			PID     int    `json:"pid"`
			URL     string `json:"url"`
			Actions bool   `json:"actions"`
		}{w.PID, url, actions})
	}
	fmt.Fprintf(a.io.out, "%s\n", url)
	if actions {
		fmt.Fprintln(a.io.errOut, "lazy: this URL can act on tasks as you (actor human); it is local (127.0.0.1) and its token is the key, so keep it to yourself")
	} else {
		fmt.Fprintln(a.io.errOut, "lazy: the web view is read-only and local (127.0.0.1); the token in the URL is its key (lazy web --actions prints one that can act)")
	}
	return nil
}

// webActions runs the web view's actions through the same operations as
// the CLI, always with actor human: the browser session proved it holds
// the actions token, which only the local user can read.
type webActions struct{ a *app }

func (w *webActions) env() (*wire.Env, error) {
	env, err := w.a.env()
	if err != nil {
		return nil, err
	}
	env.Actor = machine.Human
	return env, nil
}

func (w *webActions) Comment(ctx context.Context, id, text string) error {
	env, err := w.env()
	if err != nil {
		return err
	}
	_, _, err = env.Lifecycle().Comment(ctx, id, text)
	return err
}

func (w *webActions) Unblock(ctx context.Context, id, feedback string) error {
	env, err := w.env()
	if err != nil {
		return err
	}
	if _, err := env.Lifecycle().Unblock(ctx, id, feedback, lifecycle.Decisions{}); err != nil {
		return err
	}
	w.a.daemonAfterLaunch(ctx)
	return nil
}

func (w *webActions) Ask(ctx context.Context, id, question string) error {
	env, err := w.env()
	if err != nil {
		return err
	}
	if _, err := env.Conversation().Ask(ctx, id, question); err != nil {
		return err
	}
	w.a.daemonAfterLaunch(ctx)
	return nil
}

func (w *webActions) Stop(ctx context.Context, id, reason string) error {
	env, err := w.env()
	if err != nil {
		return err
	}
	_, err = env.Lifecycle().Stop(ctx, id, reason)
	return err
}

func (w *webActions) Reject(ctx context.Context, id, reason string) error {
	env, err := w.env()
	if err != nil {
		return err
	}
	sn, err := env.Lifecycle().Reject(ctx, id, reason)
	if err != nil {
		return err
	}
	// As lazy reject without --delete-branch: a branch with unmerged work is kept.
	_, err = env.Landing().Cleanups().CleanupAbandoned(ctx, sn, false)
	return err
}

// Accept merges as lazy accept does, without the configured pre-accept
// agent turn (a browser request should not wait for an agent; the CLI
// runs it), narrating its phases to the daemon's subscribers.
func (w *webActions) Accept(ctx context.Context, id string, approveProtected bool) (string, error) {
	env, err := w.env()
	if err != nil {
		return "", err
	}
	display := &phaseDisplay{w: io.Discard, slug: id, relay: w.a.phaseRelay(id, "accept")}
	res, err := env.Landing().Accept(ctx, id, display, landing.AcceptOptions{ApproveProtected: approveProtected})
	if err != nil {
		return "", err
	}
	if res.Pending != "" {
		return "merging: " + res.Pending, nil
	}
	return "merged into " + res.Into, nil
}

func (w *webActions) Into(ctx context.Context, id string) (string, error) {
	env, err := w.env()
	if err != nil {
		return "", err
	}
	sn, err := w.a.store.Load(id)
	if err != nil {
		return "", err
	}
	return env.BaseBranch(ctx, sn, w.a.repoDir())
}
