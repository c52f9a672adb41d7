package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit/meshgen"
)

// writer creates generated objects in an API server.
type writer struct {
	kube    kubernetes.Interface
	istio   istioclient.Interface
	gateway gatewayclient.Interface
}

func newWriter(kubeconfig string) (*writer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// No client-side rate limit: the workers are the limit.
	cfg.QPS = -1
	cfg.UserAgent = "meshgen-load"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	istio, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	gateway, err := gatewayclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &writer{kube: kube, istio: istio, gateway: gateway}, nil
}

// create creates o; an object that exists already is left alone (a Pod or a Gateway still gets
// its status when it has none).
func (w *writer) create(ctx context.Context, o meshgen.Object) error {
	opts := metav1.CreateOptions{}
	var err error
	switch o := o.(type) {
	case *corev1.Namespace:
		_, err = w.kube.CoreV1().Namespaces().Create(ctx, o, opts)
	case *corev1.Node:
		_, err = w.kube.CoreV1().Nodes().Create(ctx, o, opts)
	case *corev1.ConfigMap:
		_, err = w.kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, opts)
	case *corev1.Service:
		_, err = w.kube.CoreV1().Services(o.Namespace).Create(ctx, o, opts)
	case *corev1.Pod:
		return w.createPod(ctx, o)
	case *networkingv1.DestinationRule:
		_, err = w.istio.NetworkingV1().DestinationRules(o.Namespace).Create(ctx, o, opts)
	case *networkingv1.VirtualService:
		_, err = w.istio.NetworkingV1().VirtualServices(o.Namespace).Create(ctx, o, opts)
	case *securityv1.PeerAuthentication:
		_, err = w.istio.SecurityV1().PeerAuthentications(o.Namespace).Create(ctx, o, opts)
	case *securityv1.AuthorizationPolicy:
		_, err = w.istio.SecurityV1().AuthorizationPolicies(o.Namespace).Create(ctx, o, opts)
	case *gatewayv1.Gateway:
		return w.createGateway(ctx, o)
	default:
		return fmt.Errorf("cannot create %T", o)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createPod creates a Pod and then sets its status: the API server drops the status of a
// create, and no kubelet runs to report one.
func (w *writer) createPod(ctx context.Context, p *corev1.Pod) error {
	pods := w.kube.CoreV1().Pods(p.Namespace)
	got, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err == nil && got.Status.PodIP != "" {
			return nil
		}
	}
	if err != nil {
		return err
	}
	got.Status = p.Status
	now := metav1.Now()
	for i := range got.Status.Conditions {
		got.Status.Conditions[i].LastTransitionTime = now
	}
	got.Status.StartTime = &now
	_, err = pods.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	return err
}

// createGateway creates a Gateway and then sets its status, as istiod does once it has deployed
// a waypoint: the API server drops the status of a create (the Gateway CRD has a status
// subresource and defaults it to Pending), and no istiod runs here. Without status.addresses the
// plugin would answer for a waypoint not yet programmed.
func (w *writer) createGateway(ctx context.Context, g *gatewayv1.Gateway) error {
	gws := w.gateway.GatewayV1().Gateways(g.Namespace)
	got, err := gws.Create(ctx, g, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = gws.Get(ctx, g.Name, metav1.GetOptions{})
		if err == nil && len(got.Status.Addresses) > 0 {
			return nil
		}
	}
	if err != nil {
		return err
	}
	got.Status = *g.Status.DeepCopy()
	for i := range got.Status.Conditions {
		got.Status.Conditions[i].ObservedGeneration = got.Generation
	}
	_, err = gws.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	return err
}

// loadObjects creates objs with workers goroutines: Namespaces, Nodes and ConfigMaps first, the
// rest in any order. Progress goes to stderr.
func (w *writer) loadObjects(ctx context.Context, objs []meshgen.Object, workers int) error {
	var first, rest []meshgen.Object
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Namespace, *corev1.Node, *corev1.ConfigMap:
			first = append(first, o)
		default:
			rest = append(rest, o)
		}
	}
	start := time.Now()
	var done atomic.Int64
	total := len(objs)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n := done.Load()
				fmt.Fprintf(os.Stderr, "meshgen: %d/%d objects (%.0f/s)\n", n, total, float64(n)/time.Since(start).Seconds())
			}
		}
	}()
	defer close(stop)
	for _, batch := range [][]meshgen.Object{first, rest} {
		if err := w.parallel(ctx, batch, workers, &done); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "meshgen: created %d objects in %v (%.0f/s)\n", total, time.Since(start).Round(time.Millisecond),
		float64(total)/time.Since(start).Seconds())
	return nil
}

func (w *writer) parallel(ctx context.Context, objs []meshgen.Object, workers int, done *atomic.Int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan meshgen.Object)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				err := w.create(ctx, o)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("creating %s: %w", meshgen.Key(o), err)
					}
					mu.Unlock()
					cancel()
					continue
				}
				done.Add(1)
			}
		}()
	}
	for _, o := range objs {
		if ctx.Err() != nil {
			break
		}
		work <- o
	}
	close(work)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		firstErr = ctx.Err()
	}
	return firstErr
}
