package e2e

import (
	"context"
	"encoding/json"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium finds headless Chromium; CI installs it and sets
// LAZY_REQUIRE_CHROMIUM so that a missing browser fails instead of
// skipping.
func chromium(t *testing.T) string {
	t.Helper()
	full(t) // a real client: never in the fast lane
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LAZY_REQUIRE_CHROMIUM") != "" {
		t.Fatal("LAZY_REQUIRE_CHROMIUM is set but no chromium is installed")
	}
	t.Skip("no chromium on this machine (CI installs the Debian package)")
	return ""
}

func browse(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir()}
	out, err := exec.CommandContext(ctx, bin, append(base, args...)...).Output()
	if err != nil {
		t.Fatalf("chromium %v: %v", args, err)
	}
	return out
}

func TestWebViewRendersInChromium(t *testing.T) {
	bin := chromium(t)
	r := withDaemon(t, newRepo(t))
	tk := workedTask(t, r, "shown on the web", "web.txt rendered")
	r.ok("comment", tk.Slug, "-m", "a <b>comment</b> with markup")
	r.create("still in backlog")
	var w struct{ URL string }
	if err := json.Unmarshal([]byte(r.ok("web", "--json")), &w); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(w.URL, "http://127.0.0.1:") || !strings.Contains(w.URL, "?token=") {
		t.Fatalf("web URL %q", w.URL)
	}
	base, token, _ := strings.Cut(w.URL, "/?token=")
	for _, c := range []struct {
		url, host string
		want      int
	}{
		{w.URL, "", http.StatusOK},
		{base + "/", "", http.StatusForbidden},
		{base + "/?token=wrong", "", http.StatusForbidden},
		{w.URL, "evil.example:80", http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodGet, c.url, nil)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("GET %s (host %q): %d, want %d", c.url, c.host, resp.StatusCode, c.want)
		}
	}

	dom := string(browse(t, bin, "--dump-dom", w.URL))
	for _, want := range []string{tk.Slug, "still-in-backlog", "blocked", `href="/task/` + tk.ID + `"`} {
		if !strings.Contains(dom, want) {
			t.Fatalf("the task list lacks %q:\n%s", want, dom)
		}
	}
	page := base + "/task/" + tk.ID + "?token=" + token
	dom = string(browse(t, bin, "--dump-dom", page))
	for _, want := range []string{"shown on the web", "web.txt", "1 file changed", "did shown on the web", "backlog → working", "working → blocked", "a &lt;b&gt;comment&lt;/b&gt; with markup"} {
		if !strings.Contains(dom, want) {
			t.Fatalf("the task page lacks %q:\n%s", want, dom)
		}
	}
	shot := filepath.Join(t.TempDir(), "task.png")
	browse(t, bin, "--window-size=1000,800", "--screenshot="+shot, page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1000 || b.Dy() != 800 {
		t.Fatalf("screenshot is %v", b)
	}
	// Rendered text, not a blank or error page: many dark pixels, and the
	// light page background.
	dark, light := 0, 0
	for y := 0; y < 800; y += 2 {
		for x := 0; x < 1000; x += 2 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			lum := (cr + cg + cb) / 3 >> 8
			switch {
			case lum < 100:
				dark++
			case lum > 230:
				light++
			}
		}
	}
	if dark < 500 || light < 100000 {
		t.Fatalf("the screenshot does not look like the rendered page: %d dark, %d light samples", dark, light)
	}
}
