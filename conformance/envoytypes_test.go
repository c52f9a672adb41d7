package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	_ "istio.io/istio/pkg/config/validation/envoyfilter"
)

// TestIstioMessageTypesAreIstios requires pkg/webhook/istio_message_types.txt to list the
// message types registered in this module's test binary, which links Istio's EnvoyFilter
// validation (and through pkg/config/xds every Envoy extension) and its pilot, as istiod does:
// the types whose Any values Istio's validation can decode, which pkg/webhook accepts unchecked
// when the plugin does not register them. -update rewrites the list.
func TestIstioMessageTypesAreIstios(t *testing.T) {
	var names []string
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		names = append(names, string(mt.Descriptor().FullName()))
		return true
	})
	slices.Sort(names)
	path := filepath.Join("..", "pkg", "webhook", "istio_message_types.txt")
	want := strings.Join(names, "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from the %d message types Istio's validation registers (go test -run TestIstioMessageTypesAreIstios -update rewrites it)", path, len(names))
	}
}
