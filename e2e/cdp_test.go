package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// browser is headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: fd 3 in, fd 4 out, NUL-separated JSON),
// so a test can watch one page change without reloading it. No port is
// opened and no library is needed.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	next    int
	session string
}

type cdpReply struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// openBrowser starts Chromium with one page of 1280x900 at url.
func openBrowser(t *testing.T, url string) *browser {
	t.Helper()
	bin := chromium(t)
	toChrome, ours, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	theirs, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "--window-size=1280,900", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = toChrome.Close()
	_ = fromChrome.Close()
	b := &browser{t: t, cmd: cmd, in: ours, out: bufio.NewReader(theirs)}
	t.Cleanup(func() {
		_ = ours.Close()
		cancel()
		_ = cmd.Wait()
		_ = theirs.Close()
	})
	var target struct{ TargetID string }
	b.call("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct{ SessionID string }
	b.call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
	b.call("Page.navigate", map[string]any{"url": url}, nil)
	return b
}

// call sends one command and waits for its answer, skipping events.
func (b *browser) call(method string, params any, result any) {
	b.t.Helper()
	b.next++
	msg := map[string]any{"id": b.next, "method": method, "params": params}
	if b.session != "" {
		msg["sessionId"] = b.session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		b.t.Fatalf("chromium %s: %v", method, err)
	}
	done := make(chan error, 1)
	var reply cdpReply
	go func() {
		for {
			line, err := b.out.ReadBytes(0)
			if err != nil {
				done <- err
				return
			}
			var r cdpReply
			if json.Unmarshal(bytes.TrimSuffix(line, []byte{0}), &r) == nil && r.ID == b.next {
				reply = r
				done <- nil
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			b.t.Fatalf("chromium %s: %v", method, err)
		}
	case <-time.After(60 * time.Second):
		b.t.Fatalf("chromium did not answer %s", method)
	}
	if reply.Error != nil {
		b.t.Fatalf("chromium %s: %s", method, reply.Error.Message)
	}
	if result != nil {
		if err := json.Unmarshal(reply.Result, result); err != nil {
			b.t.Fatalf("chromium %s: %v", method, err)
		}
	}
}

// eval runs JavaScript in the page and returns its value as a string.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	var res struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	if s, ok := res.Result.Value.(string); ok {
		return s
	}
	return fmt.Sprint(res.Result.Value)
}

// waitFor polls a JavaScript condition until it is true.
func (b *browser) waitFor(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for b.eval("!!("+cond+")") != "true" {
		if time.Now().After(deadline) {
			b.t.Fatalf("the page never showed %s; it shows:\n%s", what, b.eval("document.body ? document.body.innerText : ''"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// artifactsDir is where screenshots go for review: $LAZY_ARTIFACTS, or
// e2e/artifacts (ignored by git).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LAZY_ARTIFACTS")
	if dir == "" {
		dir = "artifacts"
	}
	dir = filepath.Join(dir, "web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves the page as a 1280x900 PNG named after the test.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	var shot struct{ Data string }
	b.call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(artifactsDir(b.t), strings.ReplaceAll(b.t.Name(), "/", "_")+"-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}
