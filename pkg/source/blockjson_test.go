package source

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// agreeWithSigs fails t unless blockToJSON, where it converts doc, gives what
// YAMLToJSONStrict gives; it reports whether blockToJSON converted it.
func agreeWithSigs(t testing.TB, name string, doc []byte) bool {
	t.Helper()
	got, ok := blockToJSON(doc)
	if !ok {
		return false
	}
	want, err := sigsyaml.YAMLToJSONStrict(doc)
	if err != nil {
		t.Errorf("%s: blockToJSON converted a document sigs.k8s.io/yaml rejects (%v):\n%s\ngot %s", name, err, doc, got)
		return true
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: blockToJSON differs from sigs.k8s.io/yaml on\n%s\ngot  %s\nwant %s", name, doc, got, want)
	}
	return true
}

// blockCases are documents in the style blockToJSON converts (convert: true) and documents it
// must leave to sigs.k8s.io/yaml.
var blockCases = []struct {
	name    string
	doc     string
	convert bool
}{
	{"object", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  namespace: b\n  labels:\n    app: x\n    app.kubernetes.io/part-of: y\n", true},
	{"sequence at the key's indentation", "a:\n- 1\n- two\nb: c\n", true},
	{"indented sequence", "a:\n  - x\n  - y\n", true},
	{"mappings in a sequence", "ports:\n- name: http\n  port: 8080\n  targetPort: 80\n-   name: grpc\n    port: 9090\n", true},
	{"a sequence at the key's indentation in a sequence's mapping", "a:\n- k:\n  - 1\n  - 2\n  j: x\n", true},
	{"nested after a bare dash", "a:\n-\n  - 1\n-\n  b: c\n- \n", true},
	{"nulls", "a:\nb: ~\nc: null\nd: NULL\ne: # c\nf: x\n", true},
	{"booleans", "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: N\ng: true\nh: False\ni: yess\n", true},
	{"integers", "a: 10\nb: -3\nc: +4\nd: 0x1F\ne: 010\nf: 1_000\ng: 0o17\nh: 0b101\ni: 18446744073709551615\nj: 0\n", true},
	{"strings that look like numbers", "a: 10s\nb: 1.2.3\nc: 0x\nd: 100Mi\ne: 1e\nf: +\ng: -foo\nh: .foo\ni: 99999999999999999999999999x\n", true},
	{"quoted", "a: 'it''s'\nb: \"x y\" # c\nc: '10'\nd: \"\"\ne: 'a: b'\n'f': 1\n\"g h\": 2\n", true},
	{"escaped in JSON", "a: <b> & \"c\" \\d\nb: 'x\\y'\n", true},
	{"comments", "# top\na: b # c\n  # indented\nc: d#e\n\n# end\n", true},
	{"empty flow collections", "a: {}\nb: []\nc: [] # c\nd: [ ]\n", true},
	{"flow collections", "labels: {app: a, version: v1}\nhosts: [\"*\", 'b''c', d e , 10, yes, ~]\nm: { 'k': \"v\",x: 0x10 }\ns:\n- {a: b}\n- [c] # c\n", true},
	{"literal", "data:\n  mesh: |\n    a: b\n\n      c\n    # d\n\n  x: |-\n    y\n    z\n  w: 1\n", true},
	{"literal kept to one newline", "a: |\n  x\n\n\nb: 1\n", true},
	{"literal at the end without a line break", "a: |\n 0", true},
	{"literal at the end with empty lines", "a: |\n 0\n\n", true},
	{"stripped literal at the end", "a: |-\n 0", true},
	{"literal under a sequence's mapping", "a:\n- k: |\n    x\n    y\n  j: 1\n", true},
	{"trailing spaces", "a: b   \nc:   \n  d: e  \n", true},
	{"keys sorted", "b: 1\na: 2\nB: 3\n_: 4\n", true},
	{"a key starting with a dash", "-a: 1\n", true},

	{"float", "a: 1.5\n", false},
	{"integer float", "a: 1e3\n", false},
	{"dot float", "a: .5\n", false},
	{"infinity", "a: -.inf\n", false},
	{"not a number", "a: .NaN\n", false},
	{"timestamp", "a: 2001-12-14\n", false},
	{"numeric key", "80: http\n", false},
	{"boolean key", "on: push\n", false},
	{"null key", "~: x\n", false},
	{"long key", strings.Repeat("k", 1030) + ": 0\n", false},
	{"long key with a colon", "a:" + strings.Repeat("k", 1030) + ": 0\n", false},
	{"long quoted key", "'" + strings.Repeat("k", 1030) + "': 0\n", false},
	{"long flow key", "a: {" + strings.Repeat("k", 1030) + ": 0}\n", false},
	{"repeated key", "a: 1\na: 2\n", false},
	{"merge key", "<<: {}\n", false},
	{"anchor", "a: &x 1\n", false},
	{"alias", "a: *x\n", false},
	{"tag", "a: !!str 1\n", false},
	{"nested flow", "a: {b: [c]}\n", false},
	{"flow sequence of mappings", "a: [{b: c}]\n", false},
	{"colon in a flow scalar", "a: [http://x]\n", false},
	{"question mark in a flow scalar", "a: [0?]\n", false},
	{"trailing comma", "a: [b, ]\n", false},
	{"flow over lines", "a: [b,\n  c]\n", false},
	{"numeric flow key", "a: {1: b}\n", false},
	{"float in a flow", "a: [1.5]\n", false},
	{"flow without spaces after the colon", "a: {b:c}\n", false},
	{"folded", "a: >\n  x\n", false},
	{"kept literal", "a: |+\n  x\n", false},
	{"indentation indicator", "a: |2\n   x\n", false},
	{"literal in a sequence", "a:\n- |\n  x\n", false},
	{"empty literal", "a: |\nb: 1\n", false},
	{"multi-line plain", "a: b\n  c\n", false},
	{"multi-line quoted", "a: 'b\n  c'\n", false},
	{"escape", "a: \"\\n\"\n", false},
	{"tab", "a:\tb\n", false},
	{"carriage return", "a: b\r\n", false},
	{"UTF-8", "a: é\n", false},
	{"mapping value in a value", "a: b: c\n", false},
	{"value ending in a colon", "a: b:\n", false},
	{"space before the colon", "a : b\n", false},
	{"complex key", "? a\n: b\n", false},
	{"directive", "%YAML 1.1\n---\na: b\n", false},
	{"document end", "a: 1\n...\n", false},
	{"document end with text", "... 0:\n", false},
	{"document start", "--- a: 1\n", false},
	{"root sequence", "- a\n", false},
	{"root scalar", "a\n", false},
	{"empty", "# nothing\n", false},
	{"indented root", "  a: b\n", false},
	{"bad indentation", "a:\n    b: 1\n  c: 2\n", false},
	{"sequence in a sequence entry", "a:\n- - 1\n", false},
	{"text after a quote", "a: 'b' c\n", false},
	{"dash value", "a: -\n", false},
}

func TestBlockToJSONAgreesWithSigsYAML(t *testing.T) {
	for _, c := range blockCases {
		converted := agreeWithSigs(t, c.name, []byte(c.doc))
		if converted != c.convert {
			t.Errorf("%s: converted %v, want %v:\n%s", c.name, converted, c.convert, c.doc)
		}
	}
}

// TestBlockToJSONOnTheRepositorysYAML compares blockToJSON with sigs.k8s.io/yaml on every
// document of every YAML file of the repository's testdata (scenarios, examples, the inputs of
// this package's tests), and requires it to convert most of them.
func TestBlockToJSONOnTheRepositorysYAML(t *testing.T) {
	var docs, converted int
	for _, root := range []string{"../../testdata", "testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for i, ch := range splitYAML(data) {
				if len(bytes.TrimSpace(ch.text)) == 0 {
					continue
				}
				docs++
				if agreeWithSigs(t, p+" document "+strconv.Itoa(i+1), ch.text) {
					converted++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d documents converted", converted, docs)
	if docs < 500 || converted*10 < docs*9 {
		t.Errorf("%d of %d documents converted: the repository's YAML is the style blockToJSON is for", converted, docs)
	}
}

// FuzzBlockToJSON checks that whatever blockToJSON converts, it converts as sigs.k8s.io/yaml
// does.
func FuzzBlockToJSON(f *testing.F) {
	for _, c := range blockCases {
		f.Add([]byte(c.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		agreeWithSigs(t, "input", doc)
	})
}
