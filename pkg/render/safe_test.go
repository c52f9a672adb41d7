package render

import (
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

func TestSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{"reviews", "reviews"},
		{"", ""},
		{"ünïcode 名前 ✓", "ünïcode 名前 ✓"},
		{"two\nlines", "two\nlines"},
		{"v1\x1b[31mred\x1b[0m", `v1\x1b[31mred\x1b[0m`},
		{"\x1b]0;owned\x07title", `\x1b]0;owned\x07title`},
		{"\x1b]8;;http://x\x1b\\link", `\x1b]8;;http://x\x1b\link`},
		{"tab\there\rback", "tab\there\\rback"},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"c1\u009b2J", `c1\u009b2J`},
		{"admin\u202etxt.exe", `admin\u202etxt.exe`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
	}
	for _, tt := range tests {
		if got := Safe(tt.in); got != tt.want {
			t.Errorf("Safe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzSafe(f *testing.F) {
	f.Add("a\x1b[31m\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		got := Safe(s)
		for i, r := range got {
			if unsafeRune(r, len(string(r))) && r != 0xfffd {
				t.Fatalf("Safe(%q) = %q keeps %U at %d", s, got, r, i)
			}
		}
		if Safe(got) != got {
			t.Fatalf("Safe is not idempotent on %q", s)
		}
	})
}

// hostileResult carries an escape sequence, an OSC title sequence and a bidi override in every
// kind of text the table printers show.
func hostileResult() *explain.Result {
	esc, osc, bidi := "\x1b[2J", "\x1b]0;x\x07", "\u202e"
	ref := provenance.Ref{Kind: "DestinationRule", Namespace: "ns", Name: "r" + bidi}
	return &explain.Result{
		APIVersion: explain.APIVersion, Kind: explain.KindClusterExplanation,
		Subject:  explain.Subject{Kind: "Host", Host: "h" + esc, Subset: "v1" + osc, Resource: &ref},
		Sections: []explain.Section{{Title: "t" + esc, Columns: []string{"a"}, Rows: [][]string{{"cell" + esc}}}},
		Objects: []explain.Object{{
			Kind: "envoy.config.cluster.v3.Cluster", Name: "outbound|80|v1" + esc,
			Summary: []explain.Summary{{Name: "n" + bidi, Value: "v" + osc}},
			Origins: []provenance.FieldTrace{{
				Path: "name", Value: "x" + esc,
				Origin:   provenance.Origin{Layer: provenance.LayerDestinationRule, Resource: &ref, Note: "note" + osc},
				Shadowed: []provenance.Shadow{{Value: "s" + bidi, Origin: provenance.Origin{Layer: provenance.LayerMeshConfig}}},
			}},
		}},
		Diagnostics: []explain.Diagnostic{{ID: "D1", Severity: explain.SeverityWarning, Message: "m" + esc, Resources: []provenance.Ref{ref}, Fix: "f" + bidi}},
		Warnings:    []string{"w" + osc},
	}
}

func TestTablesShowControlCharactersEscaped(t *testing.T) {
	for _, format := range []string{FormatTable, FormatWide} {
		p, err := For(format, Options{Color: ColorNever})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := p.Print(&b, hostileResult()); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%s: raw control characters in\n%q", format, out)
		}
		for _, want := range []string{`h\x1b[2J`, `v1\x1b]0;x\x07`, `r\u202e`, `cell\x1b[2J`, `outbound|80|v1\x1b[2J`, `w\x1b]0;x\x07`, `m\x1b[2J`, `f\u202e`, `x\x1b[2J`, `note\x1b]0;x\x07`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: %q missing from\n%s", format, want, out)
			}
		}
	}
}

func TestCheckTableShowsControlCharactersEscaped(t *testing.T) {
	ref := provenance.Ref{Kind: "DestinationRule", Namespace: "ns", Name: "r\x1b[2J"}
	r := &explain.CheckReport{
		Findings: []explain.Finding{{Diagnostic: explain.Diagnostic{ID: "D1", Severity: explain.SeverityWarning, Message: "m\u202e", Fix: "f\x1b"}, Resource: &ref, Field: "spec\x07", Hosts: []string{"h\x1b]0;x\x07"}}},
		Warnings: []string{"w\x1b[2J"},
	}
	for _, format := range []string{FormatTable, FormatWide} {
		p, err := ForCheck(format, Options{Color: ColorNever})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := p.PrintCheck(&b, r); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.ContainsAny(out, "\x1b\x07\u202e") {
			t.Errorf("%s: raw control characters in\n%q", format, out)
		}
		for _, want := range []string{`r\x1b[2J`, `m\u202e`, `spec\x07`, `h\x1b]0;x\x07`, `w\x1b[2J`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: %q missing from\n%s", format, want, out)
			}
		}
	}
}

func TestDataFormatsStayExact(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatYAML} {
		p, err := For(format, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := p.Print(&b, hostileResult()); err != nil {
			t.Fatal(err)
		}
		var back explain.Result
		if err := sigsyaml.Unmarshal([]byte(b.String()), &back); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if back.Subject.Host != "h\x1b[2J" || back.Warnings[0] != "w\x1b]0;x\x07" || back.Subject.Resource.Name != "r\u202e" {
			t.Errorf("%s: values changed: %+v", format, back.Subject)
		}
	}
}
