package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/testfakes/mockapi"
)

// Numbers from outside are checked at the door (SECURITY.md): cost and
// token figures a remote or an agent wrote, out of bounds or not numbers
// at all, are flagged, named by pull, doctor and cost, and summed
// nowhere; budgets count only the figures lazy believes.

// craftFiles rewrites or adds files (paths inside the record's tree,
// such as task.json or turns/1.json) of the task record at ref in dir
// with git plumbing, as an attacker who bypasses lazy would.
func craftFiles(t *testing.T, dir, ref string, files map[string]string) {
	t.Helper()
	index := filepath.Join(t.TempDir(), "index")
	plumb := func(stdin []byte, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "GIT_CONFIG_NOSYSTEM=1")
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	plumb(nil, "read-tree", ref)
	for name, body := range files {
		sha := plumb([]byte(body), "hash-object", "-w", "--stdin")
		plumb(nil, "update-index", "--add", "--cacheinfo", "100644,"+sha+","+name)
	}
	tree := plumb(nil, "write-tree")
	commit := plumb([]byte("crafted\n"), "commit-tree", tree, "-p", ref)
	plumb(nil, "update-ref", ref, commit)
}

// hostileSpender gives the attacker's task id a usage total and one
// agent turn with the given usage JSON, written raw: JSON a marshaller
// would never produce (a string for a number, 1e30 tokens) included.
func hostileSpender(t *testing.T, attacker *runner, id, total, turn string) {
	t.Helper()
	ref := "refs/lazy/tasks/" + id
	var task map[string]json.RawMessage
	if err := json.Unmarshal([]byte(attacker.git("cat-file", "blob", ref+":task.json")), &task); err != nil {
		t.Fatal(err)
	}
	task["usage"] = json.RawMessage(total)
	task["turns"] = json.RawMessage("1")
	body, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	craftFiles(t, attacker.dir, ref, map[string]string{
		"task.json":    string(body),
		"turns/1.json": `{"seq":1,"role":"agent","kind":"agent","content":"spent","at":"2026-05-01T10:00:00Z","agent":"codex","model":"gpt-5-codex","usage":` + turn + `}`,
	})
}

// hasRow reports whether a line of a table starts with the cells of
// want, however the columns are padded.
func hasRow(table, want string) bool {
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(strings.Join(strings.Fields(line), " ")+" ", want+" ") {
			return true
		}
	}
	return false
}

// longNumber is an amount printed in full: 20 digits or more.
var longNumber = regexp.MustCompile(`[0-9]{20,}`)

func TestHostileFiguresAreFlaggedAndNeverSummed(t *testing.T) {
	victim, attacker := clones(t)
	fake := withFakeClaude(t, victim)
	// The victim's parent task may spend one cent, its subtasks' turns
	// included.
	pay := victim.create("Pay carefully", "--budget", "0.01")
	work := victim.create("Real work", "--parent", pay.Slug)
	victim.ok("push")

	attacker.ok("init")
	attacker.ok("pull")
	canceller := attacker.create("Canceller", "--parent", pay.Slug)
	hog := attacker.create("Hog", "--parent", pay.Slug)
	nan := attacker.create("Not a number")
	tokens := attacker.create("Token bomb")
	honest := attacker.create("Honest remote work")
	hostileSpender(t, attacker, canceller.ID, `{"cost_usd":-1e308}`, `{"cost_usd":-1e308}`)
	hostileSpender(t, attacker, hog.ID, `{"cost_usd":1e308}`, `{"cost_usd":1e308}`)
	hostileSpender(t, attacker, nan.ID, `{"cost_usd":"NaN","input_tokens":5}`, `{"cost_usd":"NaN"}`)
	hostileSpender(t, attacker, tokens.ID, `{"input_tokens":1e30,"output_tokens":3}`, `{"input_tokens":-7}`)
	hostileSpender(t, attacker, honest.ID, `{"cost_usd":0.5,"input_tokens":1000,"output_tokens":10}`, `{"cost_usd":0.5,"input_tokens":1000,"output_tokens":10}`)
	attacker.ok("push")

	// Pull takes the records in and names every figure it does not
	// believe, with the task, the turn and why.
	out := victim.ok("pull")
	for _, want := range []string{
		"flagged task canceller: usage left out: cost_usd -1e+308 is negative",
		"flagged task canceller turn 1: usage left out: cost_usd -1e+308 is negative",
		"flagged task hog: usage left out: cost_usd 1e+308 is above the $1000000000000 a task can cost",
		"flagged task hog turn 1: usage left out: cost_usd 1e+308 is above the $1000000 a turn can cost",
		`flagged task not-a-number: usage left out: cost_usd "NaN" is not a number`,
		`flagged task not-a-number turn 1: usage left out: cost_usd "NaN" is not a number`,
		"flagged task token-bomb: usage left out: input_tokens 1e30 is not a whole number",
		"flagged task token-bomb turn 1: usage left out: input_tokens -7 is negative",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pull does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "honest-remote-work") {
		t.Errorf("pull flagged a believable record:\n%s", out)
	}
	var pulled struct {
		Flagged []struct {
			Task   string `json:"task"`
			Turn   int    `json:"turn"`
			Reason string `json:"reason"`
		} `json:"flagged"`
	}
	// A second pull brings nothing new and names nothing again.
	if err := json.Unmarshal([]byte(victim.ok("pull", "--json")), &pulled); err != nil || len(pulled.Flagged) != 0 {
		t.Fatalf("a second pull: %+v %v", pulled, err)
	}

	// The hog's 1e308 does not hold the parent: it starts (its agent
	// spends nothing), then the victim's subtask runs, and its turn costs
	// the cent the parent allows.
	victim.with(script(t, "print planned")).ok("start", pay.Slug, "--command", fakeAgentBin)
	victim.waitStatus(pay.Slug, "blocked")
	fake.with(script(t, "claude-init s1", "claude-result Did the work.")).ok("start", work.Slug, "--agent", "claude")
	fake.waitStatus(work.Slug, "blocked")
	// The canceller's -1e308 does not pay for it: the budget is spent.
	msg := fake.fails(1, nil, "unblock", work.Slug, "-m", "more")
	if !strings.Contains(msg, "$0.01 spent of $0.01 (parent "+pay.Slug+" budget)") {
		t.Fatalf("unblock over the parent's budget: %s", msg)
	}

	// lazy cost shows only believable figures, and says what it left out.
	res := victim.run(nil, "cost")
	if res.Code != 0 {
		t.Fatalf("cost: %s", res)
	}
	for _, want := range []string{"honest-remote-work open $0.5000 1000 0 10", "real-work open $0.0100", "TOTAL $0.5100"} {
		if !hasRow(res.Stdout, want) {
			t.Errorf("lazy cost lacks the row %q:\n%s", want, res.Stdout)
		}
	}
	for _, bad := range []string{"canceller", "hog", "not-a-number", "token-bomb", "-$", "e+308", "NaN"} {
		if strings.Contains(res.Stdout, bad) {
			t.Errorf("lazy cost shows %q:\n%s", bad, res.Stdout)
		}
	}
	if longNumber.MatchString(res.Stdout) {
		t.Errorf("lazy cost prints a huge amount:\n%s", res.Stdout)
	}
	if !strings.Contains(res.Stderr, "note: 4 recorded figures are out of bounds and not counted") || !strings.Contains(res.Stderr, "task hog: usage left out") {
		t.Errorf("lazy cost does not say what it left out:\n%s", res.Stderr)
	}
	var rep struct {
		Rows []struct {
			Key     string  `json:"key"`
			CostUSD float64 `json:"cost_usd"`
		} `json:"rows"`
		Total struct {
			CostUSD     float64 `json:"cost_usd"`
			InputTokens int64   `json:"input_tokens"`
			Tasks       int     `json:"tasks"`
		} `json:"total"`
		Flagged []struct {
			Task string `json:"task"`
			Turn int    `json:"turn"`
		} `json:"flagged"`
	}
	raw := victim.ok("cost", "--json")
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Total.CostUSD != 0.51 || rep.Total.Tasks != 2 || len(rep.Rows) != 2 || len(rep.Flagged) != 4 || !strings.Contains(raw, `"cost_usd": 0.51,`) {
		t.Fatalf("lazy cost --json: %+v\n%s", rep, raw)
	}
	// Reading turns, the turns' own hostile figures are left out too.
	raw = victim.ok("cost", "--by", "model", "--json")
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Total.CostUSD != 0.51 || len(rep.Flagged) != 8 {
		t.Fatalf("lazy cost --by model --json: %+v\n%s", rep, raw)
	}

	// show says what the parent's budget counts.
	if out := victim.ok("show", pay.Slug); !strings.Contains(out, "Budget:   $0.01 (its own, for it and its subtasks); $0.01 spent against it; left out as out of bounds: the figures of canceller and hog (lazy doctor names them)") {
		t.Errorf("show of the parent:\n%s", out)
	}
	if out := victim.ok("show", hog.Slug); !strings.Contains(out, "Spent:    left out: cost_usd 1e+308 is above") || longNumber.MatchString(out) {
		t.Errorf("show of the hog:\n%s", out)
	}

	// doctor names each figure; a repair sums the hostile totals again
	// from the turns lazy believes (none here), and the turns stay as
	// they came, noted.
	dr := victim.run(nil, "doctor", "--dry-run")
	if dr.Code != 1 || strings.Count(dr.Stdout, "flagged-figure:") != 8 || !strings.Contains(dr.Stdout, "canceller: flagged-figure: task canceller: usage left out: cost_usd -1e+308 is negative\n    would sum the task's total again") ||
		!strings.Contains(dr.Stdout, "token-bomb: flagged-figure: task token-bomb turn 1: usage left out: input_tokens -7 is negative\n    left out of every budget") {
		t.Fatalf("doctor --dry-run:\n%s", dr)
	}
	victim.ok("doctor")
	dr = victim.run(nil, "doctor")
	if dr.Code != 0 || strings.Count(dr.Stdout, "flagged-figure:") != 4 || strings.Contains(dr.Stdout, "would sum") {
		t.Fatalf("doctor after its repair:\n%s", dr)
	}
	if out := victim.ok("show", hog.Slug); !strings.Contains(out, "Spent:    0 in / 0 out tokens (all agent turns)") {
		t.Errorf("the hog's total after the repair:\n%s", out)
	}
	// The budget is still spent by the victim's own cent.
	if msg := fake.fails(1, nil, "unblock", work.Slug, "-m", "more"); !strings.Contains(msg, "$0.01 spent of $0.01") {
		t.Fatalf("after the repair: %s", msg)
	}
}

// A budget of 0 allows no spend: no turn starts under it, from a task or
// from git config. An amount that cannot be a budget is refused with the
// fix, and none clears a task's own.
func TestZeroBudgetBlocksATurn(t *testing.T) {
	r := newRepo(t)
	ran := filepath.Join(t.TempDir(), "ran")
	agent := r.with(script(t, "write "+ran+" yes"))
	tk := r.create("Frozen", "--budget", "0")
	msg := agent.fails(1, nil, "start", tk.Slug, "--command", fakeAgentBin)
	if !strings.Contains(msg, "$0.00 spent of $0 (task budget: no spend allowed)") || !strings.Contains(msg, "nothing was started") {
		t.Fatalf("start under a budget of 0: %s", msg)
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "Budget:   $0 (no spend allowed) (its own, for it and its subtasks)") {
		t.Errorf("show:\n%s", out)
	}
	// The day's budget of 0 holds every task.
	free := r.create("Free")
	r.git("config", "lazy.budget.day", "0")
	if msg := agent.fails(1, nil, "start", free.Slug, "--command", fakeAgentBin); !strings.Contains(msg, "the day budget allows no spend ($0.00 spent of $0 (day budget: no spend allowed))") || !strings.Contains(msg, "or unset it for no day budget (git config --unset lazy.budget.day)") {
		t.Fatalf("start under lazy.budget.day 0: %s", msg)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("an agent ran under a budget of 0")
	}
	// Bad amounts: refused, with the fix, and nothing lost.
	r.git("config", "lazy.budget.day", "-5")
	if msg := agent.fails(1, nil, "start", free.Slug, "--command", fakeAgentBin); !strings.Contains(msg, `git config lazy.budget.day = "-5" is not an amount`) || !strings.Contains(msg, "git config lazy.budget.day 50") || !strings.Contains(msg, "git config --unset lazy.budget.day") {
		t.Fatalf("lazy.budget.day -5: %s", msg)
	}
	r.git("config", "--unset", "lazy.budget.day")
	for args, want := range map[string]string{
		"create Bad --budget=-1":             "--budget -1 is negative",
		"create Bad --budget 1e308":          "--budget 1e+308 is more than the largest budget lazy takes ($1000000000000)",
		"create Bad --budget lots":           `--budget "lots" is not an amount in US dollars`,
		"edit frozen --budget NaN":           `--budget "NaN" is not an amount in US dollars`,
		"edit frozen --budget 2000000000000": "is more than the largest budget",
	} {
		msg := r.fails(2, nil, strings.Fields(args)...)
		if !strings.Contains(msg, want) || !strings.Contains(msg, "give") {
			t.Errorf("lazy %s: %s", args, msg)
		}
	}
	if n := len(r.list()); n != 2 {
		t.Fatalf("%d tasks: a refused create made one", n)
	}
	// none clears the task's own budget; then it runs.
	if out := r.ok("edit", tk.Slug, "--budget", "none"); !strings.Contains(out, "budget (none of its own)") {
		t.Fatalf("edit --budget none: %s", out)
	}
	agent.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	if _, err := os.Stat(ran); err != nil {
		t.Fatal("the agent did not run once the budget was cleared")
	}
}

// A Codex turn reports tokens and no price: lazy prices it from its
// table by the model (here the session's --model), a lazy.price setting
// beats the table, and a model neither knows is "unpriced", never
// $0.0000.
func TestCodexTurnsArePricedFromTheTable(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	codex := r.with(script(t, "codex-thread th-1", "codex-usage 60000 0 2400", "codex-message Done."))
	priced := codex.create("Priced")
	codex.ok("start", priced.Slug, "--agent", "codex", "--model", "gpt-5-codex")
	codex.waitStatus(priced.Slug, "blocked")
	unknown := codex.create("Unknown model")
	codex.ok("start", unknown.Slug, "--agent", "codex", "--model", "gpt-9-preview")
	codex.waitStatus(unknown.Slug, "blocked")

	out := r.ok("cost")
	for _, want := range []string{"priced open $0.0990 60.0k 0 2400", "unknown-model open unpriced 60.0k 0 2400", "TOTAL $0.0990 + unpriced 120.0k 0 4800 2 tasks"} {
		if !hasRow(out, want) {
			t.Errorf("lazy cost lacks the row %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "$0.0000") {
		t.Errorf("a turn with tokens priced $0.0000:\n%s", out)
	}
	if out := r.ok("cost", "--by", "model"); !hasRow(out, "gpt-5-codex $0.0990 60.0k 0 2400 1 1") || !hasRow(out, "gpt-9-preview unpriced 60.0k 0 2400 1 1") {
		t.Errorf("lazy cost --by model:\n%s", out)
	}
	if out := r.ok("show", priced.Slug); !strings.Contains(out, "$0.0990, 60.0k in / 2.4k out tokens") {
		t.Errorf("show:\n%s", out)
	}
	var sh struct {
		TurnList []struct {
			PricedBy string `json:"priced_by"`
			Model    string `json:"model"`
		} `json:"turn_list"`
	}
	if err := json.Unmarshal([]byte(r.ok("show", "--json", priced.Slug)), &sh); err != nil {
		t.Fatal(err)
	}
	if last := sh.TurnList[len(sh.TurnList)-1]; last.PricedBy != "table" || last.Model != "gpt-5-codex" {
		t.Fatalf("the turn says %+v", last)
	}
	// A setting prices the unknown model from its next turn on.
	r.git("config", "--add", "lazy.price", "gpt-9-preview 2,0.2,20")
	codex.ok("unblock", unknown.Slug, "-m", "again")
	codex.waitStatus(unknown.Slug, "blocked")
	if out := r.ok("cost", unknown.Slug, "--by", "model"); !hasRow(out, "gpt-9-preview $0.1680 + unpriced 120.0k 0 4800 2 1") {
		t.Errorf("after lazy.price:\n%s", out)
	}
	r.git("config", "--add", "lazy.price", "gpt-9-preview cheap")
	res := r.run(nil, "config", "lazy.price")
	if !strings.Contains(res.Stdout+res.Stderr, "'gpt-5-codex 1.25,0.125,10'") {
		t.Errorf("lazy config does not flag a bad lazy.price with the fix:\n%s", res)
	}
}

// Attempts roll up under their group in lazy cost; lazy cost GROUP lists
// each attempt and their total.
func TestCostRollsAttemptsUpUnderTheirGroup(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	agent := r.with(script(t, "claude-init s1", "claude-result Tried."))
	g := r.create("Fix login")
	agent.ok("start", g.Slug, "--attempts", "2", "--agent", "claude")
	agent.waitStatus(g.Slug+"-a1", "blocked")
	agent.waitStatus(g.Slug+"-a2", "blocked")
	other := r.create("Other")
	agent.ok("start", other.Slug, "--agent", "claude")
	agent.waitStatus(other.Slug, "blocked")

	out := r.ok("cost")
	if !hasRow(out, "fix-login (2 attempts) open $0.0200") || strings.Contains(out, "fix-login-a1") || !hasRow(out, "TOTAL $0.0300") {
		t.Fatalf("lazy cost does not roll the attempts up:\n%s", out)
	}
	out = r.ok("cost", g.Slug)
	for _, want := range []string{"fix-login-a1 open $0.0100", "fix-login-a2 open $0.0100", "TOTAL $0.0200"} {
		if !hasRow(out, want) {
			t.Errorf("lazy cost %s lacks the row %q:\n%s", g.Slug, want, out)
		}
	}
	if strings.Contains(out, "other") {
		t.Errorf("lazy cost %s shows another task:\n%s", g.Slug, out)
	}
	var rep struct {
		Rows []struct {
			Key      string  `json:"key"`
			CostUSD  float64 `json:"cost_usd"`
			Attempts int     `json:"attempts"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.ok("cost", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Key != g.Slug || rep.Rows[0].Attempts != 2 || rep.Rows[0].CostUSD != 0.02 {
		t.Fatalf("lazy cost --json: %+v", rep.Rows)
	}
}

// The real Codex names no model in its output and reports tokens only:
// lazy takes the model from Codex's config.toml (gpt-5-codex here) and
// prices the turn from its table.
func TestRealCodexTurnIsPriced(t *testing.T) {
	r, _ := withRealAgents(t, newRepo(t), nil, []mockapi.Reply{{Text: "done", InputTokens: 60000, OutputTokens: 2400}})
	tk := r.create("codex job")
	r.ok("start", tk.Slug, "--agent", "codex")
	r.waitStatus(tk.Slug, "blocked")
	out := r.ok("cost", "--by", "model")
	if !hasRow(out, "gpt-5-codex $0.0990 60.0k 0 2400 1 1") {
		t.Fatalf("lazy cost --by model:\n%s", out)
	}
	if out := r.ok("show", tk.Slug); !strings.Contains(out, "$0.0990, 60.0k in / 2.4k out tokens") {
		t.Errorf("show:\n%s", out)
	}
}

// An agent CLI (or a command posing as one) that reports an absurd cost
// has its turn's usage flagged when lazy records it: not added to the
// task, the budgets or the day's ledger.
func TestAbsurdReportedCostIsFlaggedAtRecord(t *testing.T) {
	r := withFakeClaude(t, newRepo(t))
	r.git("config", "lazy.budget.day", "1")
	tk := r.create("Liar")
	r.with(script(t, "claude-init s1", "claude-cost -1e300", "claude-result Cheap, honest.")).ok("start", tk.Slug, "--agent", "claude")
	r.waitStatus(tk.Slug, "blocked")
	out := r.ok("show", tk.Slug)
	if !strings.Contains(out, "figures left out (cost_usd -1e+300 is negative)") || !strings.Contains(out, "Spent:    0 in / 0 out tokens") {
		t.Fatalf("show:\n%s", out)
	}
	// The day's budget still has its dollar: the negative figure paid
	// for nothing, and the next turn starts.
	other := r.create("Next")
	r.with(script(t, "claude-init s2", "claude-result Spent a cent.")).ok("start", other.Slug, "--agent", "claude")
	r.waitStatus(other.Slug, "blocked")
	if res := r.run(nil, "cost", "--by", "model"); !hasRow(res.Stdout, "TOTAL $0.0100") || !strings.Contains(res.Stderr, "task liar turn 2: usage left out: cost_usd -1e+300 is negative") {
		t.Fatalf("cost: %s", res)
	}
	if out := r.ok("doctor"); !strings.Contains(out, "liar: flagged-figure: task liar turn 2: usage left out: cost_usd -1e+300 is negative") {
		t.Fatalf("doctor:\n%s", out)
	}
}
