package ztunnelauthz

import (
	"encoding/json"
	"testing"
	"time"

	"istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mesh-explain/kubectl-mesh-explain/internal/testkit"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
)

// Builders with valid defaults, so that each test case states only what it is about.

var baseTime = time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)

// paB builds a PeerAuthentication.
type paB struct{ *securityv1.PeerAuthentication }

func peerAuth(ns, name string) paB {
	return paB{&securityv1.PeerAuthentication{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(baseTime)}}}
}

func (b paB) mode(m v1beta1.PeerAuthentication_MutualTLS_Mode) paB {
	b.Spec.Mtls = &v1beta1.PeerAuthentication_MutualTLS{Mode: m}
	return b
}

func (b paB) selector(kv ...string) paB {
	b.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: labelsOf(kv...)}
	return b
}

func (b paB) port(p uint32, m v1beta1.PeerAuthentication_MutualTLS_Mode) paB {
	if b.Spec.PortLevelMtls == nil {
		b.Spec.PortLevelMtls = map[uint32]*v1beta1.PeerAuthentication_MutualTLS{}
	}
	b.Spec.PortLevelMtls[p] = &v1beta1.PeerAuthentication_MutualTLS{Mode: m}
	return b
}

func (b paB) created(minutes int) paB {
	b.CreationTimestamp = metav1.NewTime(baseTime.Add(time.Duration(minutes) * time.Minute))
	return b
}

func labelsOf(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// authzPolicy decodes an AuthorizationPolicy from YAML (metadata and spec), as a file would.
func authzPolicy(t *testing.T, y string) *securityv1.AuthorizationPolicy {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ap := &securityv1.AuthorizationPolicy{}
	if err := json.Unmarshal(js, ap); err != nil {
		t.Fatalf("decoding policy: %v", err)
	}
	return ap
}

func namespace(name string, kv ...string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labelsOf(kv...)}}
}

// podB builds a Pod with an IP, a service account and two container ports.
type podB struct{ *corev1.Pod }

func newPod(ns, name string, kv ...string) podB {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if len(kv) > 0 {
		p.Labels = labelsOf(kv...)
	}
	p.Spec.ServiceAccountName = name
	p.Spec.Containers = []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}}}}
	p.Status.PodIP = "10.244.1.10"
	return podB{p}
}

func (b podB) annotate(kv ...string) podB {
	b.Annotations = labelsOf(kv...)
	return b
}

func (b podB) container(name string) podB {
	b.Spec.Containers = append(b.Spec.Containers, corev1.Container{Name: name})
	return b
}

// snapshot assembles a Snapshot: a foo namespace labelled for ambient and istio-system are
// always present unless objects replace them.
func snapshot(objs ...any) *model.Snapshot {
	s := &model.Snapshot{}
	haveNs := map[string]bool{}
	for _, o := range objs {
		switch x := o.(type) {
		case paB:
			o = x.PeerAuthentication
		case podB:
			o = x.Pod
		case *corev1.Namespace:
			haveNs[x.Name] = true
		}
		testkit.Add(s, o)
	}
	if !haveNs["foo"] {
		s.Namespaces = append(s.Namespaces, namespace("foo", dataplaneModeLabel, dataplaneModeAmbient))
	}
	if !haveNs["istio-system"] {
		s.Namespaces = append(s.Namespaces, namespace("istio-system"))
	}
	s.Sort()
	return s
}

const (
	unset      = v1beta1.PeerAuthentication_MutualTLS_UNSET
	permissive = v1beta1.PeerAuthentication_MutualTLS_PERMISSIVE
	strict     = v1beta1.PeerAuthentication_MutualTLS_STRICT
	disable    = v1beta1.PeerAuthentication_MutualTLS_DISABLE
)
