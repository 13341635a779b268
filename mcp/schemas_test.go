package mcp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/lazyorch/lazy/gitstore"
	"github.com/lazyorch/lazy/machine"
)

var update = flag.Bool("update", false, "rewrite schemas.json from the tools' Go types")

// schemaFor infers a JSON schema for t the way the MCP SDK infers a
// tool's, with the status enum, hex hashes and RFC 3339 times spelled out.
func schemaFor(t reflect.Type) (*jsonschema.Schema, error) {
	var enum []any
	for _, st := range machine.Statuses() {
		enum = append(enum, string(st))
	}
	cats := []any{string(machine.CategoryActive), string(machine.CategoryBlocked), string(machine.CategoryTerminal), string(machine.CategoryResting)}
	return jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[machine.Status]():   {Type: "string", Enum: enum, Description: "task status"},
		reflect.TypeFor[machine.Category](): {Type: "string", Enum: cats},
		reflect.TypeFor[gitstore.Hex]():     {Type: "string", Pattern: "^[0-9a-f]{40}([0-9a-f]{24})?$", Description: "git object id, hex"},
		reflect.TypeFor[time.Time]():        {Type: "string", Format: "date-time"},
	}})
}

// noNullLists makes every list in an output schema a plain array: lazy
// answers [] for an empty list, and the schema says so, so a client's
// validator catches a null before an LLM has to.
func noNullLists(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" && s.Types[1] == "array" {
		s.Type, s.Types = "array", nil
	}
	noNullLists(s.Items)
	noNullLists(s.AdditionalProperties)
	for _, p := range s.Properties {
		noNullLists(p)
	}
	for _, x := range s.AnyOf {
		noNullLists(x)
	}
	for _, x := range s.OneOf {
		noNullLists(x)
	}
	for _, x := range s.AllOf {
		noNullLists(x)
	}
}

// generatedSchemas infers every tool's schemas from its types.
func generatedSchemas(t *testing.T) map[string]*[2]*jsonschema.Schema {
	t.Helper()
	out := map[string]*[2]*jsonschema.Schema{}
	for _, tool := range Tools {
		in, outT := tool.io.types()
		is, err := schemaFor(in)
		if err != nil {
			t.Fatalf("input schema of %s: %v", tool.Name, err)
		}
		os, err := schemaFor(outT)
		if err != nil {
			t.Fatalf("output schema of %s: %v", tool.Name, err)
		}
		noNullLists(os)
		out[tool.Name] = &[2]*jsonschema.Schema{is, os}
	}
	return out
}

// TestSchemasAreGenerated holds schemas.json to the tools' Go types: it
// is what jsonschema-go infers from them, byte for byte.
func TestSchemasAreGenerated(t *testing.T) {
	all := map[string]toolSchemas{}
	for name, s := range generatedSchemas(t) {
		in, err := json.Marshal(s[0])
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(s[1])
		if err != nil {
			t.Fatal(err)
		}
		all[name] = toolSchemas{Input: in, Output: out}
	}
	want, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile("schemas.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(schemasJSON, want) {
		t.Fatal("schemas.json is not what the tools' types give; run go test ./mcp -run TestSchemasAreGenerated -update")
	}
}
