package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

func readWorkflow(t *testing.T) *actionlint.Workflow {
	t.Helper()
	b, err := os.ReadFile(workflowFile)
	if err != nil {
		t.Fatal(err)
	}
	wf, errs := actionlint.Parse(b)
	if len(errs) > 0 {
		for _, e := range errs {
			t.Errorf("%s:%d:%d: %s", workflowFile, e.Line, e.Column, e.Message)
		}
		t.FailNow()
	}
	return wf
}

// envValue is the value of the variable name in env ("" if absent).
func envValue(env *actionlint.Env, name string) string {
	if env == nil {
		return ""
	}
	for _, v := range env.Vars {
		if v.Name.Value == name {
			return v.Value.Value
		}
	}
	return ""
}

// actionInput is the input of the one step that uses action.
func actionInput(t *testing.T, wf *actionlint.Workflow, action, input string) string {
	t.Helper()
	var found []string
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if a, ok := s.Exec.(*actionlint.ExecAction); ok && a.Uses.Value == action {
				in := a.Inputs[strings.ToLower(input)]
				if in == nil {
					found = append(found, "")
				} else {
					found = append(found, in.Value.Value)
				}
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("the workflow uses %s %d times; want once", action, len(found))
	}
	return found[0]
}

// stepRunning is the one step of job whose run script has a line that
// starts with command.
func stepRunning(t *testing.T, wf *actionlint.Workflow, job, command string) (*actionlint.Step, string) {
	t.Helper()
	j := wf.Jobs[job]
	if j == nil {
		t.Fatalf("the workflow has no job %q", job)
	}
	pattern := `(?m)^\s*` + regexp.QuoteMeta(command)
	if last := command[len(command)-1]; last == '_' || 'a' <= last && last <= 'z' || 'A' <= last && last <= 'Z' || '0' <= last && last <= '9' {
		pattern += `\b`
	}
	line := regexp.MustCompile(pattern)
	var steps []*actionlint.Step
	for _, s := range j.Steps {
		if r, ok := s.Exec.(*actionlint.ExecRun); ok && line.MatchString(r.Run.Value) {
			steps = append(steps, s)
		}
	}
	if len(steps) != 1 {
		t.Fatalf("job %s has %d steps running %s; want one", job, len(steps), command)
	}
	return steps[0], steps[0].Exec.(*actionlint.ExecRun).Run.Value
}

// TestWorkflowPassesActionlint lints the workflow with actionlint's own
// linter (the library the actionlint command is), where a user puts it:
// .github/workflows/ of a repository. actionlint checks the syntax, the
// expressions and their types, the inputs of the actions used, cron
// lines, and, with shellcheck on PATH, every run script.
func TestWorkflowPassesActionlint(t *testing.T) {
	src, err := os.ReadFile(workflowFile)
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	for _, d := range []string{".git", ".github/workflows"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(repo, ".github/workflows/lazy-runner.yml")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	sc := shellcheckPath(t)
	if sc == "" {
		t.Log("shellcheck is not on PATH: the run scripts are not shellchecked (apt-get install shellcheck)")
	}
	var out strings.Builder
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{
		Shellcheck: sc,
		Color:      actionlint.ColorOptionKindNever,
		WorkingDir: repo,
	})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.LintFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Errorf("actionlint found %d problem(s) in %s:\n%s", len(errs), workflowFile, out.String())
	}
}

// TestActionlintCatches feeds the same linter a broken workflow, so a
// linter that checked nothing would fail here.
func TestActionlintCatches(t *testing.T) {
	broken := `on: workflow_dispatch
jobs:
  runner:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-dept: 0
      - run: echo "${{ inputs.runers }}"
`
	l, err := actionlint.NewLinter(&strings.Builder{}, &actionlint.LinterOptions{Color: actionlint.ColorOptionKindNever})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint("broken.yml", []byte(broken), nil)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range errs {
		kinds = append(kinds, e.Kind)
	}
	for _, want := range []string{"action", "expression"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("actionlint found %q in the broken workflow; want a %q error among them", kinds, want)
		}
	}
}

// TestWorkflowShape checks what the recipe promises beyond valid syntax:
// the triggers, one run at a time, least privilege, a full clone that can
// push, and secrets only where the runner needs them.
func TestWorkflowShape(t *testing.T) {
	wf := readWorkflow(t)

	var dispatch *actionlint.WorkflowDispatchEvent
	var schedule *actionlint.ScheduledEvent
	for _, ev := range wf.On {
		switch e := ev.(type) {
		case *actionlint.WorkflowDispatchEvent:
			dispatch = e
		case *actionlint.ScheduledEvent:
			schedule = e
		}
	}
	if dispatch == nil || schedule == nil || len(schedule.Schedules) == 0 {
		t.Fatal("the workflow must run on workflow_dispatch and on a schedule")
	}
	for _, in := range []string{"runners", "labels", "max-tasks"} {
		if dispatch.Inputs[in] == nil {
			t.Errorf("workflow_dispatch has no input %q", in)
		}
	}

	if wf.Concurrency == nil || wf.Concurrency.Group == nil || wf.Concurrency.Group.Value == "" {
		t.Error("the workflow has no concurrency group: scheduled runs would stack runners on top of one still working")
	} else if c := wf.Concurrency.CancelInProgress; c != nil && (c.Value || c.Expression != nil) {
		t.Error("concurrency cancels the run in progress, and with it running agent turns")
	}
	if p := wf.Permissions; p == nil || p.All != nil || len(p.Scopes) != 0 {
		t.Error("the workflow's permissions must be {} (each job asks for its own)")
	}

	runner := wf.Jobs["runner"]
	if runner == nil {
		t.Fatal("the workflow has no job runner")
	}
	if p := runner.Permissions; p == nil || p.Scopes["contents"] == nil || p.Scopes["contents"].Value.Value != "write" || len(p.Scopes) != 1 {
		t.Error("the runner job needs exactly contents: write, to push claims, records and task branches")
	}
	if m := runner.Strategy; m == nil || m.Matrix == nil || m.Matrix.Rows["runner"] == nil || m.Matrix.Rows["runner"].Expression == nil ||
		!strings.Contains(m.Matrix.Rows["runner"].Expression.Value, "needs.plan.outputs.runners") {
		t.Error("the runner job must be a matrix over needs.plan.outputs.runners, one job per runner")
	} else if m.FailFast == nil || m.FailFast.Value || m.FailFast.Expression != nil {
		t.Error("the runner matrix must set fail-fast: false: one failing runner must not cancel the others' turns")
	}
	if got := actionInput(t, wf, "actions/checkout@v4", "fetch-depth"); got != "0" {
		t.Errorf("checkout fetch-depth is %q; want 0 (task branches need the history)", got)
	}
	if got := actionInput(t, wf, "actions/checkout@v4", "persist-credentials"); got == "false" {
		t.Error("checkout must keep its credentials: the runner pushes with them")
	}

	// Secrets reach only the env of the runner step; no expression is
	// pasted into a script (where a value would become shell code).
	step, _ := stepRunning(t, wf, "runner", "lazy runner")
	if got := envValue(step.Env, "ANTHROPIC_API_KEY"); got != "${{ secrets.ANTHROPIC_API_KEY }}" {
		t.Errorf("the runner step's ANTHROPIC_API_KEY is %q; want ${{ secrets.ANTHROPIC_API_KEY }}", got)
	}
	if strings.Contains(exprsOfEnv(wf.Env), "secrets.") {
		t.Error("the workflow's env names a secret: every job and step would see it")
	}
	for id, job := range wf.Jobs {
		if strings.Contains(exprsOfEnv(job.Env), "secrets.") {
			t.Errorf("job %s's env names a secret: every step would see it", id)
		}
		for _, s := range job.Steps {
			if r, ok := s.Exec.(*actionlint.ExecRun); ok && r.Run.ContainsExpression() {
				t.Errorf("a run script of job %s holds an expression; pass the value through env", id)
			}
			if s != step && strings.Contains(exprsOfEnv(s.Env), "secrets.") {
				t.Errorf("a step of job %s other than the runner's gets a secret in its env", id)
			}
		}
	}
}

func exprsOfEnv(env *actionlint.Env) string {
	if env == nil {
		return ""
	}
	var b strings.Builder
	if env.Expression != nil {
		b.WriteString(env.Expression.Value)
	}
	for _, v := range env.Vars {
		b.WriteString(v.Value.Value + "\n")
	}
	return b.String()
}

var fallback = regexp.MustCompile(`^\$\{\{ inputs\.([a-z-]+) \|\| '?([^'}]*)'? \}\}$`)

// TestWorkflowScheduledDefaults: a scheduled run has no inputs, so each
// input is read as `inputs.X || FALLBACK`; the fallback must be the
// input's default, or a scheduled run would differ from a dispatched one
// left at its defaults.
func TestWorkflowScheduledDefaults(t *testing.T) {
	wf := readWorkflow(t)
	var dispatch *actionlint.WorkflowDispatchEvent
	for _, ev := range wf.On {
		if e, ok := ev.(*actionlint.WorkflowDispatchEvent); ok {
			dispatch = e
		}
	}
	if dispatch == nil {
		t.Fatal("no workflow_dispatch")
	}
	seen := map[string]bool{}
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if s.Env == nil {
				continue
			}
			for _, v := range s.Env.Vars {
				if !strings.Contains(v.Value.Value, "inputs.") {
					continue
				}
				m := fallback.FindStringSubmatch(v.Value.Value)
				if m == nil {
					t.Errorf("%s = %s: read an input as ${{ inputs.NAME || DEFAULT }}, so scheduled runs get the default", v.Name.Value, v.Value.Value)
					continue
				}
				in := dispatch.Inputs[m[1]]
				if in == nil || in.Default == nil {
					t.Errorf("%s reads input %q, which workflow_dispatch does not declare with a default", v.Name.Value, m[1])
					continue
				}
				if in.Default.Value != m[2] {
					t.Errorf("%s falls back to %q but input %s defaults to %q", v.Name.Value, m[2], m[1], in.Default.Value)
				}
				seen[m[1]] = true
			}
		}
	}
	for name := range dispatch.Inputs {
		if !seen[name] {
			t.Errorf("input %s is never used", name)
		}
	}
}

// runStep runs a step's script as GitHub's default shell for it does
// (bash -e) with the given environment.
func runStep(t *testing.T, script string, env []string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "step.sh")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-e", f)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestWorkflowRunnerStep runs the runner step's script with a fake lazy
// and checks the command it starts: `lazy runner --once`, the inputs
// turned into flags lazy runner has.
func TestWorkflowRunnerStep(t *testing.T) {
	wf := readWorkflow(t)
	_, script := stepRunning(t, wf, "runner", "lazy runner")
	bin, log := fakeLazyDir(t)
	cases := []struct {
		labels, maxTasks string
		wantLabels       []string
	}{
		{"github-actions", "1", []string{"github-actions"}},
		{"linux, gpu,,", "3", []string{"linux", "gpu"}},
		{"", "2", nil},
	}
	for _, c := range cases {
		if err := os.Remove(log); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		env := cleanEnv(t.TempDir(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"FAKE_LAZY_LOG="+log, "LABELS="+c.labels, "MAX_TASKS="+c.maxTasks, "ANTHROPIC_API_KEY=sk-test")
		if out, err := runStep(t, script, env); err != nil {
			t.Fatalf("the runner step with LABELS=%q MAX_TASKS=%s: %v\n%s", c.labels, c.maxTasks, err, out)
		}
		calls := readLazyCalls(t, log)
		if len(calls) != 1 {
			t.Fatalf("the runner step called lazy %d times: %v", len(calls), calls)
		}
		args, ok := lazyRunnerIn(append([]string{"lazy"}, calls[0].Args...))
		if !ok {
			t.Fatalf("the runner step ran lazy %q, not lazy runner", calls[0].Args)
		}
		flags, err := runnerArgs(args)
		if err != nil {
			t.Fatalf("the runner step with LABELS=%q: %v", c.labels, err)
		}
		if _, once := flags["--once"]; !once {
			t.Errorf("lazy runner %q lacks --once: the job would never end", args)
		}
		if !slices.Equal(flags["--max-tasks"], []string{c.maxTasks}) {
			t.Errorf("lazy runner %q: --max-tasks %v, want %s", args, flags["--max-tasks"], c.maxTasks)
		}
		if !slices.Equal(flags["--label"], c.wantLabels) {
			t.Errorf("LABELS=%q gave --label %q, want %q", c.labels, flags["--label"], c.wantLabels)
		}
	}
}

// TestWorkflowPlanStep runs the step that numbers the runners: its output
// is the JSON list the matrix expands, and a bad count stops the run.
func TestWorkflowPlanStep(t *testing.T) {
	wf := readWorkflow(t)
	_, script := stepRunning(t, wf, "plan", "echo \"runners=")
	for _, c := range []struct {
		runners string
		want    []int
	}{
		{"1", []int{1}},
		{"3", []int{1, 2, 3}},
		{"20", nil},
		{"0", nil},
		{"21", nil},
		{"2; echo x", nil},
		{"", nil},
	} {
		out := filepath.Join(t.TempDir(), "output")
		got, err := runStep(t, script, cleanEnv(t.TempDir(), "RUNNERS="+c.runners, "GITHUB_OUTPUT="+out))
		if c.runners == "20" {
			if err != nil {
				t.Errorf("RUNNERS=20 failed: %v\n%s", err, got)
			}
			continue
		}
		if c.want == nil {
			if err == nil {
				t.Errorf("RUNNERS=%q passed; want a refusal", c.runners)
			}
			continue
		}
		if err != nil {
			t.Fatalf("RUNNERS=%s: %v\n%s", c.runners, err, got)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "runners=")
		var list []int
		if !ok || json.Unmarshal([]byte(v), &list) != nil || !slices.Equal(list, c.want) {
			t.Errorf("RUNNERS=%s wrote %q; want runners=%v as JSON", c.runners, b, c.want)
		}
	}
}
