package render

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
)

// FuzzRender prints random Results through every format and random check reports through
// every check format: none may panic, and the table and wide output never carry a raw control
// character. A Result is the JSON document the fuzzer mutates (seeded with the fixtures); an
// object whose value is an Envoy Cluster also carries it as the message -o envoy prints, and
// every other object is listed for -o ztunnel.
func FuzzRender(f *testing.F) {
	for _, r := range []*explain.Result{clusterResult(f), authzResult("p"), emptyResult(), hostileResult()} {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(80))
	}
	if b, err := json.Marshal(checkFixture()); err == nil {
		f.Add(b, uint8(40))
	}
	f.Fuzz(func(t *testing.T, doc []byte, width uint8) {
		var r explain.Result
		if json.Unmarshal(doc, &r) != nil {
			return
		}
		for i := range r.Objects {
			o := &r.Objects[i]
			c := &clusterv3.Cluster{}
			if len(o.Value) > 0 && protojson.Unmarshal(o.Value, c) == nil {
				o.Message = c
			}
			o.Listed = i%2 == 1
		}
		for _, format := range []string{FormatTable, FormatWide, FormatJSON, FormatYAML, FormatEnvoy, FormatZtunnel} {
			for _, color := range []ColorMode{ColorNever, ColorAlways} {
				p, err := For(format, Options{Color: color, Width: int(width)})
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				_ = p.Print(&b, &r)
				_ = p.PrintList(io.Discard, []*explain.Result{&r, nil, &r})
				if color == ColorNever && (format == FormatTable || format == FormatWide) && strings.ContainsAny(b.String(), "\x1b\x07\u202e") {
					t.Fatalf("%s: raw control character in %q", format, b.String())
				}
			}
		}
		var rep explain.CheckReport
		if json.Unmarshal(doc, &rep) != nil {
			return
		}
		for _, format := range []string{FormatTable, FormatWide, FormatJSON, FormatYAML, "sarif"} {
			p, err := ForCheck(format, Options{Color: ColorNever, Width: int(width)})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			_ = p.PrintCheck(&b, &rep)
			if (format == FormatTable || format == FormatWide) && strings.ContainsAny(b.String(), "\x1b\x07\u202e") {
				t.Fatalf("check %s: raw control character in %q", format, b.String())
			}
		}
	})
}
