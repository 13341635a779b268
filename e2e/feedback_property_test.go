package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// A property test of the spec's central promise. Random sequences of what
// users do (unblock, ask, stop, pair, resume, reject, reopen) and of
// supervisor crashes (kill -9 at random points of a turn) run against
// the exec agent, and after every step:
//
//   - every message a user wrote is in the record, verbatim, exactly once;
//   - a message marked consumed reached an agent (the agent logs every
//     prompt it is launched with); every other one is still pending;
//   - the status is what the record derives (the turns, the session, the
//     pending violations): working while a turn runs, interrupted after a
//     crash, blocked or conflict (by the violations) when parked.
//
// LAZY_PROPERTY_SEED replays a run (the seed is logged, and named in every
// failure); LAZY_PROPERTY_STEPS makes it longer than CI's default.

const defaultPropertySteps = 24

func TestFeedbackIsNeverLostUnderRandomActionsAndCrashes(t *testing.T) {
	seed := time.Now().UnixNano()
	if v := os.Getenv("LAZY_PROPERTY_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("LAZY_PROPERTY_SEED=%q is not an integer", v)
		}
		seed = n
	}
	steps := defaultPropertySteps
	if v := os.Getenv("LAZY_PROPERTY_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("LAZY_PROPERTY_STEPS=%q is not a positive integer", v)
		}
		steps = n
	}
	t.Logf("seed %d (replay with LAZY_PROPERTY_SEED=%d), %d steps", seed, seed, steps)
	p := newProperty(t, seed)
	for i := 0; i < steps; i++ {
		p.step(i)
	}
	// Finally every message a turn can still deliver reaches an agent.
	p.drain()
	t.Logf("%s; %d messages, longest settle %s", strings.Join(p.trace, " -> "), len(p.written), p.settled.Round(time.Millisecond))
}

type property struct {
	t        *testing.T
	r        *runner
	rng      *rand.Rand
	seed     int64
	tk       task
	dir      string
	log      string        // the prompts the agents received
	written  []string      // every message a user wrote, in order
	n        int           // message counter
	trace    []string      // what happened, for the failure message
	autoOn   bool          // lazy.autoResume
	released map[int]bool  // agents told to finish
	settled  time.Duration // longest wait for a step to settle
}

func newProperty(t *testing.T, seed int64) *property {
	p := &property{t: t, rng: rand.New(rand.NewSource(seed)), seed: seed, dir: t.TempDir(), released: map[int]bool{}}
	p.r = crashRepo(t)
	p.autoOn = p.rng.Intn(2) == 0
	if !p.autoOn {
		p.r = manualResume(p.r)
	}
	p.log = filepath.Join(p.dir, "prompts")
	t.Cleanup(func() { killTurns(p.r) })
	// Every agent logs its prompt and waits until the test says what it
	// does: release-<pid> holds its remaining actions.
	p.r = p.r.with(script(t, "log-prompt "+p.log, "wait-run "+filepath.Join(p.dir, "release-{pid}")))
	p.tk = p.r.create("property", "--allow", "src/**")
	p.trace = append(p.trace, fmt.Sprintf("autoResume=%v", p.autoOn))
	p.r.ok("start", p.tk.Slug, "--command", fakeAgentBin)
	p.settle("start")
	return p
}

func (p *property) fatalf(format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("seed %d (LAZY_PROPERTY_SEED=%d), after %s:\n%s", p.seed, p.seed, strings.Join(p.trace, " -> "), fmt.Sprintf(format, args...))
}

func (p *property) msg(prefix string) string {
	p.n++
	m := fmt.Sprintf("%s-%d%s", prefix, p.n, strings.Repeat(" x", p.rng.Intn(3)))
	p.written = append(p.written, m)
	return m
}

// step does one random thing the current status allows, then checks.
func (p *property) step(i int) {
	p.t.Helper()
	s := p.record()
	var choices []func() string
	switch s.Status {
	case "working":
		choices = []func() string{p.release, p.release, p.releaseOutside, p.kill, p.stop}
	case "blocked", "conflict":
		choices = []func() string{p.unblock, p.unblock, p.unblock, p.ask, p.ask, p.pair, p.reject}
	case "interrupted":
		choices = []func() string{p.resume, p.unblock, p.pair, p.reject}
	case "abandoned":
		choices = []func() string{p.reopen}
	default:
		p.fatalf("unexpected status %s", s.Status)
	}
	what := choices[p.rng.Intn(len(choices))]()
	p.trace = append(p.trace, fmt.Sprintf("%d:%s", i, what))
	p.settle(what)
}

// drain releases every turn until the task is parked with nothing a
// work turn could deliver still pending, unblocking as needed.
func (p *property) drain() {
	for i := 0; i < 12; i++ {
		s := p.record()
		switch s.Status {
		case "working":
			p.trace = append(p.trace, "drain:"+p.release())
		case "blocked", "conflict", "interrupted":
			if len(pendingMessages(s)) == 0 {
				return
			}
			p.trace = append(p.trace, "drain:"+p.unblock())
		case "abandoned":
			p.trace = append(p.trace, "drain:"+p.reopen())
		}
		p.settle("drain")
	}
	p.fatalf("messages still pending after draining: %v", pendingMessages(p.record()))
}

// --- actions -------------------------------------------------------

// agent is the running agent that logged its prompt, or 0.
func (p *property) agent() int {
	sups, agents := turnProcs(p.tk.ID)
	if len(sups) == 0 {
		return 0
	}
	for _, rc := range slices.Backward(promptLog(p.t, p.log)) {
		if slices.Contains(agents, rc.PID) && !p.released[rc.PID] {
			return rc.PID
		}
	}
	return 0
}

func (p *property) releaseWith(what string, actions ...string) string {
	pid := p.agent()
	if pid == 0 {
		p.fatalf("no agent waits to be released")
	}
	p.released[pid] = true
	body := strings.Join(actions, "\n") + "\n"
	path := filepath.Join(p.dir, fmt.Sprintf("release-%d", pid))
	if err := os.WriteFile(path+".tmp", []byte(body), 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		p.t.Fatal(err)
	}
	if p.rng.Intn(5) == 0 {
		// A crash while the agent finishes, or just after it answered.
		p.killSupervisor()
		return what + "+kill"
	}
	return what
}

func (p *property) release() string {
	if p.record().Session.TurnKind == "ask" {
		return p.releaseWith("answer", "print the answer")
	}
	n := strconv.Itoa(p.rng.Int())
	return p.releaseWith("work", "write src/"+n+".txt "+n, "commit agent: "+n, "print done")
}

func (p *property) releaseOutside() string {
	if p.record().Session.TurnKind == "ask" {
		return p.release()
	}
	n := strconv.Itoa(p.rng.Int())
	return p.releaseWith("work-outside", "write out-"+n+".txt "+n, "commit agent: outside "+n, "print done")
}

func (p *property) killSupervisor() {
	sups, _ := turnProcs(p.tk.ID)
	for _, pid := range sups {
		crash(p.t, pid)
	}
}

func (p *property) kill() string {
	p.killSupervisor()
	return "kill"
}

func (p *property) stop() string {
	p.r.ok("stop", p.tk.Slug)
	return "stop"
}

// maybeCrashEarly kills a just-launched turn's supervisor at once, maybe
// before its agent has even received the prompt.
func (p *property) maybeCrashEarly(what string) string {
	if p.rng.Intn(6) != 0 {
		return what
	}
	eventually(p.t, "a supervisor to start", func() bool {
		sups, _ := turnProcs(p.tk.ID)
		return len(sups) > 0 || p.record().Status != "working"
	})
	p.killSupervisor()
	return what + "+early-kill"
}

// decisions decides pending violations at random, as a reviewer would.
func (p *property) decisions(s propRecord) []string {
	pending := s.PendingViolations
	if len(pending) == 0 {
		return nil
	}
	if p.rng.Intn(2) == 0 {
		return []string{"--no-approve-files"}
	}
	return []string{"--approve-file", pending[p.rng.Intn(len(pending))]}
}

func (p *property) unblock() string {
	s := p.record()
	m := p.msg("FB")
	p.r.ok(append([]string{"unblock", p.tk.Slug, "-m", m}, p.decisions(s)...)...)
	return p.maybeCrashEarly("unblock")
}

func (p *property) ask() string {
	m := p.msg("Q")
	// lazy ask waits for the answer: run it in the background.
	cmd := exec.Command(lazyBin, "ask", p.tk.Slug, "-m", m)
	cmd.Dir, cmd.Env = p.r.dir, p.r.environ()
	var stderr syncBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	p.t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	for deadline := time.Now().Add(30 * time.Second); !slices.ContainsFunc(p.record().TurnList, func(tn propTurn) bool { return tn.Content == m }); {
		select {
		case err := <-exited:
			exited <- err
			p.fatalf("lazy ask ended without recording the question: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			p.fatalf("the ask was never recorded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p.maybeCrashEarly("ask")
}

func (p *property) resume() string {
	s := p.record()
	if len(s.PendingViolations) > 0 && s.Session.TurnKind != "ask" {
		return p.unblock() // resume refuses; an unblock decides
	}
	p.r.ok("resume", p.tk.Slug)
	return p.maybeCrashEarly("resume")
}

func (p *property) pair() string {
	lines := []string{"print paired"}
	what := "pair"
	if p.rng.Intn(2) == 0 {
		n := strconv.Itoa(p.rng.Int())
		lines = []string{"write pair-" + n + ".txt " + n, "commit pair: " + n}
		what = "pair-outside"
	}
	human := p.r.with("SHELL="+fakeAgentBin, script(p.t, lines...))
	cmd, _, output := ptyRun(p.t, human, &pty.Winsize{Rows: 24, Cols: 80}, "pair", p.tk.Slug)
	if err := cmd.Wait(); err != nil {
		p.fatalf("lazy pair: %v\n%s", err, output())
	}
	return what
}

func (p *property) reject() string {
	p.r.ok("reject", p.tk.Slug, "-m", p.msg("RJ"))
	return "reject"
}

func (p *property) reopen() string {
	p.r.ok("reopen", p.tk.Slug, "--reason", p.msg("RO"))
	return "reopen"
}

// --- settling and checking ----------------------------------------

// settle waits until nothing is in flight: a working task's agent has
// received its prompt and waits, or a parked task has no turn process
// left. Every look is a lazy show, which runs the reconciler (and with
// it crash detection and auto-resume). Then it checks the properties.
func (p *property) settle(what string) {
	p.t.Helper()
	began := time.Now()
	var s propRecord
	for deadline := time.Now().Add(60 * time.Second); ; {
		s = p.record()
		if p.quiet(s) {
			break
		}
		if time.Now().After(deadline) {
			sups, agents := turnProcs(p.tk.ID)
			p.fatalf("%s never settled: status %s, supervisors %v, agents %v", what, s.Status, sups, agents)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(began); d > p.settled {
		p.settled = d
	}
	p.check(s)
}

func (p *property) quiet(s propRecord) bool {
	sups, agents := turnProcs(p.tk.ID)
	if s.Status != "working" {
		return len(sups) == 0 && len(agents) == 0
	}
	// A live turn is settled once its agent received the prompt and
	// waits; a dead supervisor is not settled until it is interrupted.
	return len(sups) == 1 && p.agent() != 0
}

func (p *property) check(s propRecord) {
	p.t.Helper()
	got := promptLog(p.t, p.log)
	delivered := func(m string) bool {
		return slices.ContainsFunc(got, func(rc received) bool { return strings.Contains(rc.Prompt, m) })
	}
	for _, m := range p.written {
		var found []propTurn
		for _, tn := range s.TurnList {
			if tn.Role == "human" && tn.Content == m {
				found = append(found, tn)
			}
		}
		if len(found) != 1 {
			p.fatalf("message %q is in %d turns, want exactly 1", m, len(found))
		}
		switch d := found[0].FeedbackDelivery; d {
		case "pending":
		case "consumed":
			if !delivered(m) {
				p.fatalf("message %q (turn %d) is consumed, but no agent ever received it", m, found[0].Seq)
			}
		default:
			p.fatalf("message %q (turn %d) is neither pending nor consumed: %q", m, found[0].Seq, d)
		}
	}
	if want := derive(s); s.Status != want {
		p.fatalf("status %s, but the record derives %s (pending violations %v, session turn %d %s)", s.Status, want, s.PendingViolations, s.Session.Turn, s.Session.TurnKind)
	}
	if s.Status == "working" {
		if launch := lastLaunch(s.TurnList); s.Session.Turn != launch {
			p.fatalf("the session runs turn %d, but the last launch is turn %d", s.Session.Turn, launch)
		}
	}
}

// propRecord is what the checks read of lazy show --json.
type propRecord struct {
	Status            string     `json:"status"`
	Outcome           string     `json:"outcome"`
	PendingViolations []string   `json:"pending_violations"`
	TurnList          []propTurn `json:"turn_list"`
	Session           struct {
		Turn     int    `json:"turn"`
		TurnKind string `json:"turn_kind"`
	} `json:"session"`
}

type propTurn struct {
	Seq              int    `json:"seq"`
	Role             string `json:"role"`
	Kind             string `json:"kind"`
	Content          string `json:"content"`
	FeedbackDelivery string `json:"feedback_delivery"`
	Error            string `json:"error"`
	FailureClass     string `json:"failure_class"`
	ExitCode         *int   `json:"exit_code"`
}

func (p *property) record() propRecord {
	p.t.Helper()
	var s propRecord
	out := p.r.ok("show", "--json", p.tk.Slug)
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		p.fatalf("show: %v\n%s", err, out)
	}
	return s
}

func pendingMessages(s propRecord) []string {
	var out []string
	for _, tn := range s.TurnList {
		if tn.FeedbackDelivery == "pending" {
			out = append(out, tn.Content)
		}
	}
	return out
}

// launches are the turn kinds that start an agent turn.
var launches = map[string]bool{"start": true, "unblock": true, "resume": true, "auto-resume": true, "ask": true, "sync": true, "pre-accept": true}

func lastLaunch(turns []propTurn) int {
	seq := 0
	for _, tn := range turns {
		if tn.Role == "human" && launches[tn.Kind] {
			seq = tn.Seq
		}
	}
	return seq
}

// derive is the status the spec gives the record, read from its turns
// alone: a launch makes it working; the agent's answer, a classified
// stop, a human stop or the end of a pairing park it (conflict while
// violations are pending, else blocked); a supervisor that died without
// answering interrupts it; reject abandons and reopen parks it again.
func derive(s propRecord) string {
	if s.Outcome == "rejected" || s.Outcome == "closed" {
		return "abandoned"
	}
	park := "blocked"
	if len(s.PendingViolations) > 0 {
		park = "conflict"
	}
	st := "backlog"
	for _, tn := range s.TurnList {
		switch {
		case tn.Role == "human" && launches[tn.Kind]:
			st = "working"
		case tn.Role == "human" && (tn.Kind == "stop" || tn.Kind == "reopen"):
			st = park
		case tn.Role == "human" && tn.Kind == "reject":
			st = "abandoned"
		case tn.Role == "human" && tn.Kind == "pair":
			st = "pairing"
			if tn.ExitCode != nil { // the end of the pairing
				st = park
			}
		case tn.Role == "agent" && st == "working":
			st = park
			if tn.Error != "" && (tn.FailureClass == "" || tn.FailureClass == "unknown") {
				st = "interrupted"
			}
		}
	}
	if st == "blocked" || st == "conflict" {
		return park
	}
	return st
}
