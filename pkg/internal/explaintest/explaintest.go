package explaintest

import (
	"fmt"
	"sort"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// RequireEveryFieldTraced fails t unless, for every object of res that carries a Message, each
// populated leaf of the message is covered by one of the object's traces (a trace covers its
// own path and everything below it), and no trace marked NotSent names a field that is in fact
// populated. Placeholder traces (shadows without a value of their own) cover nothing.
func RequireEveryFieldTraced(t testing.TB, res *explain.Result) {
	t.Helper()
	if res == nil {
		t.Fatalf("nil result")
		return
	}
	for _, obj := range res.Objects {
		if obj.Message == nil {
			continue
		}
		for _, p := range Uncovered(obj) {
			t.Errorf("%s: field %s is not traced", obj.Name, p)
		}
		for _, p := range SentButMarkedNotSent(obj) {
			t.Errorf("%s: field %s is in the message but traced as not sent", obj.Name, p)
		}
	}
}

// Uncovered returns the populated leaves of obj.Message that no trace covers.
func Uncovered(obj explain.Object) []string {
	var out []string
	for _, leaf := range Leaves(obj.Message) {
		covered := false
		for _, tr := range obj.Origins {
			if tr.NotSent || tr.Origin.Layer == provenance.LayerNone {
				continue
			}
			if provenance.Covers(tr.Path, leaf) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, leaf)
		}
	}
	return out
}

// SentButMarkedNotSent returns the NotSent trace paths at or above a populated leaf.
func SentButMarkedNotSent(obj explain.Object) []string {
	leaves := Leaves(obj.Message)
	var out []string
	for _, tr := range obj.Origins {
		if !tr.NotSent {
			continue
		}
		for _, leaf := range leaves {
			if provenance.Covers(tr.Path, leaf) {
				out = append(out, tr.Path)
				break
			}
		}
	}
	return out
}

// Leaves returns the output path of every populated leaf of m, in the Envoy JSON spelling:
// message fields by JSON name, list elements as `[i]`, map entries as `[key]`, an Any as its
// unpacked message under the same path, a google.protobuf.Struct as a JSON object (`.key`).
// Scalars, enums, well-known wrappers, durations and empty messages are leaves.
func Leaves(m proto.Message) []string {
	if m == nil {
		return nil
	}
	var out []string
	walkMessage(m.ProtoReflect(), "", &out)
	return out
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func walkMessage(m protoreflect.Message, path string, out *[]string) {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Any":
		a, ok := m.Interface().(*anypb.Any)
		if !ok {
			a = &anypb.Any{}
			proto.Merge(a, m.Interface())
		}
		inner, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{Resolver: protoregistry.GlobalTypes})
		if err != nil {
			*out = append(*out, path)
			return
		}
		walkMessage(inner.ProtoReflect(), path, out)
		return
	case "google.protobuf.Struct":
		walkStruct(m, path, out)
		return
	case "google.protobuf.Value":
		walkValue(m, path, out)
		return
	case "google.protobuf.ListValue":
		walkList(m, path, out)
		return
	case "google.protobuf.Duration", "google.protobuf.Timestamp", "google.protobuf.FieldMask", "google.protobuf.Empty",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue",
		"google.protobuf.Int32Value", "google.protobuf.Int64Value", "google.protobuf.UInt32Value", "google.protobuf.UInt64Value",
		"google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		*out = append(*out, path)
		return
	}
	type field struct {
		fd protoreflect.FieldDescriptor
		v  protoreflect.Value
	}
	var fields []field
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		fields = append(fields, field{fd, v})
		return true
	})
	if len(fields) == 0 {
		*out = append(*out, path)
		return
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].fd.Number() < fields[j].fd.Number() })
	for _, f := range fields {
		p := join(path, f.fd.JSONName())
		switch {
		case f.fd.IsList():
			l := f.v.List()
			for i := 0; i < l.Len(); i++ {
				ep := fmt.Sprintf("%s[%d]", p, i)
				if f.fd.Message() != nil {
					walkMessage(l.Get(i).Message(), ep, out)
				} else {
					*out = append(*out, ep)
				}
			}
		case f.fd.IsMap():
			mp := f.v.Map()
			var keys []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			for _, k := range keys {
				ep := fmt.Sprintf("%s[%s]", p, k.String())
				if f.fd.MapValue().Message() != nil {
					walkMessage(mp.Get(k).Message(), ep, out)
				} else {
					*out = append(*out, ep)
				}
			}
		case f.fd.Message() != nil:
			walkMessage(f.v.Message(), p, out)
		default:
			*out = append(*out, p)
		}
	}
}

// walkStruct walks a google.protobuf.Struct as the JSON object it stands for.
func walkStruct(m protoreflect.Message, path string, out *[]string) {
	fd := m.Descriptor().Fields().ByName("fields")
	mp := m.Get(fd).Map()
	if mp.Len() == 0 {
		*out = append(*out, path)
		return
	}
	var keys []string
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k.String())
		return true
	})
	sort.Strings(keys)
	for _, k := range keys {
		walkValue(mp.Get(protoreflect.ValueOfString(k).MapKey()).Message(), join(path, k), out)
	}
}

func walkValue(m protoreflect.Message, path string, out *[]string) {
	od := m.Descriptor().Oneofs().ByName("kind")
	fd := m.WhichOneof(od)
	if fd == nil {
		*out = append(*out, path)
		return
	}
	switch fd.Name() {
	case "struct_value":
		walkStruct(m.Get(fd).Message(), path, out)
	case "list_value":
		walkList(m.Get(fd).Message(), path, out)
	default:
		*out = append(*out, path)
	}
}

func walkList(m protoreflect.Message, path string, out *[]string) {
	l := m.Get(m.Descriptor().Fields().ByName("values")).List()
	if l.Len() == 0 {
		*out = append(*out, path)
		return
	}
	for i := 0; i < l.Len(); i++ {
		walkValue(l.Get(i).Message(), fmt.Sprintf("%s[%d]", path, i), out)
	}
}
