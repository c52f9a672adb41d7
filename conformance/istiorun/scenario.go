// Package istiorun runs Istio's own control-plane code, in process, on a scenario folder and
// writes what istiod would push: the Envoy Clusters of one host for one client proxy, or the
// ztunnel Authorizations of one ambient workload.
package istiorun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	meshconfig "istio.io/api/mesh/v1alpha1"
	"istio.io/istio/pilot/pkg/config/kube/crdclient"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/schema/collections"
	"istio.io/istio/pkg/config/schema/resource"
	kubelib "istio.io/istio/pkg/kube"
)

// DomainSuffix is the cluster domain istiod runs with.
const DomainSuffix = "cluster.local"

// DefaultCreationTime is given to objects that carry no metadata.creationTimestamp. A real
// apiserver stamps objects with a one-second resolution, so objects applied together share a
// timestamp and Istio falls back to its name ordering; one fixed time reproduces that.
var DefaultCreationTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Scenario is a scenario folder, decoded the way a Kubernetes apiserver would store it.
type Scenario struct {
	Dir   string
	Title string
	// Command is the command line after `kubectl mesh-explain`, without -f and -o.
	Command string
	Args    Args

	// Kube holds every object as the apiserver would return it: Kubernetes objects and the
	// Istio CRDs as client-go objects.
	Kube []runtime.Object
	// Configs are the Istio objects as istiod's CRD client translates them.
	Configs []config.Config
	// Mesh is the effective MeshConfig (ConfigMap istio-system/istio key mesh over defaults).
	Mesh *meshconfig.MeshConfig
	// Rejected are the Istio objects Istio's validation rejects. They are kept in Configs (as
	// istiod gets them when validation is off) only in a bad-input folder (see BadInput);
	// elsewhere loading fails on the first one.
	Rejected []*InvalidError
}

// BadInput reports whether dir is a bad-input scenario (its name starts with bad-input-): it
// holds objects Istio's validation rejects, and Istio runs on them as istiod does when such an
// object reaches it anyway (validation off, `kubectl apply --validate=false` on a cluster
// without the webhook).
func BadInput(dir string) bool { return strings.HasPrefix(filepath.Base(dir), "bad-input-") }

// Args is a parsed scenario command line.
type Args struct {
	Verb string // "cluster" or "authz"
	// Target is the positional argument: the host for cluster, pod/NAME (or NAME) for authz.
	Target    string
	Namespace string
	From      string
	Port      uint32
	Subset    string
	Selector  string
	// AllNamespaces is -A.
	AllNamespaces bool
}

// ParseArgs parses a scenario command line such as
// `cluster reviews -n bookinfo --from pod/productpage-v1 --port 9080 --subset v1`.
func ParseArgs(line string) (Args, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Args{}, errors.New("empty command")
	}
	a := Args{Verb: f[0]}
	var pos []string
	for i := 1; i < len(f); i++ {
		tok := f[i]
		name, val, hasVal := strings.Cut(tok, "=")
		next := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(f) {
				return "", fmt.Errorf("flag %s needs a value", name)
			}
			i++
			return f[i], nil
		}
		var err error
		switch name {
		case "-n", "--namespace":
			a.Namespace, err = next()
		case "--from":
			a.From, err = next()
		case "--subset":
			a.Subset, err = next()
		case "-l", "--selector":
			a.Selector, err = next()
		case "-A", "--all-namespaces":
			// Widens what is read from a live cluster; every input is read from the folder.
			a.AllNamespaces = true
		case "--port":
			var v string
			if v, err = next(); err == nil {
				var p uint64
				p, err = strconv.ParseUint(v, 10, 32)
				a.Port = uint32(p)
			}
		default:
			if strings.HasPrefix(tok, "-") {
				return Args{}, fmt.Errorf("unknown flag %q", tok)
			}
			pos = append(pos, tok)
		}
		if err != nil {
			return Args{}, err
		}
	}
	if a.Namespace == "" {
		a.Namespace = "default"
	}
	switch a.Verb {
	case "cluster":
		if len(pos) != 1 {
			return Args{}, fmt.Errorf("cluster takes one host, got %q", pos)
		}
	case "authz":
		if len(pos) > 1 || (len(pos) == 0 && a.Selector == "") {
			return Args{}, fmt.Errorf("authz takes one workload, got %q", pos)
		}
	default:
		return Args{}, fmt.Errorf("unknown command %q", a.Verb)
	}
	if len(pos) == 1 {
		a.Target = pos[0]
	}
	if a.Verb == "cluster" {
		// HOST:PORT is the same as HOST --port PORT.
		if h, p, ok := strings.Cut(a.Target, ":"); ok {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil || n == 0 {
				return Args{}, fmt.Errorf("port %q is not a number from 1 to 65535", p)
			}
			if a.Port != 0 && a.Port != uint32(n) {
				return Args{}, fmt.Errorf("two different ports: %s and --port %d", a.Target, a.Port)
			}
			a.Target, a.Port = h, uint32(n)
		}
	}
	return a, nil
}

// String writes the arguments back as a command line.
func (a Args) String() string {
	parts := []string{a.Verb}
	if a.Target != "" {
		parts = append(parts, a.Target)
	}
	parts = append(parts, "-n", a.Namespace)
	if a.Selector != "" {
		parts = append(parts, "-l", a.Selector)
	}
	if a.From != "" {
		parts = append(parts, "--from", a.From)
	}
	if a.Port != 0 {
		parts = append(parts, "--port", strconv.FormatUint(uint64(a.Port), 10))
	}
	if a.Subset != "" {
		parts = append(parts, "--subset", a.Subset)
	}
	if a.AllNamespaces {
		parts = append(parts, "-A")
	}
	return strings.Join(parts, " ")
}

// InputFiles lists the input YAML files of a scenario folder (every *.yaml and *.yml except the
// want files), sorted by name as `kubectl apply -f DIR` would read them.
func InputFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, "want.") {
			continue
		}
		if strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".json") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadArgs reads the `args` file: comment lines (the first is the title) and the command.
func ReadArgs(dir string) (title, command string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		return "", "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			if title == "" {
				title = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			}
			continue
		}
		if command == "" {
			command = line
		}
	}
	if command == "" {
		return "", "", fmt.Errorf("%s/args: no command line", dir)
	}
	return title, command, nil
}

// LoadScenario reads a scenario folder. Outside bad-input folders (BadInput), an object Istio's
// validation rejects fails the load with an *InvalidError.
func LoadScenario(dir string) (*Scenario, error) { return loadScenario(dir, BadInput(dir)) }

// LoadScenarioKeepingInvalid reads a scenario folder and keeps the objects Istio's validation
// rejects, listed in Scenario.Rejected, whatever the folder's name.
func LoadScenarioKeepingInvalid(dir string) (*Scenario, error) { return loadScenario(dir, true) }

func loadScenario(dir string, keepInvalid bool) (*Scenario, error) {
	title, command, err := ReadArgs(dir)
	if err != nil {
		return nil, err
	}
	args, err := ParseArgs(command)
	if err != nil {
		return nil, fmt.Errorf("%s/args: %v", dir, err)
	}
	files, err := InputFiles(dir)
	if err != nil {
		return nil, err
	}
	var docs []Document
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		d, err := SplitDocuments(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		for i := range d {
			d[i].File = f
		}
		docs = append(docs, d...)
	}
	sc, err := build(docs, args.Namespace, keepInvalid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	sc.Dir = dir
	sc.Title = title
	sc.Command = command
	sc.Args = args
	return sc, nil
}

// LoadObjects loads the objects of files as a scenario without args (namespace "default" where
// an object has none), keeping what Istio's validation rejects: the webhook case files of
// pkg/webhook/testdata/cases.
func LoadObjects(files ...string) (*Scenario, error) {
	var docs []Document
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		d, err := SplitDocuments(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		for i := range d {
			d[i].File = f
		}
		docs = append(docs, d...)
	}
	return build(docs, "default", true)
}

// Document is one YAML or JSON document of an input file.
type Document struct {
	File string
	JSON []byte
}

// SplitDocuments splits a multi-document YAML (or JSON) stream into JSON documents, dropping
// empty ones and expanding `kind: List`.
func SplitDocuments(b []byte) ([]Document, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []Document
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" {
			continue
		}
		var head struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, err
		}
		if strings.HasSuffix(head.Kind, "List") && head.Items != nil {
			for _, it := range head.Items {
				out = append(out, Document{JSON: it})
			}
			continue
		}
		out = append(out, Document{JSON: raw})
	}
	return out, nil
}

// Build decodes documents the way the apiserver stores them (defaulted, round-tripped through
// JSON, namespaced into defaultNs when they carry no namespace) and splits them into Kubernetes
// objects and Istio configs.
func Build(docs []Document, defaultNs string) (*Scenario, error) {
	return build(docs, defaultNs, false)
}

func build(docs []Document, defaultNs string, keepInvalid bool) (*Scenario, error) {
	ConfigureLogging()
	sc := &Scenario{Mesh: mesh.DefaultMeshConfig()}
	decoder := kubelib.IstioCodec.UniversalDeserializer()
	seen := map[string]bool{}
	namespaces := map[string]bool{}
	haveNs := map[string]bool{}
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(d.JSON); err != nil {
			return nil, fmt.Errorf("%s: %v", d.File, err)
		}
		gvk := u.GroupVersionKind()
		var schema resource.Schema
		istio := false
		if s, ok := collections.PilotGatewayAPI().FindByGroupKind(config.GroupVersionKind{Group: gvk.Group, Kind: gvk.Kind}); ok && gvk.Group != "" {
			schema, istio = s, true
			// The apiserver serves every version of an Istio CRD from one schema; use the
			// version istiod watches.
			u.SetAPIVersion(s.GroupVersionKind().GroupVersion())
		}
		if !clusterScoped(gvk.Kind) && u.GetNamespace() == "" {
			u.SetNamespace(defaultNs)
		}
		if ts := u.GetCreationTimestamp(); ts.IsZero() {
			u.SetCreationTimestamp(metav1.NewTime(DefaultCreationTime))
		}
		if u.GetUID() == "" {
			u.SetUID(types.UID(fmt.Sprintf("uid-%s-%s-%s", strings.ToLower(gvk.Kind), u.GetNamespace(), u.GetName())))
		}
		if u.GetResourceVersion() == "" {
			u.SetResourceVersion("1")
		}
		if u.GetGeneration() == 0 {
			u.SetGeneration(1)
		}
		key := gvk.Kind + "/" + u.GetNamespace() + "/" + u.GetName()
		if seen[key] {
			return nil, fmt.Errorf("%s: duplicate object %s", d.File, key)
		}
		seen[key] = true
		js, err := u.MarshalJSON()
		if err != nil {
			return nil, err
		}
		obj, _, err := decoder.Decode(js, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", d.File, key, err)
		}
		obj, err = roundTrip(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", d.File, key, err)
		}
		if ns := u.GetNamespace(); ns != "" {
			namespaces[ns] = true
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			haveNs[o.Name] = true
		case *corev1.Service:
			defaultService(o)
		case *corev1.Pod:
			defaultPod(o)
		case *corev1.ConfigMap:
			if o.Namespace == "istio-system" && o.Name == "istio" {
				if m, ok := o.Data["mesh"]; ok {
					mc, err := mesh.ApplyMeshConfigDefaults(m)
					if err != nil {
						return nil, fmt.Errorf("%s: mesh config: %v", d.File, err)
					}
					sc.Mesh = mc
				}
			}
		}
		sc.Kube = append(sc.Kube, obj)
		if istio {
			cfg := crdclient.TranslateObject(obj, schema.GroupVersionKind(), DomainSuffix)
			if _, err := schema.ValidateConfig(cfg); err != nil {
				if !keepInvalid {
					return nil, &InvalidError{Object: key, Err: err}
				}
				sc.Rejected = append(sc.Rejected, &InvalidError{Object: key, Err: err, Config: cfg})
			}
			sc.Configs = append(sc.Configs, cfg)
		}
	}
	// A real cluster only holds objects in existing namespaces.
	var missing []string
	for ns := range namespaces {
		if !haveNs[ns] {
			missing = append(missing, ns)
		}
	}
	sort.Strings(missing)
	for _, ns := range missing {
		sc.Kube = append(sc.Kube, &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{
				Name:              ns,
				UID:               types.UID("uid-namespace--" + ns),
				CreationTimestamp: metav1.NewTime(DefaultCreationTime),
				Labels:            map[string]string{"kubernetes.io/metadata.name": ns},
			},
		})
	}
	for _, o := range sc.Kube {
		if n, ok := o.(*corev1.Namespace); ok {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels["kubernetes.io/metadata.name"] = n.Name
		}
	}
	slices, err := SynthesizeEndpointSlices(sc.Kube)
	if err != nil {
		return nil, err
	}
	sc.Kube = append(sc.Kube, slices...)
	return sc, nil
}

// InvalidError is returned for an input Istio's validation rejects.
type InvalidError struct {
	Object string
	Err    error
	// Config is the rejected object as istiod's CRD client translates it (kept objects only).
	Config config.Config
}

// Errors returns the errors of Istio's validation one by one, as its multierror lists them.
func (e *InvalidError) Errors() []string { return flatten(e.Err) }

// ValidationErrors runs Istio's validation (the admission webhook's) on cfg and returns its
// errors one by one; warnings are not errors.
func ValidationErrors(cfg config.Config) ([]string, error) {
	schema, ok := collections.PilotGatewayAPI().FindByGroupKind(config.GroupVersionKind{Group: cfg.GroupVersionKind.Group, Kind: cfg.GroupVersionKind.Kind})
	if !ok {
		return nil, fmt.Errorf("no Istio schema for %v", cfg.GroupVersionKind)
	}
	_, err := schema.ValidateConfig(cfg)
	return flatten(err), nil
}

// flatten lists the errors of a go-multierror, recursively (a prefixed error, which errwrap
// also lets unwrap, stays one error).
func flatten(err error) []string {
	if err == nil {
		return nil
	}
	if m, ok := err.(interface {
		WrappedErrors() []error
		ErrorOrNil() error
	}); ok {
		var out []string
		for _, e := range m.WrappedErrors() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("%s is rejected by Istio's validation: %v", e.Object, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

func clusterScoped(kind string) bool {
	switch kind {
	case "Namespace", "Node", "GatewayClass", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
		return true
	}
	return false
}

// roundTrip writes an object to JSON and reads it back, as storing it in etcd does: empty maps
// and lists written by the user come back absent.
func roundTrip(obj runtime.Object) (runtime.Object, error) {
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, _, err := kubelib.IstioCodec.UniversalDeserializer().Decode(js, nil, nil)
	return out, err
}

// defaultService applies the apiserver defaults and allocations the registries read.
func defaultService(s *corev1.Service) {
	if s.Spec.Type == "" {
		s.Spec.Type = corev1.ServiceTypeClusterIP
	}
	if s.Spec.SessionAffinity == "" {
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if s.Spec.Type != corev1.ServiceTypeExternalName && p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal == 0 {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if s.Spec.Type != corev1.ServiceTypeExternalName && s.Spec.ClusterIP == "" {
		s.Spec.ClusterIP = allocateClusterIP(s.Namespace, s.Name)
	}
	if s.Spec.ClusterIP != "" && len(s.Spec.ClusterIPs) == 0 {
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	}
	if s.Spec.Type != corev1.ServiceTypeExternalName && len(s.Spec.IPFamilies) == 0 {
		fam := corev1.IPv4Protocol
		if strings.Contains(s.Spec.ClusterIP, ":") {
			fam = corev1.IPv6Protocol
		}
		s.Spec.IPFamilies = []corev1.IPFamily{fam}
		pol := corev1.IPFamilyPolicySingleStack
		s.Spec.IPFamilyPolicy = &pol
	}
}

// allocateClusterIP gives a Service without spec.clusterIP a stable address in 10.96.0.0/12,
// as the apiserver's allocator would give it some address.
func allocateClusterIP(ns, name string) string {
	h := uint32(2166136261)
	for _, c := range []byte(ns + "/" + name) {
		h ^= uint32(c)
		h *= 16777619
	}
	h %= 1 << 20
	if h < 2 {
		h += 2
	}
	return fmt.Sprintf("10.%d.%d.%d", 96+(h>>16), (h>>8)&0xff, h&0xff)
}

func defaultPod(p *corev1.Pod) {
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = "default"
	}
	for ci := range p.Spec.Containers {
		for pi := range p.Spec.Containers[ci].Ports {
			if p.Spec.Containers[ci].Ports[pi].Protocol == "" {
				p.Spec.Containers[ci].Ports[pi].Protocol = corev1.ProtocolTCP
			}
		}
	}
	if p.Status.PodIP != "" && len(p.Status.PodIPs) == 0 {
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	}
	// A pod with an address whose proxy is connected is running, and unless the scenario says
	// otherwise it is ready.
	if p.Status.Phase == "" && p.Status.PodIP != "" {
		p.Status.Phase = corev1.PodRunning
	}
	if p.Status.Phase == corev1.PodRunning {
		has := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				has = true
			}
		}
		if !has {
			p.Status.Conditions = append(p.Status.Conditions,
				corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
		}
	}
}
