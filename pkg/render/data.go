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
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/parallel"
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
	return p.write(w, n, []*explain.Result{n}, 2)
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
	return p.write(w, l, l.Items, 4)
}

// write prints the document v, whose results are rs (normalized copies, which it may change),
// their objects at depth levels of nesting: 2 in a result (`{"objects":[{`), 4 in a list
// (`{"items":[{"objects":[{`).
func (p dataPrinter) write(w io.Writer, v any, rs []*explain.Result, depth int) error {
	if !p.yaml {
		return writeJSON(w, v, rs, depth)
	}
	compact, err := compactJSON(v)
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(compact)
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// compactJSON is v as the document's Encoder writes it, without the final newline.
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// objectsKey is how the objects of a result begin in the compact document.
var objectsKey = []byte(`"objects":[]`)

// writeJSON writes the document v indented, its results' objects (most of a large document:
// a waypoint's is megabytes of filters) encoded and indented on every core. The rest of the
// document is encoded with the objects left out, and each result's objects are put back in
// their place, `"objects":[]`, which only the key of a result's objects can spell in compact
// JSON (a string's quotes inside a value are escaped). The bytes are those of writeIndented
// on the whole compact document (TestWriteJSONMatchesIndent).
func writeJSON(w io.Writer, v any, rs []*explain.Result, depth int) error {
	objs := make([][]explain.Object, len(rs))
	for i, r := range rs {
		objs[i], r.Objects = r.Objects, []explain.Object{}
	}
	skeleton, err := compactJSON(v)
	for i, r := range rs {
		r.Objects = objs[i]
	}
	if err != nil {
		return err
	}
	type job struct {
		o   *explain.Object
		out []byte
		err error
	}
	var jobs []*job
	for i := range objs {
		for j := range objs[i] {
			jobs = append(jobs, &job{o: &objs[i][j]})
		}
	}
	if bytes.Count(skeleton, objectsKey) != len(rs) {
		// Not the document this expects: the objects in place, indented in one pass.
		compact, err := compactJSON(v)
		if err != nil {
			return err
		}
		return writeIndented(w, compact)
	}
	parallel.Each(len(jobs), func(k int) {
		jb := jobs[k]
		jb.out, jb.err = indentObject(jb.o, depth)
	})
	bw := bufio.NewWriterSize(w, 64<<10)
	in := indenter{w: bw}
	k := 0
	for i := range rs {
		at := bytes.Index(skeleton, objectsKey) + len(objectsKey) - 2
		in.write(skeleton[:at])
		skeleton = skeleton[at+2:]
		if len(objs[i]) == 0 {
			bw.WriteString("[]")
			continue
		}
		bw.WriteByte('[')
		in.depth++
		for j := range objs[i] {
			jb := jobs[k]
			k++
			if jb.err != nil {
				return jb.err
			}
			if j > 0 {
				bw.WriteByte(',')
			}
			in.newline()
			bw.Write(jb.out)
		}
		in.depth--
		in.newline()
		bw.WriteByte(']')
	}
	in.write(skeleton)
	bw.WriteByte('\n')
	return bw.Flush()
}

// valueMark is how an object whose value is the number 0 spells it in compact JSON, followed
// by the next key: only keys of the Object itself can spell it (a string's quotes inside a
// value are escaped, and Summary has no such keys).
var valueMark = []byte(`"value":0,"origins":`)

// indentObject is the object o indented at depth, as writeIndented indents the compact
// document: the object's fields are encoded with a placeholder value, and the value, most of
// the bytes of a filter or a cluster, is indented from its own JSON (protojson puts spaces in
// it) rather than compacted and checked again by the Encoder.
func indentObject(o *explain.Object, depth int) ([]byte, error) {
	c := *o
	value := c.Value
	if len(value) > 0 {
		c.Value = json.RawMessage("0")
	}
	compact, err := compactJSON(&c)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	// Indenting adds to each line the indent of its depth: about a half more on a waypoint's
	// filters, sized so most never grow.
	b.Grow(2 * (len(compact) + len(value)))
	in := indenter{w: &b, depth: depth}
	at := bytes.Index(compact, valueMark)
	if len(value) == 0 || at < 0 {
		if len(value) > 0 {
			// Not the object this expects: encoded whole.
			if compact, err = compactJSON(o); err != nil {
				return nil, err
			}
		}
		in.write(compact)
		return b.Bytes(), nil
	}
	at += len(`"value":`)
	in.write(compact[:at])
	in.loose = true
	in.write(bytes.TrimSpace(value))
	in.loose = false
	in.write(compact[at+1:])
	return b.Bytes(), nil
}

// writeIndented writes the compact JSON document src to w indented by two spaces: the bytes
// json.Indent(dst, src, "", "  ") produces, written as they are made. json.Indent steps its
// scanner over every byte and builds the whole indented document (more than twice the compact
// one for an answer with deep filters) before it is written; src, from an Encoder, is already
// valid and compact, so only strings, punctuation and the runs between them need looking at.
// TestWriteIndentedMatchesIndent compares the two.
func writeIndented(w io.Writer, src []byte) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	in := indenter{w: bw}
	in.write(src)
	return bw.Flush()
}

// indenter indents compact JSON as writeIndented does, from depth levels of nesting: a document
// can be written in parts, and a value nested depth levels deep indented on its own.
type indenter struct {
	w interface {
		io.Writer
		io.ByteWriter
		io.StringWriter
	}
	depth int
	// needIndent delays the newline after { or [ so an empty object or array stays {} or [].
	needIndent bool
	// indent is a newline and the indent of the deepest level so far.
	indent []byte
	// loose skips the spaces between tokens, for JSON that may not be compact.
	loose bool
}

func (in *indenter) newline() {
	if len(in.indent) == 0 {
		in.indent = []byte("\n")
	}
	for len(in.indent) < 1+2*in.depth {
		in.indent = append(in.indent, "  "...)
	}
	in.w.Write(in.indent[:1+2*in.depth])
}

// write writes src, compact JSON that ends outside a string.
func (in *indenter) write(src []byte) {
	bw := in.w
	for i := 0; i < len(src); {
		c := src[i]
		if in.loose && isJSONSpace(c) {
			i++
			continue
		}
		if in.needIndent && c != '}' && c != ']' {
			in.needIndent = false
			in.depth++
			in.newline()
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
			in.needIndent = true
		case ',':
			bw.WriteByte(c)
			in.newline()
		case ':':
			bw.WriteString(": ")
		case '}', ']':
			if in.needIndent {
				in.needIndent = false
			} else {
				in.depth--
				in.newline()
			}
			bw.WriteByte(c)
		default:
			// A number, true, false or null, or the newline that ends the document.
			j := i + 1
			for j < len(src) && !isJSONPunct(src[j]) && !(in.loose && isJSONSpace(src[j])) {
				j++
			}
			bw.Write(src[i:j])
			i = j
			continue
		}
		i++
	}
}

// isJSONSpace reports whether c is white space between JSON tokens.
func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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
	var ms []proto.Message
	for _, o := range r.Objects {
		if len(o.Value) == 0 && o.Message != nil {
			ms = append(ms, o.Message)
		}
	}
	pj.prepare(ms)
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

// prepare gives protojson, on every core, what marshal will give it for ms, each message once:
// a message, or the filters of a chain put together from them (a waypoint's document holds
// megabytes of them). A message that fails is left for marshal, which reports it.
func (p protoJSON) prepare(ms []proto.Message) {
	var todo []proto.Message
	seen := map[proto.Message]bool{}
	add := func(m proto.Message) {
		if _, done := p.done[m]; !done && !seen[m] {
			seen[m] = true
			todo = append(todo, m)
		}
	}
	for _, m := range ms {
		if fc, ok := m.(*listenerv3.FilterChain); ok && filtersFirst(fc) {
			for _, f := range fc.GetFilters() {
				add(f)
			}
			continue
		}
		add(m)
	}
	out := make([][]byte, len(todo))
	parallel.Each(len(todo), func(i int) {
		if b, err := protojson.Marshal(todo[i]); err == nil {
			out[i] = b
		}
	})
	for i, m := range todo {
		if out[i] != nil {
			p.done[m] = out[i]
		}
	}
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
