package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func TestSplitPath(t *testing.T) {
	got := splitPath("spec.trafficPolicy.portLevelSettings[port=9080].tls[0].x[app.kubernetes.io/name]")
	want := []pathStep{
		{text: "spec"}, {text: "trafficPolicy"}, {text: "portLevelSettings"},
		{text: "port=9080", selector: true}, {text: "tls"}, {text: "0", selector: true},
		{text: "x"}, {text: "app.kubernetes.io/name", selector: true},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(pathStep{})); diff != "" {
		t.Errorf("splitPath (-want +got):\n%s", diff)
	}
}

func TestLocate(t *testing.T) {
	const doc = `spec:
  selector: &sel
    matchLabels:
      app.kubernetes.io/name: reviews
  again: *sel
  ports:
  - port: 80
    name: http
  - port: 443
    name: https
  listeners:
  - port: {number: 9080, name: http}
    bind: 0.0.0.0
`
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string
	}{
		{"", "f.yaml:1:1"},
		{"spec.selector.matchLabels[app.kubernetes.io/name]", "f.yaml:4:7"},
		{"spec.again.matchLabels", "f.yaml:3:5"},
		{"spec.ports[port=443].name", "f.yaml:10:5"},
		{"spec.ports[name=http]", "f.yaml:7:5"},
		{"spec.ports[1]", "f.yaml:9:5"},
		{"spec.ports[7].name", "f.yaml:6:3"},
		{"spec.listeners[port=9080].bind", "f.yaml:13:5"},
		{"spec.listeners[port=http]", "f.yaml:12:5"},
		{"spec.nothing.below", "f.yaml:1:1"},
		{"spec.ports.name", "f.yaml:6:3"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := locate("f.yaml", &n, tt.path).String(); got != tt.want {
				t.Errorf("locate(%q) = %s, want %s", tt.path, got, tt.want)
			}
		})
	}
	if locate("f.yaml", nil, "spec") != nil {
		t.Error("locate on a nil node must return nil")
	}
}

func TestPathAtOffset(t *testing.T) {
	js := []byte(`{"a":{"b":[1,{"c":"x"}]},"d":[true]}`)
	tests := []struct {
		offset   int64
		wantPath string
		wantDesc string
	}{
		{int64(len(`{"a":{"b":[1`)), "a.b[0]", "number 1"},
		{int64(len(`{"a":{"b":[1,{"c":"x"`)), "a.b[1].c", `string "x"`},
		{int64(len(`{"a":{"b":[`)), "a.b", "a list"},
		{int64(len(`{"a":{"b":[1,{"c":"x"}]},"d":[true`)), "d[0]", "true"},
	}
	for _, tt := range tests {
		p, d := pathAtOffset(js, tt.offset)
		if p != tt.wantPath || d != tt.wantDesc {
			t.Errorf("pathAtOffset(%d) = %q, %q; want %q, %q", tt.offset, p, d, tt.wantPath, tt.wantDesc)
		}
	}
}
