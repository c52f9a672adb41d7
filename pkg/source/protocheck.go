package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/strdist"
)

// fieldError is one problem in a JSON document decoded against a proto message, at a path in
// CRD spelling (`spec.trafficPolicy.connectionPool.tcp.maxConnections`, `spec.subsets[0]`).
type fieldError struct {
	Path    string
	Message string
	// Unknown marks an unknown field (the only kind of problem istiod tolerates in a mesh config).
	Unknown bool
}

// maxFieldErrors bounds how many problems are reported for one object.
const maxFieldErrors = 10

// checkProto finds the fields of raw that the legacy jsonpb decoder (github.com/golang/protobuf
// jsonpb, which istio.io/api's generated UnmarshalJSON methods use) would reject when unknown
// fields are disallowed. jsonpb reports neither a path nor a position, so this walk mirrors its
// rules (proto or JSON field names, quoted integers, Go durations, enum names or numbers, null
// as "unset") to say which field is wrong.
func checkProto(md protoreflect.MessageDescriptor, raw []byte, path string) []fieldError {
	c := &protoChecker{}
	c.message(md, raw, path)
	return c.errs
}

type protoChecker struct {
	errs []fieldError
}

func (c *protoChecker) fail(path string, unknown bool, format string, args ...any) {
	if len(c.errs) < maxFieldErrors {
		c.errs = append(c.errs, fieldError{Path: path, Message: fmt.Sprintf(format, args...), Unknown: unknown})
	}
}

func (c *protoChecker) message(md protoreflect.MessageDescriptor, raw []byte, path string) {
	if isNull(raw) {
		return
	}
	if md.FullName().Parent() == "google.protobuf" {
		if c.wellKnown(md, raw, path) {
			return
		}
	}
	keys, vals, err := orderedObject(raw)
	if err != nil {
		c.fail(path, false, "expected an object, got %s", describeJSON(raw))
		return
	}
	fields := md.Fields()
	for i, key := range keys {
		fd := fields.ByJSONName(key)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(key))
		}
		if fd == nil {
			c.fail(joinPath(path, key), true, "unknown field %q%s", key, suggestField(md, key))
			continue
		}
		if isNull(vals[i]) {
			continue
		}
		c.value(fd, vals[i], joinPath(path, key))
	}
}

// wellKnown checks the google.protobuf types jsonpb decodes specially; it returns false for the
// ones decoded as ordinary messages.
func (c *protoChecker) wellKnown(md protoreflect.MessageDescriptor, raw []byte, path string) bool {
	switch md.Name() {
	case "Duration":
		s, ok := jsonString(raw)
		if !ok {
			c.fail(path, false, "expected a duration such as \"5s\" or \"100ms\", got %s", describeJSON(raw))
		} else if _, err := time.ParseDuration(s); err != nil {
			c.fail(path, false, "invalid duration %q (use a duration such as 5s, 100ms or 1h30m)", s)
		}
	case "Timestamp":
		s, ok := jsonString(raw)
		if !ok {
			c.fail(path, false, "expected an RFC 3339 timestamp, got %s", describeJSON(raw))
		} else if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			c.fail(path, false, "invalid timestamp %q (use RFC 3339, e.g. 2024-01-02T15:04:05Z)", s)
		}
	case "BoolValue", "BytesValue", "StringValue", "Int32Value", "UInt32Value", "FloatValue",
		"Int64Value", "UInt64Value", "DoubleValue":
		c.singular(md.Fields().ByNumber(1), raw, path)
	case "Struct":
		if _, _, err := orderedObject(raw); err != nil {
			c.fail(path, false, "expected an object, got %s", describeJSON(raw))
		}
	case "ListValue":
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			c.fail(path, false, "expected a list, got %s", describeJSON(raw))
		}
	case "Value", "Any":
	default:
		return false
	}
	return true
}

func (c *protoChecker) value(fd protoreflect.FieldDescriptor, raw []byte, path string) {
	switch {
	case fd.IsList():
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			c.fail(path, false, "expected a list, got %s", describeJSON(raw))
			return
		}
		for i, item := range items {
			c.singular(fd, item, fmt.Sprintf("%s[%d]", path, i))
		}
	case fd.IsMap():
		keys, vals, err := orderedObject(raw)
		if err != nil {
			c.fail(path, false, "expected a map, got %s", describeJSON(raw))
			return
		}
		kfd, vfd := fd.MapKey(), fd.MapValue()
		for i, key := range keys {
			p := fmt.Sprintf("%s[%s]", path, key)
			if kfd.Kind() != protoreflect.StringKind {
				if msg := scalarProblem(kfd, []byte(key)); msg != "" {
					c.fail(p, false, "invalid key %q (expected %s)", key, scalarWant(kfd))
					continue
				}
			}
			c.singular(vfd, vals[i], p)
		}
	default:
		c.singular(fd, raw, path)
	}
}

func (c *protoChecker) singular(fd protoreflect.FieldDescriptor, raw []byte, path string) {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		c.message(fd.Message(), raw, path)
		return
	}
	if msg := scalarProblem(fd, raw); msg != "" {
		c.fail(path, false, "%s", msg)
	}
}

// scalarProblem mirrors jsonpb's unmarshalSingularValue for scalar kinds and returns what is
// wrong with raw, or "".
func scalarProblem(fd protoreflect.FieldDescriptor, raw []byte) string {
	var err error
	switch fd.Kind() {
	case protoreflect.BoolKind:
		err = json.Unmarshal(raw, new(bool))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		err = json.Unmarshal(trimQuote(raw), new(int32))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		err = json.Unmarshal(trimQuote(raw), new(int64))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		err = json.Unmarshal(trimQuote(raw), new(uint32))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		err = json.Unmarshal(trimQuote(raw), new(uint64))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		switch string(raw) {
		case `"NaN"`, `"Infinity"`, `"-Infinity"`:
			return ""
		}
		err = json.Unmarshal(trimQuote(raw), new(float64))
	case protoreflect.StringKind:
		err = json.Unmarshal(raw, new(string))
	case protoreflect.BytesKind:
		err = json.Unmarshal(raw, new([]byte))
	case protoreflect.EnumKind:
		if s, ok := jsonString(raw); ok {
			if fd.Enum().Values().ByName(protoreflect.Name(s)) == nil {
				return fmt.Sprintf("invalid value %q (valid values: %s)", s, enumNames(fd.Enum()))
			}
			return ""
		}
		err = json.Unmarshal(raw, new(int32))
	default:
		return ""
	}
	if err != nil {
		return fmt.Sprintf("expected %s, got %s", scalarWant(fd), describeJSON(raw))
	}
	return ""
}

// scalarWant spells what a scalar field accepts.
func scalarWant(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return "true or false"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "a 32-bit integer"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return "a 64-bit integer"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "a non-negative 32-bit integer"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "a non-negative 64-bit integer"
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "a number"
	case protoreflect.BytesKind:
		return "a base64 string"
	case protoreflect.EnumKind:
		return "one of " + enumNames(fd.Enum())
	default:
		return "a string"
	}
}

func enumNames(ed protoreflect.EnumDescriptor) string {
	vals := ed.Values()
	names := make([]string, 0, vals.Len())
	for i := 0; i < vals.Len(); i++ {
		names = append(names, string(vals.Get(i).Name()))
	}
	return strings.Join(names, ", ")
}

// suggestField returns ` (did you mean "x"?)` for the field of md closest to key, or "".
func suggestField(md protoreflect.MessageDescriptor, key string) string {
	best, bestDist := "", 3
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		name := fields.Get(i).JSONName()
		d := strdist.Levenshtein(strings.ToLower(key), strings.ToLower(name))
		if d < bestDist || (d == bestDist && best != "" && name < best) {
			best, bestDist = name, d
		}
	}
	if best == "" || bestDist >= len(key)/2+1 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// orderedObject splits a JSON object into its keys and values, in document order.
func orderedObject(raw []byte) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, fmt.Errorf("not an object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, key)
		vals = append(vals, v)
	}
	return keys, vals, nil
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

func jsonString(raw []byte) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func trimQuote(raw []byte) []byte {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		return raw[1 : len(raw)-1]
	}
	return raw
}

// describeJSON spells a JSON value for an error message: `string "abc"`, `number 5`, `a list`.
func describeJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		s, _ := jsonString(raw)
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		return fmt.Sprintf("string %q", s)
	case 't', 'f':
		return string(raw)
	case 'n':
		return "null"
	default:
		return "number " + string(raw)
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
