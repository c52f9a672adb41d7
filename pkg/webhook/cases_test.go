package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang/protobuf/jsonpb" //nolint:staticcheck // istio.io/api's UnmarshalJSON methods use the legacy jsonpb.
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	networking "istio.io/api/networking/v1alpha3"
	security "istio.io/api/security/v1beta1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/golden"
)

// checkers runs pkg/webhook on the spec of each kind the case files hold.
var checkers = map[string]struct {
	spec  func() proto.Message
	check func(Meta, proto.Message) []Problem
}{
	"DestinationRule": {func() proto.Message { return &networking.DestinationRule{} },
		func(m Meta, s proto.Message) []Problem { return DestinationRule(m, s.(*networking.DestinationRule)) }},
	"AuthorizationPolicy": {func() proto.Message { return &security.AuthorizationPolicy{} },
		func(m Meta, s proto.Message) []Problem {
			return AuthorizationPolicy(m, s.(*security.AuthorizationPolicy))
		}},
	"ServiceEntry": {func() proto.Message { return &networking.ServiceEntry{} },
		func(m Meta, s proto.Message) []Problem { return ServiceEntry(m, s.(*networking.ServiceEntry)) }},
	"VirtualService": {func() proto.Message { return &networking.VirtualService{} },
		func(m Meta, s proto.Message) []Problem { return VirtualService(m, s.(*networking.VirtualService)) }},
	"Sidecar": {func() proto.Message { return &networking.Sidecar{} },
		func(m Meta, s proto.Message) []Problem { return Sidecar(m, s.(*networking.Sidecar)) }},
	"RequestAuthentication": {func() proto.Message { return &security.RequestAuthentication{} },
		func(m Meta, s proto.Message) []Problem {
			return RequestAuthentication(m, s.(*security.RequestAuthentication))
		}},
	"WorkloadEntry": {func() proto.Message { return &networking.WorkloadEntry{} },
		func(m Meta, s proto.Message) []Problem { return WorkloadEntry(m, s.(*networking.WorkloadEntry)) }},
	"EnvoyFilter": {func() proto.Message { return &networking.EnvoyFilter{} },
		func(m Meta, s proto.Message) []Problem { return EnvoyFilter(m, s.(*networking.EnvoyFilter)) }},
	"PeerAuthentication": {func() proto.Message { return &security.PeerAuthentication{} },
		func(m Meta, s proto.Message) []Problem {
			return PeerAuthentication(m, s.(*security.PeerAuthentication))
		}},
}

// TestCases runs every object of testdata/cases/*.yaml (one object per rule of Istio's
// validation, named after it) through pkg/webhook and compares the problems with the file's
// .golden (-update rewrites it). Every object must be rejected: an object without a problem
// means its rule is missing. The conformance test TestWebhookCasesAgreeWithIstio runs Istio's
// own validation on the same files and requires the same errors.
func TestCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "cases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
			for {
				var obj struct {
					Kind     string `json:"kind"`
					Metadata struct {
						Name        string            `json:"name"`
						Namespace   string            `json:"namespace"`
						Annotations map[string]string `json:"annotations"`
						Labels      map[string]string `json:"labels"`
					} `json:"metadata"`
					Spec json.RawMessage `json:"spec"`
				}
				if err := dec.Decode(&obj); err != nil {
					if err.Error() == "EOF" {
						break
					}
					t.Fatal(err)
				}
				c, ok := checkers[obj.Kind]
				if !ok {
					t.Fatalf("%s: no checker for kind %q", obj.Metadata.Name, obj.Kind)
				}
				spec := c.spec()
				if err := (&jsonpb.Unmarshaler{}).Unmarshal(bytes.NewReader(obj.Spec), protoadapt.MessageV1Of(spec)); err != nil {
					t.Fatalf("%s: %v", obj.Metadata.Name, err)
				}
				ps := c.check(Meta{Name: obj.Metadata.Name, Namespace: obj.Metadata.Namespace, Annotations: obj.Metadata.Annotations, Labels: obj.Metadata.Labels}, spec)
				if len(ps) == 0 {
					t.Errorf("%s %s: no problem; every case object must be rejected", obj.Kind, obj.Metadata.Name)
				}
				fmt.Fprintf(&out, "%s %s\n", obj.Kind, obj.Metadata.Name)
				for _, p := range ps {
					fmt.Fprintf(&out, "  %s: %s\n    %s\n", p.Field, p.Webhook, p.Istiod)
				}
			}
			golden.Assert(t, []byte(out.String()), strings.TrimSuffix(f, ".yaml")+".golden")
		})
	}
}
