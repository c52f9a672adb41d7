package istiorun

import (
	"strings"
	"testing"
)

// TestWaypointTarget checks how a waypoint scenario finds its Gateway and instance, and the
// errors it gives when the folder lacks them.
func TestWaypointTarget(t *testing.T) {
	const gateway = `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"Gateway","metadata":{"name":"wp","namespace":"ns"},
	  "spec":{"gatewayClassName":"istio-waypoint","listeners":[{"name":"mesh","port":15008,"protocol":"HBONE"}]}}`
	const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"wp-1","namespace":"ns","labels":{"gateway.networking.k8s.io/gateway-name":"wp"}},
	  "spec":{"containers":[{"name":"istio-proxy","image":"proxy"}]},"status":{"podIP":"10.0.0.7"}}`
	const podWithoutIP = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"wp-0","namespace":"ns","labels":{"gateway.networking.k8s.io/gateway-name":"wp"}},
	  "spec":{"containers":[{"name":"istio-proxy","image":"proxy"}]}}`
	const entry = `{"apiVersion":"networking.istio.io/v1","kind":"WorkloadEntry","metadata":{"name":"wp-a","namespace":"ns"},
	  "spec":{"address":"10.0.0.8","labels":{"gateway.networking.k8s.io/gateway-name":"wp"}}}`
	cases := []struct {
		name, target string
		docs         []string
		instance, ip string
		err          string
	}{
		{name: "pod", target: "waypoint/wp", docs: []string{gateway, podWithoutIP, entry, pod}, instance: "pod/wp-1", ip: "10.0.0.7"},
		{name: "workload entry", target: "waypoint/wp", docs: []string{gateway, entry, podWithoutIP}, instance: "workloadentry/wp-a", ip: "10.0.0.8"},
		{name: "no instance", target: "waypoint/wp", docs: []string{gateway, podWithoutIP}, err: "gateway.networking.k8s.io/gateway-name: wp"},
		{name: "no gateway", target: "waypoint/other", docs: []string{gateway, pod}, err: "no Gateway ns/other"},
		{name: "not a waypoint", target: "pod/wp-1", docs: []string{gateway, pod}, err: "names waypoint/NAME"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var docs []Document
			for _, d := range c.docs {
				docs = append(docs, Document{File: "in.yaml", JSON: []byte(d)})
			}
			sc, err := Build(docs, "ns")
			if err != nil {
				t.Fatal(err)
			}
			sc.Args = Args{Verb: "authz", Target: c.target, Namespace: "ns"}
			w, err := sc.Waypoint()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Instance != c.instance || w.IP != c.ip || w.Gateway.Name != "wp" {
				t.Errorf("got %s at %s (Gateway %s), want %s at %s", w.Instance, w.IP, w.Gateway.Name, c.instance, c.ip)
			}
			p := w.WaypointProxy()
			if p.ConfigNamespace != "ns" || p.IPAddresses[0] != c.ip || p.Labels["gateway.networking.k8s.io/gateway-name"] != "wp" {
				t.Errorf("proxy %+v", p)
			}
		})
	}
}
