package e2e

import (
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// webURL is the URL lazy web prints (with --actions when asked).
func webURL(t *testing.T, r *runner, args ...string) (full, base string) {
	t.Helper()
	var w struct {
		URL     string
		Actions bool
	}
	if err := json.Unmarshal([]byte(r.ok(append([]string{"web", "--json"}, args...)...)), &w); err != nil {
		t.Fatal(err)
	}
	base, _, _ = strings.Cut(w.URL, "/?token=")
	return w.URL, base
}

func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 900 {
		t.Fatalf("screenshot %s is %v, want 1280x900", path, b)
	}
}

func TestWebStreamsAgentOutputWithoutReload(t *testing.T) {
	r := withFakeClaude(t, withDaemon(t, newRepo(t)))
	dir := t.TempDir()
	goOn, finish := filepath.Join(dir, "go-on"), filepath.Join(dir, "finish")
	rr := r.with(script(t, "claude-init web-session", "claude-say first words of the agent", "wait-file "+goOn,
		"claude-say <b>second</b> words, streamed", "wait-file "+finish, "claude-result all done"))
	tk := rr.create("Streams its output", "-m", "Say **two** things.")
	rr.ok("start", tk.Slug, "--agent", "claude")
	full, base := webURL(t, r)
	_, token, _ := strings.Cut(full, "?token=")

	b := openBrowser(t, base+"/task/"+tk.ID+"?token="+token)
	b.waitFor("the first output line", `document.getElementById("log") && document.getElementById("log").textContent.includes("first words of the agent")`)
	b.waitFor("the live stream connected", `document.getElementById("livestate").textContent.includes("Live")`)
	// A mark only this page load carries: a reload would drop it.
	b.eval(`window.lazyMark = "same page"; "ok"`)
	if err := os.WriteFile(goOn, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the second output line, streamed", `document.getElementById("log").textContent.includes("<b>second</b> words, streamed")`)
	if got := b.eval(`window.lazyMark`); got != "same page" {
		t.Fatalf("the page reloaded (mark %q) instead of patching the log", got)
	}
	if got := b.eval(`Array.prototype.map.call(document.querySelectorAll("#log li.k-text"), function(li){return li.textContent}).join("|")`); got != "first words of the agent|<b>second</b> words, streamed" {
		t.Fatalf("the assistant's text entries: %q", got)
	}
	// The progress line follows as well.
	b.waitFor("the latest progress line", `document.getElementById("progress").textContent.includes("second")`)
	if got := b.eval(`document.querySelectorAll("#log b").length`); got != "0" {
		t.Fatalf("agent output became markup: %s <b> elements", got)
	}
	if got := b.eval(`document.getElementById("goal").innerHTML`); !strings.Contains(got, "<strong>two</strong>") {
		t.Fatalf("the goal is not rendered as Markdown: %s", got)
	}
	checkScreenshot(t, b.screenshot("working"))

	if err := os.WriteFile(finish, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitStatus(tk.Slug, "blocked")
	b.waitFor("the task parked, with the agent's turn", `document.getElementById("status").textContent === "blocked" && document.getElementById("turns").textContent.includes("all done")`)
	b.waitFor("the result with its cost", `document.getElementById("log").textContent.includes("cost $0.0100")`)
	if got := b.eval(`window.lazyMark`); got != "same page" {
		t.Fatalf("the page reloaded (mark %q) to show the new turn", got)
	}
	checkScreenshot(t, b.screenshot("blocked"))

	// The list follows too, and reads without JavaScript.
	b.call("Page.navigate", map[string]any{"url": base + "/?token=" + token}, nil)
	b.waitFor("the task in the list", `document.querySelector('.task[data-id="`+tk.ID+`"] .st') && document.querySelector('.task[data-id="`+tk.ID+`"] .st').textContent === "blocked"`)
	checkScreenshot(t, b.screenshot("list"))
	b.call("Page.navigate", map[string]any{"url": base + "/?view=board"}, nil)
	b.waitFor("the task on the board, in the blocked column", `document.querySelector('.col[data-col="blocked"] .task[data-id="`+tk.ID+`"]')`)
	checkScreenshot(t, b.screenshot("board"))
	// What it cost, linked from the list: the turn's $0.0100 as a bar.
	b.call("Page.navigate", map[string]any{"url": base + "/cost?by=day"}, nil)
	b.waitFor("the cost page with a bar for today", `document.querySelector('#chart rect.bar') && document.querySelector('#chart rect.bar title').textContent.includes("$0.0100") && document.getElementById("cost").textContent.includes("TOTAL")`)
	checkScreenshot(t, b.screenshot("cost"))
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func TestWebActionFormUnblocksAndPageShowsTheTurn(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	r = r.with(script(t, "print turn output of the agent"))
	tk := r.create("needs a second turn", "-m", "Goal of it.")
	r.ok("start", tk.Slug, "--command", fakeAgentBin)
	r.waitStatus(tk.Slug, "blocked")
	ro, _ := webURL(t, r)
	full, base := webURL(t, r, "--actions")
	if full == ro {
		t.Fatal("lazy web --actions printed the read-only URL")
	}
	_, token, _ := strings.Cut(full, "?token=")
	_, roToken, _ := strings.Cut(ro, "?token=")

	// Read-only sessions get no forms.
	page := get(t, base+"/task/"+tk.ID+"?token="+roToken, "")
	if strings.Contains(page, `name="csrf"`) {
		t.Fatal("the read-only page offers action forms")
	}

	b := openBrowser(t, base+"/task/"+tk.ID+"?token="+token)
	b.waitFor("the unblock form", `document.querySelector('form[action$="/unblock"] textarea')`)
	b.eval(`window.lazyMark = "before"; "ok"`)
	checkScreenshot(t, b.screenshot("actions"))
	b.eval(`(function(){var f=document.querySelector('form[action$="/unblock"]'); f.querySelector("textarea").value="please also **cover** logout"; f.querySelector("button").click(); return "sent"})()`)
	b.waitFor("the feedback turn", `document.getElementById("turns") && document.getElementById("turns").textContent.includes("please also cover logout") && document.getElementById("flash")`)
	if got := b.eval(`document.querySelector("#turns strong") ? document.querySelector("#turns strong").textContent : ""`); got != "cover" {
		t.Fatalf("the feedback turn is not rendered as Markdown: %q", got)
	}
	r.waitStatus(tk.Slug, "blocked")
	b.waitFor("the agent's second turn", `document.getElementById("turns").textContent.includes("Turns (4)")`)
	checkScreenshot(t, b.screenshot("unblocked"))
	var turn struct{ Actor, Kind, Content string }
	for _, name := range strings.Fields(r.git("ls-tree", "--name-only", "refs/lazy/tasks/"+tk.ID+":turns")) {
		var tr struct{ Actor, Kind, Content string }
		if json.Unmarshal([]byte(r.git("show", "refs/lazy/tasks/"+tk.ID+":turns/"+name)), &tr) == nil && tr.Kind == "unblock" {
			turn = tr
		}
	}
	if turn.Actor != "human" || turn.Kind != "unblock" || !strings.Contains(turn.Content, "please also **cover** logout") {
		t.Fatalf("turn 3 after the web unblock: %+v", turn)
	}
}

// get fetches a page with a cookie-less client, returning its body.
func get(t *testing.T, u, host string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestWebActionPostsNeedTokenOriginAndHost(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	tk := r.create("commented on from the web")
	ro, _ := webURL(t, r)
	full, base := webURL(t, r, "--actions")
	_, token, _ := strings.Cut(full, "?token=")
	_, roToken, _ := strings.Cut(ro, "?token=")
	m := csrfField.FindStringSubmatch(get(t, base+"/task/"+tk.ID+"?token="+token, ""))
	if m == nil {
		t.Fatal("the actions page has no CSRF token")
	}
	good := m[1]
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(session, csrf, origin, host string) int {
		code, _ := postForm(t, noRedirect, base+"/task/"+tk.ID+"/comment", session, csrf, origin, host)
		return code
	}
	for _, c := range []struct {
		name                        string
		session, csrf, origin, host string
		want                        int
	}{
		{"no CSRF token", token, "", base, "", http.StatusForbidden},
		{"a wrong CSRF token", token, strings.Repeat("0", 64), base, "", http.StatusForbidden},
		{"a foreign Origin", token, good, "http://evil.example", "", http.StatusForbidden},
		{"no Origin or Referer", token, good, "", "", http.StatusForbidden},
		{"a wrong Host", token, good, base, "evil.example:80", http.StatusForbidden},
		{"the read-only session", roToken, csrfOf(t, base, tk.ID, roToken), base, "", http.StatusForbidden},
		{"everything right", token, good, base, "", http.StatusSeeOther},
	} {
		if got := post(c.session, c.csrf, c.origin, c.host); got != c.want {
			t.Errorf("POST with %s: %d, want %d", c.name, got, c.want)
		}
	}
	// An action the state machine refuses shows the page again with the
	// operation's own sentence, and keeps what was typed.
	code, body := postForm(t, noRedirect, base+"/task/"+tk.ID+"/unblock", token, good, base, "")
	if code != http.StatusConflict || !strings.Contains(body, `class="error"`) || !strings.Contains(body, ">from the web</textarea>") {
		t.Fatalf("unblocking a backlog task: %d\n%s", code, body)
	}
	var tree []string
	for _, l := range strings.Split(strings.TrimSpace(r.git("ls-tree", "--name-only", "refs/lazy/tasks/"+tk.ID, "comments/")), "\n") {
		if l != "" {
			tree = append(tree, l)
		}
	}
	if len(tree) != 1 {
		t.Fatalf("comments after the POSTs: %v (only the right one may land)", tree)
	}
	var cm struct{ Actor, Text string }
	if err := json.Unmarshal([]byte(r.git("show", "refs/lazy/tasks/"+tk.ID+":"+tree[0])), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Actor != "human" || cm.Text != "from the web" {
		t.Fatalf("the comment landed as %+v", cm)
	}
}

// csrfOf is what a read-only session's page would carry: none, so the
// test forges the best it can, the actions session's value.
func csrfOf(t *testing.T, base, id, token string) string {
	t.Helper()
	if m := csrfField.FindStringSubmatch(get(t, base+"/task/"+id+"?token="+token, "")); m != nil {
		t.Fatal("a read-only page carries a CSRF token")
	}
	return "forged"
}

// postForm posts an action form with the given session cookie, CSRF
// token, Origin and Host, and returns the status and body.
func postForm(t *testing.T, c *http.Client, u, session, csrf, origin, host string) (int, string) {
	t.Helper()
	form := url.Values{"text": {"from the web"}}
	if csrf != "" {
		form.Set("csrf", csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "lazy_token", Value: session})
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestWebAcceptShowsTheDryRunDiffFirst(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	tk := workedTask(t, r, "accepted from the web", "merged.txt landed-line")
	full, base := webURL(t, r, "--actions")
	_, token, _ := strings.Cut(full, "?token=")
	ro, _ := webURL(t, r)
	_, roToken, _ := strings.Cut(ro, "?token=")
	if body := get(t, base+"/task/"+tk.ID+"/accept?token="+roToken, ""); !strings.Contains(body, "actions are off") {
		t.Fatalf("a read-only session reached the accept page:\n%s", body)
	}
	dry := get(t, base+"/task/"+tk.ID+"/accept?token="+token, "")
	for _, want := range []string{"dry run", "merged.txt", `<span class="ln add">&#43;landed-line`, "Accept and merge into main"} {
		if !strings.Contains(dry, want) {
			t.Fatalf("the accept page lacks %q:\n%s", want, dry)
		}
	}
	if got := r.refStatus(tk.ID); got != "blocked" {
		t.Fatalf("showing the dry run changed the task to %s", got)
	}
	m := csrfField.FindStringSubmatch(dry)
	if m == nil {
		t.Fatal("the accept page has no CSRF token")
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if code, body := postForm(t, noRedirect, base+"/task/"+tk.ID+"/accept", token, m[1], base, ""); code != http.StatusSeeOther {
		t.Fatalf("accept: %d\n%s", code, body)
	}
	if got := r.refStatus(tk.ID); got != "complete" {
		t.Fatalf("after the web accept the task is %s", got)
	}
	if got := strings.TrimSpace(r.git("show", "main:merged.txt")); got != "landed-line" {
		t.Fatalf("main has merged.txt %q", got)
	}
}

// TestWebDiffAndTurnTextKeepTheirLines: in Chromium, the task page's diff
// draws one line per diff line (no empty line after a hunk header or
// after an added line that context follows), and a turn's text of
// several lines keeps them.
func TestWebDiffAndTurnTextKeepTheirLines(t *testing.T) {
	r := withDaemon(t, newRepo(t))
	if err := os.WriteFile(filepath.Join(r.dir, "notes.txt"), []byte("alpha\nbeta\ngamma\ndelta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "notes.txt")
	r.git("commit", "-q", "-m", "notes")
	rr := r.with(script(t, "append notes.txt epsilon", "commit agent: one more note", "print done"))
	tk := rr.create("Add a note", "-m", "First line of the goal.\nSecond line of the goal.\nThird line.")
	rr.ok("start", tk.Slug, "--command", fakeAgentBin)
	rr.waitStatus(tk.Slug, "blocked")
	full, base := webURL(t, r)
	_, token, _ := strings.Cut(full, "?token=")

	b := openBrowser(t, base+"/task/"+tk.ID+"?token="+token)
	b.waitFor("the diff", `document.querySelector("#diff details pre")`)
	// Each line of the diff is one line on the page: the pre is as tall
	// as its lines, and the line after the hunk header starts where the
	// header ends.
	got := b.eval(`(function(){ try {
		var pre = document.querySelector("#diff details pre");
		var lh = parseFloat(getComputedStyle(pre).lineHeight);
		var lines = pre.textContent.replace(/\n$/, "").split("\n");
		var hunk = pre.querySelector(".hunk"), next = hunk.nextElementSibling;
		var gap = next.getBoundingClientRect().top - hunk.getBoundingClientRect().bottom;
		return lines.length + " lines, " + Math.round(pre.getBoundingClientRect().height / lh) + " drawn, gap " + Math.round(gap) + ", first " + JSON.stringify(lines[0]) + ", after " + JSON.stringify(next.textContent.replace(/\n$/, ""));
	} catch (e) { return "error: " + e + " in " + document.querySelector("#diff").innerHTML; } })()`)
	if got != `5 lines, 5 drawn, gap 0, first "@@ -2,3 +2,4 @@ alpha", after " beta"` {
		t.Fatalf("the diff as drawn: %s", got)
	}
	if got := b.eval(`document.querySelector("#turns .turn .md").innerText`); !strings.HasSuffix(got, "\nFirst line of the goal.\nSecond line of the goal.\nThird line.") {
		t.Fatalf("the turn's text as drawn: %q", got)
	}
	checkScreenshot(t, b.screenshot("diff-lines"))
}
