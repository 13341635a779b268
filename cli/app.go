package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/lazyorch/lazy/gitrepo"
	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/internal/termsafe"
	"github.com/lazyorch/lazy/proto"
	"github.com/lazyorch/lazy/session"
	"github.com/lazyorch/lazy/task"
	"github.com/lazyorch/lazy/wire"
)

// app is the context every command's Run method receives.
type app struct {
	dir   string
	build build
	// io are the run's standard streams and terminal, which the
	// commands' Options carry.
	io ioStreams

	repo  *gitrepo.Location
	cfg   *gitrepo.Config
	store *gitstore.Store
	wrote bool // a command wrote records: consider housekeeping

	// getenv reads the environment and now tells the time: the
	// process's in a run, a test's own in the tests.
	getenv func(string) string
	now    func() time.Time
	// noSpawn refuses to start lazy processes (a daemon, a supervisor,
	// housekeeping): a run in a test's process would start the test
	// binary.
	noSpawn bool
	// crash is the test-only crash hook (wire.CrashAtEnv), one per
	// process so that its count spans the process; nil outside tests.
	crash *wire.CrashPoint
}

// terminal is a terminal stdout is taken to be: its width.
type terminal struct{ width int }

// usageError makes main exit with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// open locates the repository and reads its lazy configuration.
func (a *app) open() error {
	if a.store != nil {
		return nil
	}
	repo, err := gitrepo.Discover(a.dir)
	if err != nil {
		return err
	}
	a.repo = repo
	return a.loadConfig()
}

// openTask opens the repository and loads the task name names (a slug
// or an id prefix), for commands that read one task.
func (a *app) openTask(name string) (*task.Snapshot, error) {
	if err := a.open(); err != nil {
		return nil, err
	}
	id, err := a.store.Resolve(name)
	if err != nil {
		return nil, err
	}
	return a.store.Load(id)
}

// loadConfig reads git config and opens the store with it.
func (a *app) loadConfig() error {
	cfg, err := a.repo.Config()
	if err != nil {
		return err
	}
	// A bad lazy.gc.looseObjects stops only what uses it (lazy housekeep
	// --auto says so; the background check after a write is skipped),
	// never every command: see looseObjectLimit.
	limit, _ := looseObjectLimit(cfg)
	host, _ := cfg.Get("lazy.hostid")
	if host == "" {
		host = "unregistered"
	}
	a.cfg = cfg
	a.store = gitstore.Open(a.repo, gitstore.WithHost(host))
	a.store.LooseObjectLimit = limit
	return nil
}

// openForWrite is open plus the one-time set-up that writes need, so
// that `lazy create` works in a repository nobody ran `lazy init` in.
func (a *app) openForWrite() error {
	if err := a.open(); err != nil {
		return err
	}
	if _, ok := a.cfg.Get("lazy.hostid"); !ok {
		res, err := initRepo(a.repo, a.cfg)
		if err != nil {
			return fmt.Errorf("set up lazy in this repository: %w", err)
		}
		a.io.info("set up this repository for lazy (host id %s)", res.HostID)
		if err := a.loadConfig(); err != nil {
			return err
		}
	}
	a.wrote = true
	return nil
}

func (a *app) env() (*wire.Env, error) {
	actor, err := session.ActorFromEnv()
	if err != nil {
		return nil, err
	}
	// LAZY_ACTOR only labels provenance. Identity that widens what a
	// command may do (an agent acting for its own task) is proven by an
	// MCP token in the daemon, never claimed through the environment, so
	// the CLI leaves CallerTask empty whatever LAZY_TASK_ID says.
	timing, policy, turnErr := a.settings().turn()
	return wire.New(a.store, session.Env{Actor: actor, RepoDir: a.repoDir(), Timing: timing, Policy: policy, TurnConfigErr: turnErr, Launch: a.launchSupervisor}).WithAccept(a.crash, a.gateReaper()), nil
}

// afterWrite starts background housekeeping when loose objects piled up.
// It never fails the command that triggered it.
func (a *app) afterWrite() {
	if !a.wrote || a.store == nil || !a.store.Housekeeping().NeedsHousekeeping() {
		return
	}
	_ = spawnerOf(a).detached(nil, "housekeep", "--quiet", "--auto")
}

// spawner starts lazy processes detached (a daemon, a supervisor,
// housekeeping): the one way a run starts another lazy. spawnerOf fills
// it from an opened run.
type spawner struct {
	// gitDir is the common git directory the process runs in (-C).
	gitDir string
	// noSpawn refuses to start anything: a run in a test's process would
	// start the test binary.
	noSpawn bool
}

// spawnerOf is the spawner of an opened run.
func spawnerOf(a *app) spawner { return spawner{gitDir: a.repo.CommonDir, noSpawn: a.noSpawn} }

// detached starts `lazy -C <git dir> args...` in its own session, so
// nothing that happens to this command kills it, with stdin and stdout on
// /dev/null (a caller reading our stdout to EOF must not wait for it) and
// stderr on errlog, or /dev/null when errlog is nil.
func (s spawner) detached(errlog *os.File, args ...string) error {
	return s.start(errlog, "", args...)
}

// exitRecorder runs a command and writes its exit status (128+n for a
// signal, as the shell reports it) to $LAZY_EXIT_FILE when it ends,
// however it ends: the one thing a process killed by SIGKILL cannot
// record itself.
const exitRecorder = `"$0" "$@"; code=$?; printf '%s\n' "$code" > "$LAZY_EXIT_FILE.tmp" && mv -f "$LAZY_EXIT_FILE.tmp" "$LAZY_EXIT_FILE"`

// start starts lazy detached; with exitFile set, under a shell that
// records its exit status there.
func (s spawner) start(errlog *os.File, exitFile string, args ...string) error {
	if s.noSpawn {
		return fmt.Errorf("lazy %s: this run starts no lazy process (a test's own process runs it; the e2e tests run the real binary)", strings.Join(args, " "))
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the lazy binary: %w", err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer func() { _ = devnull.Close() }()
	argv := append([]string{exe, "-C", s.gitDir}, args...)
	if sh, err := exec.LookPath("sh"); exitFile != "" && err == nil {
		argv = append([]string{sh, "-c", exitRecorder}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = proto.WithoutTurnEnv(os.Environ())
	if exitFile != "" {
		cmd.Env = append(cmd.Env, "LAZY_EXIT_FILE="+exitFile)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	if errlog != nil {
		cmd.Stdout, cmd.Stderr = errlog, errlog
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// isTerminal reports whether f is an interactive terminal.
func isTerminal(f any) bool {
	file, ok := raw(f).(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// raw returns the writer under lazy's output escaper, for the few writes
// that must reach the terminal unescaped (the agent's pty in pair and
// chat, watch's own redraw sequence). It flushes the escaper first so the
// order of bytes is kept.
func raw(f any) any {
	if t, ok := f.(*termsafe.Writer); ok {
		_ = t.Flush()
		return t.Unwrap()
	}
	return f
}

// rawWriter is raw for a writer.
func rawWriter(w io.Writer) io.Writer { return raw(w).(io.Writer) }

// readable reports whether stdin carries data to read: a pipe or a file,
// never a terminal or /dev/null (so tests and CI with no stdin never hang).
func readable(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return r != nil
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeNamedPipe != 0 || fi.Mode().IsRegular()
}

func toJSON(t *task.Task) task.Summary { return task.NewSummary(t) }

// exitCode maps an error to the process exit status: 2 for usage, 1
// otherwise.
func exitCode(err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
