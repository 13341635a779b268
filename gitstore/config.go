package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	format "github.com/go-git/go-git/v5/plumbing/format/config"
)

// Config is git configuration as lazy reads it: the user's global file
// then the repository's, later values winning, as git resolves them.
// Include directives are not followed.
type Config struct {
	files []*format.Config
}

// Config reads the global and repository configuration.
func (r *Repo) Config() (*Config, error) {
	var paths []string
	if home, err := os.UserHomeDir(); err == nil {
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" {
			xdg = filepath.Join(home, ".config")
		}
		paths = append(paths, filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig"))
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		paths = []string{g}
	}
	paths = append(paths, filepath.Join(r.CommonDir, "config"))
	c := &Config{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read git config %s: %w", p, err)
		}
		f := format.New()
		if err := format.NewDecoder(bytes.NewReader(b)).Decode(f); err != nil {
			return nil, fmt.Errorf("parse git config %s: %w", p, err)
		}
		c.files = append(c.files, f)
	}
	return c, nil
}

// Get returns the last value of key ("section.key" or
// "section.subsection.key"), and whether it is set.
func (c *Config) Get(key string) (string, bool) {
	all := c.All(key)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// All returns every value of a multi-valued key, in the order git reads
// them (global file first).
func (c *Config) All(key string) []string {
	section, sub, name := splitKey(key)
	var vals []string
	for _, f := range c.files {
		for _, s := range f.Sections {
			if !strings.EqualFold(s.Name, section) {
				continue
			}
			opts := s.Options
			if sub != "" {
				opts = nil
				for _, ss := range s.Subsections {
					if ss.Name == sub {
						opts = append(opts, ss.Options...)
					}
				}
			}
			for _, o := range opts {
				if strings.EqualFold(o.Key, name) {
					vals = append(vals, o.Value)
				}
			}
		}
	}
	return vals
}

// Int returns key as an integer, def when unset, and an error naming the
// key when it is not a number.
func (c *Config) Int(key string, def int) (int, error) {
	v, ok := c.Get(key)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return def, fmt.Errorf("git config %s = %q is not a number", key, v)
	}
	return n, nil
}

func splitKey(key string) (section, sub, name string) {
	first := strings.IndexByte(key, '.')
	last := strings.LastIndexByte(key, '.')
	if first < 0 {
		return key, "", ""
	}
	if first == last {
		return key[:first], "", key[first+1:]
	}
	return key[:first], key[first+1 : last], key[last+1:]
}

// Bool returns key as a git boolean (true/yes/on/1, false/no/off/0), def
// when unset, and an error naming the key otherwise.
func (c *Config) Bool(key string, def bool) (bool, error) {
	v, ok := c.Get(key)
	if !ok {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1", "":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return def, fmt.Errorf("git config %s = %q is not a boolean (true or false)", key, v)
}
