package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// KindList is the kind of the document that wraps several Results.
const KindList = "List"

// List is the json/yaml document for a command that explains several subjects (authz -l).
type List struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []*explain.Result `json:"items"`
}

// dataPrinter prints the Result document as JSON or YAML: one struct drives both, the YAML
// is the JSON converted by sigs.k8s.io/yaml (keys sorted, as kubectl prints).
type dataPrinter struct{ yaml bool }

func (p dataPrinter) Print(w io.Writer, r *explain.Result) error {
	n, err := normalize(r)
	if err != nil {
		return err
	}
	return p.write(w, n)
}

func (p dataPrinter) PrintList(w io.Writer, rs []*explain.Result) error {
	l := List{APIVersion: explain.APIVersion, Kind: KindList, Items: make([]*explain.Result, 0, len(rs))}
	for _, r := range rs {
		n, err := normalize(r)
		if err != nil {
			return err
		}
		l.Items = append(l.Items, n)
	}
	return p.write(w, l)
}

func (p dataPrinter) write(w io.Writer, v any) error {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	if p.yaml {
		y, err := yaml.JSONToYAML(compact.Bytes())
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	return writeIndented(w, compact.Bytes())
}

// writeIndented writes the compact JSON document src to w indented by two spaces: the bytes
// json.Indent(dst, src, "", "  ") produces, written as they are made. json.Indent steps its
// scanner over every byte and builds the whole indented document (more than twice the compact
// one for an answer with deep filters) before it is written; src, from an Encoder, is already
// valid and compact, so only strings, punctuation and the runs between them need looking at.
// TestWriteIndentedMatchesIndent compares the two.
func writeIndented(w io.Writer, src []byte) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	depth := 0
	// needIndent delays the newline after { or [ so an empty object or array stays {} or [].
	needIndent := false
	newline := func() {
		bw.WriteByte('\n')
		for range depth {
			bw.WriteString("  ")
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			newline()
		}
		switch c {
		case '"':
			j := i + 1
			for j < len(src) {
				k := bytes.IndexAny(src[j:], `"\`)
				if k < 0 {
					j = len(src)
					break
				}
				j += k
				if src[j] == '"' {
					j++
					break
				}
				j += 2
			}
			j = min(j, len(src))
			bw.Write(src[i:j])
			i = j
			continue
		case '{', '[':
			bw.WriteByte(c)
			needIndent = true
		case ',':
			bw.WriteByte(c)
			newline()
		case ':':
			bw.WriteString(": ")
		case '}', ']':
			if needIndent {
				needIndent = false
			} else {
				depth--
				newline()
			}
			bw.WriteByte(c)
		default:
			// A number, true, false or null, or the newline that ends the document.
			j := i + 1
			for j < len(src) && !isJSONPunct(src[j]) {
				j++
			}
			bw.Write(src[i:j])
			i = j
			continue
		}
		i++
	}
	return bw.Flush()
}

// isJSONPunct reports whether c starts a string or is structural outside strings.
func isJSONPunct(c byte) bool {
	switch c {
	case '"', '{', '[', ',', ':', '}', ']':
		return true
	}
	return false
}

// normalize returns a shallow copy of r whose list fields are empty rather than nil, so the
// document always has `objects: []`, `diagnostics: []` and `origins: []`, and whose objects
// carry their value: an object with a Message and no Value gets the Message in protojson form.
// r is not changed.
func normalize(r *explain.Result) (*explain.Result, error) {
	if r == nil {
		return &explain.Result{Objects: []explain.Object{}, Diagnostics: []explain.Diagnostic{}}, nil
	}
	c := *r
	c.Objects = make([]explain.Object, len(r.Objects))
	for i, o := range r.Objects {
		if o.Origins == nil {
			o.Origins = []provenance.FieldTrace{}
		}
		if len(o.Value) == 0 && o.Message != nil {
			js, err := protojson.Marshal(o.Message)
			if err != nil {
				return nil, fmt.Errorf("printing %s %s: %w", shortKind(o.Kind), o.Name, err)
			}
			o.Value = js
		}
		c.Objects[i] = o
	}
	if c.Diagnostics == nil {
		c.Diagnostics = []explain.Diagnostic{}
	}
	return &c, nil
}
