// Command fakeagent is the agent binary lazy's tests run in place of a
// real agent CLI. Its behaviour is scripted per test by the file named in
// FAKE_AGENT_SCRIPT, one action per line:
//
//	argv FILE          write argv (JSON) and LAZY_PROMPT to FILE
//	print TEXT         print TEXT on stdout
//	write PATH TEXT    write TEXT to PATH in the worktree
//	append PATH TEXT   append a line of TEXT to PATH
//	taskfile TEXT      append a line of TEXT to task-$LAZY_TASK_ID.txt
//	commit MSG         git add -A and commit with MSG
//	sleep DURATION     sleep (for example 50ms)
//	hang               block until killed
//	ignore-hup         ignore SIGHUP (outlive the supervisor's pty)
//	wait-file PATH     block until PATH exists (a test's go-ahead)
//	wait-run PATH      block until PATH ({pid} is this process's pid) holds lines (ending in a newline),
//	                   then run them as the next actions
//	log-prompt FILE    append {"kind", "prompt", "read_only", "pid"} as a JSON line to FILE
//	exit N             exit with status N
//	attempt FILE       count this run in FILE (1 on the first run)
//	when N ACTION...   run ACTION only on run N (after attempt)
//	ignore-term        ignore SIGTERM from now on
//	getenv VAR FILE    write the value of environment variable VAR to FILE
//	readline FILE      read one line from stdin into FILE
//	winsize FILE       write the terminal size (ROWSxCOLS) to FILE
//	wait-winsize R C   wait until the terminal is R rows by C columns
//	try-write PATH     try to create PATH; print "try-write PATH: ok" or ": refused (why)"
//	try-read PATH      try to read PATH; print the same
//	try-connect ADDR   try a TCP connection to ADDR; print the same
//	try-proxy ADDR     ask $HTTPS_PROXY to tunnel to ADDR (HTTP CONNECT); print the same
//	mcp-comment TEXT   call lazy_comment on its own task through LAZY_MCP_COMMAND
//	mcp-call TOOL JSON call TOOL with the arguments JSON through LAZY_MCP_COMMAND;
//	                   print "mcp-call TOOL: ok" or ": refused (the error)"
//	replay FILE [N]    print FILE's lines (the first N only, if given): a
//	                   transcript captured from a real CLI (agent/testdata),
//	                   so tests of hangs and crashes use the real event shapes
//
// An exec agent's command "fakeagent --script=PATH" runs the script at
// PATH instead of FAKE_AGENT_SCRIPT's.
//
// Installed as "claude" it first enforces Claude Code's argv contract
// (-p, stream-json only with --verbose, the prompt after "--") and offers
// stream-json actions:
//
//	claude-init SID              the system/init event
//	claude-say TEXT              an assistant text event
//	claude-tool NAME JSON        an assistant tool_use event with input JSON
//	claude-result TEXT           a successful result event (total_cost_usd 0.01, or claude-cost's)
//	claude-cost COST             the total_cost_usd of the next result event (a JSON number)
//	claude-api-error STATUS TEXT a result with is_error and api_error_status, then exit 1
//
// Installed as "codex" it requires `exec --json` and the prompt after
// "--", and offers:
//
//	codex-thread ID      the thread.started event
//	codex-message TEXT   an agent_message item
//	codex-fail TEXT      turn.failed with TEXT, then exit 1
//	codex-usage IN CACHED OUT  turn.completed with that usage (input_tokens counts the cached ones, as Codex's does)
package main

import (
	"bufio"
	"context"
	"net"
	"net/url"

	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"golang.org/x/term"
)

func main() {
	switch filepath.Base(os.Args[0]) {
	case "claude":
		claudeContract(os.Args[1:])
	case "codex":
		codexContract(os.Args[1:])
	}
	script := os.Getenv("FAKE_AGENT_SCRIPT")
	// As an exec agent's command, "fakeagent --script=PATH" names its
	// script itself: work an agent starts over MCP runs in the daemon's
	// environment, and under bubblewrap a wrapper such as env(1) would be
	// the only binary the sandbox exposes.
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "--script=") {
		script = strings.TrimPrefix(os.Args[1], "--script=")
	}
	if script == "" {
		fmt.Println("fakeagent: no FAKE_AGENT_SCRIPT; nothing to do")
		return
	}
	f, err := os.Open(script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(70)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	_ = f.Close()
	runNo := 0
	for i := 0; i < len(lines); i++ {
		verb, rest, _ := strings.Cut(strings.TrimSpace(lines[i]), " ")
		if verb == "when" {
			n, action, _ := strings.Cut(rest, " ")
			if strconv.Itoa(runNo) != n {
				continue
			}
			verb, rest, _ = strings.Cut(action, " ")
		}
		switch verb {
		case "attempt":
			b, _ := os.ReadFile(rest)
			runNo, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			runNo++
			must(report(rest, []byte(strconv.Itoa(runNo)), 0o644))
		case "readline":
			line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
			must(report(rest, []byte(strings.TrimRight(line, "\r\n")), 0o644))
		case "winsize":
			w, h, err := term.GetSize(0)
			must(err)
			must(report(rest, []byte(fmt.Sprintf("%dx%d", h, w)), 0o644))
		case "wait-winsize":
			want := strings.Replace(rest, " ", "x", 1)
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if w, h, err := term.GetSize(0); err == nil && fmt.Sprintf("%dx%d", h, w) == want {
					break
				}
			}
		case "log-prompt":
			// One JSON line per run: the turn kind and the prompt received.
			b, _ := json.Marshal(map[string]any{"kind": os.Getenv("LAZY_TURN_KIND"), "prompt": os.Getenv("LAZY_PROMPT"), "read_only": os.Getenv("LAZY_READ_ONLY"), "pid": os.Getpid()})
			f, err := os.OpenFile(rest, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			must(err)
			_, err = f.Write(append(b, '\n'))
			must(err)
			must(f.Close())
		case "wait-run":
			// Block until the test writes PATH, then run its actions next.
			for {
				b, err := os.ReadFile(strings.ReplaceAll(rest, "{pid}", strconv.Itoa(os.Getpid())))
				if err == nil && strings.HasSuffix(string(b), "\n") {
					more := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
					lines = append(append(append([]string(nil), lines[:i+1]...), more...), lines[i+1:]...)
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		case "getenv":
			name, file, _ := strings.Cut(rest, " ")
			must(report(file, []byte(os.Getenv(name)), 0o600))
		case "ignore-term":
			signal.Ignore(syscall.SIGTERM)
		case "ignore-hup":
			// Outlive the supervisor's pty: its end closing hangs up the
			// agent's terminal, which would otherwise end the agent.
			signal.Ignore(syscall.SIGHUP)
		case "try-write":
			try(verb, rest, func() error { return os.WriteFile(rest, []byte("fake agent\n"), 0o644) })
		case "try-read":
			try(verb, rest, func() error { _, err := os.ReadFile(rest); return err })
		case "try-connect":
			try(verb, rest, func() error {
				c, err := net.DialTimeout("tcp", rest, 3*time.Second)
				if err == nil {
					_ = c.Close()
				}
				return err
			})
		case "try-proxy":
			try(verb, rest, func() error { return proxyConnect(rest) })
		case "mcp-comment":
			try(verb, "", func() error { return mcpComment(rest) })
		case "mcp-call":
			tool, args, _ := strings.Cut(rest, " ")
			try(verb, tool, func() error { return mcpCall(tool, args) })
		case "", "#":
		case "argv":
			b, _ := json.Marshal(map[string]any{"argv": os.Args, "prompt_env": os.Getenv("LAZY_PROMPT"), "cwd": cwd()})
			must(report(rest, b, 0o644))
		case "print":
			fmt.Println(rest)
		case "replay":
			replay(rest)
		case "write":
			path, text, _ := strings.Cut(rest, " ")
			must(os.MkdirAll(filepath.Dir(path), 0o755))
			must(os.WriteFile(path, []byte(text+"\n"), 0o644))
		case "append":
			path, text, _ := strings.Cut(rest, " ")
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			must(err)
			_, err = f.WriteString(text + "\n")
			must(err)
			must(f.Close())
		case "taskfile":
			// A file only this task ever writes: task-<LAZY_TASK_ID>.txt.
			f, err := os.OpenFile("task-"+os.Getenv("LAZY_TASK_ID")+".txt", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			must(err)
			_, err = f.WriteString(rest + "\n")
			must(err)
			must(f.Close())
		case "commit":
			run("git", "add", "-A")
			run("git", "-c", "user.name=fake agent", "-c", "user.email=agent@fake.invalid", "commit", "-q", "-m", rest)
		case "sleep":
			d, err := time.ParseDuration(rest)
			must(err)
			time.Sleep(d)
		case "claude-init":
			sessionID = rest
			emit(map[string]any{"type": "system", "subtype": "init", "session_id": rest, "cwd": cwd(), "model": "fake", "mcp_servers": []any{}})
		case "claude-say":
			emit(map[string]any{"type": "assistant", "session_id": sessionID, "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": rest}}}})
		case "claude-tool":
			name, input, _ := strings.Cut(rest, " ")
			emit(map[string]any{"type": "assistant", "session_id": sessionID, "message": map[string]any{"content": []any{map[string]any{"type": "tool_use", "id": "tu1", "name": name, "input": json.RawMessage(input)}}}})
		case "wait-file":
			for {
				if _, err := os.Stat(rest); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		case "claude-cost":
			resultCost = json.RawMessage(rest)
		case "claude-result":
			emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": rest, "session_id": sessionID, "num_turns": 1, "total_cost_usd": resultCost})
		case "claude-api-error":
			status, text, _ := strings.Cut(rest, " ")
			n, err := strconv.Atoi(status)
			must(err)
			emit(map[string]any{"type": "result", "subtype": "success", "is_error": true, "result": text, "session_id": sessionID, "api_error_status": n, "terminal_reason": "api_error"})
			os.Exit(1)
		case "codex-thread":
			emit(map[string]any{"type": "thread.started", "thread_id": rest})
		case "codex-message":
			emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "i1", "type": "agent_message", "text": rest}})
		case "codex-usage":
			var in, cached, out int64
			_, err := fmt.Sscan(rest, &in, &cached, &out)
			must(err)
			emit(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": in, "cached_input_tokens": cached, "output_tokens": out}})
		case "codex-fail":
			emit(map[string]any{"type": "turn.failed", "error": map[string]any{"message": rest}})
			os.Exit(1)
		case "hang":
			// Not select{}: with no other goroutine, the runtime would
			// call that a deadlock and exit.
			for {
				time.Sleep(time.Hour)
			}
		case "exit":
			n, err := strconv.Atoi(rest)
			must(err)
			os.Exit(n)
		default:
			fmt.Fprintf(os.Stderr, "fakeagent: unknown action %q\n", verb)
			os.Exit(71)
		}
	}
}

var sessionID string

// resultCost is the total_cost_usd claude-result reports.
var resultCost = json.RawMessage("0.01")

// replay prints a captured transcript, or its first N lines.
func replay(args string) {
	file, n, _ := strings.Cut(args, " ")
	b, err := os.ReadFile(file)
	must(err)
	limit := -1
	if n != "" {
		limit, err = strconv.Atoi(n)
		must(err)
	}
	for i, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if i == limit {
			break
		}
		fmt.Println(l)
	}
}

func emit(v any) {
	b, err := json.Marshal(v)
	must(err)
	fmt.Println(string(b))
}

// claudeContract fails the way Claude Code does on argv it would reject.
func claudeContract(args []string) {
	has := func(a string) bool {
		for _, x := range args {
			if x == "--" {
				return false
			}
			if x == a {
				return true
			}
		}
		return false
	}
	if !has("-p") {
		if os.Getenv("LAZY_CHAT") != "" || os.Getenv("LAZY_PAIRING") != "" {
			return // an interactive session a human drives
		}
		fmt.Fprintln(os.Stderr, "fake claude: lazy must run claude with -p")
		os.Exit(1)
	}
	if has("stream-json") && !has("--verbose") {
		fmt.Fprintln(os.Stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
		os.Exit(1)
	}
	if len(args) < 2 || args[len(args)-2] != "--" {
		fmt.Fprintln(os.Stderr, "Error: Input must be provided either through stdin or as a prompt argument when using --print")
		os.Exit(1)
	}
}

func codexContract(args []string) {
	if len(args) < 4 || args[0] != "exec" || args[1] != "--json" || args[len(args)-2] != "--" {
		fmt.Fprintf(os.Stderr, "fake codex: expected `codex exec --json ... -- PROMPT`, got %q\n", args)
		os.Exit(2)
	}
}

func cwd() string {
	d, _ := os.Getwd()
	return d
}

// try runs one probe of what the agent may do and prints its outcome.
func try(verb, what string, probe func() error) {
	if err := probe(); err != nil {
		fmt.Printf("%s %s: refused (%v)\n", verb, what, err)
		return
	}
	fmt.Printf("%s %s: ok\n", verb, what)
}

// proxyConnect asks the proxy in $HTTPS_PROXY for a tunnel to target; an
// answer other than 200 is a refusal.
func proxyConnect(target string) error {
	u, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || u.Host == "" {
		return fmt.Errorf("no HTTPS_PROXY")
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.Contains(line, " 200 ") {
		return fmt.Errorf("proxy answered %s", strings.TrimSpace(line))
	}
	return nil
}

// mcpComment calls lazy_comment on the agent's own task through the MCP
// server lazy gave it (LAZY_MCP_COMMAND, a JSON argv).
func mcpComment(text string) error {
	b, err := json.Marshal(map[string]any{"task": os.Getenv("LAZY_TASK_ID"), "text": text})
	if err != nil {
		return err
	}
	return mcpCall("lazy_comment", string(b))
}

// mcpCall calls tool with the JSON arguments args through the MCP server
// lazy gave this turn (LAZY_MCP_COMMAND), as an agent's CLI would; a
// result marked as an error is returned as one, in its own words.
func mcpCall(tool, args string) error {
	var arguments map[string]any
	if err := json.Unmarshal([]byte(args), &arguments); err != nil {
		return fmt.Errorf("arguments %q are not a JSON object: %w", args, err)
	}
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv("LAZY_MCP_COMMAND")), &argv); err != nil {
		return fmt.Errorf("no LAZY_MCP_COMMAND: %w", err)
	}
	if len(argv) == 0 {
		return fmt.Errorf("LAZY_MCP_COMMAND is an empty argv")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "fakeagent", Version: "1"}, nil)
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		return err
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = append(text, t.Text)
			}
		}
		return fmt.Errorf("%s failed: %s", tool, strings.Join(text, " "))
	}
	return nil
}

func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	must(cmd.Run())
}

// report writes a file a test waits for, atomically: a test that sees
// the file must never read it half written.
func report(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(72)
	}
}
