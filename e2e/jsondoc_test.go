package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lazyorch/lazy/internal/jsondoc"
)

// notRunHere are the sections of docs/json.md this test does not run,
// and what holds them instead.
var notRunHere = map[string]string{
	"lazy pool release TASK":           "needs a claim a runner holds; cli/jsondoc_test.go holds it to runner.ClaimRelease",
	"lazy doctor --release-merge TASK": "needs an accept another machine began; two fields, checked by hand",
	"lazy stash restore":               "needs a stash an interrupted accept kept; what it prints is an Owed stash, as lazy stash lists it (cli/jsondoc_test.go holds that type)",
}

// TestJSONOutputsAreDocumented runs every command that has --json in a
// repository with a remote, a forge, a merge gate, a notification
// target and tasks in every state those commands need, and holds what
// each printed to docs/json.md (see checkJSONDoc). With
// LAZY_JSONDOC_DUMP=FILE it also writes the paths it saw, for editing
// the docs.
func TestJSONOutputsAreDocumented(t *testing.T) {
	f := newFakeForge(t)
	r := manualResume(f.r)
	t.Cleanup(func() { killTurns(r) })
	r.git("config", "--add", "lazy.gate", "true")
	r.git("config", "--add", "lazy.notify", "cmd:true")
	out := map[string][][]byte{}
	// runAs runs lazy ARGS --json and files what it printed under the
	// section of docs/json.md named key; run files it under "lazy CMD".
	runAs := func(key string, rr *runner, args ...string) string {
		t.Helper()
		res := rr.ok(append(args, "--json")...)
		out[key] = append(out[key], []byte(res))
		return res
	}
	run := func(rr *runner, args ...string) string {
		t.Helper()
		return runAs("lazy "+args[0], rr, args...)
	}
	idOf := func(raw string) string {
		var v struct{ Slug string }
		if err := json.Unmarshal([]byte(raw), &v); err != nil || v.Slug == "" {
			t.Fatalf("no slug in %s (%v)", raw, err)
		}
		return v.Slug
	}

	run(r, "init")
	run(r, "version")
	run(r, "config")
	runAs("lazy config KEY VALUE", r, "config", "lazy.watch.bell", "false")
	run(r, "notify")
	runAs("lazy notify test", r, "notify", "test")
	parent := idOf(run(r, "create", "Parent of things", "-m", "The parent."))
	// A worked task, with a comment and an allowed-paths policy.
	worker := r.with(script(t, "write shared.txt one", "write a.txt a", "commit agent: work", "print did the work"))
	worked := idOf(run(worker, "create", "Worked task", "-m", "Do the work.\nIn two lines."))
	run(r, "comment", worked, "-m", "a comment")
	run(r, "allow", worked, "*.txt")
	run(r, "edit", worked, "--title", "Worked task, renamed")
	run(worker, "start", worked, "--command", fakeAgentBin)
	run(r, "wait", worked)
	// Another, overlapping it, and a group tried two ways.
	other := r.with(script(t, "write shared.txt two", "commit agent: other", "print did other"))
	overlapping := idOf(run(other, "create", "Overlapping task"))
	run(other, "start", overlapping, "--command", fakeAgentBin)
	r.waitStatus(overlapping, "blocked")
	group := idOf(run(r, "create", "Tried two ways"))
	runAs("lazy start --attempts N", r.with(script(t, "write g.txt g", "commit agent: g", "print g")), "start", group, "--attempts", "2", "--command", fakeAgentBin)
	r.waitStatus(group+"-a1", "blocked")
	r.waitStatus(group+"-a2", "blocked")
	for _, cmd := range []string{"list", "blocked", "inbox", "active", "status", "cost", "queue", "doctor", "stash"} {
		run(r, cmd)
	}
	runAs("lazy inbox --count", r, "inbox", "--count")
	for _, tk := range []string{worked, group, parent} {
		run(r, "show", tk)
	}
	run(r, "diff", worked)
	run(r, "gate", worked)
	runAs("lazy accept --dry-run", r, "accept", worked, "--dry-run")
	runAs("lazy handoff --print", r, "handoff", worked, "--print")
	// The turns a parked task takes.
	answer := r.with(script(t, "print The answer is 42."))
	run(answer, "ask", worked, "-m", "What is the answer?")
	again := r.with(script(t, "write b.txt b", "commit agent: more", "print more"))
	run(again, "unblock", worked, "-m", "One more thing.\nTwo lines.")
	r.waitStatus(worked, "blocked")
	if err := os.WriteFile(filepath.Join(r.dir, "upstream.txt"), []byte("upstream\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "upstream.txt")
	r.git("commit", "-q", "-m", "upstream")
	run(r, "sync", worked)
	run(r.with(script(t, "print handed over")), "handoff", worked, "--to", "exec", "--command", fakeAgentBin, "-m", "Carry on.")
	r.waitStatus(worked, "blocked")
	// Stop, resume, close, reopen, reject.
	hanging := r.with(script(t, "print working", "hang"))
	running := idOf(run(hanging, "create", "Runs until stopped"))
	run(hanging, "start", running, "--command", fakeAgentBin)
	run(r, "active")
	run(r, "stop", running)
	broken := r.with(script(t, "print something broke", "exit 3"))
	crashing := idOf(run(broken, "create", "Crashes"))
	run(broken, "start", crashing, "--command", fakeAgentBin)
	r.waitStatus(crashing, "interrupted")
	run(r.with(script(t, "print recovered")), "resume", crashing)
	r.waitStatus(crashing, "blocked")
	closing := idOf(run(r, "create", "To close"))
	run(r, "reparent", closing, "--parent", parent)
	run(r, "close", closing, "-m", "not needed")
	run(r, "reopen", closing, "--reason", "needed after all")
	run(r, "reject", running, "-m", "not this way")
	// What lands, through the gate and the forge; what travels.
	run(r, "accept", overlapping)
	// One lands, one cannot (it was rejected): the exit says so, the
	// JSON says which.
	several := r.run(nil, "accept", group+"-a1", running, "--json")
	if several.Code != 1 {
		t.Fatalf("accept of a landing and a rejected task: %s", several)
	}
	out["lazy accept TASK TASK..."] = append(out["lazy accept TASK TASK..."], []byte(several.Stdout))
	run(r, "queue")
	submitted := r.with(script(t, "write s.txt s", "commit agent: s", "print s"))
	forPR := idOf(run(submitted, "create", "Goes through a pull request"))
	run(submitted, "start", forPR, "--command", fakeAgentBin)
	r.waitStatus(forPR, "blocked")
	run(r, "submit", forPR)
	run(r, "push")
	run(r, "pull")
	run(r, "pool")
	d := withDaemon(t, r)
	run(d, "web")

	f2, err := os.Open(filepath.Join("..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f2.Close() }()
	docs, err := jsondoc.Parse(f2)
	if err != nil {
		t.Fatal(err)
	}
	if file := os.Getenv("LAZY_JSONDOC_DUMP"); file != "" {
		dumpJSONPaths(t, docs, out, file)
	}
	var keys []string
	for key := range out {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		spec, ok := docs[key]
		if !ok {
			t.Errorf("docs/json.md has no section for %s --json", key)
			continue
		}
		for _, p := range jsondoc.Check(key, spec, out[key]) {
			t.Error(p)
		}
	}
	for key := range docs {
		if _, ran := out[key]; !ran && notRunHere[key] == "" {
			t.Errorf("docs/json.md documents %s --json, which this test does not run", key)
		}
	}
}

// dumpJSONPaths writes, for editing docs/json.md, the paths each
// command's runs printed and their kinds.
func dumpJSONPaths(t *testing.T, docs map[string]jsondoc.Spec, out map[string][][]byte, file string) {
	t.Helper()
	var b strings.Builder
	var keys []string
	for key := range out {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		kinds := map[string]map[string]bool{}
		for _, raw := range out[key] {
			var v any
			if json.Unmarshal(raw, &v) != nil {
				continue
			}
			jsondoc.Walk(docs[key], "", v, func(path, kind string) {
				if kinds[path] == nil {
					kinds[path] = map[string]bool{}
				}
				kinds[path][kind] = true
			})
		}
		var paths []string
		for p := range kinds {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		fmt.Fprintf(&b, "## %s --json\n", key)
		for _, p := range paths {
			var ks []string
			for k := range kinds[p] {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			fmt.Fprintf(&b, "| `%s` | %s |\n", p, strings.Join(ks, " or "))
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
