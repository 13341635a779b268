package jsondoc

import (
	"reflect"
	"strings"
	"testing"
)

const doc = `# Shapes

## Thing

| Field | Type | Meaning |
|---|---|---|
| ` + "`name`" + ` | string | Its name. |
| ` + "`size`" + ` | number, optional | Its size. |

# Commands

## lazy get --json

| Field | Type | Meaning |
|---|---|---|
| ` + "`.`" + ` | Thing | The thing. |
| ` + "`tags`" + ` | array of string | Its tags. |
| ` + "`by`" + ` | object, optional | Counts by key. |
| ` + "`by{}`" + ` | number | A count. |
| ` + "`parts`" + ` | array of Thing | Its parts. |
| ` + "`owner`" + ` | string or null | Its owner. |

## lazy get --all --json

| Field | Type | Meaning |
|---|---|---|
| ` + "`[]`" + ` | array of Thing | Every thing. |
`

func parse(t *testing.T) map[string]Spec {
	t.Helper()
	docs, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestParseSplicesShapes: shapes land where a type names them, arrays
// get their elements, and each heading is its own section.
func TestParseSplicesShapes(t *testing.T) {
	docs := parse(t)
	get, all := docs["lazy get"], docs["lazy get --all"]
	for _, p := range []string{"name", "size", "tags", "tags[]", "by", "by{}", "parts", "parts[]", "parts[].name", "parts[].size", "owner"} {
		if _, ok := get[p]; !ok {
			t.Errorf("lazy get lacks %s: %v", p, get)
		}
	}
	for _, p := range []string{"[]", "[].name", "[].size"} {
		if _, ok := all[p]; !ok {
			t.Errorf("lazy get --all lacks %s", p)
		}
	}
	if !get["size"].Optional || get["name"].Optional || !get["owner"].Kinds["null"] || !get["parts[]"].Kinds["object"] {
		t.Errorf("fields: %+v", get)
	}
}

// TestCheckFindsWhatTheDocsDoNotSay: an undocumented field, a wrong
// kind and a documented field never printed are each one problem; a
// conforming output is none.
func TestCheckFindsWhatTheDocsDoNotSay(t *testing.T) {
	spec := parse(t)["lazy get"]
	ok := `{"name":"a","tags":["x"],"by":{"k":1,"l":2},"parts":[{"name":"p","size":3}],"owner":null}`
	if p := Check("lazy get", spec, [][]byte{[]byte(ok), []byte(ok)}); len(p) != 0 {
		t.Fatalf("a conforming output: %q", p)
	}
	bad := `{"name":1,"tags":[],"parts":[{"name":"p","extra":true}],"owner":"me","new":true}`
	got := strings.Join(Check("lazy get", spec, [][]byte{[]byte(bad), []byte(bad)}), "\n")
	for _, want := range []string{
		`lazy get --json prints name as number; docs/json.md says "string"`,
		"lazy get --json prints parts[].extra (boolean), which docs/json.md does not document",
		"lazy get --json prints new (boolean), which docs/json.md does not document",
	} {
		if strings.Count(got, want) != 1 {
			t.Errorf("problems lack %q once:\n%s", want, got)
		}
	}
	missing := `{"tags":[],"parts":[],"owner":null}`
	if got := strings.Join(Check("lazy get", spec, [][]byte{[]byte(missing)}), "\n"); !strings.Contains(got, "never printed name") || strings.Contains(got, "size") || strings.Contains(got, "parts[].name") {
		t.Errorf("a missing field:\n%s", got)
	}
	if got := Check("lazy get", spec, [][]byte{[]byte("{")}); len(got) == 0 || !strings.Contains(got[0], "not JSON") {
		t.Errorf("not JSON: %q", got)
	}
}

// TestCheckGoReadsTheTags: struct tags, embedded structs, pointers and
// omitempty, maps and slices are what the type can print.
func TestCheckGoReadsTheTags(t *testing.T) {
	type thing struct {
		Name string `json:"name"`
		Size int    `json:"size,omitempty"`
	}
	type get struct {
		thing
		Tags  []string       `json:"tags"`
		By    map[string]int `json:"by,omitempty"`
		Parts []thing        `json:"parts"`
		Owner *string        `json:"owner"`
		Skip  string         `json:"-"`
	}
	spec := parse(t)["lazy get"]
	if p := CheckGo("lazy get", spec, reflect.TypeFor[get]()); len(p) != 0 {
		t.Fatalf("a type the docs describe: %q", p)
	}
	type drifted struct {
		thing
		Tags  []int  `json:"tags"`
		Owner string `json:"owner_name"`
	}
	got := strings.Join(CheckGo("lazy get", spec, reflect.TypeFor[drifted]()), "\n")
	for _, want := range []string{
		"lazy get --json can print owner_name, which docs/json.md does not document",
		`lazy get --json prints tags[] as number; docs/json.md says "string"`,
		"docs/json.md documents by for lazy get --json, which it never prints",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}
