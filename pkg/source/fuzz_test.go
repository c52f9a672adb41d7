package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadBytes checks that no input makes the file loader panic, even inside a decoder (a
// recovered decoder panic shows up as a "cannot decode this object" issue).
func FuzzLoadBytes(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.*")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{kind: Pod}, 3, null]\n"))
	f.Add([]byte("{\"kind\":\"DestinationRuleList\",\"apiVersion\":\"networking.istio.io/v1\",\"items\":[{\"metadata\":{\"name\":\"a\"},\"spec\":{\"subsets\":[{\"labels\":7}]}}]}"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := newLoader(Spec{DefaultNamespace: "default", IstioNamespace: DefaultIstioNamespace})
		l.loadBytes("f.yaml", data)
		for _, i := range l.issues {
			if strings.HasPrefix(i.Message, "cannot decode this object:") {
				t.Fatalf("decoder panic: %s", i.Message)
			}
		}
		for k := range l.objs {
			l.loc.FieldPosition(k, "spec.trafficPolicy.portLevelSettings[port=80].tls[0][name=x]")
		}
		if l.fileMesh != nil {
			_, _, _ = ParseMeshConfig(l.fileMesh.yaml)
		}
	})
}

// FuzzParseMeshConfig checks that no mesh config YAML makes ParseMeshConfig panic.
func FuzzParseMeshConfig(f *testing.F) {
	f.Add("connectTimeout: 1s\ndefaultConfig: {proxyMetadata: {A: b}}\n")
	f.Add("extensionProviders: [{name: envoy}, null]\ntrustDomainAliases: [a, a]\n")
	f.Add("defaultProviders: 3\n")
	f.Fuzz(func(t *testing.T, y string) {
		_, _, _ = ParseMeshConfig(y)
	})
}
