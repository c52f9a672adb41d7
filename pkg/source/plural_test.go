package source

import "testing"

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{
		KindGateway:               "Gateways",
		KindServiceEntry:          "ServiceEntries",
		KindAuthorizationPolicy:   "AuthorizationPolicies",
		KindDestinationRule:       "DestinationRules",
		KindPeerAuthentication:    "PeerAuthentications",
		KindRequestAuthentication: "RequestAuthentications",
	} {
		if got := Plural(kind); got != want {
			t.Errorf("Plural(%s) = %s, want %s", kind, got, want)
		}
	}
}
