package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	scaleServices = 1000
	scaleWorkers  = 8
	scaleSvcNS    = "e2e-scale"
	scaleClientNS = "e2e-scale-client"
	scaleTarget   = 777 // the service asked about
)

// TestScale creates 1,000 Services and 2,000 DestinationRules (for each service one in its own
// namespace and one private to the client namespace, which shadows it) and requires the answer
// for one host to equal the offline answer for just the objects that matter to it.
func TestScale(t *testing.T) {
	c := admin(t)
	base := []*unstructured.Unstructured{
		namespaceObj(scaleSvcNS), namespaceObj(scaleClientNS),
		podObj(scaleClientNS, "client", "10.244.9.10"),
	}
	c.apply(t, base)

	var objs []*unstructured.Unstructured
	for i := range scaleServices {
		objs = append(objs, scaleObjects(i)...)
	}
	start := time.Now()
	created := c.createParallel(t, objs)
	t.Cleanup(func() { c.deleteParallel(t, created) })
	t.Logf("created %d objects with %d workers in %v", len(created), scaleWorkers, time.Since(start).Round(time.Millisecond))

	host := fmt.Sprintf("svc-%04d.%s.svc.cluster.local", scaleTarget, scaleSvcNS)
	q := []string{"cluster", host, "-n", scaleClientNS, "--from", "pod/client", "-o", "envoy"}
	live := runPlugin(kubeconfig("admin"), q...)
	mustSucceed(t, live)
	t.Logf("live answer in %v", live.elapsed.Round(time.Millisecond))

	dir := t.TempDir()
	writeObjects(t, filepath.Join(dir, "objects.yaml"), append(base, scaleObjects(scaleTarget)...))
	off := runPlugin(offline(), append(q, "-f", dir)...)
	mustSucceed(t, off)
	if off.stdout != live.stdout {
		t.Errorf("with 2,000 DestinationRules the live answer (+) differs from the offline one (-):\n%s", diff(off.stdout, live.stdout))
	}
}

// scaleObjects returns service i and its two DestinationRules.
func scaleObjects(i int) []*unstructured.Unstructured {
	name := fmt.Sprintf("svc-%04d", i)
	host := name + "." + scaleSvcNS + ".svc.cluster.local"
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": scaleSvcNS},
		"spec": map[string]any{
			"clusterIP": fmt.Sprintf("10.96.%d.%d", 200+i/250, 1+i%250),
			"selector":  map[string]any{"app": name},
			"ports":     []any{map[string]any{"name": "http", "port": int64(8080), "targetPort": int64(8080), "protocol": "TCP"}},
		},
	}}
	own := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
		"metadata": map[string]any{"name": name, "namespace": scaleSvcNS},
		"spec": map[string]any{
			"host":          host,
			"trafficPolicy": map[string]any{"connectionPool": map[string]any{"tcp": map[string]any{"maxConnections": int64(i + 1)}}},
			"subsets":       []any{map[string]any{"name": "v1", "labels": map[string]any{"version": "v1"}}},
		},
	}}
	client := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
		"metadata": map[string]any{"name": name, "namespace": scaleClientNS},
		"spec": map[string]any{
			"host":     host,
			"exportTo": []any{"."},
			"trafficPolicy": map[string]any{"outlierDetection": map[string]any{
				"consecutive5xxErrors": int64(1 + i%10), "interval": "10s"}},
			"subsets": []any{map[string]any{"name": "canary", "labels": map[string]any{"track": "canary"}}},
		},
	}}
	return []*unstructured.Unstructured{svc, own, client}
}

func namespaceObj(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
}

func podObj(ns, name, ip string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{
			"app": name, "security.istio.io/tlsMode": "istio"}},
		"spec": map[string]any{
			"serviceAccountName": name,
			"containers":         []any{map[string]any{"name": "app", "image": "registry.example.com/client:1.0"}},
		},
		"status": map[string]any{"phase": "Running", "podIP": ip, "podIPs": []any{map[string]any{"ip": ip}}},
	}}
}

// createParallel creates objs with scaleWorkers workers and returns those created.
func (c *cluster) createParallel(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	work := make(chan *unstructured.Unstructured)
	var mu sync.Mutex
	var created []*unstructured.Unstructured
	var firstErr error
	var wg sync.WaitGroup
	for range scaleWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				ri, err := c.resource(o)
				if err == nil {
					_, err = ri.Create(context.Background(), o, metav1.CreateOptions{})
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("creating %s: %w", key(o), err)
				}
				if err == nil {
					created = append(created, o)
				}
				mu.Unlock()
			}
		}()
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		c.deleteParallel(t, created)
		t.Fatal(firstErr)
	}
	return created
}

// deleteParallel deletes objs with scaleWorkers workers.
func (c *cluster) deleteParallel(t *testing.T, objs []*unstructured.Unstructured) {
	work := make(chan *unstructured.Unstructured)
	var wg sync.WaitGroup
	for range scaleWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				ri, err := c.resource(o)
				if err == nil {
					err = ri.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
				}
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("cleanup %s: %v", key(o), err)
				}
			}
		}()
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
}
