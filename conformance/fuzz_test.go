package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mesh-explain/kubectl-mesh-explain/conformance/istiorun"
	gen "github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/scenariogen"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/cli"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
)

// FuzzEngineAgreesWithIstio is the differential fuzz target: the fuzzer picks a generated
// scenario (kind and seed) and edits it with scenariogen's Mutate, as the main module's engine
// fuzz targets do: documents dropped or copied, fields deleted or set to other values, which
// makes meshes the generator never writes (a DestinationRule without its Service, a policy
// without its namespace, a port where a label was). The same folder goes to the engines and to
// Istio's code, and any difference fails. Skipped, as no cluster would hold them: scenarios
// Istio's validation rejects, those the API server would refuse (an object that does not
// decode, two of one name, a name that is no DNS name, a cluster IP, Service port, pod IP or
// container port out of range or misnamed, a Gateway without class or listener:
// apiServerTakes), and those where the plugin's loader skips an object (an unknown field,
// which kubectl's strict validation refuses; Istio's decoder would drop it instead). Skipped
// too: a waypoint without an instance, a pod without
// an IP and a sidecar pod without the injector's annotation (Istio's code needs a proxy to
// connect as; the plugin answers what istiod would push to the waypoint, or says the pod has
// no sidecar), a waypoint not yet deployed whose Service is missing (the plugin answers
// as istiod will program it, with the Service its deployment creates), and Istio's known
// panics, as in TestEngineAgreesWithIstio. For a Gateway of another class than
// istio-waypoint, which istiod deploys no waypoint for, the plugin must refuse the query.
//
//	go test -run '^$' -fuzz '^FuzzEngineAgreesWithIstio$' -fuzztime 10m .
func FuzzEngineAgreesWithIstio(f *testing.F) {
	for i := range gen.Kinds {
		f.Add(uint64(1+i), uint8(i), []byte{})
		f.Add(uint64(40+i), uint8(i), []byte{0, 3})
		f.Add(uint64(80+i), uint8(i), []byte{0, 1, 0, 5})
		f.Add(uint64(120+i), uint8(i), []byte{2, 1, 30, 9, 5, 2, 9, 0, 40})
	}
	f.Fuzz(func(t *testing.T, seed uint64, k uint8, edits []byte) {
		kind := gen.Kinds[int(k)%len(gen.Kinds)]
		s := gen.Generate(kind, seed)
		s.Mutate(edits)
		clusterScoped(s)
		if !apiServerTakes(s) {
			return
		}
		dir := filepath.Join(t.TempDir(), fmt.Sprint(seed))
		if err := s.Write(dir); err != nil {
			t.Fatal(err)
		}
		sc, err := istiorun.LoadScenario(dir)
		if err != nil {
			// Rejected by Istio's validation, or not an object a cluster holds.
			return
		}
		if kind == "waypoint" && !programmable(sc) {
			return
		}
		if kind == "waypoint" && !ofWaypointClass(sc) {
			// istiod deploys a waypoint only for a Gateway of class istio-waypoint, so a
			// cluster has no instance of another to push to (the scenario's pod is the
			// generator's): the plugin must say the Gateway is not a waypoint.
			args := append(strings.Fields(sc.Command), "-f", dir, "-o", outputFormat(kind))
			var out, errOut bytes.Buffer
			code := cli.Main(args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code == cli.ExitOK || code != cli.ExitIncomplete && !strings.Contains(errOut.String(), "not a waypoint") {
				y, _ := s.YAML()
				t.Fatalf("%s seed %d, edits %v: the Gateway is of another class, but the plugin exits %d: %s\n%s\nscenario:\n%s", kind, seed, edits, code, errOut.String(), out.String(), y)
			}
			return
		}
		want, _, err := istiorun.RunKind(sc, kind)
		var invalid *istiorun.InvalidError
		var noProxy *istiorun.NoProxyError
		if errors.As(err, &invalid) || errors.As(err, &noProxy) || isKnownIstioPanic(err) ||
			err != nil && strings.Contains(err.Error(), "no valid IP address in the service node id") {
			// Rejected, no waypoint instance or no pod IP to connect as the proxy (a pod
			// without an IP has no running sidecar to ask istiod; Istio's code says so in its
			// own words when the pod is a cluster client), or a known panic.
			return
		}
		args := append(strings.Fields(sc.Command), "-f", dir, "-o", outputFormat(kind))
		var out, errOut bytes.Buffer
		code := cli.Main(args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if code == cli.ExitIncomplete || strings.Contains(errOut.String(), "; the object is skipped") {
			// The plugin's loader skipped an object (named on stderr); when it was the pod or
			// Gateway asked about, the query fails for want of it rather than exiting 3.
			return
		}
		got, engErr := out.Bytes(), error(nil)
		if code != cli.ExitOK {
			engErr = fmt.Errorf("kubectl mesh-explain %s exited %d: %s", strings.Join(args, " "), code, strings.TrimSpace(errOut.String()))
		}
		y, _ := s.YAML()
		switch {
		case err != nil:
			// Istio has no answer (the pod asked about was dropped): the plugin must not
			// answer either.
			if engErr == nil {
				t.Fatalf("%s seed %d, edits %v: Istio has no answer (%v) but the plugin answers:\n%s\nscenario:\n%s", kind, seed, edits, err, got, y)
			}
		case engErr != nil:
			// Istio pushes nothing for a host that no Service or ServiceEntry defines, for a
			// port the host does not have, or for a subset no DestinationRule of the proxy
			// defines; the plugin says the host is not found, that it has no such port, or
			// that there is no such subset.
			if msg := engErr.Error(); !noAnswer(want) || !strings.Contains(msg, "not found") && !strings.Contains(msg, "has no port") && !strings.Contains(msg, "no subset") {
				t.Fatalf("%s seed %d, edits %v: Istio answers but the plugin fails: %v\nIstio:\n%s\nscenario:\n%s", kind, seed, edits, engErr, want, y)
			}
		default:
			diffs, err := compareOutput(kind, got, want)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) > 0 {
				t.Fatalf("%s seed %d, edits %v: the engine differs from Istio:\n  %v\ncommand: %s\n%s", kind, seed, edits, diffs, s.Command, y)
			}
		}
	})
}

// programmable reports whether Istio's code can answer for the waypoint as the plugin does: a
// Gateway without status.addresses is answered as istiod will program it (Programmed), through
// the waypoint's Service, which its deployment creates; without that Service in the scenario
// Istio's code can only bind nothing.
func programmable(sc *istiorun.Scenario) bool {
	wp, err := sc.Waypoint()
	if err != nil || len(wp.Gateway.Status.Addresses) > 0 {
		return true
	}
	for _, o := range sc.Kube {
		if s, ok := o.(*corev1.Service); ok && s.Namespace == wp.Gateway.Namespace && s.Name == wp.Gateway.Name {
			return true
		}
	}
	return false
}

// ofWaypointClass reports whether the Gateway the waypoint scenario names is of class
// istio-waypoint (true when it names none: Istio's code and the plugin then both fail).
func ofWaypointClass(sc *istiorun.Scenario) bool {
	wp, err := sc.Waypoint()
	var noProxy *istiorun.NoProxyError
	if err != nil && !errors.As(err, &noProxy) {
		return true
	}
	if wp == nil {
		return true
	}
	return string(wp.Gateway.Spec.GatewayClassName) == waypointauthz.ClassName
}

// clusterScoped removes metadata.namespace from the objects of cluster-scoped kinds, as the
// API server does (the edits may move a Namespace into a namespace; Istio's fake client would
// then file it where no lookup finds it).
func clusterScoped(s *gen.Scenario) {
	for _, d := range s.Docs {
		switch d["kind"] {
		case "Namespace", "Node", "GatewayClass":
			if m, ok := d["metadata"].(map[string]any); ok {
				delete(m, "namespace")
			}
		}
	}
}

// apiServerTakes reports whether an API server would hold every document of s: each has a
// kind, a name that is a DNS subdomain (a DNS-1035 label for a Service), a namespace that is
// a DNS label, no two share kind, namespace and name, a Service's cluster IPs are IPs or None
// (Istio's ambient index dereferences the nil service it makes of any other, on a goroutine
// of its own, which ends the process: ambient/services.go serviceServiceBuilder), each of
// its ports has a number from 1 to 65535 and a DNS label or no name, a Pod's status.podIP is
// an IP and each of its container ports a number from 1 to 65535 and an IANA service name or
// no name, and a Gateway has
// the spec.gatewayClassName and spec.listeners the Gateway API's CRD requires.
func apiServerTakes(s *gen.Scenario) bool {
	seen := map[string]bool{}
	for _, d := range s.Docs {
		kind, _ := d["kind"].(string)
		m, _ := d["metadata"].(map[string]any)
		name, _ := m["name"].(string)
		ns, _ := m["namespace"].(string)
		if kind == "" || name == "" {
			return false
		}
		nameErrs := validation.IsDNS1123Subdomain(name)
		if kind == "Service" {
			nameErrs = validation.IsDNS1035Label(name)
		}
		if len(nameErrs) > 0 || ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
			return false
		}
		key := kind + "/" + ns + "/" + name
		if seen[key] {
			return false
		}
		seen[key] = true
		if kind == "Service" && (!clusterIPsValid(d) || !servicePortsValid(d)) {
			return false
		}
		if kind == "Pod" && (!podIPValid(d) || !containerPortsValid(d)) {
			return false
		}
		if kind == "Gateway" && !gatewaySpecValid(d) {
			return false
		}
	}
	return true
}

// gatewaySpecValid reports whether a Gateway document has what the Gateway API's CRD schema
// requires of every Gateway: a spec with a gatewayClassName and at least one listener (an edit
// may drop the spec; Istio's fake client, which does not apply CRD schemas, keeps the Gateway
// and answers for its proxy, where the plugin says it is of no class).
func gatewaySpecValid(d map[string]any) bool {
	spec, _ := d["spec"].(map[string]any)
	class, _ := spec["gatewayClassName"].(string)
	listeners, _ := spec["listeners"].([]any)
	return class != "" && len(listeners) > 0
}

// podIPValid reports whether a Pod document's status.podIP is empty or an IP address, as the
// API server's validation of a pod's status requires (an edit may set it to any string; Istio's
// ambient index makes no workload of such a pod, where the plugin takes it as the pod's IP).
func podIPValid(d map[string]any) bool {
	status, _ := d["status"].(map[string]any)
	switch ip := status["podIP"].(type) {
	case nil:
		return true
	case string:
		return ip == "" || net.ParseIP(ip) != nil
	}
	return false
}

// containerPortsValid reports whether every port of a Pod document's containers and init
// containers has a containerPort from 1 to 65535 and a name that is empty or an IANA service
// name, as the API server's validation requires. An edit may set a containerPort to null (a
// port 0: Istio still counts the pod's service account for a Service whose named targetPort
// resolves to it), or a name to any string (Istio's code then answers for the pod's proxy as
// if it had no PeerAuthentication of its own); the plugin's loader skips such a pod.
func containerPortsValid(d map[string]any) bool {
	spec, _ := d["spec"].(map[string]any)
	for _, key := range []string{"initContainers", "containers"} {
		containers, _ := spec[key].([]any)
		for _, c := range containers {
			cm, _ := c.(map[string]any)
			ports, _ := cm["ports"].([]any)
			for _, p := range ports {
				pm, ok := p.(map[string]any)
				if !ok || !portNumber(pm["containerPort"]) || !portName(pm["name"], validation.IsValidPortName) {
					return false
				}
			}
		}
	}
	return true
}

// servicePortsValid reports whether a Service document has ports, unless it is headless or
// of type ExternalName, and every entry of its spec.ports is an object whose port is a number
// from 1 to 65535 and whose name is empty or a DNS label, as the API server's validation
// requires (an edit may leave `- null`, a port of 0 or no ports, which no cluster holds).
func servicePortsValid(d map[string]any) bool {
	spec, _ := d["spec"].(map[string]any)
	ports, ok := spec["ports"].([]any)
	if !ok && spec["ports"] != nil {
		return false
	}
	if len(ports) == 0 {
		// Only a headless or ExternalName Service may have none (a waypoint's Service left
		// without its HBONE port binds nothing in Istio's code).
		return spec["clusterIP"] == corev1.ClusterIPNone || spec["type"] == string(corev1.ServiceTypeExternalName)
	}
	for _, p := range ports {
		m, ok := p.(map[string]any)
		if !ok {
			return false
		}
		if !portNumber(m["port"]) || !portName(m["name"], validation.IsDNS1123Label) {
			return false
		}
	}
	return true
}

// portName reports whether v, a decoded YAML value, is absent, empty or a string valid says
// nothing against.
func portName(v any, valid func(string) []string) bool {
	if v == nil {
		return true
	}
	s, ok := v.(string)
	return ok && (s == "" || len(valid(s)) == 0)
}

// portNumber reports whether v, a decoded YAML value, is a whole number from 1 to 65535.
func portNumber(v any) bool {
	var n float64
	switch r := reflect.ValueOf(v); {
	case r.CanInt():
		n = float64(r.Int())
	case r.CanUint():
		n = float64(r.Uint())
	case r.CanFloat():
		n = r.Float()
	default:
		return false
	}
	return n >= 1 && n <= 65535 && n == float64(int(n))
}

// clusterIPsValid reports whether a Service document's spec.clusterIP and spec.clusterIPs are
// each empty, None or an IP address, as the API server's validation requires.
func clusterIPsValid(d map[string]any) bool {
	spec, _ := d["spec"].(map[string]any)
	ips := []any{spec["clusterIP"]}
	switch l := spec["clusterIPs"].(type) {
	case nil:
	case []any:
		ips = append(ips, l...)
	case []string:
		for _, ip := range l {
			ips = append(ips, ip)
		}
	default:
		return false
	}
	for _, v := range ips {
		if v == nil {
			continue
		}
		ip, ok := v.(string)
		if !ok {
			return false
		}
		if ip != "" && ip != corev1.ClusterIPNone && net.ParseIP(ip) == nil {
			return false
		}
	}
	return true
}

// noAnswer reports whether Istio's output is empty: no Cluster, no document.
func noAnswer(out []byte) bool {
	switch strings.TrimSpace(string(out)) {
	case "", "[]", "null":
		return true
	}
	return false
}

// TestGeneratedScenariosTheAPIServerTakes requires every unedited generated scenario to pass
// apiServerTakes, so that the fuzz target skips only what its edits break.
func TestGeneratedScenariosTheAPIServerTakes(t *testing.T) {
	for _, kind := range gen.Kinds {
		for seed := uint64(1); seed <= 200; seed++ {
			s := gen.Generate(kind, seed)
			clusterScoped(s)
			if !apiServerTakes(s) {
				y, _ := s.YAML()
				t.Fatalf("%s seed %d: the generated scenario fails apiServerTakes:\n%s", kind, seed, y)
			}
		}
	}
}
