package index

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// LookupCluster is pilot/pkg/model LookupCluster over the Services and ServiceEntries read: the
// outbound cluster of an ext_authz provider's service, named `NS/HOST` or by a hostname found in
// exactly one namespace. Sidecars and waypoints look providers up the same way.
func LookupCluster(snap *model.Snapshot, service string, port int) (string, string, error) {
	const suffix = ".svc.cluster.local"
	hosts := map[string][]string{}
	for _, s := range snap.Services {
		h := s.Name + "." + s.Namespace + suffix
		hosts[h] = append(hosts[h], s.Namespace)
	}
	for _, se := range snap.ServiceEntries {
		for _, h := range se.Spec.GetHosts() {
			if !slices.Contains(hosts[h], se.Namespace) {
				hosts[h] = append(hosts[h], se.Namespace)
			}
		}
	}
	cluster := func(h string) string { return "outbound|" + strconv.Itoa(port) + "||" + h }
	if ns, h, ok := strings.Cut(service, "/"); ok {
		if slices.Contains(hosts[h], ns) {
			return h, cluster(h), nil
		}
	} else if nss := hosts[service]; len(nss) == 1 {
		return service, cluster(service), nil
	} else if len(nss) > 1 {
		return "", "", fmt.Errorf("found %s in multiple namespaces %v, specify the namespace explicitly in the format of <Namespace>/<Hostname>", service, nss)
	}
	return "", "", fmt.Errorf("could not find service %s in Istio service registry", service)
}
