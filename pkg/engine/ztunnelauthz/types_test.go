package ztunnelauthz

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestAuthorizationYAML pins the protomarshal.ToYAML spelling: lowerCamelCase, enums by name,
// zero values omitted, bytes as base64, `presence: {}`, sorted keys, list order kept.
func TestAuthorizationYAML(t *testing.T) {
	cases := []struct {
		name string
		in   *Authorization
		want string
	}{
		{
			name: "ALLOW and GLOBAL are the zero values and have no key",
			in:   &Authorization{Name: "allow-all", Namespace: "istio-system", Groups: []*Group{{}}},
			want: "groups:\n- {}\nname: allow-all\nnamespace: istio-system\n",
		},
		{
			name: "an empty namespace is omitted, dryRun printed only when true",
			in:   &Authorization{Name: "x", Scope: ScopeNamespace, DryRun: true},
			want: "dryRun: true\nname: x\nscope: NAMESPACE\n",
		},
		{
			name: "a oneof member is printed even when its value is empty",
			in: &Authorization{Name: "x", Action: ActionDeny, Groups: []*Group{{Rules: []*Rules{{Matches: []*Match{
				{Principals: []*StringMatch{Exact(""), Presence(), Prefix("p"), Suffix("s")}},
			}}}}}},
			want: "action: DENY\ngroups:\n- rules:\n  - matches:\n    - principals:\n      - exact: \"\"\n      - presence: {}\n      - prefix: p\n      - suffix: s\nname: x\n",
		},
		{
			name: "addresses are base64 and a zero prefix length is omitted",
			in: &Authorization{Name: "x", Groups: []*Group{{Rules: []*Rules{{Matches: []*Match{
				{SourceIps: []*Address{{Address: []byte{1, 2, 3, 4}, Length: 32}, {Address: []byte{0, 0, 0, 0}}}},
			}}}}}},
			want: "groups:\n- rules:\n  - matches:\n    - sourceIps:\n      - address: AQIDBA==\n        length: 32\n      - address: AAAAAA==\nname: x\n",
		},
		{
			name: "match keys are sorted, ports keep their order, empty match is {}",
			in: &Authorization{Name: "x", Scope: ScopeWorkloadSelector, Groups: []*Group{{Rules: []*Rules{{Matches: []*Match{
				{NotDestinationPorts: []uint32{9, 1}, DestinationPorts: []uint32{80}, ServiceAccounts: []*ServiceAccountMatch{{Namespace: "ns", ServiceAccount: "sa"}}},
				{},
			}}}}}},
			want: "groups:\n- rules:\n  - matches:\n    - destinationPorts:\n      - 80\n      notDestinationPorts:\n      - 9\n      - 1\n      serviceAccounts:\n      - namespace: ns\n        serviceAccount: sa\n    - {}\nname: x\nscope: WORKLOAD_SELECTOR\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.YAML()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("YAML:\n%s\nwant:\n%s", got, tc.want)
			}
			js, err := tc.in.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var back Authorization
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatalf("reading the JSON back: %v", err)
			}
			if !reflect.DeepEqual(&back, tc.in) {
				t.Errorf("JSON round trip changed the policy:\n%s", js)
			}
		})
	}
}

func TestEnumJSON(t *testing.T) {
	js, err := json.Marshal(struct {
		S Scope
		A Action
		U Scope
	}{ScopeWorkloadSelector, ActionDeny, Scope(7)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"S":"WORKLOAD_SELECTOR","A":"DENY","U":7}`; string(js) != want {
		t.Errorf("got %s, want %s", js, want)
	}
	var a Action
	if err := json.Unmarshal([]byte(`"NOPE"`), &a); err == nil {
		t.Error("an unknown action name was accepted")
	}
	var sm StringMatch
	if err := json.Unmarshal([]byte(`{"exact":"a","prefix":"b"}`), &sm); err == nil {
		t.Error("a string match with two members was accepted")
	}
}
