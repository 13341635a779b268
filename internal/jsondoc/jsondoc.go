// Package jsondoc reads docs/json.md, the contract of every lazy
// command's --json, and holds JSON output and Go types to it. The tests
// use it: a field a command prints that the document does not name, a
// type that differs, or a documented field that never shows fails them.
//
// The document has a section per command ("## lazy show --json") and
// per shared shape ("## Task summary"), each with a table whose rows
// start "| `path` | type |". A path is dotted (`session.branch`); `[]`
// stands for an array's elements (`turn_list[].seq`, and a row `[]` for
// a listing's top-level elements), `{}` for the values of an object
// whose keys are names (`overlaps{}`). A type names the JSON kinds it
// admits (string, number, boolean, object, array, null), "array of T",
// or a shape's name (an object with that shape's fields); "optional"
// says the field may be left out.
package jsondoc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// Field is one documented field.
type Field struct {
	Path, Type string
	Optional   bool
	// Kinds are the JSON kinds the type admits.
	Kinds map[string]bool
}

// Spec is what the document says of one command's output, by path.
type Spec map[string]Field

var (
	commandHead = regexp.MustCompile(`^## (lazy [a-z-]+.*?) --json$`)
	shapeHead   = regexp.MustCompile(`^## ([A-Z][A-Za-z ]+)$`)
	row         = regexp.MustCompile("^\\| `([^`]*)` \\| ([^|]*) \\|")
)

// Parse reads the document: each command's fields, keyed by its
// heading without " --json" ("lazy show", "lazy accept --dry-run"), with
// the shared shapes spliced in where a type names one.
func Parse(r io.Reader) (map[string]Spec, error) {
	raw := map[string][]Field{}
	var order []string
	shapes := map[string]bool{}
	section := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := commandHead.FindStringSubmatch(line); m != nil {
			section = m[1]
			if _, dup := raw[section]; dup {
				return nil, fmt.Errorf("docs: two sections for %s --json", section)
			}
			raw[section] = nil
			order = append(order, section)
			continue
		}
		if m := shapeHead.FindStringSubmatch(line); m != nil {
			section = m[1]
			shapes[section] = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			section = ""
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && section != "" {
			typ := strings.TrimSpace(m[2])
			raw[section] = append(raw[section], Field{Path: m[1], Type: typ, Optional: strings.Contains(typ, "optional")})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := map[string]Spec{}
	for _, cmd := range order {
		spec := Spec{}
		if err := expand("", raw[cmd], spec, raw, shapes, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		out[cmd] = spec
	}
	return out, nil
}

// expand documents rows under prefix in spec, and a shape's rows under
// each path whose type names it.
func expand(prefix string, rows []Field, spec Spec, raw map[string][]Field, shapes map[string]bool, depth int) error {
	if depth > 6 {
		return fmt.Errorf("shapes nest too deep at %s", prefix)
	}
	add := func(p, typ string, optional bool) error {
		spec[p] = Field{Path: p, Type: typ, Optional: optional, Kinds: kindsOf(typ, shapes)}
		for name := range shapes {
			if strings.Contains(typ, name) {
				if err := expand(p, raw[name], spec, raw, shapes, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, r := range rows {
		p := Join(prefix, r.Path)
		if !strings.HasPrefix(strings.ToLower(r.Type), "array of") {
			if err := add(p, r.Type, r.Optional); err != nil {
				return err
			}
			continue
		}
		elem := elemType(r.Type)
		if strings.HasSuffix(r.Path, "[]") {
			// The row names the elements (a listing's top-level array).
			if err := add(p, elem, r.Optional); err != nil {
				return err
			}
			continue
		}
		spec[p] = Field{Path: p, Type: r.Type, Optional: r.Optional, Kinds: map[string]bool{"array": true, "null": strings.Contains(r.Type, "or null")}}
		if err := add(p+"[]", elem, true); err != nil { // an array may be empty
			return err
		}
	}
	return nil
}

// Join puts a path under a prefix: "" and "." are the prefix itself,
// "[]..." and "{}..." attach without a dot.
func Join(prefix, p string) string {
	switch {
	case p == "." || p == "":
		return prefix
	case prefix == "":
		return p
	case strings.HasPrefix(p, "[]"), strings.HasPrefix(p, "{}"):
		return prefix + p
	}
	return prefix + "." + p
}

// elemType is the element type of "array of T" ("array of string,
// optional" is string; "array of Task summary or null" is Task summary).
func elemType(typ string) string {
	t := strings.TrimSpace(typ[len("array of"):])
	for _, cut := range []string{",", " or null", " (", ";"} {
		if i := strings.Index(t, cut); i >= 0 {
			t = t[:i]
		}
	}
	return t
}

// kindsOf is the JSON kinds a type admits: those it names, an object
// for a shape's name, and null only when it says so.
func kindsOf(typ string, shapes map[string]bool) map[string]bool {
	t := strings.ToLower(typ)
	out := map[string]bool{}
	for _, k := range []string{"string", "number", "boolean", "object", "array", "null"} {
		if strings.Contains(t, k) {
			out[k] = true
		}
	}
	for name := range shapes {
		if strings.Contains(typ, name) {
			out["object"] = true
		}
	}
	return out
}

// KindOf is a decoded JSON value's kind as the document names it.
func KindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "?"
}

// Walk calls see for every path of v as the document writes it, with
// its value's kind; an object the spec keys by names (`p{}`) has its
// keys read as {}.
func Walk(spec Spec, path string, v any, see func(path, kind string)) {
	if path != "" {
		see(path, KindOf(v))
	}
	switch x := v.(type) {
	case map[string]any:
		if _, named := spec[path+"{}"]; named {
			for _, e := range x {
				Walk(spec, path+"{}", e, see)
			}
			return
		}
		for k, e := range x {
			Walk(spec, Join(path, k), e, see)
		}
	case []any:
		for _, e := range x {
			Walk(spec, path+"[]", e, see)
		}
	}
}

// Parent is the path that holds path ("" at the top).
func Parent(path string) string {
	for _, suffix := range []string{"[]", "{}"} {
		if strings.HasSuffix(path, suffix) {
			return strings.TrimSuffix(path, suffix)
		}
	}
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[:i]
	}
	if i := strings.LastIndexAny(path, "]}"); i >= 0 {
		return path[:i+1]
	}
	return ""
}

// Check holds the outputs of cmd to its spec: every field printed is
// documented with a type that admits it, and every documented field
// that is not optional was printed by one of the outputs (unless what
// holds it never was). It returns the problems, each a sentence.
func Check(cmd string, spec Spec, outputs [][]byte) []string {
	var problems []string
	said := map[string]bool{}
	say := func(p string) {
		if !said[p] { // each once, however many outputs print it
			said[p] = true
			problems = append(problems, p)
		}
	}
	seen := map[string]bool{}
	for _, raw := range outputs {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			say(fmt.Sprintf("%s --json printed what is not JSON (%v): %.200s", cmd, err, raw))
			continue
		}
		Walk(spec, "", v, func(path, kind string) {
			seen[path] = true
			f, ok := spec[path]
			switch {
			case !ok:
				say(fmt.Sprintf("%s --json prints %s (%s), which docs/json.md does not document", cmd, path, kind))
			case !f.Kinds[kind]:
				say(fmt.Sprintf("%s --json prints %s as %s; docs/json.md says %q", cmd, path, kind, f.Type))
			}
		})
	}
	for _, path := range sortedPaths(spec) {
		f := spec[path]
		if path == "" || f.Optional || seen[path] {
			continue
		}
		if parent := Parent(path); parent != "" && !seen[parent] {
			continue // nothing held it in these outputs
		}
		problems = append(problems, fmt.Sprintf("%s --json never printed %s, which docs/json.md documents as always there (say optional if it may be left out)", cmd, path))
	}
	return problems
}

func sortedPaths(spec Spec) []string {
	out := make([]string, 0, len(spec))
	for p := range spec {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// GoField is a path a Go type marshals to, with the JSON kinds it can
// take and whether omitempty may leave it out.
type GoField struct {
	Kinds    map[string]bool
	Optional bool
}

// GoPaths lists the paths t marshals to with encoding/json: struct
// fields by their tags (embedded structs inline, "-" skipped), slices
// and arrays as [] ([]byte a string), maps as {} (keys are names), a
// pointer or omitempty as optional, a type with its own MarshalJSON or
// MarshalText as what it says it is (a string for MarshalText, any kind
// for MarshalJSON).
func GoPaths(t reflect.Type) map[string]GoField {
	out := map[string]GoField{}
	goPaths(t, "", false, out, map[reflect.Type]int{})
	return out
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

func goPaths(t reflect.Type, path string, optional bool, out map[string]GoField, depth map[reflect.Type]int) {
	note := func(kinds ...string) {
		if path == "" {
			return
		}
		f := out[path]
		if f.Kinds == nil {
			f.Kinds = map[string]bool{}
			f.Optional = optional
		}
		for _, k := range kinds {
			f.Kinds[k] = true
		}
		f.Optional = f.Optional && optional
		out[path] = f
	}
	if t.Kind() == reflect.Pointer {
		note("null")
		goPaths(t.Elem(), path, true, out, depth)
		return
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		// What it marshals to, read off its zero value (a time is a
		// string); any kind when that says nothing.
		var v any
		if b, err := json.Marshal(reflect.New(t).Interface()); err == nil && json.Unmarshal(b, &v) == nil && v != nil {
			note(KindOf(v))
			return
		}
		note("string", "number", "boolean", "object", "array", "null")
		return
	}
	if t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		note("string")
		return
	}
	if depth[t] > 1 {
		return // a type that holds itself
	}
	depth[t]++
	defer func() { depth[t]-- }()
	switch t.Kind() {
	case reflect.String:
		note("string")
	case reflect.Bool:
		note("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		note("number")
	case reflect.Interface:
		note("string", "number", "boolean", "object", "array", "null")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			note("string")
			return
		}
		note("array", "null")
		goPaths(t.Elem(), path+"[]", false, out, depth) // an element is there when the array is
	case reflect.Map:
		note("object", "null")
		goPaths(t.Elem(), path+"{}", false, out, depth)
	case reflect.Struct:
		note("object")
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" || (!sf.IsExported() && !sf.Anonymous) {
				continue
			}
			omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					goPaths(ft, path, optional, out, depth) // its fields inline
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			goPaths(sf.Type, Join(path, name), omit, out, depth)
		}
	}
}

// CheckGo holds a Go type to cmd's spec: every path the type marshals
// to is documented, with a type that admits one of its kinds, and every
// documented path is one the type has.
func CheckGo(cmd string, spec Spec, t reflect.Type) []string {
	var problems []string
	goes := GoPaths(t)
	for _, path := range sortedGoPaths(goes) {
		g := goes[path]
		f, ok := spec[path]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s --json can print %s, which docs/json.md does not document", cmd, path))
			continue
		}
		any := false
		for k := range g.Kinds {
			if k != "null" && f.Kinds[k] {
				any = true
			}
		}
		if !any {
			problems = append(problems, fmt.Sprintf("%s --json prints %s as %s; docs/json.md says %q", cmd, path, strings.Join(kindList(g.Kinds), " or "), f.Type))
		}
		if g.Optional && !f.Optional && !f.Kinds["null"] {
			problems = append(problems, fmt.Sprintf("%s --json may leave %s out (omitempty or a pointer); docs/json.md should say optional", cmd, path))
		}
	}
	for _, path := range sortedPaths(spec) {
		if _, ok := goes[path]; !ok && path != "" {
			problems = append(problems, fmt.Sprintf("docs/json.md documents %s for %s --json, which it never prints", path, cmd))
		}
	}
	return problems
}

func sortedGoPaths(m map[string]GoField) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func kindList(kinds map[string]bool) []string {
	var out []string
	for k := range kinds {
		if k != "null" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
