package gitrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Supported is the one sentence every refusal ends with: what lazy reads
// and what the user can do instead.
const Supported = "lazy supports SHA-1 and SHA-256 repositories with git's default files ref backend; " +
	"run lazy in a repository made by a plain git init or git clone"

// formatTimeout bounds the git process that judges a repository's format.
const formatTimeout = 10 * time.Second

// DetectFormat returns the repository's object format. A config with no
// extensions and version 0 is what git itself reads as SHA-1 with the files
// ref backend, so that case costs no process; anything else is git's call,
// so lazy never disagrees with git about a repository it does not know.
// git's acceptance is remembered in cacheFile ("" for none) against the
// config's content, so a repository with extensions pays for the two git
// processes once per config change, not once per command.
func DetectFormat(commonDir, cacheFile string) (string, error) {
	b, err := os.ReadFile(filepath.Join(commonDir, "config"))
	if errors.Is(err, fs.ErrNotExist) {
		return SHA1, nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", filepath.Join(commonDir, "config"), err)
	}
	if entries, err := parseConfig(b); err == nil && plainFormat(entries) {
		return SHA1, nil
	}
	sum := sha256.Sum256(b)
	key := hex.EncodeToString(sum[:])
	if cacheFile != "" {
		if c, err := os.ReadFile(cacheFile); err == nil {
			if k, format, ok := strings.Cut(strings.TrimSpace(string(c)), " "); ok && k == key && (format == SHA1 || format == SHA256) {
				return format, nil
			}
		}
	}
	format, err := askFormat(commonDir)
	if err == nil && cacheFile != "" {
		rememberFormat(cacheFile, key, format)
	}
	return format, err
}

// rememberFormat writes git's verdict for a config atomically; a cache
// that cannot be written only costs the next command the same question.
func rememberFormat(cacheFile, key, format string) {
	if err := os.MkdirAll(filepath.Dir(cacheFile), 0o755); err != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d.tmp", cacheFile, os.Getpid())
	if err := os.WriteFile(tmp, []byte(key+" "+format+"\n"), 0o644); err != nil {
		return
	}
	if err := os.Rename(tmp, cacheFile); err != nil {
		_ = os.Remove(tmp)
	}
}

// plainFormat reports whether config entries leave the repository at
// format version 0 with no extension: git's defaults.
func plainFormat(entries []configEntry) bool {
	for _, e := range entries {
		if strings.HasPrefix(e.key, "extensions.") {
			return false
		}
		if e.key == "core.repositoryformatversion" && strings.TrimSpace(e.value) != "0" {
			return false
		}
	}
	return true
}

// askFormat asks git for the object format and ref storage of the
// repository at commonDir.
func askFormat(commonDir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), formatTimeout)
	defer cancel()
	out, err := formatGit(ctx, commonDir, "rev-parse", "--show-object-format")
	if err != nil {
		return "", fmt.Errorf("git cannot read the repository at %s (%w); %s", commonDir, err, Supported)
	}
	format := strings.TrimSpace(out)
	if format != SHA1 && format != SHA256 {
		return "", fmt.Errorf("the repository at %s names its objects with %q; %s", commonDir, format, Supported)
	}
	// A git that knows reftable reads such a repository without
	// complaint, so ask what it stores refs in; exit 1 means unset.
	refs, err := formatGit(ctx, commonDir, "config", "--get", "extensions.refstorage")
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
	case err != nil:
		return "", fmt.Errorf("git cannot read the config of the repository at %s (%w); %s", commonDir, err, Supported)
	case !strings.EqualFold(strings.TrimSpace(refs), "files"):
		return "", fmt.Errorf("the repository at %s stores refs in %q; %s", commonDir, strings.TrimSpace(refs), Supported)
	}
	return format, nil
}

// formatGit runs git on the repository at gitDir, outside any work tree
// and ignoring the caller's GIT_* variables, and returns its output or
// its complaint on one line.
func formatGit(ctx context.Context, gitDir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir=" + gitDir}, args...)...)
	cmd.Dir = gitDir
	cmd.Env = append(cleanGitEnv(os.Environ()), "GIT_DIR="+gitDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.Join(strings.Fields(stderr.String()), " ")
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		if msg == "" {
			return "", err
		}
		return "", fmt.Errorf("%s: %w", strings.TrimPrefix(msg, "fatal: "), err)
	}
	return string(out), nil
}

// cleanGitEnv drops the variables that would point git at another
// repository than the one asked about.
func cleanGitEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT":
			continue
		}
		out = append(out, kv)
	}
	return out
}
