// Package gate is lazy's merge gate: the commands that must pass on the
// merged tree before anything reaches the target branch. It reads the
// gate's settings (git config lazy.gate.* and the committed .lazy/gate
// file) and runs the commands in a scratch checkout, each in its own
// process group, bounded in time and killed whole. Which tree, which
// checkout and what happens after are the caller's (landing).
package gate

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/configkeys"
)

// FileName is the committed gate file, read from the target branch's tip
// (never the task branch: a task must not be able to weaken its own gate).
const FileName = ".lazy/gate"

// The limits on the commands of a gate, from the file or from git config.
const (
	MaxCommands     = 64
	MaxCommandBytes = 4096
)

// The values of lazy.gate.forge.
const (
	// ForgeLocal: the gate runs here before lazy asks the forge to merge.
	ForgeLocal = "local"
	// ForgeChecks: the forge's required checks are the gate.
	ForgeChecks = "checks"
)

// The defaults and bounds of the settings.
const (
	DefaultTimeout     = 15 * time.Minute
	MaxTimeout         = 24 * time.Hour
	DefaultMaxAttempts = 3
	MaxMaxAttempts     = 20
	// MaxBatch bounds lazy.gate.batch: GitHub's queue builds groups of up
	// to 100, and a bisection of 100 takes at most 8 rounds.
	MaxBatch = 100
)

// The git config keys the gate reads.
const (
	keyCommands    = "lazy.gate"
	keyTimeout     = "lazy.gate.timeout"
	keyParallel    = "lazy.gate.parallel"
	keyAutoFix     = "lazy.gate.autoFix"
	keyMaxAttempts = "lazy.gate.maxAttempts"
	keyForge       = "lazy.gate.forge"
	keyFile        = "lazy.gate.file"
	keyProtect     = "lazy.gate.protect"
	keyMinDuration = "lazy.gate.minDuration"
	keyBatch       = "lazy.gate.batch"
)

// Config is what Load reads: lazy's git config (gitrepo.Config
// satisfies it).
type Config interface {
	Get(key string) (string, bool)
	All(key string) []string
}

// boolConfig is a Config that tells a bare "key" (true, as git reads
// it) from "key =" (false); Get reads both as "". gitrepo.Config is one.
type boolConfig interface {
	Bool(key string, def bool) (bool, error)
}

// Settings are the gate's git config.
type Settings struct {
	// ConfigCommands is lazy.gate (multi-valued, each a shell command);
	// empty: the file decides. (Not "Commands": that is the method
	// that picks between it and the file, and Go allows only one.)
	ConfigCommands []string
	Timeout        time.Duration // lazy.gate.timeout, a Go duration ("90s", "15m"); default 15m; must be >0 and <= 24h
	Parallel       int           // lazy.gate.parallel, default 1, 1..(2*runtime.NumCPU())
	AutoFix        bool          // lazy.gate.autoFix (git booleans)
	MaxAttempts    int           // lazy.gate.maxAttempts, default 3, 1..20
	Forge          string        // lazy.gate.forge: ForgeLocal (default) or ForgeChecks
	UseFile        bool          // lazy.gate.file: on (default) reads .lazy/gate from the target tip when lazy.gate is unset
	// Protect is lazy.gate.protect (multi-valued globs, as the
	// allowed-paths policy reads them): paths a task may not change on
	// its own, beside the defaults (see Protection). An empty value
	// clears the values before it.
	Protect []string
	// MinDuration is lazy.gate.minDuration: a gate whose commands all
	// exit 0 in less time fails (0: no minimum).
	MinDuration time.Duration
	// Batch is lazy.gate.batch: how many entries of a train the queue
	// gates as one tree, bisecting a batch that fails (default 1: each
	// entry is gated on its own).
	Batch int
	// BatchAuto is lazy.gate.batch auto: the queue picks the size of each
	// train's batches from its recent outcomes (queue.AutoBatch); Batch
	// stays 1.
	BatchAuto bool
	// Lanes is lazy.gate.lanes: how a train is split into lanes that
	// gate and land independently (the zero value: one train).
	Lanes LaneRule
}

// Load reads the gate's settings from cfg. Each bad value is an error
// naming the key, the value and a valid example.
//
// lazy.gate is multi-valued, read in git's order (global file first); an
// empty value clears the values before it, so a repository can switch
// off a gate set globally (git config lazy.gate "") and fall back to
// its .lazy/gate.
func Load(cfg Config) (Settings, error) {
	s := Settings{
		Timeout:     DefaultTimeout,
		Parallel:    1,
		MaxAttempts: DefaultMaxAttempts,
		Forge:       ForgeLocal,
		UseFile:     true,
		Batch:       1,
	}
	var err error
	if s.ConfigCommands, err = configCommands(cfg.All(keyCommands)); err != nil {
		return Settings{}, err
	}
	if v, ok := cfg.Get(keyTimeout); ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			return Settings{}, configkeys.Invalid(keyTimeout, v, "is not a duration")
		case d <= 0 || d > MaxTimeout:
			return Settings{}, configkeys.Invalid(keyTimeout, v, "is out of range: a duration above 0 and at most 24h")
		}
		s.Timeout = d
	}
	maxParallel := 2 * runtime.NumCPU()
	if s.Parallel, err = intIn(cfg, keyParallel, 1, 1, maxParallel,
		fmt.Sprintf(" (twice this machine's %d CPUs)", runtime.NumCPU())); err != nil {
		return Settings{}, err
	}
	if s.MaxAttempts, err = intIn(cfg, keyMaxAttempts, DefaultMaxAttempts, 1, MaxMaxAttempts, ""); err != nil {
		return Settings{}, err
	}
	if s.Batch, s.BatchAuto, err = batch(cfg); err != nil {
		return Settings{}, err
	}
	if s.Lanes, err = parseLanes(cfg.All(keyLanes)); err != nil {
		return Settings{}, err
	}
	if s.AutoFix, err = boolean(cfg, keyAutoFix, false); err != nil {
		return Settings{}, err
	}
	if s.UseFile, err = boolean(cfg, keyFile, true); err != nil {
		return Settings{}, err
	}
	if s.Protect, err = protectGlobs(cfg.All(keyProtect)); err != nil {
		return Settings{}, err
	}
	if v, ok := cfg.Get(keyMinDuration); ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			return Settings{}, configkeys.Invalid(keyMinDuration, v, "is not a duration")
		case d <= 0 || d > MaxTimeout:
			return Settings{}, configkeys.Invalid(keyMinDuration, v, "is out of range: a duration above 0 and at most 24h (unset the key for no minimum)")
		}
		s.MinDuration = d
	}
	if v, ok := cfg.Get(keyForge); ok {
		switch f := strings.ToLower(strings.TrimSpace(v)); f {
		case ForgeLocal, ForgeChecks:
			s.Forge = f
		default:
			return Settings{}, configkeys.Invalid(keyForge, v, fmt.Sprintf("is neither %s nor %s", ForgeLocal, ForgeChecks))
		}
	}
	return s, nil
}

// configCommands checks the values of lazy.gate; an empty one clears
// those before it.
func configCommands(vals []string) ([]string, error) {
	var cmds []string
	for _, v := range vals {
		c := strings.TrimSpace(v)
		if c == "" {
			cmds = nil
			continue
		}
		if err := checkCommand(c); err != nil {
			return nil, fmt.Errorf("git config %s = %q: %w; give a shell command such as \"go test ./...\"", keyCommands, short(v), err)
		}
		cmds = append(cmds, c)
	}
	if len(cmds) > MaxCommands {
		return nil, fmt.Errorf("git config %s has %d commands, more than %d; join some with && (such as \"go vet ./... && go test ./...\")", keyCommands, len(cmds), MaxCommands)
	}
	return cmds, nil
}

// checkCommand holds a command to the limits of a gate.
func checkCommand(c string) error {
	if strings.IndexByte(c, 0) >= 0 {
		return fmt.Errorf("it holds a NUL byte")
	}
	if len(c) > MaxCommandBytes {
		return fmt.Errorf("it is %d bytes long, more than %d", len(c), MaxCommandBytes)
	}
	return nil
}

// short cuts a long value for an error message.
func short(v string) string {
	const n = 80
	if len(v) <= n {
		return v
	}
	return strings.ToValidUTF8(v[:n], "") + "…"
}

// intIn reads key as an integer in [lo, hi], def when unset.
func intIn(cfg Config, key string, def, lo, hi int, why string) (int, error) {
	v, ok := cfg.Get(key)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, configkeys.Invalid(key, v, fmt.Sprintf("is not a number from %d to %d%s", lo, hi, why))
	}
	if n < lo || n > hi {
		return 0, configkeys.Invalid(key, v, fmt.Sprintf("is out of range: a number from %d to %d%s", lo, hi, why))
	}
	return n, nil
}

// batch reads lazy.gate.batch: a number, or "auto" (any case), a size
// the queue picks per train from the recent failure rate.
func batch(cfg Config) (n int, auto bool, err error) {
	if v, ok := cfg.Get(keyBatch); ok && strings.EqualFold(strings.TrimSpace(v), "auto") {
		return 1, true, nil
	}
	n, err = intIn(cfg, keyBatch, 1, 1, MaxBatch, ", or auto (1 gates each entry on its own)")
	return n, false, err
}

// boolean reads key as a git boolean, def when unset.
func boolean(cfg Config, key string, def bool) (bool, error) {
	v, ok := cfg.Get(key)
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	case "":
		// A bare "key" is true, "key =" false: only a config that keeps
		// them apart can tell.
		if bc, ok := cfg.(boolConfig); ok {
			return bc.Bool(key, def)
		}
		return false, nil
	}
	return false, configkeys.Invalid(key, v, "is not a boolean (true or false)")
}

// ParseFile reads a gate file: one command per line; blank lines and
// lines starting with # are ignored; CRLF line ends and a UTF-8 byte
// order mark are tolerated. At most MaxCommands commands, each at most
// MaxCommandBytes bytes; a NUL byte is refused. Errors name the line.
func ParseFile(b []byte) ([]string, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var cmds []string
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		line = strings.TrimSuffix(line, "\r")
		if strings.IndexByte(line, 0) >= 0 {
			return nil, fmt.Errorf("%s line %d holds a NUL byte; a gate command is a line of shell text", FileName, n)
		}
		c := strings.TrimSpace(line)
		if c == "" || strings.HasPrefix(c, "#") {
			continue
		}
		if len(c) > MaxCommandBytes {
			return nil, fmt.Errorf("%s line %d is %d bytes long, more than %d; move a long command into a script and run that", FileName, n, len(c), MaxCommandBytes)
		}
		if len(cmds) == MaxCommands {
			return nil, fmt.Errorf("%s line %d is command %d, more than %d; join some with && or move them into a script", FileName, n, MaxCommands+1, MaxCommands)
		}
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// Commands returns the commands of the gate and where they came from
// ("git config lazy.gate" or ".lazy/gate at <target>"): git config wins;
// else, if UseFile, read(FileName) at the target's tip. read returns
// (nil, false, nil) when the file does not exist there. No commands at
// all means there is no gate (see Enabled).
func (s Settings) Commands(read func(path string) ([]byte, bool, error), target string) (cmds []string, source string, err error) {
	if len(s.ConfigCommands) > 0 {
		return append([]string(nil), s.ConfigCommands...), "git config " + keyCommands, nil
	}
	if !s.UseFile || read == nil {
		return nil, "", nil
	}
	source = FileName + " at " + target
	b, ok, err := read(FileName)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", source, err)
	}
	if !ok {
		return nil, "", nil
	}
	cmds, err = ParseFile(b)
	if err != nil {
		return nil, "", fmt.Errorf("%w (in %s; fix it there, or set git config %s to override it)", err, source, keyCommands)
	}
	if len(cmds) == 0 {
		return nil, "", nil
	}
	return cmds, source, nil
}

// Enabled reports whether there is a gate: any command at all.
func Enabled(cmds []string) bool { return len(cmds) > 0 }
