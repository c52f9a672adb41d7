package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
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

// FuzzOverlay lays random file bytes over a live state (the objects of testdata/files, added
// as the live reads add them, and a live mesh ConfigMap) and checks the merge: no panic, every
// object from the bytes replaces or joins the live ones and is marked as an overlay, every
// other live object stays live, and the snapshot's lookups answer.
func FuzzOverlay(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.*")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata: {mesh: 'rootNamespace: x'}\n"))
	liveSnap, err := LoadFiles([]string{"testdata/files"}, "bookinfo")
	if err != nil {
		f.Fatal(err)
	}
	live := newLoader(Spec{Files: []string{"testdata/files"}, Recursive: true, DefaultNamespace: "bookinfo"})
	if err := live.readFiles(); err != nil {
		f.Fatal(err)
	}
	if len(live.objs) == 0 || len(liveSnap.Sources) == 0 {
		f.Fatal("no live objects")
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := newLoader(Spec{Overlay: true, DefaultNamespace: "bookinfo", IstioNamespace: DefaultIstioNamespace})
		for k, o := range live.objs {
			l.addLiveObject(kindByName(k.Kind), o.DeepCopyObject().(object))
		}
		l.liveMesh = &meshInput{yaml: "connectTimeout: 3s\n", hasKey: true, ref: provenance.Ref{Kind: "ConfigMap", Namespace: DefaultIstioNamespace, Name: "istio"}}
		l.loadBytes("f.yaml", data)
		if err := l.resolveMesh(); err != nil {
			t.Fatal(err)
		}
		snap := l.snapshot()
		for k, src := range snap.Sources {
			switch {
			case l.fromFile[k] && (!src.Overlay || src.Live):
				t.Fatalf("%s from the file: source %+v, want an overlay", k.Ref(), src)
			case !l.fromFile[k] && !src.Live:
				t.Fatalf("%s not in the file: source %+v, want live", k.Ref(), src)
			}
			snap.FieldPosition(k, "spec.host")
		}
		for k := range live.objs {
			if _, ok := snap.Sources[k]; !ok {
				t.Fatalf("live %s lost", k.Ref())
			}
		}
	})
}
