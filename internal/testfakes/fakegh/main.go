// Command fakegh is the gh binary lazy's tests put on PATH in place of
// the GitHub CLI (the state file machinery is internal/testfakes/fakecli's). It emulates the documented behaviour and --json output
// fields of the gh commands lazy runs, keeping the pull requests of one
// repository in the JSON file named by FAKEGH_STATE (tests read and edit
// that file to play the forge: add a failing check, a review, merge or
// close a pull request). Every invocation's argv is appended to
// FAKEGH_STATE.log, one JSON array a line.
//
// Like gh, it refuses unknown flags ("unknown flag: --x", exit 1) and
// anything when not logged in (exit 4).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/lazyorch/lazy/internal/testfakes/fakegh/ghstate"

	"github.com/lazyorch/lazy/internal/testfakes/fakecli"
)

// The state types live in ghstate, shared with the e2e tests.
type State = ghstate.State
type PR = ghstate.PR

func main() {
	args := os.Args[1:]
	var st State
	op := strings.Join(args[:min(2, len(args))], " ")
	os.Exit(fakecli.Run("FAKEGH_STATE", args, &st, op, func() int { return dispatch(&st, args) }))
}

func dispatch(st *State, args []string) int {
	if len(args) < 2 {
		return fakecli.Fail(1, "fakegh: usage: gh <command> <subcommand>")
	}
	cmd := args[0] + " " + args[1]
	spec, ok := commands[cmd]
	if !ok {
		return fakecli.Fail(1, "unknown command %q for \"gh\"", cmd)
	}
	vals, pos, err := fakecli.Flags(args[2:], spec)
	if err != nil {
		return fakecli.Fail(1, "%v", err)
	}
	if st.LoggedOut {
		return fakecli.Fail(4, "To get started with GitHub CLI, please run:  gh auth login")
	}
	if cmd == "auth status" {
		fmt.Fprintln(os.Stderr, "github.com\n  ✓ Logged in to github.com as tester")
		return 0
	}
	repo := vals["R"]
	if cmd == "repo view" && len(pos) == 1 {
		repo = pos[0]
	}
	if repo != st.Repo {
		return fakecli.Fail(1, "GraphQL: Could not resolve to a Repository with the name '%s'. (repository)", repo)
	}
	switch cmd {
	case "run view":
		l, ok := st.Logs[vals["job"]]
		if !ok || vals["log-failed"] != "true" {
			return fakecli.Fail(1, "failed to get run log: job %s not found", vals["job"])
		}
		fmt.Print(l)
		return 0
	case "repo view":
		allowed := func(m string) bool {
			for _, d := range st.Disallowed {
				if d == m {
					return false
				}
			}
			return true
		}
		return printFields(map[string]any{"squashMergeAllowed": allowed("squash"), "mergeCommitAllowed": allowed("merge"), "rebaseMergeAllowed": allowed("rebase")}, vals["json"])
	case "pr list":
		var out []any
		for _, p := range st.PRs {
			if (vals["head"] == "" || p.Head == vals["head"]) && (vals["state"] != "open" || p.State == "OPEN") {
				out = append(out, filter(view(st, p), vals["json"]))
			}
		}
		if out == nil {
			out = []any{}
		}
		return fakecli.PrintJSON(out)
	case "pr create":
		body, _ := io.ReadAll(os.Stdin)
		for _, p := range st.PRs {
			if p.Head == vals["head"] && p.State == "OPEN" {
				return fakecli.Fail(1, "a pull request for branch %q into branch %q already exists:\n%s", p.Head, p.Base, prURL(st, p))
			}
		}
		p := &PR{Number: len(st.PRs) + 1, State: "OPEN", Head: vals["head"], Base: vals["base"], Title: vals["title"], Body: string(body), IsDraft: vals["draft"] == "true", MergeStateStatus: "CLEAN"}
		p.HeadOid = headOid(st, p.Head)
		st.PRs = append(st.PRs, p)
		fmt.Println(prURL(st, p))
		return 0
	}
	// The rest name a pull request by number.
	if len(pos) != 1 {
		return fakecli.Fail(1, "fakegh: %s needs one pull request number", cmd)
	}
	n, err := strconv.Atoi(pos[0])
	if err != nil || n < 1 || n > len(st.PRs) {
		return fakecli.Fail(1, "GraphQL: Could not resolve to a PullRequest with the number of %s. (repository.pullRequest)", pos[0])
	}
	p := st.PRs[n-1]
	switch cmd {
	case "pr view":
		return printFields(view(st, p), vals["json"])
	case "pr edit":
		body, _ := io.ReadAll(os.Stdin)
		p.Title, p.Body = vals["title"], string(body)
		if vals["base"] != "" {
			p.Base = vals["base"]
		}
		p.HeadOid = headOid(st, p.Head)
		fmt.Println(prURL(st, p))
		return 0
	case "pr comment":
		body, _ := io.ReadAll(os.Stdin)
		addComment(st, p, string(body))
		fmt.Println(prURL(st, p) + "#issuecomment-" + strconv.Itoa(len(p.Comments)))
		return 0
	case "pr close":
		if p.State != "OPEN" {
			return fakecli.Fail(1, "X Pull request #%d is already %s", n, strings.ToLower(p.State))
		}
		if c := vals["comment"]; c != "" {
			addComment(st, p, c)
		}
		p.State = "CLOSED"
		fmt.Fprintf(os.Stderr, "✓ Closed pull request #%d (%s)\n", n, p.Title)
		return 0
	case "pr merge":
		return merge(st, p, vals)
	}
	return fakecli.Fail(1, "fakegh: %s is not emulated", cmd)
}

// commands lists the emulated commands and their flags (true: takes a
// value), as gh documents them.
var commands = map[string]map[string]bool{
	"auth status": {"hostname": true, "h": true, "show-token": false, "t": false},
	"repo view":   {"json": true, "q": true, "jq": true, "branch": true, "web": false},
	"pr list":     {"R": true, "repo": true, "head": true, "H": true, "state": true, "s": true, "limit": true, "L": true, "json": true, "base": true, "B": true, "draft": false},
	"pr create":   {"R": true, "repo": true, "head": true, "H": true, "base": true, "B": true, "title": true, "t": true, "body": true, "b": true, "body-file": true, "F": true, "draft": false, "d": false, "fill": false},
	"pr edit":     {"R": true, "repo": true, "base": true, "B": true, "title": true, "t": true, "body": true, "b": true, "body-file": true, "F": true},
	"pr view":     {"R": true, "repo": true, "json": true, "comments": false, "c": false},
	"pr comment":  {"R": true, "repo": true, "body": true, "b": true, "body-file": true, "F": true},
	"pr close":    {"R": true, "repo": true, "comment": true, "c": true, "delete-branch": false, "d": false},
	"run view":    {"R": true, "repo": true, "job": true, "j": true, "log-failed": false, "log": false},
	"pr merge":    {"R": true, "repo": true, "squash": false, "s": false, "merge": false, "m": false, "rebase": false, "r": false, "auto": false, "delete-branch": false, "d": false},
}

func prURL(st *State, p *PR) string {
	return "https://github.com/" + st.Repo + "/pull/" + strconv.Itoa(p.Number)
}

func headOid(st *State, head string) string {
	if st.RemoteDir == "" {
		return ""
	}
	out, err := exec.Command("git", "--git-dir", st.RemoteDir, "rev-parse", "--verify", "refs/heads/"+head).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func addComment(st *State, p *PR, body string) {
	id := "IC_" + strconv.Itoa(p.Number) + "_" + strconv.Itoa(len(p.Comments)+1)
	p.Comments = append(p.Comments, map[string]any{"id": id, "author": map[string]any{"login": "tester"}, "body": body, "createdAt": "2026-01-01T00:00:00Z", "url": prURL(st, p) + "#issuecomment-" + strconv.Itoa(len(p.Comments)+1)})
}

// blocked says why a pull request cannot merge now, or "".
func blocked(p *PR) string {
	if p.ReviewDecision == "REVIEW_REQUIRED" || p.ReviewDecision == "CHANGES_REQUESTED" {
		return "review"
	}
	for _, c := range p.StatusCheckRollup {
		if c["conclusion"] != "SUCCESS" && c["state"] != "SUCCESS" {
			return "checks"
		}
	}
	return ""
}

func merge(st *State, p *PR, vals map[string]string) int {
	method := ""
	for _, m := range []string{"squash", "merge", "rebase"} {
		if vals[m] == "true" {
			method = m
		}
	}
	if method == "" {
		return fakecli.Fail(1, "--merge, --rebase, or --squash required when not running interactively")
	}
	for _, d := range st.Disallowed {
		if d == method {
			return fakecli.Fail(1, "X Pull request #%d is not mergeable: %s merges are not allowed on this repository", p.Number, method)
		}
	}
	if p.State != "OPEN" {
		return fakecli.Fail(1, "X Pull request #%d was already %s", p.Number, strings.ToLower(p.State))
	}
	if why := blocked(p); why != "" {
		if vals["auto"] == "true" && st.NoAutoMerge {
			return fakecli.Fail(1, "GraphQL: Auto merge is not allowed for this repository (enablePullRequestAutoMerge)")
		}
		if vals["auto"] == "true" {
			p.AutoMerge = method
			fmt.Fprintf(os.Stderr, "✓ Pull request #%d will be automatically merged via %s when all requirements are met\n", p.Number, method)
			return 0
		}
		return fakecli.Fail(1, "X Pull request #%d is not mergeable: the base branch policy prohibits the merge (%s).\nTo have the pull request merged after all the requirements have been met, add the `--auto` flag.", p.Number, why)
	}
	sum := sha256.Sum256([]byte(p.Head + p.HeadOid + method))
	p.State, p.MergeCommit = "MERGED", hex.EncodeToString(sum[:20])
	fmt.Fprintf(os.Stderr, "✓ Merged pull request #%d (%s)\n", p.Number, p.Title)
	return 0
}

// view is a pull request in gh's --json vocabulary.
func view(st *State, p *PR) map[string]any {
	var mc any
	if p.MergeCommit != "" {
		mc = map[string]any{"oid": p.MergeCommit}
	}
	mss := p.MergeStateStatus
	if blocked(p) != "" {
		mss = "BLOCKED"
	}
	nz := func(v []map[string]any) []map[string]any {
		if v == nil {
			return []map[string]any{}
		}
		return v
	}
	return map[string]any{
		"number": p.Number, "url": prURL(st, p), "state": p.State, "isDraft": p.IsDraft, "title": p.Title, "body": p.Body,
		"headRefName": p.Head, "headRefOid": p.HeadOid, "baseRefName": p.Base, "mergeCommit": mc,
		"reviewDecision": p.ReviewDecision, "mergeStateStatus": mss,
		"statusCheckRollup": nz(p.StatusCheckRollup), "reviews": nz(p.Reviews), "comments": nz(p.Comments),
	}
}

func filter(full map[string]any, fields string) map[string]any {
	out := map[string]any{}
	for _, f := range strings.Split(fields, ",") {
		if v, ok := full[f]; ok {
			out[f] = v
		}
	}
	return out
}

func printFields(full map[string]any, fields string) int {
	if fields == "" {
		return fakecli.Fail(1, "fakegh: only --json output is emulated")
	}
	for _, f := range strings.Split(fields, ",") {
		if _, ok := full[f]; !ok {
			return fakecli.Fail(1, "Unknown JSON field: %q", f)
		}
	}
	return fakecli.PrintJSON(filter(full, fields))
}
