package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/redact/redacttest"
)

// Kinds are the secrets of each kind redact takes out, as they appear in
// text, and the secret part that must not survive. Tests of the surfaces
// (notify, gate tails, lazy logs) feed the same list.
var kinds = []struct{ name, in, secret string }{
	{"assignment", "make test GITHUB_TOKEN=ghp0abc123 now", "ghp0abc123"},
	{"assignment with colon", "deploy --password: hunter2x", "hunter2x"},
	{"quoted assignment", `API_KEY="with spaces inside" go`, "with spaces"},
	{"url user", "fetch https://bob:s3cr3tpw@example.com/repo failed", "s3cr3tpw"},
	{"bearer", "curl -H 'Authorization: Bearer abcdefgh12345678'", "abcdefgh12345678"},
	{"aws access key id", "aws: AKIAIOSFODNN7EXAMPLE is not authorized", "AKIAIOSFODNN7EXAMPLE"},
	{"aws session key id", "creds ASIAY34FZKBOKMUTVV7A expired", "ASIAY34FZKBOKMUTVV7A"},
	{"github token", "push with ghp_16C7e42F292c6912E7710c838347Ae178B4a failed", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
	{"anthropic key", "x-api-key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"},
	{"slack token", "SLACK xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"},
	{"random run", "key wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY0 leaked", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY0"},
	{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA"},
}

func TestEveryKindIsTakenOut(t *testing.T) {
	all := kinds
	for _, k := range redacttest.Kinds() {
		all = append(all, struct{ name, in, secret string }{k.Kind, "said " + k.Text + " then", k.Secret})
	}
	for _, k := range all {
		for name, f := range map[string]func(string) string{"Text": Text, "Line": Line} {
			if got := f(k.in); strings.Contains(got, k.secret) || !strings.Contains(got, Mark) {
				t.Errorf("%s: %s(%q) = %q, keeps %q", k.name, name, k.in, got, k.secret)
			}
		}
	}
}

// TestConfiguredURLsAreTakenOut: the path and query of a configured
// notify target, in a gate's output or an agent's words, leave without
// them, the host kept so a reader knows which target it was.
func TestConfiguredURLsAreTakenOut(t *testing.T) {
	hook := New("json:" + redacttest.HookTarget)
	for _, in := range []string{"POST " + redacttest.HookTarget + " failed", "curl " + redacttest.HookHost + redacttest.HookPath, "?" + redacttest.HookQuery} {
		for _, s := range redacttest.HookSecrets() {
			if got := hook.Text(in); strings.Contains(got, s) {
				t.Errorf("Text(%q) = %q keeps %q", in, got, s)
			}
		}
	}
	r := New("json:https://hooks.example/T000/B000/XXXX?token=abc123def", "https://ntfy.sh/lazy-alerts-4242", "desktop", "cmd:curl -d @- https://push.example/send?key=k3y-value-9", "https://bare.example")
	for _, c := range []struct{ in, secret, want string }{
		{"POST https://hooks.example/T000/B000/XXXX?token=abc123def failed", "T000", "POST https://hooks.example/… failed"},
		{"curl hooks.example/T000/B000/XXXX", "B000", "curl hooks.example/…"},
		{"the path /T000/B000/XXXX alone", "XXXX", "the path /… alone"},
		{"and ?token=abc123def, its query", "abc123def", ""},
		{"topic lazy-alerts-4242 on ntfy.sh/lazy-alerts-4242", "ntfy.sh/lazy-alerts", "topic lazy-alerts-4242 on ntfy.sh/…"},
		{"sent to https://push.example/send?key=k3y-value-9", "k3y-value-9", "sent to https://push.example/…"},
	} {
		for name, got := range map[string]string{"Text": r.Text(c.in), "Line": r.Line(c.in)} {
			if strings.Contains(got, c.secret) {
				t.Errorf("%s(%q) = %q, keeps %q", name, c.in, got, c.secret)
			}
			if c.want != "" && got != c.want {
				t.Errorf("%s(%q) = %q, want %q", name, c.in, got, c.want)
			}
		}
	}
	if got := r.Text("https://bare.example is fine"); got != "https://bare.example is fine" {
		t.Errorf("a URL without path or query changed: %q", got)
	}
}

// TestOrdinaryTextStays: what a gate's output or an agent's log says
// otherwise reads as it was.
func TestOrdinaryTextStays(t *testing.T) {
	for _, s := range []string{
		"--- FAIL: TestHandoffGivesTheNextAgentTheRecord (0.31s)",
		"    handoff_test.go:54: github.com/lazyorch/lazy/internal/sanitize/sanitize_test.go",
		"commit 3f2a9c1e4b5d6a7f8e9d0c1b2a3f4e5d6c7b8a9f",
		"/home/user/go/pkg/mod/github.com/yuin/goldmark@v1.8.7/parser/parser.go:123",
		"go test ./... failed in pkg/auth",
		"the token is expired; log in again",
		"AKIA is a prefix, AKIAshort is not a key",
		"cat /tmp/TestGateFeedbackQuotesTheOutput2538495071/001/words",
		"ok  	github.com/lazyorch/lazy/internal/redact	0.014s",
	} {
		if got := Text(s); got != s {
			t.Errorf("Text(%q) = %q, want it unchanged", s, got)
		}
	}
	if got := Line("go test ./... failed in pkg/auth"); got != "go test ./... failed in pkg/auth" {
		t.Errorf("Line changed ordinary text: %q", got)
	}
	// A notice drops any long run: a commit id is no loss there.
	if got := Line("key 0123456789abcdef0123456789abcdef0123 leaked"); strings.Contains(got, "0123456789abcdef0123456789abcdef") {
		t.Errorf("Line kept a long run: %q", got)
	}
}

func FuzzRedact(f *testing.F) {
	for _, k := range kinds {
		f.Add(k.in, "https://hooks.example/T000/B000/XXXX?token=abc")
	}
	f.Fuzz(func(t *testing.T, s, target string) {
		r := New(target)
		text, line := r.Text(s), r.Line(s)
		for _, k := range kinds {
			in := s + " " + k.in + " " + s
			if got := r.Text(in); strings.Contains(got, k.secret) && !strings.Contains(s, k.secret) {
				t.Fatalf("%s: Text(%q) = %q keeps %q", k.name, in, got, k.secret)
			}
		}
		if r.Text(text) != text && !strings.Contains(text, "://") {
			// Redacting twice changes nothing more, but a URL whose
			// userinfo was replaced may read as a new userinfo.
			t.Fatalf("Text is not idempotent: %q -> %q -> %q", s, text, r.Text(text))
		}
		if strings.Contains(" "+s+" ", " AKIAIOSFODNN7EXAMPLE ") && strings.Contains(line, "AKIAIOSFODNN7EXAMPLE") {
			t.Fatalf("Line(%q) = %q keeps an AWS key id", s, line)
		}
	})
}

// TestLogStaysJSON: an agent's event stream pushed to a pool's remote
// leaves without its secrets, each JSON line still the JSON it was.
func TestLogStaysJSON(t *testing.T) {
	r := New("json:" + redacttest.HookTarget)
	var log strings.Builder
	for _, k := range redacttest.Kinds() {
		text, _ := json.Marshal("TOKEN: \"x\" then " + k.Text + " and \\ " + redacttest.HookTarget)
		log.WriteString(`{"type":"assistant","text":` + string(text) + `,"n":1.50}` + "\n")
	}
	log.WriteString("plain line with " + redacttest.Kinds()[4].Text + "\nlast line without a newline AKIAIOSFODNN7EXAMPLE")
	got := string(r.Log([]byte(log.String())))
	lines := strings.Split(got, "\n")
	if len(lines) != len(redacttest.Kinds())+2 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(redacttest.Kinds())+2, got)
	}
	for i, k := range redacttest.Kinds() {
		var v map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &v); err != nil || v["type"] != "assistant" || !strings.HasPrefix(lines[i], `{"type":"assistant","text":"`) || !strings.HasSuffix(lines[i], `,"n":1.50}`) {
			t.Fatalf("line %d is no longer the JSON it was: %s (%v)", i, lines[i], err)
		}
		if strings.Contains(lines[i], k.Secret) || strings.Contains(lines[i], "XXXXSECRETPATH") {
			t.Errorf("line %d keeps a secret: %s", i, lines[i])
		}
	}
	if strings.Contains(got, "AKIAIOSFODNN7EXAMPLE") {
		t.Errorf("a plain line keeps the AWS key id:\n%s", got)
	}
	if plain := "nothing secret\n{\"a\":1}\n"; string(r.Log([]byte(plain))) != plain {
		t.Error("a log without secrets changed")
	}
}

// A redacted event keeps its keys in the agent's order and the rest of
// its bytes: lazy logs --raw is the agent's stream with only the secrets
// gone (Claude's init event leads with "type" and "subtype").
func TestLogKeepsTheEventsOrder(t *testing.T) {
	in := `{"type":"system","subtype":"init","z":[1,2.50,true,null,{"b":"x","a":"<&>"}],"apiKeySource":"token=` + "sk-ant-api03-" + strings.Repeat("aB3x", 12) + `","a":{},"e":[]}` + "\n"
	got := string(New().Log([]byte(in)))
	want := `{"type":"system","subtype":"init","z":[1,2.50,true,null,{"b":"x","a":"<&>"}],"apiKeySource":"token=` + Mark + `","a":{},"e":[]}` + "\n"
	if got != want {
		t.Fatalf("Log rewrote the event:\n got %s\nwant %s", got, want)
	}
	for _, notOne := range []string{`{"a":1} {"b":2}`, `{"a":`, `[1,2`, `"sk-ant-api03-` + strings.Repeat("aB3x", 12) + `"]`} {
		if got := New().Log([]byte(notOne)); strings.Contains(string(got), "aB3xaB3x") {
			t.Errorf("Log(%q) kept the key: %s", notOne, got)
		}
	}
}
