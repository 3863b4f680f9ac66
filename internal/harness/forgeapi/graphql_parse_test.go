package forgeapi

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseGraphQL: the documents a client of the fake sends parse into the
// operation, variables, fields, aliases, arguments and fragments they say; what the
// fake does not read is a parse error, never a document read wrongly.
func TestParseGraphQL(t *testing.T) {
	t.Parallel()
	doc, err := parseGraphQL(`# a comment
mutation Land($input: CreateCommitOnBranchInput!, $n: Int = 3, $l: [String!]! = ["a", "b"]) {
  first: createCommitOnBranch(input: {expectedHeadOid: $h, message: {headline: "a \"q\" \u00e9\n"}, n: -1.5e2, k: 7, e: ENUM, t: true, z: null}) {
    commit { oid, ... on Commit { url } ... { abbreviatedOid } }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	op := doc.operation("Land")
	if op == nil || op.typ != "mutation" || len(op.vars) != 3 || op.vars[0].hasDef ||
		op.vars[1].def != int64(3) || !reflect.DeepEqual(op.vars[2].def, []any{"a", "b"}) {
		t.Fatalf("operation: %+v", op)
	}
	f := op.sel[0]
	wantArgs := map[string]any{"input": map[string]any{
		"expectedHeadOid": gqlVar("h"), "message": map[string]any{"headline": "a \"q\" é\n"},
		"n": -150.0, "k": int64(7), "e": "ENUM", "t": true, "z": nil,
	}}
	if f.alias != "first" || f.name != "createCommitOnBranch" || f.key() != "first" || f.line != 3 || f.col != 3 || !reflect.DeepEqual(f.args, wantArgs) {
		t.Errorf("field: %+v\nargs %#v", f, f.args)
	}
	commit := f.sel[0].sel
	if len(commit) != 3 || commit[0].name != "oid" || !commit[1].frag || commit[1].on != "Commit" || commit[1].sel[0].name != "url" ||
		!commit[2].frag || commit[2].on != "" {
		t.Errorf("selections: %+v %+v %+v", commit[0], commit[1], commit[2])
	}
	if q, err := parseGraphQL(`{ viewer { login } }`); err != nil || q.operation("").typ != "query" {
		t.Errorf("a bare selection set: %v", err)
	}
	for _, bad := range []string{
		"", "{}", "{ a", "{ a(b: ) }", "{ a(b: 1) @skip }", "{ ...F }", "fragment F on T { a }",
		"subscription { a }", `{ a(b: """x""") }`, `{ a(b: "x) }`, `{ a(b: "\q") }`, "{ a(b: 1.2.3) }", "{ a. }",
		"query ($a: ) { a }", strings.Repeat("{ a ", maxDepth+1) + strings.Repeat("}", maxDepth+1),
		"{ a(b: " + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + ") }",
	} {
		if _, err := parseGraphQL(bad); err == nil || !strings.HasPrefix(err.Error(), "Parse error at [") {
			t.Errorf("parseGraphQL(%q) = %v, want a parse error", bad, err)
		}
	}
}

// FuzzParseGraphQL: any input parses or is refused, without a panic, and a parsed
// document has an operation with selections.
func FuzzParseGraphQL(f *testing.F) {
	for _, seed := range []string{
		`mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid } } }`,
		`query { repository(owner: "o", name: "n") { ref(qualifiedName: "refs/heads/main") { target { ... on Commit { oid } } } } }`,
		`{ a(b: [1, -2.5e3, "s\u0041", {c: ENUM}], d: $v) }`,
		"{ a # comment\n b }",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		doc, err := parseGraphQL(src)
		if err != nil {
			return
		}
		for _, op := range doc.ops {
			if len(op.sel) == 0 {
				t.Errorf("%q: an operation without selections", src)
			}
		}
	})
}
