package plan

import (
	"fmt"
	"reflect"
	"testing"

	networkingapi "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

func dr(ns, name, host string) *networkingv1.DestinationRule {
	return &networkingv1.DestinationRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingapi.DestinationRule{Host: host}}
}

// The second phase gets the Services that DestinationRules name near the host, where the plan
// did not list the Services: not those it holds, nor those of a namespace it lists, nor hosts
// far from the host; a namespace with more than nearMissLimit of them is listed instead.
func TestNearMissServices(t *testing.T) {
	c := NewCluster(ClusterQuery{Host: "api-v1", Namespace: "shop", ClientNamespace: "web", ClientPod: "web-0"},
		source.Spec{}, "istio-system", true, false)
	snap := &model.Snapshot{
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-v1"}}},
		DestinationRules: []*networkingv1.DestinationRule{
			dr("shop", "own", "api-v1"),                                // the host's Service: held
			dr("shop", "v2", "api-v2.shop.svc.cluster.local"),          // near miss in shop
			dr("shop", "short", "api-v9"),                              // near miss, short name
			dr("istio-system", "root", "api-v1"),                       // short name in the root namespace
			dr("web", "client", "api-v1"),                              // in web, whose Services are listed
			dr("shop", "far", "payments.shop.svc.cluster.local"),       // far from the host
			dr("shop", "external", "api-v2.example.com"),               // not a Service host
			dr("shop", "wild", "*.shop.svc.cluster.local"),             // a wildcard
			dr("shops", "elsewhere", "api-v1.shops.svc.cluster.local"), // near miss in another namespace
		},
	}
	want := map[string][]string{"shop": {"api-v2", "api-v9"}, "istio-system": {"api-v1"}, "shops": {"api-v1"}}
	if got := c.NearMissServices(snap); !reflect.DeepEqual(got, want) {
		t.Errorf("NearMissServices = %v, want %v", got, want)
	}
	for i := range nearMissLimit + 1 {
		snap.DestinationRules = append(snap.DestinationRules, dr("shop", fmt.Sprint("n", i), fmt.Sprintf("api-%d", i)))
	}
	got := readsByNamespace(c.NearMissReads(snap))
	if got["shop"] != "list" || got["istio-system"] != "api-v1" || got["shops"] != "api-v1" {
		t.Errorf("reads = %v, want shop listed and api-v1 got in istio-system and shops", got)
	}
}

// readsByNamespace spells each Service read: "list", or the names it gets.
func readsByNamespace(reads []source.Read) map[string]string {
	out := map[string]string{}
	for _, r := range reads {
		s := "list"
		if r.Names != nil {
			s = fmt.Sprint(r.Names)
			s = s[1 : len(s)-1]
		}
		out[r.Namespaces[0]] = s
	}
	return out
}
