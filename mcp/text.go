package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lazyorch/lazy/inbox"
	"github.com/lazyorch/lazy/internal/quote"
	"github.com/lazyorch/lazy/internal/sanitize"
	"github.com/lazyorch/lazy/internal/words"
	"github.com/lazyorch/lazy/marks"
	"github.com/lazyorch/lazy/task"
)

// headline is the readable first line of a tool's text content; the
// JSON follows it, so a host that shows only text still has everything.
func headline(tool string, out any) string {
	named := func(v View) string {
		s := quote.Inline(v.Slug) + " is " + quote.Inline(string(v.Status))
		if v.Live != "" {
			s += " (" + quote.Inline(v.Live) + ")"
		}
		return s
	}
	running := func(r Running) string { return "Still running: " + r.WaitingOn + ". " + r.Next + "." }
	switch o := out.(type) {
	case TaskOut:
		return strings.TrimPrefix(tool, "lazy_") + ": " + named(o.Task) + "."
	case ListOut:
		if o.Count == 0 {
			return "No tasks."
		}
		lines := make([]string, 0, len(o.Tasks)+1)
		lines = append(lines, fmt.Sprintf("%s:", words.Count(o.Count, "task", "tasks")))
		for _, t := range o.Tasks {
			lines = append(lines, "- "+named(t)+": "+quote.Inline(t.Title))
		}
		return strings.Join(lines, "\n")
	case WaitOut:
		if o.StillRunning {
			return running(o.Running)
		}
		return "The turn ended: " + named(o.Task) + "."
	case AskOut:
		if o.StillRunning {
			return running(o.Running)
		}
		// The answer is the other agent's words: quoted, so they cannot
		// pass for lazy's text around them.
		return "Answer of its agent (the task stays " + quote.Inline(string(o.Status)) + "), quoted:\n\n" + quote.Block(o.Answer)
	case AcceptOut:
		if o.StillRunning {
			return running(o.Running)
		}
		if o.Pending != "" {
			return "Not merged yet: " + o.Pending
		}
		return "Accepted: merged into " + o.Into + " as " + o.Commit + "."
	case SubmitOut:
		if o.StillRunning {
			return running(o.Running)
		}
		return fmt.Sprintf("Submitted: pull request #%d %s", o.PRNumber, o.PRURL)
	case EndOut:
		return strings.TrimPrefix(tool, "lazy_") + ": " + named(o.Task) + "."
	case task.Detail:
		return named(View{Summary: o.Summary, Live: o.Live}) + ": " + quote.Inline(o.Title)
	case DiffOut:
		head := fmt.Sprintf("%s changed on %s since %s; %d uncommitted.", words.Count(len(o.Files), "file", "files"), o.Branch, o.Base, len(o.Uncommitted))
		if o.ProtectedChanges != nil {
			head += " It " + o.ProtectedChanges.Line() + "."
		}
		return head
	case LogsOut:
		return fmt.Sprintf("The last %s of the agent log.", words.Count(len(o.Lines), "line", "lines"))
	case JournalOut:
		return fmt.Sprintf("Journal entry #%d recorded on %s.", o.Entry.Seq, o.Task.Slug)
	case CostOut:
		head := fmt.Sprintf("Agent turns cost $%.4f (%d in, %d cached, %d out tokens) over %s", o.Total.CostUSD, o.Total.InputTokens, o.Total.CachedInputTokens, o.Total.OutputTokens, words.Count(o.Total.Tasks, "task", "tasks"))
		if o.Since != "" {
			head += " since " + o.Since
		}
		lines := []string{head + "; by " + string(o.By) + ":"}
		for _, r := range o.Rows {
			lines = append(lines, fmt.Sprintf("- %s: $%.4f", sanitize.Display(r.Key), r.CostUSD))
		}
		return strings.Join(lines, "\n")
	case InboxOut:
		if len(o.Items) == 0 {
			return "Nothing waits on a human."
		}
		lines := []string{words.Count(len(o.Items), "task waits", "tasks wait") + " on a human, oldest first:"}
		for _, it := range o.Items {
			lines = append(lines, fmt.Sprintf("- %s (%s, %s on %s): %s; answer: %s", quote.Inline(it.Slug), it.Kind, inbox.Wait(it.WaitingSeconds), quote.Inline(it.Where()), quote.Inline(it.Why), quote.Inline(it.Command)))
		}
		return strings.Join(lines, "\n")
	case marks.ProgressResult:
		return "Progress: " + o.Recorded
	}
	return ""
}

// TaskURI is the resource URI of a task.
func TaskURI(slug string) string { return "lazy://task/" + url.PathEscape(slug) }

// addTaskResource offers every task as lazy://task/{task}: a host can
// attach a task's full JSON to a conversation by URI without a tool call.
// Only a template is offered, no list: a list would be a snapshot that
// goes stale as tasks change, and lazy_list already filters by status.
func addTaskResource(s *sdk.Server, b Backend) {
	s.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "task", Title: "lazy task", URITemplate: "lazy://task/{task}", MIMEType: "application/json",
		Description: "A task as lazy_show returns it: summary, goal, session, recent turns, comments, journal, history. {task} is a slug or id.",
	}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return readTask(ctx, b, req.Params.URI)
	})
}

// readTask reads lazy://task/{task} through b. A task that does not
// exist, here or in the daemon behind a proxy, is MCP's resource-not-found.
func readTask(ctx context.Context, b Backend, uri string) (*sdk.ReadResourceResult, error) {
	name, ok := strings.CutPrefix(uri, "lazy://task/")
	if ok {
		name, _ = url.PathUnescape(name)
	}
	if !ok || name == "" || strings.Contains(name, "/") {
		return nil, resourceNotFound(uri, "")
	}
	args, err := json.Marshal(TaskIn{Task: name})
	if err != nil {
		return nil, err
	}
	raw, err := b.Call(WithReporter(ctx, func(string) {}), "lazy_show", args)
	if errors.Is(err, task.ErrNotFound) {
		return nil, resourceNotFound(uri, err.Error())
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", uri, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(raw)}}}, nil
}

// resourceNotFound is MCP's error for a uri that names nothing, with why
// when there is more to say.
func resourceNotFound(uri, why string) error {
	msg := "Resource not found"
	if why != "" {
		msg += ": " + why
	}
	data, err := json.Marshal(map[string]string{"uri": uri})
	if err != nil {
		return sdk.ResourceNotFoundError(uri)
	}
	return &jsonrpc.Error{Code: codeResourceNotFound, Message: msg, Data: data}
}
