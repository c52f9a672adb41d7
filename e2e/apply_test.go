package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// cluster is a Go client on the test apiserver, acting as one kube-env.sh user.
type cluster struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

var (
	adminOnce sync.Once
	adminC    *cluster
	adminErr  error
)

// admin returns the cluster-admin client.
func admin(t testing.TB) *cluster {
	t.Helper()
	adminOnce.Do(func() { adminC, adminErr = newCluster(kubeconfig("admin")) })
	if adminErr != nil {
		t.Fatalf("admin client: %v", adminErr)
	}
	return adminC
}

func newCluster(kc string) (*cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, err
	}
	// The scale test creates thousands of objects; client-go's default 5 QPS would take minutes.
	cfg.QPS, cfg.Burst = 200, 400
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// resource returns the client for o's kind, namespaced when the kind is.
func (c *cluster) resource(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A kind installed after the mapper cached discovery (the CRDs): refresh once.
		if r, ok := c.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
			m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gvk, err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(o.GetNamespace()), nil
	}
	return c.dyn.Resource(m.Resource), nil
}

func (c *cluster) gvr(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}

// readObjects reads every Kubernetes object in the *.yaml files of dir (not the want.* files,
// which hold expected output), in file and document order.
func readObjects(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "want.") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeObjects splits a multi-document YAML stream into objects, skipping empty documents.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("document without apiVersion/kind: %v", m)
		}
		out = append(out, u)
	}
}

// key is how objects are named in messages and maps: Kind namespace/name.
func key(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// applied records what a scenario put into the cluster, so it can be taken out again.
type applied struct {
	created    []*unstructured.Unstructured // in creation order
	namespaces []*unstructured.Unstructured // pre-existing or created namespaces whose labels we set
}

// kindRank orders objects without a creationTimestamp so that what others refer to exists
// first. The order is cosmetic for the apiserver (nothing here validates references), but it
// is the order a person would apply them in.
var kindRank = map[string]int{
	"Namespace": 0, "Node": 1, "ConfigMap": 2, "ServiceAccount": 3, "Service": 4,
	"EndpointSlice": 5, "Pod": 6, "Deployment": 7,
}

// applyGroups orders objs for creation. istiod orders DestinationRules, PeerAuthentications,
// ServiceEntries and Sidecars by creationTimestamp (ties by name, then namespace), but the
// apiserver stamps its own creation time, with one-second resolution. So objects carrying a
// creationTimestamp are created in timestamp order, one group per distinct timestamp, each group
// sorted by name then namespace (the tie-break istiod uses), and a group waits a little more than
// a second after the previous one when it holds a kind an earlier group already created. The
// objects without a stamp come first, by kind, then by name and namespace. The live creation
// order then equals the order the files state.
func applyGroups(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	var plain []*unstructured.Unstructured
	stamped := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		if ts, ok, _ := unstructured.NestedString(o.Object, "metadata", "creationTimestamp"); ok && ts != "" {
			stamped[ts] = append(stamped[ts], o)
			continue
		}
		plain = append(plain, o)
	}
	sort.SliceStable(plain, func(i, j int) bool {
		ri, oki := kindRank[plain[i].GetKind()]
		rj, okj := kindRank[plain[j].GetKind()]
		if !oki {
			ri = 100
		}
		if !okj {
			rj = 100
		}
		if ri != rj {
			return ri < rj
		}
		// istiod orders some objects without a stamp in the files (the Services a waypoint
		// serves) by their live creationTimestamp, ties by name: created in name order, a
		// second boundary between two of them cannot reverse the order the files give.
		if plain[i].GetName() != plain[j].GetName() {
			return plain[i].GetName() < plain[j].GetName()
		}
		return plain[i].GetNamespace() < plain[j].GetNamespace()
	})
	groups := [][]*unstructured.Unstructured{plain}
	stamps := make([]string, 0, len(stamped))
	for ts := range stamped {
		stamps = append(stamps, ts)
	}
	sort.Slice(stamps, func(i, j int) bool { return parseTime(stamps[i]).Before(parseTime(stamps[j])) })
	for _, ts := range stamps {
		g := stamped[ts]
		sort.Slice(g, func(i, j int) bool {
			if g[i].GetName() != g[j].GetName() {
				return g[i].GetName() < g[j].GetName()
			}
			return g[i].GetNamespace() < g[j].GetNamespace()
		})
		groups = append(groups, g)
	}
	return groups
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// apply creates objs in the cluster (see applyGroups) and registers their removal with
// t.Cleanup. Namespaces that exist already get the scenario's labels and annotations.
func (c *cluster) apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if err := c.tryApply(t, objs); err != nil {
		t.Fatal(err)
	}
}

// tryApply is apply, returning the first error (what was created is still removed at cleanup).
func (c *cluster) tryApply(t *testing.T, objs []*unstructured.Unstructured) error {
	t.Helper()
	a := &applied{}
	t.Cleanup(func() { c.remove(t, a) })
	groups := applyGroups(objs)
	seen := map[string]bool{}
	for i, g := range groups {
		if i > 0 {
			pause := false
			for _, o := range g {
				if seen[o.GroupVersionKind().GroupKind().String()] {
					pause = true
				}
			}
			if pause {
				time.Sleep(1100 * time.Millisecond)
			}
		}
		for _, o := range g {
			seen[o.GroupVersionKind().GroupKind().String()] = true
			if err := c.create(a, o); err != nil {
				return fmt.Errorf("creating %s: %w", key(o), err)
			}
		}
	}
	return nil
}

// create creates one object. Pods (podIP, phase) and Gateways (addresses) get their status through the status
// subresource, since a create ignores it.
func (c *cluster) create(a *applied, o *unstructured.Unstructured) error {
	ctx := context.Background()
	o = o.DeepCopy()
	unstructured.RemoveNestedField(o.Object, "metadata", "creationTimestamp")
	ri, err := c.resource(o)
	if err != nil {
		return err
	}
	if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" {
		cur, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err == nil {
			cur.SetLabels(mergeLabels(cur.GetLabels(), o.GetLabels()))
			cur.SetAnnotations(o.GetAnnotations())
			if _, err := ri.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return err
			}
			a.namespaces = append(a.namespaces, o)
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		if _, err := ri.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return err
		}
		a.namespaces = append(a.namespaces, o)
		return nil
	}
	status, hasStatus, _ := unstructured.NestedMap(o.Object, "status")
	got, err := ri.Create(ctx, o, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	a.created = append(a.created, o)
	if hasStatus && (o.GetKind() == "Pod" || o.GetKind() == "Gateway") {
		got.Object["status"] = status
		if _, err := ri.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting status: %w", err)
		}
	}
	return nil
}

// mergeLabels keeps the labels the apiserver owns (kubernetes.io/metadata.name) and sets the
// scenario's.
func mergeLabels(cur, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range cur {
		if k == "kubernetes.io/metadata.name" {
			out[k] = v
		}
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

// remove deletes what apply created, newest first, and resets the labels and annotations of
// the namespaces it touched. Namespaces themselves stay: without a controller-manager a deleted
// namespace never finishes terminating. Pods are deleted with a zero grace period, since no
// kubelet will ever confirm their termination.
func (c *cluster) remove(t *testing.T, a *applied) {
	ctx := context.Background()
	zero := int64(0)
	for i := len(a.created) - 1; i >= 0; i-- {
		o := a.created[i]
		ri, err := c.resource(o)
		if err != nil {
			t.Errorf("cleanup %s: %v", key(o), err)
			continue
		}
		err = ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup %s: %v", key(o), err)
		}
	}
	for _, o := range a.created {
		ri, err := c.resource(o)
		if err != nil {
			continue
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("cleanup: %s is still there", key(o))
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, o := range a.namespaces {
		ri, err := c.resource(o)
		if err != nil {
			continue
		}
		cur, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("cleanup %s: %v", key(o), err)
			continue
		}
		cur.SetLabels(mergeLabels(cur.GetLabels(), nil))
		cur.SetAnnotations(nil)
		if _, err := ri.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Errorf("cleanup %s: %v", key(o), err)
		}
	}
}
