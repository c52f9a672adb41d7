package source

import (
	"context"
	"encoding/json"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// listGateways reads one page of Gateway API Gateways through the REST client of the Istio
// clientset (same transport, guard and timeouts), at an absolute path: the project has no
// Gateway API clientset. A fake clientset reads none.
func listGateways(ctx context.Context, c *clients, ns string, o metav1.ListOptions) ([]object, string, error) {
	if c.istio == nil {
		return nil, "", nil
	}
	rc := c.istio.SecurityV1().RESTClient()
	if r, ok := rc.(*rest.RESTClient); !ok || r == nil {
		return nil, "", nil
	}
	path := "/apis/" + groupGateway + "/v1"
	if ns != "" {
		path += "/namespaces/" + ns
	}
	req := rc.Get().AbsPath(path, "gateways")
	if o.Limit > 0 {
		req = req.Param("limit", strconv.FormatInt(o.Limit, 10))
	}
	if o.Continue != "" {
		req = req.Param("continue", o.Continue)
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return nil, "", err
	}
	var l gatewayv1.GatewayList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, "", err
	}
	return items(l.Items), l.Continue, nil
}
