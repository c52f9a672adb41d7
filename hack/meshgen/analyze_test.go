package main

import (
	"slices"
	"testing"
)

func TestCompareAnalyze(t *testing.T) {
	check := []byte(`{"apiVersion":"mesh-explain.io/v1alpha1","kind":"CheckReport","scope":{},"findings":[
 {"id":"D10","severity":"error","message":"VirtualService ns-000/a spec.http[0].route[0].destination routes to subset \"v9\" of svc-1.ns-000.svc.cluster.local, but ...",
  "resource":{"kind":"VirtualService","namespace":"ns-000","name":"a"},"hosts":["svc-1.ns-000.svc.cluster.local"]},
 {"id":"D10","severity":"error","message":"VirtualService ns-000/b spec.http[0].route[0].destination routes to subset \"canary\" of svc-2.ns-000.svc.cluster.local, but ...",
  "resource":{"kind":"VirtualService","namespace":"ns-000","name":"b"},"hosts":["svc-2.ns-000.svc.cluster.local"]},
 {"id":"D9","severity":"warning","message":"subset \"v2\" ...","resource":{"kind":"DestinationRule","namespace":"ns-000","name":"svc-1"}},
 {"id":"D24","severity":"warning","message":"DestinationRule ns-000/svc-1 trafficPolicy localityLbSetting configures locality failover, but ...","resource":{"kind":"DestinationRule","namespace":"ns-000","name":"svc-1"}}]}`)
	analyze := []byte(`[
 {"code":"IST0101","level":"Error","message":"Referenced host+subset in destinationrule not found: \"svc-1+v9\"","origin":"VirtualService ns-000/a"},
 {"code":"IST0101","level":"Error","message":"Referenced host+subset in destinationrule not found: \"svc-3.ns-000.svc.cluster.local+v1\"","origin":"VirtualService ns-000/c"},
 {"code":"IST0101","level":"Error","message":"Referenced host not found: \"svc-4\"","origin":"VirtualService ns-000/d"},
 {"code":"IST0118","level":"Info","message":"Port name x","origin":"Service ns-000/svc-1"},
 {"code":"IST0133","level":"Warning","message":"Schema validation warning: outlier detection policy must be provided for failover","origin":"DestinationRule ns-000/svc-1"}]`)
	c, err := compareAnalyze(check, analyze)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SubsetRefs) != 2 {
		t.Errorf("subset references %v, want svc-1+v9 and svc-3+v1", c.SubsetRefs)
	}
	if want := []SubsetRef{{VirtualService: "ns-000/c", Host: "svc-3.ns-000.svc.cluster.local", Subset: "v1"}}; !slices.Equal(c.Missing, want) {
		t.Errorf("missing %v, want %v", c.Missing, want)
	}
	if got, want := countsText(c.OnlyCheck), "D9, D10"; got != want {
		t.Errorf("only check: %s, want %s", got, want)
	}
	if got, want := countsText(c.OnlyAnalyze), "IST0101 ×2, IST0118"; got != want {
		t.Errorf("only analyze: %s, want %s", got, want)
	}
	if got, want := countsText(c.Both), "D10 = IST0101, D24 = IST0133"; got != want {
		t.Errorf("both: %s, want %s", got, want)
	}
	if got, want := countsText(c.CheckIDs), "D9, D10 ×2, D24"; got != want {
		t.Errorf("check: %s, want %s", got, want)
	}
	// analyze prints a notice, not JSON, when it finds nothing.
	if c, err := compareAnalyze(check, []byte("\u2714 No validation issues found when analyzing all namespaces.\n")); err != nil || len(c.AnalyzeCodes) != 0 {
		t.Errorf("no messages: %v, %v", c, err)
	}
}

func TestAnalyzeDocumentAfterLogLines(t *testing.T) {
	out := "2026-12-02T20:41:17Z\twarn\tfile\terror processing x.yaml[2]: skipping\n[\n {\"code\":\"IST0106\",\"origin\":\"AuthorizationPolicy foo/a\"}\n]\n"
	c, err := compareAnalyze([]byte(`{"findings":[]}`), []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if got := countsText(c.AnalyzeCodes); got != "IST0106" {
		t.Errorf("codes %s, want IST0106", got)
	}
}
