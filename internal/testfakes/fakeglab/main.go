// Command fakeglab is the glab binary lazy's tests put on PATH in place
// of the GitLab CLI. It emulates the glab commands lazy runs, with the
// flags glab v1.79 declares (internal/commands/mr/*, api, auth status in
// gitlab.com/gitlab-org/cli), and prints GitLab's REST API v4 JSON
// (docs.gitlab.com/api/merge_requests, /api/jobs, /api/notes,
// /api/merge_request_approvals, /api/projects), which is also what
// `glab mr view -F json` and `glab api` print. The merge requests of one
// project live in the JSON file named by FAKEGLAB_STATE; tests read and
// edit it to play GitLab (a failing job, a note, an approval rule, a
// merge or close in the web UI). Invocations are logged and can hang as
// internal/testfakes/fakecli describes.
//
// Like glab, it refuses unknown flags ("unknown flag: --x", exit 1), and
// everything but auth status fails with HTTP 401 when logged out.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/testfakes/fakeglab/glstate"

	"github.com/lazyorch/lazy/internal/testfakes/fakecli"
)

// The state types live in glstate, shared with the e2e tests.
type State = glstate.State
type MR = glstate.MR
type Pipeline = glstate.Pipeline

func main() {
	args := os.Args[1:]
	var st State
	os.Exit(fakecli.Run("FAKEGLAB_STATE", args, &st, op(args), func() int { return dispatch(&st, args) }))
}

// op names the operation args asks for, as State.Hangs names them.
func op(args []string) string {
	if len(args) >= 2 && args[0] == "mr" {
		return "mr " + args[1]
	}
	if len(args) == 0 || args[0] != "api" {
		return ""
	}
	method, path := "GET", ""
	for i, a := range args {
		if (a == "--method" || a == "-X") && i+1 < len(args) {
			method = args[i+1]
		}
		path = a
	}
	switch {
	case method == "POST" && strings.HasSuffix(path, "/merge_requests"):
		return "mr create"
	case method == "PUT" && strings.HasSuffix(path, "/merge"):
		return "mr merge"
	case method == "PUT":
		return "mr update"
	}
	return ""
}

// commands lists the emulated commands and their flags (true: takes a
// value), as glab v1.79 declares them.
var commands = map[string]map[string]bool{
	"auth status": {"hostname": true, "show-token": false, "t": false, "all": false, "a": false},
	"mr list": {"R": true, "repo": true, "source-branch": true, "s": true, "target-branch": true, "t": true, "per-page": true, "P": true,
		"page": true, "p": true, "output": true, "F": true, "all": false, "A": false, "draft": false, "d": false},
	"mr view": {"R": true, "repo": true, "output": true, "F": true, "comments": false, "c": false, "system-logs": false, "s": false,
		"web": false, "w": false, "page": true, "p": true, "per-page": true, "P": true},
	"mr merge": {"R": true, "repo": true, "yes": false, "y": false, "squash": false, "s": false, "rebase": false, "r": false,
		"auto-merge": false, "when-pipeline-succeeds": false, "remove-source-branch": false, "d": false, "message": true, "m": true,
		"squash-message": true, "sha": true},
	"mr note":  {"R": true, "repo": true, "message": true, "m": true, "unique": false},
	"mr close": {"R": true, "repo": true},
	"api": {"hostname": true, "method": true, "X": true, "field": true, "F": true, "raw-field": true, "f": true, "header": true, "H": true,
		"include": false, "i": false, "paginate": false, "input": true, "silent": false},
}

func dispatch(st *State, args []string) int {
	if len(args) < 1 {
		return fakecli.Fail(1, "fakeglab: usage: glab <command> <subcommand>")
	}
	cmd, rest := args[0], args[1:]
	if cmd != "api" {
		if len(args) < 2 {
			return fakecli.Fail(1, "fakeglab: usage: glab <command> <subcommand>")
		}
		cmd, rest = args[0]+" "+args[1], args[2:]
	}
	spec, ok := commands[cmd]
	if !ok {
		return fakecli.Fail(1, "unknown command %q for \"glab\"", cmd)
	}
	vals, pos, err := fakecli.Flags(rest, spec)
	if err != nil {
		return fakecli.Fail(1, "%v", err)
	}
	if cmd == "auth status" {
		if st.LoggedOut || vals["hostname"] != st.Host {
			return fakecli.Fail(1, "x %s has not been authenticated with glab. Run `glab auth login --hostname %s` to authenticate.", vals["hostname"], vals["hostname"])
		}
		fmt.Fprintf(os.Stderr, "%s\n  ✓ Logged in to %s as tester\n", st.Host, st.Host)
		return 0
	}
	if st.LoggedOut {
		return fakecli.Fail(1, "glab: 401 Unauthorized (HTTP 401)")
	}
	if cmd == "api" {
		if len(pos) != 1 {
			return fakecli.Fail(1, "accepts 1 arg(s), received %d", len(pos))
		}
		return api(st, vals, pos[0])
	}
	if r := vals["R"] + vals["repo"]; r != "https://"+st.Host+"/"+st.Project {
		return fakecli.Fail(1, "GET https://%s/api/v4/projects/%s: 404 {message: 404 Project Not Found}", st.Host, url.PathEscape(r))
	}
	if cmd == "mr list" {
		if vals["F"]+vals["output"] != "json" {
			return fakecli.Fail(1, "fakeglab: only -F json output is emulated")
		}
		out := []any{}
		for _, m := range st.MRs {
			if m.State == "opened" && (vals["source-branch"] == "" || m.SourceBranch == vals["source-branch"]) {
				out = append(out, view(st, m))
			}
		}
		return fakecli.PrintJSON(out)
	}
	if len(pos) != 1 {
		return fakecli.Fail(1, "fakeglab: %s needs one merge request number", cmd)
	}
	m := find(st, pos[0])
	if m == nil {
		return fakecli.Fail(1, "GET https://%s/api/v4/projects/%s/merge_requests/%s: 404 {message: 404 Not found}", st.Host, url.PathEscape(st.Project), pos[0])
	}
	switch cmd {
	case "mr view":
		if vals["F"]+vals["output"] != "json" {
			return fakecli.Fail(1, "fakeglab: only -F json output is emulated")
		}
		return fakecli.PrintJSON(view(st, m))
	case "mr note":
		body := vals["m"] + vals["message"]
		if body == "" {
			return fakecli.Fail(1, "fakeglab: an empty note would open an editor")
		}
		addNote(m, body)
		fmt.Println(webURL(st, m) + "#note_" + strconv.Itoa(len(m.Notes)))
		return 0
	case "mr close":
		if m.State != "opened" {
			return fakecli.Fail(1, "x Merge request !%d is already %s", m.IID, m.State)
		}
		m.State = "closed"
		fmt.Printf("- Closing merge request...\n✓ Closed merge request !%d\n%s\n", m.IID, webURL(st, m))
		return 0
	case "mr merge":
		return mergeCmd(st, m, vals)
	}
	return fakecli.Fail(1, "fakeglab: %s is not emulated", cmd)
}

func find(st *State, n string) *MR {
	i, err := strconv.Atoi(n)
	if err != nil || i < 1 || i > len(st.MRs) {
		return nil
	}
	return st.MRs[i-1]
}

func webURL(st *State, m *MR) string {
	return "https://" + st.Host + "/" + st.Project + "/-/merge_requests/" + strconv.Itoa(m.IID)
}

func sha(st *State, branch string) string {
	if st.RemoteDir == "" {
		return ""
	}
	out, err := exec.Command("git", "--git-dir", st.RemoteDir, "rev-parse", "--verify", "refs/heads/"+branch).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func draft(m *MR) bool {
	t := strings.ToLower(m.Title)
	return strings.HasPrefix(t, "draft:") || strings.HasPrefix(t, "[draft]") || strings.HasPrefix(t, "wip:")
}

// detailed is GitLab's detailed_merge_status, in the order GitLab
// checks.
func detailed(m *MR) string {
	switch {
	case m.State != "opened":
		return "not_open"
	case draft(m):
		return "draft_status"
	case m.Pipeline != nil && m.Pipeline.Status == "failed":
		return "ci_must_pass"
	case m.Pipeline != nil && m.Pipeline.Status != "success" && m.Pipeline.Status != "skipped":
		return "ci_still_running"
	case m.ApprovalsLeft > 0:
		return "not_approved"
	case m.ChangesRequested:
		return "requested_changes"
	}
	return "mergeable"
}

// view is a merge request as GET /projects/:id/merge_requests/:iid
// returns it.
func view(st *State, m *MR) map[string]any {
	null := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	v := map[string]any{
		"id": 1000 + m.IID, "iid": m.IID, "project_id": 3, "title": m.Title, "description": m.Description, "state": m.State,
		"draft": draft(m), "work_in_progress": draft(m), "web_url": webURL(st, m),
		"source_branch": m.SourceBranch, "target_branch": m.TargetBranch, "sha": m.SHA,
		"merge_commit_sha": null(m.MergeCommitSHA), "squash_commit_sha": null(m.SquashCommitSHA), "squash": m.Squash,
		"detailed_merge_status": detailed(m), "has_conflicts": false, "merge_when_pipeline_succeeds": m.AutoMerge,
		"author": map[string]any{"username": "tester"}, "user": map[string]any{"can_merge": true},
		"head_pipeline": nil, "pipeline": nil,
	}
	if p := m.Pipeline; p != nil {
		pv := map[string]any{"id": p.ID, "project_id": 3, "sha": m.SHA, "ref": m.SourceBranch, "status": p.Status,
			"web_url": "https://" + st.Host + "/" + st.Project + "/-/pipelines/" + strconv.FormatInt(p.ID, 10)}
		v["head_pipeline"], v["pipeline"] = pv, pv
	}
	return v
}

func addNote(m *MR, body string) {
	m.Notes = append(m.Notes, map[string]any{"id": int64(m.IID)*1000 + int64(len(m.Notes)+1), "body": body, "type": nil, "system": false,
		"author": map[string]any{"username": "tester"}, "created_at": "2026-01-01T00:00:00Z"})
}

// mergeCmd is glab mr merge: its pre-merge checks, then the merge, or
// auto-merge when a pipeline is still running (--auto-merge is on by
// default).
func mergeCmd(st *State, m *MR, vals map[string]string) int {
	squash := vals["squash"] == "true" || vals["s"] == "true"
	switch {
	case draft(m):
		return fakecli.Fail(1, "this merge request is still a draft. Run `glab mr update %d --ready` to mark it as ready for review.", m.IID)
	case detailed(m) == "ci_must_pass":
		return fakecli.Fail(1, "this merge request requires a passing pipeline before merging.")
	case m.State == "merged":
		return fakecli.Fail(1, "this merge request has already been merged.")
	case m.State == "closed":
		return fakecli.Fail(1, "this merge request has been closed.")
	}
	auto := vals["auto-merge"] != "false" && vals["when-pipeline-succeeds"] != "false"
	if auto && m.Pipeline != nil && detailed(m) == "ci_still_running" {
		m.AutoMerge, m.Squash = true, squash
		fmt.Printf("! Pipeline status: %s\n✓ Will auto-merge\n%s\n", m.Pipeline.Status, webURL(st, m))
		return 0
	}
	if code := accept(st, m, squash, false); code != 0 {
		return code
	}
	fmt.Printf("✓ Merged!\n%s\n", webURL(st, m))
	return 0
}

// accept is PUT /projects/:id/merge_requests/:iid/merge without
// auto-merge: 405 unless mergeable, worded as glab mr merge (the API
// client's error) or glab api words it.
func accept(st *State, m *MR, squash, viaAPI bool) int {
	if squash && st.SquashOption == "never" || !squash && st.SquashOption == "always" || detailed(m) != "mergeable" {
		if viaAPI {
			fmt.Println(`{"message":"405 Method Not Allowed"}`)
			return fakecli.Fail(1, "glab: 405 Method Not Allowed (HTTP 405)")
		}
		return fakecli.Fail(1, "PUT https://%s/api/v4/projects/%s/merge_requests/%d/merge: 405 {message: 405 Method Not Allowed}", st.Host, url.PathEscape(st.Project), m.IID)
	}
	sum := sha256.Sum256([]byte(m.SourceBranch + m.SHA))
	m.State, m.MergeCommitSHA = "merged", hex.EncodeToString(sum[:20])
	if squash {
		sq := sha256.Sum256([]byte("squash" + m.SHA))
		m.SquashCommitSHA, m.Squash = hex.EncodeToString(sq[:20]), true
	}
	return 0
}

// api emulates glab api on the routes lazy uses.
func api(st *State, vals map[string]string, endpoint string) int {
	if vals["hostname"] != st.Host {
		return fakecli.Fail(1, "glab: 401 Unauthorized (HTTP 401)")
	}
	method := vals["method"] + vals["X"]
	if method == "" {
		method = "GET"
		if vals["input"] != "" {
			method = "POST"
		}
	}
	var in map[string]any
	if vals["input"] == "-" {
		b, _ := io.ReadAll(os.Stdin)
		if err := json.Unmarshal(b, &in); err != nil {
			return fakecli.Fail(1, "glab: 400 Bad Request (HTTP 400)")
		}
	}
	path, _, _ := strings.Cut(endpoint, "?")
	proj := "projects/" + url.PathEscape(st.Project)
	if path != proj && !strings.HasPrefix(path, proj+"/") {
		fmt.Println(`{"message":"404 Project Not Found"}`)
		return fakecli.Fail(1, "glab: 404 Project Not Found (HTTP 404)")
	}
	parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(path, proj), "/"), "/")
	notFound := func() int {
		fmt.Println(`{"message":"404 Not found"}`)
		return fakecli.Fail(1, "glab: 404 Not found (HTTP 404)")
	}
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch {
	case path == proj && method == "GET":
		opt := st.SquashOption
		if opt == "" {
			opt = "default_off"
		}
		return fakecli.PrintJSON(map[string]any{"id": 3, "path_with_namespace": st.Project, "squash_option": opt, "merge_method": "merge"})
	case len(parts) == 1 && parts[0] == "merge_requests" && method == "POST":
		for _, m := range st.MRs {
			if m.State == "opened" && m.SourceBranch == str("source_branch") {
				fmt.Printf(`{"message":["Another open merge request already exists for this source branch: !%d"]}`+"\n", m.IID)
				return fakecli.Fail(1, "glab: Another open merge request already exists for this source branch: !%d (HTTP 409)", m.IID)
			}
		}
		if str("title") == "" || str("source_branch") == "" || str("target_branch") == "" {
			return fakecli.Fail(1, "glab: title, source_branch, target_branch are missing (HTTP 400)")
		}
		m := &MR{IID: len(st.MRs) + 1, State: "opened", Title: str("title"), Description: str("description"),
			SourceBranch: str("source_branch"), TargetBranch: str("target_branch"), Notes: []map[string]any{}}
		m.SHA = sha(st, m.SourceBranch)
		st.MRs = append(st.MRs, m)
		return fakecli.PrintJSON(view(st, m))
	case len(parts) == 3 && parts[0] == "pipelines" && parts[2] == "jobs" && method == "GET":
		for _, m := range st.MRs {
			if m.Pipeline != nil && strconv.FormatInt(m.Pipeline.ID, 10) == parts[1] {
				jobs := m.Jobs
				if jobs == nil {
					jobs = []map[string]any{}
				}
				return fakecli.PrintJSON(jobs)
			}
		}
		return notFound()
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "trace" && method == "GET":
		t, ok := st.Traces[parts[1]]
		if !ok {
			return notFound()
		}
		fmt.Print(t)
		return 0
	case len(parts) >= 2 && parts[0] == "merge_requests":
		m := find(st, parts[1])
		if m == nil {
			return notFound()
		}
		return mrAPI(st, m, method, parts[2:], in, vals["paginate"] == "true")
	}
	return notFound()
}

func mrAPI(st *State, m *MR, method string, sub []string, in map[string]any, paginate bool) int {
	route := method + " " + strings.Join(sub, "/")
	switch route {
	case "PUT ":
		for k, f := range map[string]*string{"title": &m.Title, "description": &m.Description, "target_branch": &m.TargetBranch} {
			if v, ok := in[k].(string); ok {
				*f = v
			}
		}
		if in["state_event"] == "close" && m.State == "opened" {
			m.State = "closed"
		}
		m.SHA = sha(st, m.SourceBranch)
		return fakecli.PrintJSON(view(st, m))
	case "PUT merge":
		squash, _ := in["squash"].(bool)
		auto := in["auto_merge"] == true || in["merge_when_pipeline_succeeds"] == true
		if m.State != "opened" {
			return fakecli.Fail(1, "glab: 405 Method Not Allowed (HTTP 405)")
		}
		if auto && detailed(m) != "mergeable" && detailed(m) != "ci_must_pass" {
			// GitLab 17 auto-merge waits for every merge check.
			m.AutoMerge, m.Squash = true, squash
			return fakecli.PrintJSON(view(st, m))
		}
		if code := accept(st, m, squash, true); code != 0 {
			return code
		}
		return fakecli.PrintJSON(view(st, m))
	case "GET approvals":
		by := []any{}
		for _, u := range m.ApprovedBy {
			by = append(by, map[string]any{"user": map[string]any{"username": u}})
		}
		return fakecli.PrintJSON(map[string]any{"approvals_required": m.ApprovalsLeft + len(m.ApprovedBy), "approvals_left": m.ApprovalsLeft, "approved": m.ApprovalsLeft == 0, "approved_by": by})
	case "GET reviewers":
		rs := []any{}
		if m.ChangesRequested {
			rs = append(rs, map[string]any{"user": map[string]any{"username": "carol"}, "state": "requested_changes", "created_at": "2026-01-01T00:00:00Z"})
		}
		for _, u := range m.ApprovedBy {
			rs = append(rs, map[string]any{"user": map[string]any{"username": u}, "state": "approved", "created_at": "2026-01-01T00:00:00Z"})
		}
		return fakecli.PrintJSON(rs)
	case "GET notes":
		// --paginate prints every page's array, back to back.
		notes := m.Notes
		if notes == nil {
			notes = []map[string]any{}
		}
		const per = 2
		if !paginate || len(notes) <= per {
			return fakecli.PrintJSON(notes)
		}
		for i := 0; i < len(notes); i += per {
			fakecli.PrintJSON(notes[i:min(i+per, len(notes))])
		}
		return 0
	}
	fmt.Println(`{"message":"404 Not found"}`)
	return fakecli.Fail(1, "glab: 404 Not found (HTTP 404)")
}
