package source

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// goTypeWords are words of a Go type or field path that no read error may show.
var goTypeWords = []string{"source.", "rawPage", "liveEnvelope", "Go value of type", "json.RawMessage"}

// FuzzLivePageJSON feeds list pages (seeded with random VirtualService and DestinationRule
// pages) to the decoders of the Istio kinds' JSON lists: decodePage into the raw-spec
// envelopes, and readItemPage (whole items, undecoded). None
// may panic; an error, once pageError has worded it, names no Go type; and a page that
// encoding/json reads as whole items gives readItemPage the same items and continue token.
func FuzzLivePageJSON(f *testing.F) {
	g := &randomJSON{r: rand.New(rand.NewPCG(5, 6))}
	for range 4 {
		f.Add(g.page(1+g.r.IntN(3), g.virtualService))
		f.Add(g.page(1+g.r.IntN(3), g.destinationRule))
	}
	f.Add([]byte(`{"metadata":{"continue":"x"},"items":[{"metadata":{"name":"a"},"spec":7}]}`))
	f.Fuzz(func(t *testing.T, page []byte) {
		noGoTypes := func(what string, err error) {
			if err == nil {
				return
			}
			msg := pageError(err).Error()
			for _, w := range goTypeWords {
				if strings.Contains(msg, w) {
					t.Fatalf("%s: the error names a Go type (%q): %s", what, w, msg)
				}
			}
		}
		var dr rawPage[liveEnvelope[json.RawMessage]]
		noGoTypes("raw page", decodePage(bytes.NewReader(page), &dr))

		cont, items, err := readItemPage(bytes.NewReader(page), new([]byte))
		noGoTypes("item page", err)
		var want rawPage[json.RawMessage]
		if json.Unmarshal(page, &want) != nil || !json.Valid(page) || hasDuplicateListKeys(page) {
			return
		}
		if trimmed := bytes.TrimLeft(page, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
			// encoding/json reads `null` into a page as nothing; a list page is an object, and
			// both decoders refuse anything else.
			if err == nil {
				t.Fatalf("readItemPage reads a page that is not an object:\n%s", page)
			}
			if decodePage(bytes.NewReader(page), &dr) == nil {
				t.Fatalf("decodePage reads a page that is not an object:\n%s", page)
			}
			return
		}
		if err != nil {
			t.Fatalf("readItemPage fails (%v) on a page encoding/json reads:\n%s", err, page)
		}
		if cont != want.Metadata.Continue || len(items) != len(want.Items) {
			t.Fatalf("readItemPage: continue %q, %d items; encoding/json: %q, %d items\n%s", cont, len(items), want.Metadata.Continue, len(want.Items), page)
		}
		for i := range items {
			var got, exp bytes.Buffer
			if json.Compact(&got, items[i]) != nil || json.Compact(&exp, want.Items[i]) != nil || got.String() != exp.String() {
				t.Fatalf("item %d: readItemPage %s, encoding/json %s", i, items[i], want.Items[i])
			}
		}
	})
}

// hasDuplicateListKeys reports whether the page's top level repeats a key, or spells metadata,
// continue or items in another case: encoding/json takes the last one and matches names
// without regard to case, which an API server never makes use of.
func hasDuplicateListKeys(page []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(page, &top) != nil {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(page))
	seen := map[string]bool{}
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if depth == 1 && dec.More() {
				k := strings.ToLower(v)
				if seen[k] || (k != v && (k == "metadata" || k == "items")) {
					return true
				}
				seen[k] = true
			}
		}
	}
	var meta map[string]json.RawMessage
	if m, ok := top["metadata"]; ok && json.Unmarshal(m, &meta) == nil {
		n := 0
		for k := range meta {
			if strings.EqualFold(k, "continue") {
				n++
				if k != "continue" {
					return true
				}
			}
		}
		return n > 1 || bytes.Count(top["metadata"], []byte(`"continue"`)) > 1
	}
	return false
}

// FuzzProtoList feeds protobuf list bodies (seeded with random Pod and Service lists as the API
// server encodes them) to readProtoList: it may not panic, and where client-go's own decoder
// reads the same body, the items must be those client-go gives (without managedFields, and for
// Pods without what SlimPod clears).
func FuzzProtoList(f *testing.F) {
	fill := randfill.NewWithSeed(11).NilChance(0.3).NumElements(0, 2).MaxDepth(4)
	for i := range 4 {
		pods := &corev1.PodList{}
		svcs := &corev1.ServiceList{}
		for range i {
			var p corev1.Pod
			fill.Fill(&p)
			pods.Items = append(pods.Items, p)
			var s corev1.Service
			fill.Fill(&s)
			svcs.Items = append(svcs.Items, s)
		}
		for _, l := range []runtime.Object{pods, svcs} {
			var buf bytes.Buffer
			if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(l, &buf); err != nil {
				f.Fatal(err)
			}
			f.Add(buf.Bytes()[len(protobufMagic):], l == runtime.Object(svcs))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, services bool) {
		newItem, into := newPodItem, runtime.Object(&corev1.PodList{})
		if services {
			newItem, into = newProtoItem[corev1.Service], &corev1.ServiceList{}
		}
		got, _, err := readProtoList(bufio.NewReader(bytes.NewReader(body)), newItem)
		if err != nil {
			return
		}
		full := append(append([]byte{}, protobufMagic...), body...)
		if _, _, derr := scheme.Codecs.UniversalDeserializer().Decode(full, nil, into); derr != nil {
			return
		}
		var want []object
		switch l := into.(type) {
		case *corev1.PodList:
			for i := range l.Items {
				SlimPod(&l.Items[i])
			}
			want = items(l.Items)
		case *corev1.ServiceList:
			want = items(l.Items)
		}
		for _, o := range want {
			o.SetManagedFields(nil)
		}
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("readProtoList decoded\n%+v\nclient-go decodes\n%+v", got, want)
		}
	})
}
