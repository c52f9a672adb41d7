package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
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
	// indent is a newline and the indent of the deepest level so far.
	indent := []byte("\n")
	newline := func() {
		for len(indent) < 1+2*depth {
			indent = append(indent, "  "...)
		}
		bw.Write(indent[:1+2*depth])
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
	pj := protoJSON{done: map[proto.Message][]byte{}}
	for i, o := range r.Objects {
		if o.Origins == nil {
			o.Origins = []provenance.FieldTrace{}
		}
		if len(o.Value) == 0 && o.Message != nil {
			js, err := pj.marshal(o.Message)
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

// protoJSON marshals the Messages of a result's objects to protojson, each message once. The
// filters of a listener's chains are objects of their own as well as parts of their chains (a
// waypoint's are in every chain of their service and kind), so a filter chain is put together
// from the JSON of its filters. The document's Encoder compacts every value, so the spacing
// protojson varies between runs does not show.
type protoJSON struct {
	done map[proto.Message][]byte
}

func (p protoJSON) marshal(m proto.Message) ([]byte, error) {
	if b, ok := p.done[m]; ok {
		return b, nil
	}
	var b []byte
	var err error
	if fc, ok := m.(*listenerv3.FilterChain); ok && filtersFirst(fc) {
		b, err = p.chain(fc)
	} else {
		b, err = protojson.Marshal(m)
	}
	if err != nil {
		return nil, err
	}
	p.done[m] = b
	return b, nil
}

// filtersFirst reports whether filters is the first field protojson prints of fc: it prints
// the fields that are set in their order in the .proto file, and filter_chain_match comes
// before filters there.
func filtersFirst(fc *listenerv3.FilterChain) bool {
	if len(fc.GetFilters()) == 0 {
		return false
	}
	m := fc.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Name() == "filters" {
			return true
		}
		if m.Has(fd) {
			return false
		}
	}
	return false
}

// chain is protojson of fc, whose first field is filters (filtersFirst): the JSON of each of
// its filters, then that of its other fields.
func (p protoJSON) chain(fc *listenerv3.FilterChain) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"filters":[`)
	for i, f := range fc.GetFilters() {
		if i > 0 {
			b.WriteByte(',')
		}
		js, err := p.marshal(f)
		if err != nil {
			return nil, err
		}
		b.Write(js)
	}
	b.WriteByte(']')
	rest := &listenerv3.FilterChain{}
	src, dst := fc.ProtoReflect(), rest.ProtoReflect()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != "filters" {
			dst.Set(fd, v)
		}
		return true
	})
	js, err := protojson.Marshal(rest)
	if err != nil {
		return nil, err
	}
	// The other fields, without the braces around them.
	js = bytes.TrimSpace(js)
	if inner := bytes.TrimSpace(js[1 : len(js)-1]); len(inner) > 0 {
		b.WriteByte(',')
		b.Write(inner)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
