package render

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
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
