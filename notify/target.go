package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Target kinds.
const (
	TargetCommand = "cmd"     // cmd:SHELL COMMAND, the event as JSON on stdin
	TargetNtfy    = "ntfy"    // https://..., plain text with a Title header
	TargetJSON    = "json"    // json:https://..., the event as JSON
	TargetDesktop = "desktop" // notify-send (or osascript on macOS)
)

// SendTimeout bounds one delivery to one target.
const SendTimeout = 10 * time.Second

// ErrUnavailable means a target cannot work on this machine (no
// notify-send for desktop); it is skipped, not retried.
var ErrUnavailable = errors.New("not available on this machine")

// Target is one value of git config lazy.notify.
type Target struct {
	Kind    string
	URL     *url.URL // ntfy, json
	Command string   // cmd
	// Dir is where a command runs (the repository's root).
	Dir string
}

// ParseTarget reads one lazy.notify value:
//
//	cmd:notify-me --stdin          a shell command; the event as JSON on its stdin
//	https://ntfy.sh/my-topic       a plain-text POST with a Title header (ntfy and alike)
//	ntfy:https://ntfy.example/t    the same, spelled out
//	json:https://hooks.example/x   a POST of the event as JSON
//	desktop                        a desktop notification (notify-send), where there is one
func ParseTarget(v string) (Target, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == TargetDesktop:
		return Target{Kind: TargetDesktop}, nil
	case strings.HasPrefix(v, "cmd:"):
		c := strings.TrimSpace(strings.TrimPrefix(v, "cmd:"))
		if c == "" {
			return Target{}, errors.New("lazy.notify cmd: names no command; write cmd:SHELL COMMAND")
		}
		return Target{Kind: TargetCommand, Command: c}, nil
	}
	kind, raw := TargetNtfy, v
	if rest, ok := strings.CutPrefix(v, "json:"); ok {
		kind, raw = TargetJSON, rest
	} else if rest, ok := strings.CutPrefix(v, "ntfy:"); ok {
		raw = rest
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Target{}, fmt.Errorf("lazy.notify %q is not a target: write cmd:COMMAND, desktop, an http(s) URL, or json:URL", redactValue(v))
	}
	return Target{Kind: kind, URL: u}, nil
}

// String names the target without what may be secret: a URL's path,
// query and user are hidden (an ntfy topic or a webhook token is the
// credential), a command is cut short.
func (t Target) String() string {
	switch t.Kind {
	case TargetDesktop:
		return "desktop"
	case TargetCommand:
		c := Clean(t.Command, 40)
		return "cmd:" + c
	}
	s := redactURL(t.URL)
	if t.Kind == TargetJSON {
		return "json:" + s
	}
	return s
}

func redactURL(u *url.URL) string {
	if u == nil {
		return "?"
	}
	s := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		s += "/…"
	}
	return s
}

// Redact names a lazy.notify value without its possible secrets, as
// String names a target (and a value that names none, as its error
// does).
func Redact(v string) string {
	if t, err := ParseTarget(v); err == nil {
		return t.String()
	}
	return redactValue(strings.TrimSpace(v))
}

// redactValue shows a config value that did not parse without its
// possible secrets.
func redactValue(v string) string {
	if i := strings.Index(v, "://"); i >= 0 {
		rest := v[i+3:]
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			return v[:i+3] + rest[:j] + "/…"
		}
	}
	return Clean(v, 40)
}

// Send delivers ev, bounded by SendTimeout. Its error never holds the
// URL in full.
func (t Target) Send(ctx context.Context, ev Event) error {
	ctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	switch t.Kind {
	case TargetCommand:
		return t.runCommand(ctx, ev)
	case TargetDesktop:
		return desktop(ctx, ev)
	case TargetNtfy, TargetJSON:
		return t.post(ctx, ev)
	}
	return fmt.Errorf("unknown target kind %q", t.Kind)
}

// post is the webhook: plain text in the ntfy convention, or JSON.
func (t Target) post(ctx context.Context, ev Event) error {
	var body []byte
	ctype := "text/plain; charset=utf-8"
	if t.Kind == TargetJSON {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		body, ctype = b, "application/json"
	} else {
		body = []byte(ev.Text())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST to %s: %w", redactURL(t.URL), stripURL(err))
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "lazy-notify")
	req.Header.Set("X-Lazy-Kind", string(ev.Kind))
	if t.Kind == TargetNtfy {
		// ntfy reads RFC 2047 encoded words in headers for non-ASCII.
		req.Header.Set("Title", mime.QEncoding.Encode("utf-8", ev.Headline()))
		req.Header.Set("Tags", tags(ev))
		if ev.NeedsHuman() {
			req.Header.Set("Priority", "high")
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST to %s: %w", redactURL(t.URL), stripURL(err))
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST to %s: the server answered %s; check the URL and its token in lazy.notify", redactURL(t.URL), resp.Status)
	}
	return nil
}

// stripURL is err without the request URL that net/http puts in it.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// tags are ntfy's emoji tags for the event.
func tags(ev Event) string {
	switch {
	case ev.Kind == KindFinished && ev.Outcome == "accepted":
		return "white_check_mark,lazy"
	case ev.Kind == KindFinished:
		return "wastebasket,lazy"
	case ev.NeedsHuman():
		return "warning,lazy"
	}
	return "lazy"
}

// runCommand runs the command with sh -c in its own process group, the
// event as JSON on stdin; the whole group is killed when time runs out.
func (t Target) runCommand(ctx context.Context, ev Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	cmd := exec.Command("sh", "-c", t.Command)
	cmd.Dir = t.Dir
	cmd.Stdin = bytes.NewReader(append(b, '\n'))
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", t, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		werr := <-done // the kill's own error: the sentence below says it all
		return fmt.Errorf("%s did not finish in time; it was killed (%w)", t, werr)
	}
	// A child that outlived sh in the group goes too: a notifier left
	// behind by every event would pile up.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil {
		if s := strings.TrimSpace(out.String()); s != "" {
			return fmt.Errorf("%s failed: %w: %s", t, err, Clean(s, 200))
		}
		return fmt.Errorf("%s failed: %w", t, err)
	}
	return nil
}

// tail keeps the last 4 KiB written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = append(t.b[:0], t.b[len(t.b)-4096:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.b) }

// markupEscaper escapes text for a notification body's markup.
var markupEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// desktop shows ev with notify-send, or osascript on macOS; the text goes
// as arguments, never as shell or script text.
func desktop(ctx context.Context, ev Event) error {
	var cmd *exec.Cmd
	if p, err := exec.LookPath("notify-send"); err == nil {
		urgency := "normal"
		if ev.NeedsHuman() {
			urgency = "critical"
		}
		// notify-send's servers read the body as markup (<b>, <a href>):
		// a title or reason is shown as the text it is, never as a link.
		cmd = exec.CommandContext(ctx, p, "--app-name=lazy", "--urgency="+urgency, "--", ev.Headline(), markupEscaper.Replace(ev.Text()))
	} else if p, err := exec.LookPath("osascript"); err == nil && runtime.GOOS == "darwin" {
		cmd = exec.CommandContext(ctx, p, "-e", "on run argv", "-e", "display notification (item 2 of argv) with title (item 1 of argv)", "-e", "end run", ev.Headline(), ev.Text())
	} else {
		return fmt.Errorf("desktop notifications: no notify-send on PATH: %w", ErrUnavailable)
	}
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("desktop notification failed: %w: %s", err, Clean(out.String(), 200))
	}
	return nil
}
