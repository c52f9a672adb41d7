package render

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbachttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// randomJSONValue is a random value for encoding/json: nested objects and arrays (empty ones
// too), strings with quotes, escapes, control characters, HTML and non-ASCII runes, numbers,
// booleans, null, and raw messages spaced as protojson spaces them.
func randomJSONValue(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth > 5 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return randomJSONString(r)
	case 1:
		return r.Float64()*1e6 - 5e5
	case 2:
		return r.IntN(3) == 0
	case 3:
		return nil
	case 4:
		return json.RawMessage(`{"a": [1, 2, {}], "b": {"c": "x:,{}[]\"y"},  "d": []}`)
	case 5, 6:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomJSONString(r)] = randomJSONValue(r, depth+1)
		}
		return m
	default:
		a := make([]any, r.IntN(5))
		for i := range a {
			a[i] = randomJSONValue(r, depth+1)
		}
		return a
	}
}

func randomJSONString(r *rand.Rand) string {
	parts := []string{"a", `"`, `\`, `\"`, "\n", "\t", "\x01", "<&>", "é", "→", "\u2028", ",", ":", "{", "}", "[", "]", " ", "ns[ns-002]"}
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func TestWriteIndentedMatchesIndent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		v := randomJSONValue(r, 0)
		var compact bytes.Buffer
		enc := json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if err := writeIndented(&got, compact.Bytes()); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("document %d: %s\nindented:\n%s\njson.Indent:\n%s", i, compact.Bytes(), got.Bytes(), want.Bytes())
		}
	}
}

// TestChainJSONIsProtojson compares the filter chains protoJSON puts together from their
// filters with protojson's own, compacted as the document compacts them: chains with a name
// only, with fields after filters, with a filter_chain_match (marshalled whole), and filters
// shared between chains.
func TestChainJSONIsProtojson(t *testing.T) {
	rbac := func(prefix string) *listenerv3.Filter {
		cfg, err := anypb.New(&rbachttpv3.RBAC{ShadowRulesStatPrefix: prefix, Rules: &rbacv3.RBAC{Action: rbacv3.RBAC_DENY,
			Policies: map[string]*rbacv3.Policy{"p": {Permissions: []*rbacv3.Permission{{Rule: &rbacv3.Permission_Any{Any: true}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return &listenerv3.Filter{Name: "envoy.filters.http.rbac", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: cfg}}
	}
	shared := rbac("shared_")
	chains := []*listenerv3.FilterChain{
		{Name: "inbound-vip|8080|http|a.ns.svc.cluster.local", Filters: []*listenerv3.Filter{shared, rbac("a_")}},
		{Name: "direct-http", Filters: []*listenerv3.Filter{shared}},
		{Filters: []*listenerv3.Filter{rbac("b_")}},
		{Name: "with-socket", Filters: []*listenerv3.Filter{shared}, TransportSocket: &corev3.TransportSocket{Name: "tls"},
			Metadata: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"k": {}}}},
		{Name: "matched", FilterChainMatch: &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(8080)}, Filters: []*listenerv3.Filter{shared}},
		{Name: "no-filters"},
	}
	pj := protoJSON{done: map[proto.Message][]byte{}}
	compact := func(b []byte) string {
		var out bytes.Buffer
		if err := json.Compact(&out, b); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return out.String()
	}
	for _, fc := range chains {
		got, err := pj.marshal(fc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := protojson.Marshal(fc)
		if err != nil {
			t.Fatal(err)
		}
		if compact(got) != compact(want) {
			t.Errorf("chain %q:\n%s\nprotojson:\n%s", fc.Name, compact(got), compact(want))
		}
	}
	if !filtersFirst(chains[0]) || filtersFirst(chains[4]) || filtersFirst(chains[5]) {
		t.Errorf("filtersFirst: %v %v %v, want true false false", filtersFirst(chains[0]), filtersFirst(chains[4]), filtersFirst(chains[5]))
	}
}

// TestWriteJSONMatchesIndent: the documents writeJSON puts together, the objects encoded and
// indented on their own, are json.Indent's of the whole document, for one result and for
// lists (with results without objects, and text that spells the objects key in a value).
func TestWriteJSONMatchesIndent(t *testing.T) {
	tricky := clusterResult(t)
	tricky.Warnings = append(tricky.Warnings, `"objects":[]`, `x","objects":[]`)
	empty := authzResult("empty")
	empty.Objects = nil
	// A value as protojson may write it, with spaces and newlines between its tokens (the
	// document has it compact), and a summary that spells the value's placeholder.
	spaced := authzResult("spaced")
	spaced.Objects[0].Value = []byte(" {\"name\": \"a b\" ,\n\t\"rules\":[ 1, -2.5e3 , true,null, {} ,[ ] ,{\"k\" :\"\\\" x\"}] }\r\n")
	spaced.Objects[0].Summary = append(spaced.Objects[0].Summary, explain.Summary{Name: `"value":0,"origins":`, Value: `"value":0,"origins":[]`})
	cases := map[string][]*explain.Result{
		"cluster":      {clusterResult(t)},
		"authz":        {authzResult("a")},
		"tricky":       {tricky},
		"list":         {authzResult("a"), empty, clusterResult(t), tricky},
		"empty list":   {},
		"large":        {largeClusterResult(t, 300)},
		"only empties": {empty, empty},
		"spaced":       {spaced},
	}
	for name, rs := range cases {
		for _, list := range []bool{false, true} {
			if !list && len(rs) != 1 {
				continue
			}
			p := dataPrinter{}
			var got bytes.Buffer
			var v any
			if list {
				if err := p.PrintList(&got, rs); err != nil {
					t.Fatal(err)
				}
				l := List{APIVersion: explain.APIVersion, Kind: KindList, Items: []*explain.Result{}}
				for _, r := range rs {
					n, err := normalize(r)
					if err != nil {
						t.Fatal(err)
					}
					l.Items = append(l.Items, n)
				}
				v = l
			} else {
				if err := p.Print(&got, rs[0]); err != nil {
					t.Fatal(err)
				}
				n, err := normalize(rs[0])
				if err != nil {
					t.Fatal(err)
				}
				v = n
			}
			compact, err := compactJSON(v)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := json.Indent(&want, compact, "", "  "); err != nil {
				t.Fatal(err)
			}
			want.WriteByte('\n')
			if got.String() != want.String() {
				t.Errorf("%s (list %v): writeJSON differs from json.Indent of the document:\n%s\nwant:\n%s", name, list, got.String(), want.String())
			}
		}
	}
}
