package source

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"
	"testing/iotest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// encodeProto is a list as the API server sends it in protobuf: the magic, then the envelope.
func encodeProto(t *testing.T, list runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), protobufMagic) {
		t.Fatal("the serializer wrote no magic")
	}
	return buf.Bytes()
}

// clientGoItems decodes body as client-go's typed clients do, and drops managedFields as
// listAll does.
func clientGoItems(t *testing.T, body []byte, into runtime.Object) []object {
	t.Helper()
	if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, into); err != nil {
		t.Fatal(err)
	}
	var out []object
	switch l := into.(type) {
	case *corev1.PodList:
		out = items(l.Items)
	case *corev1.ServiceList:
		out = items(l.Items)
	}
	for _, o := range out {
		o.SetManagedFields(nil)
	}
	return out
}

// TestProtoListsDecodeAsClientGo fills random Pods and Services (managedFields included),
// encodes their lists as the API server does, and requires readProtoList, reading one byte at
// a time, to give what client-go's decoder gives without managedFields, and for Pods without
// what SlimPod clears.
func TestProtoListsDecodeAsClientGo(t *testing.T) {
	f := randfill.NewWithSeed(7).NilChance(0.2).NumElements(0, 3).MaxDepth(6)
	slimmed, proxies := 0, 0
	for round := range 40 {
		pods := &corev1.PodList{ListMeta: metav1.ListMeta{Continue: "next-page", ResourceVersion: "12"}}
		for range 1 + round%5 {
			var p corev1.Pod
			f.Fill(&p)
			p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}})
			// The proxy container keeps its args (the proxy's type), as a container or as a
			// native sidecar.
			for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
				if len(cs) > 0 && round%3 != 2 {
					cs[len(cs)-1].Name = model.ProxyContainer
					cs[len(cs)-1].Args = []string{"proxy", "router", "--domain", "x"}
				}
			}
			pods.Items = append(pods.Items, p)
		}
		var svcs corev1.ServiceList
		for range round % 4 {
			var s corev1.Service
			f.Fill(&s)
			svcs.Items = append(svcs.Items, s)
		}
		for _, tc := range []struct {
			list    runtime.Object
			into    runtime.Object
			newItem func() protoItem
			cont    string
		}{
			{pods, &corev1.PodList{}, newPodItem, "next-page"},
			{&svcs, &corev1.ServiceList{}, newProtoItem[corev1.Service], ""},
		} {
			body := encodeProto(t, tc.list)
			want := clientGoItems(t, body, tc.into)
			for _, o := range want {
				if p, ok := o.(*corev1.Pod); ok {
					full := p.DeepCopy()
					if SlimPod(p); !reflect.DeepEqual(p, full) {
						slimmed++
					}
				}
			}
			br := bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(body[len(protobufMagic):])), 16)
			got, cont, err := readProtoList(br, tc.newItem)
			if err != nil {
				t.Fatalf("round %d: %T: %v", round, tc.list, err)
			}
			if cont != tc.cont {
				t.Errorf("round %d: continue %q, want %q", round, cont, tc.cont)
			}
			if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
				t.Fatalf("round %d: %T decoded\n%+v\nclient-go decodes\n%+v", round, tc.list, got, want)
			}
			for _, o := range got {
				if o.GetManagedFields() != nil {
					t.Fatalf("round %d: managedFields decoded", round)
				}
				if p, ok := o.(*corev1.Pod); ok {
					if typ, _ := model.ProxyType(p); typ == model.ProxyRouter {
						proxies++
					}
				}
			}
		}
	}
	// The comparison says something about the fields left out only if some random Pods had some.
	if slimmed < 20 {
		t.Fatalf("only %d random Pods had fields that SlimPod clears", slimmed)
	}
	if proxies < 10 {
		t.Fatalf("only %d random Pods kept the args of their proxy container", proxies)
	}
}

func TestProtoListRejectsTruncatedBodies(t *testing.T) {
	f := randfill.NewWithSeed(3).NilChance(0.2).NumElements(1, 2).MaxDepth(5)
	pods := &corev1.PodList{}
	for range 3 {
		var p corev1.Pod
		f.Fill(&p)
		pods.Items = append(pods.Items, p)
	}
	body := encodeProto(t, pods)[len(protobufMagic):]
	// Where the envelope's raw list ends: past it only the envelope's own short fields follow.
	var u runtime.Unknown
	if err := u.Unmarshal(body); err != nil {
		t.Fatal(err)
	}
	rawEnd := bytes.Index(body, u.Raw) + len(u.Raw)
	for cut := 0; cut < rawEnd; cut += 1 + cut/50 {
		_, _, err := readProtoList(bufio.NewReader(bytes.NewReader(body[:cut])), newPodItem)
		if err == nil {
			t.Fatalf("a body cut at %d of %d bytes (the list ends at %d) decodes", cut, len(body), rawEnd)
		}
	}
	if _, _, err := readProtoList(bufio.NewReader(bytes.NewReader(body)), newPodItem); err != nil {
		t.Fatalf("the whole body: %v", err)
	}
}
