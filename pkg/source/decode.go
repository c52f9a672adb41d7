package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // istio.io/api's UnmarshalJSON methods use the legacy jsonpb; decoding with it keeps their semantics.
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// decodeKube decodes a Kubernetes object the way the API server does with
// fieldValidation=Strict: case-sensitive field names, no unknown or duplicate fields.
func decodeKube[T any, PT interface {
	*T
	object
}](js []byte) (object, []fieldError) {
	o := PT(new(T))
	if problems := decodeStrict(js, o, func() any { return PT(new(T)) }); len(problems) > 0 {
		return nil, problems
	}
	return o, nil
}

// istioEnvelope is an Istio object with its spec left undecoded, so that the spec can be decoded
// strictly (the generated UnmarshalJSON methods allow unknown fields).
type istioEnvelope struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec            json.RawMessage   `json:"spec,omitempty"`
	Status          json.RawMessage   `json:"status,omitempty"`
}

// decodeIstio decodes an Istio object into o, whose TypeMeta, ObjectMeta and Spec are passed
// separately. The spec goes through the same legacy jsonpb decoder as istio.io/api's
// UnmarshalJSON (so values mean what they mean to istiod), with unknown fields rejected.
// The status is not read.
func decodeIstio(js []byte, o object, tm *metav1.TypeMeta, om *metav1.ObjectMeta, spec proto.Message) (object, []fieldError) {
	env := &istioEnvelope{}
	if problems := decodeStrict(js, env, func() any { return &istioEnvelope{} }); len(problems) > 0 {
		return nil, problems
	}
	*tm = env.TypeMeta
	*om = env.Metadata
	if len(env.Spec) == 0 || isNull(env.Spec) {
		return o, nil
	}
	if err := decodeSpec(env.Spec, spec); err != nil {
		problems := checkProto(spec.ProtoReflect().Descriptor(), env.Spec, "spec")
		if len(problems) == 0 {
			problems = []fieldError{{Path: "spec", Message: err.Error()}}
		}
		return nil, problems
	}
	if problems := undefinedEnums(spec.ProtoReflect(), "spec", nil); len(problems) > 0 {
		return nil, problems
	}
	return o, nil
}

// undefinedEnums returns a problem for each enum field of m set to a number the enum does not
// define. The decoders take any number for an enum (`mode: 80`); the API server does not (the
// CRDs type every enum as a string of its names), and istiod and the engines would read an
// undefined value differently.
func undefinedEnums(m protoreflect.Message, path string, out []fieldError) []fieldError {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := joinPath(path, fd.JSONName())
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				out = undefinedValue(fd, l.Get(i), fmt.Sprintf("%s[%d]", p, i), out)
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				out = undefinedValue(fd.MapValue(), mv, fmt.Sprintf("%s[%s]", p, k.String()), out)
				return true
			})
		default:
			out = undefinedValue(fd, v, p, out)
		}
		return len(out) < maxFieldErrors
	})
	return out
}

// undefinedValue is undefinedEnums for one value of field fd.
func undefinedValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string, out []fieldError) []fieldError {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if fd.Enum().Values().ByNumber(v.Enum()) == nil {
			out = append(out, fieldError{Path: path, Message: fmt.Sprintf("invalid value %d (valid values: %s)", v.Enum(), enumNames(fd.Enum()))})
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		out = undefinedEnums(v.Message(), path, out)
	}
	return out
}

// decodeSpec decodes the JSON of an Istio spec into spec as the legacy jsonpb decoder does,
// unknown fields rejected. protojson, several times faster, decodes it first when every number
// in it is a plain integer: protojson also takes integral numbers in fraction or exponent form
// (`1.0`, `1e2`) for integer fields, which jsonpb rejects. What protojson rejects (Go duration
// strings such as `1m`, duplicate or null list entries, jsonpb's other leniencies, and every
// real error) is decoded again by jsonpb, whose result and error stand.
// TestDecodeSpecAsJsonpb holds the two paths to the same results.
func decodeSpec(js []byte, spec proto.Message) error {
	if decodedByProtojson(js, spec) {
		return nil
	}
	u := jsonpb.Unmarshaler{}
	return u.Unmarshal(bytes.NewReader(js), protoadapt.MessageV1Of(spec))
}

// decodeSpecAsClientset is decodeSpec with unknown fields ignored, as the spec's own
// UnmarshalJSON (istio.io/api's, the Istio clientset's decoder) ignores them: protojson decodes
// the spec when it has none (its DiscardUnknown would also drop unknown enum values, which
// jsonpb rejects), and that method decodes what protojson does not.
func decodeSpecAsClientset(js []byte, spec istioSpec) error {
	if decodedByProtojson(js, spec) {
		return nil
	}
	return spec.UnmarshalJSON(js)
}

// decodedByProtojson decodes js into spec with protojson when every number in it is a plain
// integer, and reports whether that decoded it; when not, spec is left empty.
func decodedByProtojson(js []byte, spec proto.Message) bool {
	if !plainNumbers(js) {
		return false
	}
	if protojson.Unmarshal(js, spec) == nil {
		return true
	}
	proto.Reset(spec)
	return false
}

// plainNumbers reports whether every number in the JSON text js is written as an integer: no
// fraction, no exponent, and not -0. Strings (and what looks like a number inside them) are skipped.
func plainNumbers(js []byte) bool {
	for i := 0; i < len(js); i++ {
		switch c := js[i]; {
		case c == '"':
			for i++; i < len(js) && js[i] != '"'; i++ {
				if js[i] == '\\' {
					i++
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if c == '-' && i+1 < len(js) && js[i+1] == '0' {
				// -0: protojson takes it for an unsigned field, jsonpb does not.
				return false
			}
			for ; i < len(js); i++ {
				switch js[i] {
				case '.', 'e', 'E':
					return false
				case '-', '+', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
					continue
				}
				break
			}
			i--
		}
	}
	return true
}

// decodeStrict decodes js into v with sigs.k8s.io/json's strict mode (what the API server uses)
// and turns its errors into located field errors. fresh returns a new value of v's type, used to
// re-run a failed decode with encoding/json, whose type errors carry the byte offset.
func decodeStrict(js []byte, v any, fresh func() any) []fieldError {
	strictErrs, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
		return []fieldError{typeProblem(js, err, fresh)}
	}
	var out []fieldError
	for _, se := range strictErrs {
		if len(out) == maxFieldErrors {
			break
		}
		var fe sigsjson.FieldError
		if !errors.As(se, &fe) {
			out = append(out, fieldError{Message: se.Error()})
			continue
		}
		path := fe.FieldPath()
		what := "unknown field"
		if strings.HasPrefix(se.Error(), "duplicate field") {
			what = "duplicate field"
		}
		out = append(out, fieldError{Path: path, Message: fmt.Sprintf("%s %q", what, lastPathElem(path)), Unknown: what == "unknown field"})
	}
	return out
}

// typeProblem locates a decode error: a wrong JSON type (string where a number belongs) gets the
// path of the offending value; errors of custom decoders (quantities, times) keep their message.
func typeProblem(js []byte, err error, fresh func() any) fieldError {
	stdErr := json.Unmarshal(js, fresh())
	var ute *json.UnmarshalTypeError
	if errors.As(stdErr, &ute) {
		path, got := pathAtOffset(js, ute.Offset)
		if path == "" {
			path = ute.Field
		}
		return fieldError{Path: path, Message: fmt.Sprintf("expected %s, got %s", describeGoType(ute.Type), got)}
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	return fieldError{Message: msg}
}

func describeGoType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return describeGoType(t.Elem())
	default:
		return t.String()
	}
}

// pathAtOffset returns the path (`spec.ports[0].port`) of the JSON value that ends at offset,
// or of the container opened just before it, and a description of that value. encoding/json
// reports a type error's offset just after the offending scalar, or just after the opening
// delimiter of an offending object or list.
func pathAtOffset(js []byte, offset int64) (string, string) {
	type frame struct {
		obj   bool
		key   string
		index int
		path  string
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var stack []*frame
	bestPath, bestDesc := "", "a value of another type"
	// valuePath is the path of the value about to be read.
	valuePath := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.obj {
			return joinPath(f.path, f.key)
		}
		return fmt.Sprintf("%s[%d]", f.path, f.index)
	}
	// advance marks the current container's value as read.
	advance := func() {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if f.obj {
			f.key = ""
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return bestPath, bestDesc
		}
		end := dec.InputOffset()
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				p := valuePath()
				if end <= offset {
					bestPath = p
					bestDesc = map[json.Delim]string{'{': "an object", '[': "a list"}[d]
				}
				stack = append(stack, &frame{obj: d == '{', path: p})
			default:
				stack = stack[:len(stack)-1]
				advance()
			}
			if end >= offset && d != '}' && d != ']' {
				return bestPath, bestDesc
			}
			continue
		}
		if f := topFrame(stack); f != nil && f.obj && f.key == "" {
			f.key, _ = tok.(string)
			continue
		}
		p := valuePath()
		if end <= offset {
			bestPath, bestDesc = p, describeToken(tok)
		}
		advance()
		if end >= offset {
			return bestPath, bestDesc
		}
	}
}

func topFrame[T any](stack []*T) *T {
	if len(stack) == 0 {
		return nil
	}
	return stack[len(stack)-1]
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Number:
		return "number " + v.String()
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	default:
		return fmt.Sprint(v)
	}
}

// lastPathElem is the last field of a path: `foo` for `spec.ports[0].foo`.
func lastPathElem(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}
