// Command fakeagent is the agent binary lazy's tests run in place of a
// real agent CLI. Its behaviour is scripted per test by the file named in
// FAKE_AGENT_SCRIPT, one action per line:
//
//	argv FILE          write argv (JSON) and LAZY_PROMPT to FILE
//	print TEXT         print TEXT on stdout
//	write PATH TEXT    write TEXT to PATH in the worktree
//	append PATH TEXT   append a line of TEXT to PATH
//	commit MSG         git add -A and commit with MSG
//	sleep DURATION     sleep (for example 50ms)
//	hang               block until killed
//	exit N             exit with status N
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func main() {
	script := os.Getenv("FAKE_AGENT_SCRIPT")
	if script == "" {
		fmt.Println("fakeagent: no FAKE_AGENT_SCRIPT; nothing to do")
		return
	}
	f, err := os.Open(script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(70)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		verb, rest, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch verb {
		case "", "#":
		case "argv":
			b, _ := json.Marshal(map[string]any{"argv": os.Args, "prompt_env": os.Getenv("LAZY_PROMPT"), "cwd": cwd()})
			must(os.WriteFile(rest, b, 0o644))
		case "print":
			fmt.Println(rest)
		case "write":
			path, text, _ := strings.Cut(rest, " ")
			must(os.WriteFile(path, []byte(text+"\n"), 0o644))
		case "append":
			path, text, _ := strings.Cut(rest, " ")
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			must(err)
			_, err = f.WriteString(text + "\n")
			must(err)
			must(f.Close())
		case "commit":
			run("git", "add", "-A")
			run("git", "-c", "user.name=fake agent", "-c", "user.email=agent@fake.invalid", "commit", "-q", "-m", rest)
		case "sleep":
			d, err := time.ParseDuration(rest)
			must(err)
			time.Sleep(d)
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

func cwd() string {
	d, _ := os.Getwd()
	return d
}

func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	must(cmd.Run())
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(72)
	}
}
