package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for lazy inside a sandbox: as
// "sandbox-forward" it is the forwarder, as "probe" the agent.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "sandbox-forward":
			var listen, to string
			args := os.Args[2:]
			for len(args) > 0 && args[0] != "--" {
				switch args[0] {
				case "--listen":
					listen, args = args[1], args[2:]
				case "--to":
					to, args = args[1], args[2:]
				default:
					args = args[1:]
				}
			}
			code, err := Forward(context.Background(), listen, to, args[1:])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			os.Exit(code)
		case "probe":
			for _, target := range os.Args[2:] {
				fmt.Printf("%s via proxy: %s\n", target, proxyConnect(target))
				if c, err := net.DialTimeout("tcp", target, 2*time.Second); err == nil {
					_ = c.Close()
					fmt.Printf("%s direct: ALLOWED\n", target)
				} else {
					fmt.Printf("%s direct: refused\n", target)
				}
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// proxyConnect asks $HTTPS_PROXY to tunnel to target and returns the
// status line, or the error.
func proxyConnect(target string) string {
	u, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || u.Host == "" {
		return "no HTTPS_PROXY"
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return "proxy unreachable: " + err.Error()
	}
	defer func() { _ = c.Close() }()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "no answer: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func TestAllowedMatchesNamesAndWildcards(t *testing.T) {
	allow := []string{"api.anthropic.com", "*.github.com", "127.0.0.1:443"}
	for host, want := range map[string]bool{
		"api.anthropic.com": true, "API.Anthropic.com.": true, "evil-api.anthropic.com": false,
		"codeload.github.com": true, "github.com": false, "github.com.evil.io": false,
		"127.0.0.1": true, "localhost": false, "": false,
	} {
		if got := Allowed(allow, host); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", host, got, want)
		}
	}
}

// echo serves one line back per connection on loopback.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer func() { _ = c.Close() }(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func TestEgressTunnelsOnlyTheAllowlist(t *testing.T) {
	target := echo(t)
	sock := filepath.Join(t.TempDir(), "s")
	eg, err := StartEgress(sock, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer eg.Close()
	ask := func(host string) (string, net.Conn) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		for l := line; strings.TrimSpace(l) != ""; l, _ = br.ReadString('\n') {
		}
		return strings.TrimSpace(line), c
	}
	status, c := ask(target)
	if !strings.Contains(status, "200") {
		t.Fatalf("allowed host: %q", status)
	}
	fmt.Fprintln(c, "ping")
	if got, _ := bufio.NewReader(c).ReadString('\n'); got != "ping\n" {
		t.Fatalf("tunnel echoed %q", got)
	}
	_ = c.Close()
	_, port, _ := net.SplitHostPort(target)
	status, c = ask("localhost:" + port)
	_ = c.Close()
	if !strings.Contains(status, "403") {
		t.Fatalf("a host outside the allowlist: %q", status)
	}
	if r := eg.Refused(); len(r) != 1 || r[0] != "localhost:"+port {
		t.Fatalf("refused %v", r)
	}
}

func TestAllowlistIsTheSandboxsOnlyWayOut(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	target := echo(t)
	_, port, _ := net.SplitHostPort(target)
	sockDir, err := os.MkdirTemp("", "egress-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(sockDir) }()
	eg, err := StartEgress(filepath.Join(sockDir, "s"), []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer eg.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := f.policy(false)
	p.Network, p.Egress, p.Forwarder, p.Expose = NetworkAllow, filepath.Join(sockDir, "s"), self, []string{self}
	argv, err := Wrap([]string{self, "probe", target, "localhost:" + port}, p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("sandboxed probe: %v\n%s", err, out)
	}
	for _, want := range []string{
		target + " via proxy: HTTP/1.1 200",
		target + " direct: refused", // the sandbox's loopback is its own
		"localhost:" + port + " via proxy: HTTP/1.1 403",
	} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("probe output lacks %q:\n%s", want, out)
		}
	}
}
