package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/lazyorch/lazy/internal/confine"
	"github.com/lazyorch/lazy/internal/unixsock"
)

// NetworkAllow is the policy of an allowlist: the agent's network
// namespace has only loopback, and its one way out is an HTTP CONNECT
// proxy that the supervisor runs outside the sandbox and that admits only
// the listed hosts.
const NetworkAllow = confine.NetworkAllow

// ProxyPort is where, inside the sandbox's own loopback, the forwarder
// listens for the agent's HTTPS_PROXY connections.
const ProxyPort = 3128

// Allowed reports whether host (no port) matches the allowlist: an exact
// name, or "*.example.com" for its subdomains (confine.HostAllowed, the
// one matcher, which also decides whether one allowlist is within
// another).
func Allowed(allow []string, host string) bool { return confine.HostAllowed(allow, host) }

// Egress is the allowlisting proxy of one sandboxed turn, serving HTTP
// CONNECT on a unix socket that the sandbox exposes to its forwarder.
type Egress struct {
	ln    net.Listener
	allow []string
	wg    sync.WaitGroup
	// Refused counts connections the allowlist turned away.
	mu      sync.Mutex
	refused []string
}

// StartEgress listens on the unix socket sock.
func StartEgress(sock string, allow []string) (*Egress, error) {
	_ = os.Remove(sock)
	ln, err := unixsock.Listen(sock)
	if err != nil {
		return nil, fmt.Errorf("sandbox: start the network allowlist proxy: %w", err)
	}
	e := &Egress{ln: ln, allow: allow}
	e.wg.Add(1)
	go e.serve()
	return e, nil
}

// Close stops the proxy and waits for its connections to end.
func (e *Egress) Close() {
	_ = e.ln.Close()
	e.wg.Wait()
}

// Refused lists the host:port requests the allowlist turned away.
func (e *Egress) Refused() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.refused...)
}

func (e *Egress) serve() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.handle(c)
		}()
	}
}

// handle answers one CONNECT request: 403 for a host outside the
// allowlist, 502 when the host cannot be reached, else 200 and the bytes
// spliced both ways.
func (e *Egress) handle(c net.Conn) {
	defer func() { _ = c.Close() }()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\nlazy's sandbox proxy only tunnels CONNECT (use HTTPS)\r\n")
		return
	}
	host, port, err := net.SplitHostPort(req.Host)
	if err != nil || port == "" {
		_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
		return
	}
	if !Allowed(e.allow, host) {
		e.mu.Lock()
		e.refused = append(e.refused, req.Host)
		e.mu.Unlock()
		_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.DialTimeout("tcp", req.Host, 15*time.Second)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer func() { _ = up.Close() }()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// Forward runs inside the sandbox: it listens on listen (the sandbox's
// own loopback), relays every connection to the egress socket to, and
// runs argv as its child with the terminal, environment and exit status
// passed through. Signals it receives go to the child.
func Forward(ctx context.Context, listen, to string, argv []string) (int, error) {
	if len(argv) == 0 {
		return 2, errors.New("sandbox-forward: nothing to run")
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return 1, fmt.Errorf("sandbox-forward: %w", err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(c, to)
		}
	}()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("sandbox-forward: start %s: %w", argv[0], err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

func relay(c net.Conn, to string) {
	defer func() { _ = c.Close() }()
	up, err := unixsock.Dial(context.Background(), to)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
