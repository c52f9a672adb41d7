package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/engine/waypointauthz"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/source"
)

// lookupTimeout bounds the small extra reads that completion, hints and the version check
// make: they help, and must never hold a command up.
const lookupTimeout = 3 * time.Second

// lookupClient returns a clientset for the small extra reads, its requests bounded by
// lookupTimeout.
func (o *CommonOptions) lookupClient() (kubernetes.Interface, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = lookupTimeout
	// No client-side throttling waits: a lookup makes one or two requests.
	cfg.QPS, cfg.Burst = -1, -1
	return kubernetes.NewForConfig(cfg)
}

// filesSnapshot returns every object of the -f files, unfiltered, or nil when they cannot be
// read. Standard input is used only when it was read already (o.stdin): completion never
// waits on it.
func (o *CommonOptions) filesSnapshot(ctx context.Context, namespace string) *model.Snapshot {
	spec := source.Spec{Recursive: o.Recursive, DefaultNamespace: namespace, IstioNamespace: o.IstioNamespace}
	for _, f := range o.Filenames {
		if f != "-" || o.stdin != nil {
			spec.Files = append(spec.Files, f)
		}
	}
	if len(spec.Files) == 0 {
		return nil
	}
	if slices.Contains(spec.Files, "-") {
		spec.Stdin = o.stdin.reader()
	}
	snap, err := source.Load(ctx, spec)
	if err != nil {
		return nil
	}
	return snap
}

// objectRef is the namespace and name of an object a lookup found.
type objectRef struct{ namespace, name string }

// snapshotObjects returns the objects of kind (pod, deployment, service, or waypoint: a Gateway
// of class istio-waypoint) in snap.
func snapshotObjects(snap *model.Snapshot, kind string) []objectRef {
	var out []objectRef
	add := func(m metav1.ObjectMeta) { out = append(out, objectRef{m.Namespace, m.Name}) }
	switch kind {
	case "pod":
		for _, p := range snap.Pods {
			add(p.ObjectMeta)
		}
	case "deployment":
		for _, d := range snap.Deployments {
			add(d.ObjectMeta)
		}
	case "service":
		for _, s := range snap.Services {
			add(s.ObjectMeta)
		}
	case "waypoint":
		for _, g := range snap.Gateways {
			if string(g.Spec.GatewayClassName) == waypointauthz.ClassName {
				add(g.ObjectMeta)
			}
		}
	}
	return out
}

// listObjects lists the objects of kind (as snapshotObjects) in ns ("": every namespace) with
// the limit and field selector of opts; nil when the list fails.
func listObjects(ctx context.Context, cs kubernetes.Interface, kind, ns string, opts metav1.ListOptions) []objectRef {
	var out []objectRef
	add := func(m metav1.ObjectMeta) { out = append(out, objectRef{m.Namespace, m.Name}) }
	switch kind {
	case "pod":
		if l, err := cs.CoreV1().Pods(ns).List(ctx, opts); err == nil {
			for i := range l.Items {
				add(l.Items[i].ObjectMeta)
			}
		}
	case "deployment":
		if l, err := cs.AppsV1().Deployments(ns).List(ctx, opts); err == nil {
			for i := range l.Items {
				add(l.Items[i].ObjectMeta)
			}
		}
	case "service":
		if l, err := cs.CoreV1().Services(ns).List(ctx, opts); err == nil {
			for i := range l.Items {
				add(l.Items[i].ObjectMeta)
			}
		}
	case "waypoint":
		// The Gateway API has no typed client here: one list through the core REST client.
		path := []string{"/apis/gateway.networking.k8s.io/v1"}
		if ns != corev1.NamespaceAll {
			path = append(path, "namespaces", ns)
		}
		req := cs.CoreV1().RESTClient().Get().AbsPath(append(path, "gateways")...)
		if opts.Limit > 0 {
			req = req.Param("limit", strconv.FormatInt(opts.Limit, 10))
		}
		if opts.FieldSelector != "" {
			req = req.Param("fieldSelector", opts.FieldSelector)
		}
		var l gatewayv1.GatewayList
		if raw, err := req.DoRaw(ctx); err == nil && json.Unmarshal(raw, &l) == nil {
			for i := range l.Items {
				if string(l.Items[i].Spec.GatewayClassName) == waypointauthz.ClassName {
					add(l.Items[i].ObjectMeta)
				}
			}
		}
	}
	return out
}
