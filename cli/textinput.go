package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/lazyorch/lazy/session"
)

// textInput reads a text a command takes: -m, stdin, or $EDITOR on a
// terminal. Its dependencies are the streams, the editor git's order
// picks, and the directory the editor's file is kept in; textInputOf
// fills them from an opened run, a test gives its own.
type textInput struct {
	io      ioStreams
	editor  func() string
	editDir string
}

// textInputOf fills textInput from an opened run.
func textInputOf(a *app) textInput {
	return textInput{io: a.io, editor: a.settings().editor, editDir: a.repo.LazyDir("edit")}
}

// read gets a text from -m (when set), "-m -" or piped stdin, or
// $EDITOR on a terminal. The editor's file is kept until the command
// succeeds (call the returned cleanup then), so a failure never loses
// what the human typed.
func (t textInput) read(flag *string, what string, required bool) (string, func(), error) {
	noop := func() {}
	if flag != nil && *flag != "-" {
		return *flag, noop, nil
	}
	if (flag != nil && *flag == "-") || readable(t.io.in) {
		b, err := io.ReadAll(io.LimitReader(t.io.in, session.MaxText+1))
		if err != nil {
			return "", noop, fmt.Errorf("read %s from stdin: %w", what, err)
		}
		if len(b) > session.MaxText {
			return "", noop, fmt.Errorf("%s on stdin is over %d MiB; nothing was saved", what, session.MaxText>>20)
		}
		return strings.TrimRight(string(b), "\n"), noop, nil
	}
	if !required {
		return "", noop, nil
	}
	if !isTerminal(t.io.in) || !isTerminal(t.io.out) {
		return "", noop, usageError{fmt.Sprintf("no %s given: pass -m TEXT, pipe it on stdin, or run in a terminal to use $EDITOR", what)}
	}
	return t.edit(what)
}

// edit has the text written in $EDITOR.
func (t textInput) edit(what string) (string, func(), error) {
	noop := func() {}
	dir := t.editDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", noop, err
	}
	f, err := os.CreateTemp(dir, strings.ReplaceAll(what, " ", "-")+"-*.md")
	if err != nil {
		return "", noop, err
	}
	fmt.Fprintf(f, "\n# Write the %s above. Lines starting with # are ignored;\n# an empty %s aborts.\n", what, what)
	_ = f.Close()
	editor := t.editor()
	cmd := exec.Command("sh", "-c", editor+` "$1"`, "editor", f.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", noop, fmt.Errorf("editor %q failed (%w); your text is kept in %s", editor, err, f.Name())
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return "", noop, err
	}
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			kept = append(kept, line)
		}
	}
	text := strings.TrimSpace(strings.Join(kept, "\n"))
	if text == "" {
		_ = os.Remove(f.Name())
		return "", noop, fmt.Errorf("aborted: the %s is empty", what)
	}
	t.io.info("%s saved in %s until this command succeeds", what, f.Name())
	return text, func() { _ = os.Remove(f.Name()) }, nil
}
