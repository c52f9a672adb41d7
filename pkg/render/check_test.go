package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/explain"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/internal/checktest"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// checkFixture is a hand-built report: a finding read from a file, one read from the cluster
// (no file), one silenced by an annotation and one by --ignore.
func checkFixture() *explain.CheckReport {
	dr := drReviews
	svc := svcReviews
	return &explain.CheckReport{
		APIVersion: explain.APIVersion, Kind: explain.KindCheckReport,
		Scope: explain.CheckScope{Hosts: 3, Clients: 4, ClientClasses: 2, Workloads: 3, DataPlanes: map[string]int{"ambient": 1, "sidecar": 2}},
		Findings: []explain.Finding{
			{Diagnostic: explain.Diagnostic{ID: "D17", Severity: explain.SeverityError, Resources: []provenance.Ref{dr},
				Message: `subset "v3" of DestinationRule bookinfo/reviews selects no endpoint`, Fix: `change the labels of subset "v3"`},
				Resource: &dr, Field: "spec.subsets[name=v3]", Position: drFile(14, 5),
				Hosts: []string{"reviews.bookinfo.svc.cluster.local"}, Clients: []string{"Namespace bookinfo", "Pod bookinfo/a", "Pod bookinfo/b", "Pod bookinfo/c"}},
			{Diagnostic: explain.Diagnostic{ID: "D9", Severity: explain.SeverityWarning, Resources: []provenance.Ref{svc},
				Message: "live finding"}, Resource: &svc, Hosts: []string{"reviews.bookinfo.svc.cluster.local"}},
			{Diagnostic: explain.Diagnostic{ID: "D19", Severity: explain.SeverityError, Resources: []provenance.Ref{dr}, Message: "silenced"},
				Resource: &dr, Position: drFile(1, 0), Ignored: "annotation mesh-explain.io/ignore: D19 on DestinationRule bookinfo/reviews"},
			{Diagnostic: explain.Diagnostic{ID: "A07", Severity: explain.SeverityInfo, Message: "ignored"},
				Workloads: []string{"Pod foo/a"}, Ignored: "--ignore A07"},
		},
	}
}

func printCheck(t *testing.T, format string, r *explain.CheckReport) string {
	t.Helper()
	p, err := ForCheck(format, Options{Color: ColorNever})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.PrintCheck(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSARIFValidatesAgainstSchema validates -o sarif with the SARIF 2.1.0 JSON schema, and
// checks what code scanning reads: one result per finding, at the file and line of the field.
func TestSARIFValidatesAgainstSchema(t *testing.T) {
	sch := checktest.SARIFSchema(t)
	out := printCheck(t, FormatSARIF, checkFixture())
	checktest.ValidateSARIF(t, sch, []byte(out))
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				Suppressions []struct {
					Kind string `json:"kind"`
				} `json:"suppressions"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 4 {
		t.Fatalf("want one run of 4 results in SARIF 2.1.0:\n%s", out)
	}
	run := log.Runs[0]
	first := run.Results[0]
	if first.RuleID != "D17" || first.Level != "error" || run.Tool.Driver.Rules[first.RuleIndex].ID != "D17" {
		t.Errorf("first result: %+v", first)
	}
	if !strings.Contains(out, `"helpUri": "https://github.com/mesh-explain/kubectl-mesh-explain/blob/main/docs/diagnostics.md#d17--`) {
		t.Errorf("rule D17 does not link to its section of docs/diagnostics.md:\n%s", out)
	}
	pl := first.Locations[0].PhysicalLocation
	if pl == nil || pl.ArtifactLocation.URI != "scenarios/bookinfo/dr.yaml" || pl.Region.StartLine != 14 || pl.Region.StartColumn != 5 {
		t.Errorf("first result is not at dr.yaml:14:5: %+v", pl)
	}
	if run.Results[1].Locations[0].PhysicalLocation != nil {
		t.Errorf("a live finding has no file, got %+v", run.Results[1].Locations[0].PhysicalLocation)
	}
	if s := run.Results[2].Suppressions; len(s) != 1 || s[0].Kind != "inSource" {
		t.Errorf("annotation suppression: %+v", s)
	}
	if s := run.Results[3].Suppressions; len(s) != 1 || s[0].Kind != "external" {
		t.Errorf("--ignore suppression: %+v", s)
	}
}

// TestSARIFSchemaRejectsInvalid makes sure the validation can fail: a log without runs is not
// SARIF.
func TestSARIFSchemaRejectsInvalid(t *testing.T) {
	sch := checktest.SARIFSchema(t)
	for _, doc := range []string{`{"version":"2.1.0"}`, `{"version":"2.0.0","runs":[]}`, `{"version":"2.1.0","runs":[{"results":[]}]}`} {
		v := map[string]any{}
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err == nil {
			t.Errorf("%s validates", doc)
		}
	}
}

// TestCheckTable checks the grouping by object to change, the counts, and what wide adds.
func TestCheckTable(t *testing.T) {
	table := printCheck(t, FormatTable, checkFixture())
	for _, want := range []string{
		"Checked 3 hosts from 4 client sidecars (2 classes) and 3 workloads (1 ambient, 2 sidecar): 1 error, 1 warning, 0 info (2 silenced; -o wide lists them)",
		"DestinationRule bookinfo/reviews  scenarios/bookinfo/dr.yaml",
		"spec.subsets[name=v3]", "line 14",
		"clients: Namespace bookinfo, Pod bookinfo/a, Pod bookinfo/b, and 1 more",
		"Service bookinfo/reviews",
	} {
		// Words, whatever the line breaks of the table's width.
		if words := strings.Fields; !strings.Contains(strings.Join(words(table), " "), strings.Join(words(want), " ")) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "silenced:") {
		t.Errorf("table lists silenced findings:\n%s", table)
	}
	wide := printCheck(t, FormatWide, checkFixture())
	for _, want := range []string{"silenced: annotation mesh-explain.io/ignore: D19", "silenced: --ignore A07", "Pod bookinfo/c", "(2 silenced)"} {
		if !strings.Contains(wide, want) {
			t.Errorf("wide lacks %q:\n%s", want, wide)
		}
	}
}

// TestCheckDocument checks the json document round-trips as a CheckReport.
func TestCheckDocument(t *testing.T) {
	out := printCheck(t, FormatJSON, checkFixture())
	var got explain.CheckReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != explain.KindCheckReport || len(got.Findings) != 4 || got.Findings[0].Position.Line != 14 || got.Findings[0].Field != "spec.subsets[name=v3]" {
		t.Errorf("document: %+v", got)
	}
	empty := printCheck(t, FormatYAML, &explain.CheckReport{APIVersion: explain.APIVersion, Kind: explain.KindCheckReport})
	if !strings.Contains(empty, "findings: []") {
		t.Errorf("an empty report has no findings list:\n%s", empty)
	}
}

// TestWrapPath checks that long field paths break after a dot, each step whole.
func TestWrapPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"spec.host", "spec.host"},
		{"spec.trafficPolicy.tls.mode", "spec.trafficPolicy.tls.mode"},
		{"spec.rules[0].from[0].source.principals", "spec.rules[0].from[0].source.\nprincipals"},
		{"spec.trafficPolicy.portLevelSettings[port=9080]", "spec.trafficPolicy.\nportLevelSettings[port=9080]"},
		{"spec.rules[0].to[0].operation.methods[0]", "spec.rules[0].to[0].\noperation.methods[0]"},
		{"metadata.labels[a-very-long-label-name.example.com/with-a-path]", "metadata.\nlabels[a-very-long-label-name.example.com/with-a-path]"},
		{"metadata.annotations[mesh-explain.io/ignore]", "metadata.\nannotations[mesh-explain.io/ignore]"},
	} {
		if got := wrapPath(c.in, fieldWidth); got != c.want {
			t.Errorf("wrapPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
