package gitstore

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/task"
)

const decID = "0123456789abcdef"

var decCommit = newOID("89abcdef0123456789abcdef0123456789abcdef")

// generalRec is what List recorded before summaryDecoder: encoding/json
// into Task, checkTask, and the summary encoded by encoding/json.
func generalRec(body []byte) (cacheRec, bool) {
	var t task.Task
	if err := json.Unmarshal(body, &t); err != nil || checkTask(&t, decID) != nil {
		return cacheRec{}, false
	}
	return taskRec(decCommit, &t), true
}

// checkDecoder fails if the decoder accepts body and disagrees with
// encoding/json, or accepts what encoding/json refuses.
func checkDecoder(t *testing.T, body []byte) (fast bool) {
	t.Helper()
	var d summaryDecoder
	got, ok := d.decode(decID, decCommit, body)
	if !ok {
		return false
	}
	want, wok := generalRec(body)
	if !wok {
		t.Fatalf("decoder accepted a record encoding/json refuses: %q", body)
	}
	if got.commit != want.commit || got.status != want.status || got.created != want.created ||
		got.updated != want.updated || got.parent != want.parent || !bytes.Equal(got.body, want.body) {
		t.Fatalf("decoder disagrees with encoding/json on %q:\n got %+v\n %s\nwant %+v\n %s", body, got, got.body, want, want.body)
	}
	return true
}

var decSeeds = []struct {
	body string
	fast bool // summaryDecoder decodes it itself
}{
	{`{"version":1,"id":"0123456789abcdef","slug":"a-task","title":"A task","status":"backlog","created_at":"2026-12-03T10:15:54Z","updated_at":"2026-12-03T10:15:54Z","created_by":"human","clock":1,"turns":0,"comments":0,"sessions":0}`, true},
	{"{\n  \"version\": 1,\n  \"id\": \"0123456789abcdef\",\n  \"slug\": \"x\",\n  \"title\": \"Unicode é 日本 <b>&amp; \u2028 \u2029 \U0001F600\",\n  \"status\": \"working\",\n  \"parent\": \"fedcba9876543210\",\n  \"target_branch\": \"main\",\n  \"created_at\": \"2026-12-03T10:15:54.123456789+02:00\",\n  \"updated_at\": \"2027-01-01T00:00:00Z\",\n  \"clock\": 18446744073709551615,\n  \"outcome\": \"accepted\",\n  \"reason\": \"because\",\n  \"reopened_at_commit\": \"abc\",\n  \"allowed_paths\": [\"a/b\", \"c\"],\n  \"turns\": -3,\n  \"comments\": 9223372036854775807,\n  \"sessions\": 2,\n  \"host\": \"h1\",\n  \"substate\": \"agent:pre-accept\"\n}\n", true},
	{`{"id":"0123456789abcdef","slug":"x","status":"blocked","allowed_paths":[]}`, true},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog"}`, true},
	// Left to encoding/json:
	{`{"id":"0123456789abcdef","slug":"x","title":"say \"hi\"","status":"backlog"}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","metadata":{"b":"1","a":"2"}}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","forge":{"kind":"github","number":3}}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","usage":{"cost_usd":0.5}}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","merge_refused":[]}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","ID":"0123456789abcdef"}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","status":"working"}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","turns":1.0}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","turns":1e2}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","turns":01}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","clock":-1}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","turns":99999999999999999999}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","parent":null}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","created_at":"yesterday"}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","title":"bad ` + "\xff" + `"}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog","title":"tab` + "\t" + `"}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog"} trailing`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog",}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"nonsense"}`, false},
	{`{"id":"fedcba9876543210","slug":"x","status":"backlog"}`, false},
	{`{"version":2,"id":"0123456789abcdef","slug":"x","status":"backlog"}`, false},
	{`{"id":"0123456789abcdef","slug":"x","status":"backlog"`, false},
	{`[]`, false},
	{``, false},
}

func TestSummaryDecoderAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range decSeeds {
		if fast := checkDecoder(t, []byte(c.body)); fast != c.fast {
			t.Errorf("decoder took %q: %v, want %v", c.body, fast, c.fast)
		}
	}
}

// TestSummaryDecoderOnWrittenTasks checks the decoder on task.json as
// lazy writes it, through the store's own encoder.
func TestSummaryDecoderOnWrittenTasks(t *testing.T) {
	titles := []string{"plain", "ünïcödé 日本語", "<script>&</script>", "quote \" and \\ backslash", "line\nbreak", "sep \u2028\u2029", strings.Repeat("long ", 2000)}
	for _, title := range titles {
		task := task.Task{Version: task.SchemaVersion, ID: decID, Slug: "s", Title: title, Status: "backlog", AllowedPaths: []string{"src/<x>"}}
		body, err := json.MarshalIndent(&task, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		checkDecoder(t, body)
	}
}

// FuzzSummaryDecoder holds summaryDecoder to encoding/json: whatever it
// accepts, it must decode exactly as List's general path does, and it
// must never panic on hostile bytes.
func FuzzSummaryDecoder(f *testing.F) {
	for _, c := range decSeeds {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecoder(t, body)
	})
}
