package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lazyorch/lazy/internal/sanitize"
)

// Gitea talks to Gitea and Forgejo through their REST API (/api/v1),
// which both serve alike. The token comes from git config
// lazy.forge.token or git's credential helper for the remote's host.
type Gitea struct {
	base   string // https://host/api/v1/repos/OWNER/NAME
	loc    *Location
	token  string
	cred   func(ctx context.Context, u *url.URL) (string, error)
	client *http.Client
}

func newGitea(cfg Config, loc *Location) (*Gitea, error) {
	if cfg.Repo != "" {
		var err error
		if loc, err = repoOverride(cfg.Repo, loc); err != nil {
			return nil, err
		}
	}
	if loc == nil || loc.Host == "" {
		return nil, errors.New("cannot tell the Gitea server of the remote; set git config lazy.forge.repo to HOST/OWNER/NAME")
	}
	g := &Gitea{loc: loc, token: cfg.Token, cred: cfg.Credential, client: &http.Client{Timeout: time.Minute}}
	g.base = loc.Scheme + "://" + loc.Host + "/api/v1/repos/" + url.PathEscape(loc.Owner) + "/" + url.PathEscape(loc.Name)
	return g, nil
}

// Kind implements Forge.
func (g *Gitea) Kind() string { return "gitea" }

// Ready implements Forge: a token must be found and accepted.
func (g *Gitea) Ready(ctx context.Context) error {
	if g.token == "" && g.cred != nil {
		u := &url.URL{Scheme: g.loc.Scheme, Host: g.loc.Host, Path: "/" + g.loc.Owner + "/" + g.loc.Name + ".git"}
		if tok, err := g.cred(ctx, u); err == nil {
			g.token = tok
		}
	}
	if g.token == "" {
		return fmt.Errorf("no token for %s: set git config lazy.forge.token (a Gitea access token) or store one in git's credential helper, then submit again", g.loc.Host)
	}
	var repo struct {
		ID int `json:"id"`
	}
	if err := g.call(ctx, http.MethodGet, "", nil, &repo); err != nil {
		return fmt.Errorf("%s did not accept lazy's token for %s/%s; check lazy.forge.token, then submit again (%w)", g.loc.Host, g.loc.Owner, g.loc.Name, err)
	}
	return nil
}

// call does one request below the repository's API path and decodes a
// JSON reply into out (when not nil).
func (g *Gitea) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if g.token != "" {
		req.Header.Set("Authorization", "token "+g.token)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, g.loc.Host, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &e)
		return &HTTPError{Status: resp.StatusCode, Message: sanitize.Field(Bound(strings.TrimSpace(e.Message), 300))}
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s replied with something lazy cannot read: %w", g.loc.Host, err)
	}
	return nil
}

// HTTPError is a non-2xx reply of a REST forge.
type HTTPError struct {
	Status  int
	Message string
}

func (e *HTTPError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the forge replied HTTP %d", e.Status)
	}
	return fmt.Sprintf("the forge replied HTTP %d: %s", e.Status, e.Message)
}

type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"`
	Merged  bool   `json:"merged"`
	Title   string `json:"title"`
	Draft   bool   `json:"draft"`
	Merge   string `json:"merge_commit_sha"`
	Head    struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
	Mergeable bool `json:"mergeable"`
}

// Open implements Forge. Gitea marks a draft by a "WIP:" title prefix.
func (g *Gitea) Open(ctx context.Context, spec Spec) (*PR, error) {
	title := spec.Title
	if spec.Draft {
		title = "WIP: " + title
	}
	var open []giteaPull
	if err := g.call(ctx, http.MethodGet, "/pulls?state=open&limit=50", nil, &open); err != nil {
		return nil, err
	}
	for _, p := range open {
		if p.Head.Ref == spec.Head && p.Number > 0 {
			if err := g.call(ctx, http.MethodPatch, "/pulls/"+strconv.Itoa(p.Number), map[string]any{"title": title, "body": spec.Body, "base": spec.Base}, nil); err != nil {
				return nil, err
			}
			return g.View(ctx, p.Number)
		}
	}
	var made giteaPull
	if err := g.call(ctx, http.MethodPost, "/pulls", map[string]any{"head": spec.Head, "base": spec.Base, "title": title, "body": spec.Body}, &made); err != nil {
		return nil, err
	}
	if made.Number <= 0 {
		return nil, errors.New("the forge created a pull request without a number")
	}
	return g.View(ctx, made.Number)
}

// View implements Forge.
func (g *Gitea) View(ctx context.Context, number int) (*PR, error) {
	n := strconv.Itoa(number)
	var p giteaPull
	if err := g.call(ctx, http.MethodGet, "/pulls/"+n, nil, &p); err != nil {
		return nil, err
	}
	if p.Number <= 0 || !ValidURL(p.HTMLURL) {
		return nil, errors.New("the forge returned a pull request without a valid number and URL")
	}
	pr := &PR{Number: p.Number, URL: p.HTMLURL, Head: p.Head.Ref, Base: p.Base.Ref, HeadSHA: p.Head.SHA, Draft: p.Draft || strings.HasPrefix(p.Title, "WIP:")}
	switch {
	case p.Merged:
		pr.State, pr.MergeCommit = StateMerged, p.Merge
	case p.State == "closed":
		pr.State = StateClosed
	default:
		pr.State = StateOpen
		if !p.Mergeable {
			pr.Blocked = "not mergeable"
		}
	}
	if p.Head.SHA != "" && validSHA(p.Head.SHA) {
		var st struct {
			Statuses []struct {
				ID          int64  `json:"id"`
				Context     string `json:"context"`
				Status      string `json:"status"`
				TargetURL   string `json:"target_url"`
				Description string `json:"description"`
			} `json:"statuses"`
		}
		if err := g.call(ctx, http.MethodGet, "/commits/"+p.Head.SHA+"/status", nil, &st); err != nil {
			return nil, err
		}
		for _, s := range st.Statuses {
			c := Check{Name: s.Context, URL: s.TargetURL, Summary: Bound(s.Description, 500)}
			switch s.Status {
			case "success":
				c.State = ChecksPassing
			case "pending", "":
				c.State = ChecksPending
			default: // error, failure, warning
				c.State = ChecksFailing
			}
			if !ValidURL(c.URL) {
				c.URL = ""
			}
			pr.Checks = append(pr.Checks, c)
		}
	}
	var reviews []struct {
		ID   int64 `json:"id"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
		Body    string    `json:"body"`
		State   string    `json:"state"`
		At      time.Time `json:"submitted_at"`
		HTMLURL string    `json:"html_url"`
	}
	if err := g.call(ctx, http.MethodGet, "/pulls/"+n+"/reviews", nil, &reviews); err != nil {
		return nil, err
	}
	approved, changes := false, false
	for _, r := range reviews {
		state := strings.ToLower(r.State)
		approved = approved || state == "approved"
		changes = changes || state == "request_changes"
		u := r.HTMLURL
		if !ValidURL(u) {
			u = pr.URL
		}
		pr.Comments = append(pr.Comments, Comment{ID: "review:" + strconv.FormatInt(r.ID, 10), Author: r.User.Login, Body: r.Body, URL: u, At: r.At, Review: state})
	}
	switch {
	case changes:
		pr.Review = ReviewChangesRequested
	case approved:
		pr.Review = ReviewApproved
	}
	var comments []struct {
		ID   int64 `json:"id"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
		Body    string    `json:"body"`
		At      time.Time `json:"created_at"`
		HTMLURL string    `json:"html_url"`
	}
	if err := g.call(ctx, http.MethodGet, "/issues/"+n+"/comments", nil, &comments); err != nil {
		return nil, err
	}
	for _, c := range comments {
		u := c.HTMLURL
		if !ValidURL(u) {
			u = pr.URL
		}
		pr.Comments = append(pr.Comments, Comment{ID: "comment:" + strconv.FormatInt(c.ID, 10), Author: c.User.Login, Body: c.Body, URL: u, At: c.At})
	}
	return pr, nil
}

func validSHA(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// Merge implements Forge. A refused merge (405: checks or approvals
// missing) is retried as merge_when_checks_succeed, Gitea's auto-merge.
func (g *Gitea) Merge(ctx context.Context, number int, method string) error {
	if _, err := PickMethod(method, nil); err != nil {
		return err
	}
	path := "/pulls/" + strconv.Itoa(number) + "/merge"
	err := g.call(ctx, http.MethodPost, path, map[string]any{"Do": method}, nil)
	var he *HTTPError
	if err == nil || !errors.As(err, &he) || he.Status != http.StatusMethodNotAllowed {
		return err
	}
	return g.call(ctx, http.MethodPost, path, map[string]any{"Do": method, "merge_when_checks_succeed": true}, nil)
}

// Methods implements Forge.
func (g *Gitea) Methods(ctx context.Context) ([]string, error) {
	var r struct {
		Squash bool `json:"allow_squash_merge"`
		Merge  bool `json:"allow_merge_commits"`
		Rebase bool `json:"allow_rebase"`
	}
	if err := g.call(ctx, http.MethodGet, "", nil, &r); err != nil {
		return nil, err
	}
	var m []string
	if r.Squash {
		m = append(m, "squash")
	}
	if r.Merge {
		m = append(m, "merge")
	}
	if r.Rebase {
		m = append(m, "rebase")
	}
	return m, nil
}

// Comment implements Forge.
func (g *Gitea) Comment(ctx context.Context, number int, body string) error {
	return g.call(ctx, http.MethodPost, "/issues/"+strconv.Itoa(number)+"/comments", map[string]string{"body": body}, nil)
}

// Close implements Forge.
func (g *Gitea) Close(ctx context.Context, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, number, comment); err != nil {
			return err
		}
	}
	return g.call(ctx, http.MethodPatch, "/pulls/"+strconv.Itoa(number), map[string]string{"state": "closed"}, nil)
}
