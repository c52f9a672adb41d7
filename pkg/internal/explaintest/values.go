package explaintest

import (
	"fmt"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// LeafValues returns the populated scalar leaves of m by output path (the paths of Leaves),
// each spelled as the engines spell a traced value: numbers and booleans in decimal, a Duration
// as Go prints it (`10s`), an envoy.type.v3.Percent as `50%`, an enum by its name. Leaves of
// other kinds (strings, bytes, Structs) are left out.
func LeafValues(m proto.Message) map[string]string {
	out := map[string]string{}
	if m != nil {
		leafValues(m.ProtoReflect(), "", out)
	}
	return out
}

// TraceMismatches compares the value of every trace of obj (except those marked NotSent) with
// the field of obj.Message at its path, when LeafValues spells that field. It returns the
// traces that disagree and the number compared.
func TraceMismatches(obj explain.Object) (mismatches []string, compared int) {
	if obj.Message == nil {
		return nil, 0
	}
	values := LeafValues(obj.Message)
	for _, tr := range obj.Origins {
		if tr.NotSent || tr.Value == "" {
			continue
		}
		v, ok := values[tr.Path]
		if !ok {
			continue
		}
		compared++
		if v != tr.Value {
			mismatches = append(mismatches, fmt.Sprintf("%s: traced %q, the field holds %q", tr.Path, tr.Value, v))
		}
	}
	return mismatches, compared
}

func leafValues(m protoreflect.Message, path string, out map[string]string) {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Any":
		a, ok := m.Interface().(*anypb.Any)
		if !ok {
			return
		}
		inner, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{Resolver: protoregistry.GlobalTypes})
		if err == nil {
			leafValues(inner.ProtoReflect(), path, out)
		}
		return
	case "google.protobuf.Duration":
		if d, ok := m.Interface().(*durationpb.Duration); ok {
			out[path] = d.AsDuration().String()
		}
		return
	case "google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt32Value", "google.protobuf.UInt64Value", "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		fd := m.Descriptor().Fields().ByName("value")
		out[path] = scalar(fd, m.Get(fd))
		return
	case "envoy.type.v3.Percent":
		out[path] = strconv.FormatFloat(m.Get(m.Descriptor().Fields().ByName("value")).Float(), 'f', -1, 64) + "%"
		return
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := join(path, fd.JSONName())
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				leaf(fd, l.Get(i), fmt.Sprintf("%s[%d]", p, i), out)
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				leaf(fd.MapValue(), mv, fmt.Sprintf("%s[%s]", p, k.String()), out)
				return true
			})
		default:
			leaf(fd, v, p, out)
		}
		return true
	})
}

// leaf records one value of field fd at path, walking into messages.
func leaf(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string, out map[string]string) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		leafValues(v.Message(), path, out)
	case protoreflect.StringKind, protoreflect.BytesKind:
	default:
		out[path] = scalar(fd, v)
	}
}

// scalar spells a number, boolean or enum value.
func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	}
	return v.String()
}

// RequireTracesMatch fails t for every trace of an object of res whose value disagrees with
// the field of the object's Message at its path (TraceMismatches). It returns the number of
// traces compared.
func RequireTracesMatch(t testing.TB, res *explain.Result) int {
	t.Helper()
	n := 0
	for _, obj := range res.Objects {
		bad, compared := TraceMismatches(obj)
		n += compared
		for _, b := range bad {
			t.Errorf("%s: %s", obj.Name, b)
		}
	}
	return n
}
