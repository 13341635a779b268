package mcp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestValidatorAgreesWithJSONSchemaGo holds lazy's validator to the one
// the MCP SDK validated with: on values generated from every tool's input
// and output schema, mostly well-formed with a mistake here and there,
// both must accept or refuse alike.
func TestValidatorAgreesWithJSONSchemaGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 26))
	var accepted, refused int
	for name, pair := range generatedSchemas(t) {
		for i, sch := range pair {
			resolved, err := sch.Resolve(nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			raw, err := json.Marshal(sch)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := compileSchema(raw)
			if err != nil {
				t.Fatalf("%s schema %d: %v", name, i, err)
			}
			for range 400 {
				b, err := json.Marshal(randomValue(rng, sch, 0))
				if err != nil {
					t.Fatal(err)
				}
				var v any
				if err := json.Unmarshal(b, &v); err != nil {
					t.Fatal(err)
				}
				theirs := resolved.Validate(v)
				ov, err := decodeJSON(b)
				if err != nil {
					t.Fatal(err)
				}
				mine := ours.validate(ov, "")
				if (theirs == nil) != (mine == nil) {
					t.Fatalf("%s schema %d on %s:\n jsonschema-go: %v\n lazy:          %v", name, i, b, theirs, mine)
				}
				if mine == nil {
					accepted++
				} else {
					refused++
				}
			}
		}
	}
	// Both answers must be common, or the comparison proves little.
	if accepted < 2000 || refused < 2000 {
		t.Fatalf("%d accepted, %d refused: the generator is lopsided", accepted, refused)
	}
}

// randomValue builds a value for s: of its type most of the time, with
// properties left out or added, enums and patterns missed, numbers out of
// range or fractional.
func randomValue(rng *rand.Rand, s *jsonschema.Schema, depth int) any {
	if s == nil || depth > 6 || rng.IntN(40) == 0 {
		return anyValue(rng)
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(s.Enum) > 0 && rng.IntN(8) != 0 {
		return s.Enum[rng.IntN(len(s.Enum))]
	}
	if len(types) == 0 {
		return anyValue(rng)
	}
	switch types[rng.IntN(len(types))] {
	case "object":
		obj := map[string]any{}
		for name, p := range s.Properties {
			if rng.IntN(5) != 0 || (slices.Contains(s.Required, name) && rng.IntN(20) != 0) {
				obj[name] = randomValue(rng, p, depth+1)
			}
		}
		if rng.IntN(15) == 0 {
			obj[fmt.Sprintf("extra_%d", rng.IntN(3))] = anyValue(rng)
		}
		return obj
	case "array":
		list := []any{}
		for range rng.IntN(3) {
			list = append(list, randomValue(rng, s.Items, depth+1))
		}
		return list
	case "string":
		if s.Pattern != "" && rng.IntN(6) != 0 {
			return strings.Repeat("0123456789abcdef", 3)[rng.IntN(8):][:40]
		}
		return []string{"", "x", "blocked", "2026-01-01T00:00:00Z", "ünï"}[rng.IntN(5)]
	case "integer":
		return []any{0, 1, 42, -1, 1.5, 1e3}[rng.IntN(6)]
	case "number":
		return []any{0, -2.5, 3.25}[rng.IntN(3)]
	case "boolean":
		return rng.IntN(2) == 0
	case "null":
		return nil
	}
	return anyValue(rng)
}

func anyValue(rng *rand.Rand) any {
	return []any{nil, true, 0, -7, 2.5, "s", []any{}, []any{1, "a"}, map[string]any{}, map[string]any{"k": 1}}[rng.IntN(10)]
}

func TestCompileSchemaRefusesWhatItCannotCheck(t *testing.T) {
	for _, raw := range []string{
		`{"type":"object","oneOf":[{"type":"string"}]}`,
		`{"$ref":"#/$defs/x"}`,
		`{"type":"string","maxLength":3}`,
		`{"type":5}`,
		`{"pattern":"("}`,
		`[]`,
	} {
		if _, err := compileSchema(json.RawMessage(raw)); err == nil {
			t.Errorf("compileSchema(%s) succeeded; a keyword it does not check must refuse", raw)
		}
	}
}
