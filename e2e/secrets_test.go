package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/redact/redacttest"
)

// leaks says a secret of every kind, and the URL of a configured notify
// target, one per line, as a shell command.
func leaks(webhookURL string) string {
	var b strings.Builder
	b.WriteString("printf '%s\\n'")
	for _, k := range redacttest.Kinds() {
		b.WriteString(" 'leaked " + k.Text + "'")
	}
	b.WriteString(" 'posting to " + webhookURL + "'")
	return b.String()
}

// secretsIn lists which secrets text carries.
func secretsIn(text string, extra ...string) []string {
	var found []string
	for _, k := range redacttest.Kinds() {
		if strings.Contains(text, k.Secret) {
			found = append(found, k.Kind+" "+k.Secret)
		}
	}
	for _, s := range append(redacttest.HookSecrets(), extra...) {
		if strings.Contains(text, s) {
			found = append(found, s)
		}
	}
	return found
}

// TestSecretsNeverLeave: an agent prints a secret of every kind and the
// URL of a configured webhook, and the merge gate's command and output
// carry them too (the AKIA... in a gate failure's reason). What
// lazy lets out has none of them: the notifications each target type
// receives (JSON webhook, ntfy text and title, a command's stdin), the
// delivery log, the accept's error, lazy show's gate run (text and
// JSON), and lazy logs (rendered and --raw).
func TestSecretsNeverLeave(t *testing.T) {
	r := newRepo(t)
	hook := newWebhook(t)
	hookURL := hook.srv.URL + redacttest.HookPath + "?" + redacttest.HookQuery
	stdin := filepath.Join(t.TempDir(), "cmd-target.json")
	r.git("config", "--add", "lazy.notify", "json:"+hookURL)
	r.git("config", "--add", "lazy.notify", hook.srv.URL+"/ntfy-5ecret-topic")
	r.git("config", "--add", "lazy.notify", "cmd:cat >> "+stdin)
	r.git("config", "lazy.gate", leaks(hookURL)+"; echo GATE-FAILED; exit 3")
	foregroundDaemon(t, r)

	agent := filepath.Join(t.TempDir(), "agent.sh")
	body := "#!/bin/sh\nset -e\n" + leaks(hookURL) + "\necho work > work.txt\ngit add work.txt\ngit commit -q -m 'agent: the work'\necho done\n"
	if err := os.WriteFile(agent, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tk := r.create("Leaky work")
	r.ok("start", tk.Slug, "--agent", "exec", "--command", agent)
	r.waitStatus(tk.Slug, "blocked")
	res := r.run(nil, "accept", tk.Slug)
	if res.Code == 0 || !strings.Contains(res.Stderr, "the gate failed") {
		t.Fatalf("accept with the leaking gate: %s", res)
	}
	hook.waitFor(t, "the gate failure's notifications", func() bool {
		return hook.count(redacttest.HookPath, "failed its merge gate")+hook.count(redacttest.HookPath, "gate_failed") >= 1 &&
			hook.count("/ntfy-5ecret-topic", "failed its merge gate") >= 1
	})

	surfaces := map[string]string{"accept's error": res.Stdout + res.Stderr}
	hook.mu.Lock()
	for _, g := range hook.got {
		surfaces["webhook "+g.path] += g.title + "\n" + g.body + "\n"
	}
	hook.mu.Unlock()
	surfaces["the command target's stdin"] = fileSaying(t, stdin, "gate_failed")
	b, err := os.ReadFile(filepath.Join(r.dir, ".git", "lazy", "notify", "notify.log"))
	if err != nil {
		t.Fatal(err)
	}
	surfaces["the delivery log"] = string(b)
	show := r.ok("show", tk.Slug)
	_, gate, ok := strings.Cut(show, "\nGate\n")
	if !ok || !strings.Contains(gate, "GATE-FAILED") || !strings.Contains(gate, "leaked GITHUB_TOKEN=…") {
		t.Fatalf("lazy show has no gate run with its tail:\n%s", show)
	}
	gate, _, _ = strings.Cut(gate, "\nTurns (") // the agent's own turn says what it said
	surfaces["lazy show's gate"] = gate
	s := r.gateShow(tk.Slug)
	if s.GateRecord == nil || len(s.GateRecord.Runs) != 1 {
		t.Fatalf("gate record %+v", s.GateRecord)
	}
	run := s.GateRecord.Runs[0]
	surfaces["the recorded gate run"] = run.Failed + "\n" + run.Tail + "\n" + run.Commands[0].Cmd
	logs := r.ok("logs", tk.Slug)
	if !strings.Contains(logs, "leaked GITHUB_TOKEN=…") || !strings.Contains(logs, "posting to ") {
		t.Fatalf("lazy logs does not show the agent's lines:\n%s", logs)
	}
	surfaces["lazy logs"] = logs
	surfaces["lazy logs --raw"] = r.ok("logs", "--raw", tk.Slug)
	for where, text := range surfaces {
		if found := secretsIn(text, "5ecret-topic"); len(found) > 0 {
			t.Errorf("%s carries %q:\n%s", where, found, text)
		}
	}
	if !strings.Contains(surfaces["the recorded gate run"], "posting to "+strings.TrimPrefix(hook.srv.URL, "http://")) &&
		!strings.Contains(surfaces["the recorded gate run"], "posting to "+hook.srv.URL+"/…") {
		t.Errorf("the gate's tail does not keep the target's host:\n%s", surfaces["the recorded gate run"])
	}
}

// fileSaying waits until the file at path holds want, and returns it.
func fileSaying(t *testing.T, path, want string) string {
	t.Helper()
	var got string
	eventually(t, "the file "+filepath.Base(path)+" to say "+want, func() bool {
		b, _ := os.ReadFile(path)
		got = string(b)
		return strings.Contains(got, want)
	})
	return got
}
