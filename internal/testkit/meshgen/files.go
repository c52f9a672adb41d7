package meshgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Object is every generated object.
type Object interface {
	metav1.Object
	runtime.Object
}

// Objects returns every object in the order they can be created: Namespaces and Nodes first,
// then the mesh ConfigMap, then the rest kind by kind.
func (m *Mesh) Objects() []Object {
	var out []Object
	add := func(o Object) { out = append(out, o) }
	for _, o := range m.Namespaces {
		add(o)
	}
	for _, o := range m.Nodes {
		add(o)
	}
	for _, o := range m.ConfigMaps {
		add(o)
	}
	for _, o := range m.Services {
		add(o)
	}
	for _, o := range m.Pods {
		add(o)
	}
	for _, o := range m.DestinationRules {
		add(o)
	}
	for _, o := range m.VirtualServices {
		add(o)
	}
	for _, o := range m.PeerAuthentications {
		add(o)
	}
	for _, o := range m.AuthorizationPolicies {
		add(o)
	}
	for _, o := range m.Waypoints {
		add(o)
	}
	for _, o := range m.WaypointServices {
		add(o)
	}
	for _, o := range m.WaypointPods {
		add(o)
	}
	for _, o := range m.WaypointPolicies {
		add(o)
	}
	return out
}

// Key names an object: Kind/namespace/name.
func Key(o Object) string {
	return o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

// Format is how WriteFiles spells objects.
type Format string

// File formats.
const (
	YAML Format = "yaml"
	JSON Format = "json"
)

// WriteFiles writes the mesh under dir the way `kubectl get -o yaml` output is usually kept:
// namespaces.yaml and nodes.yaml, and one file per kind in a directory per namespace
// (dir/ns-000/services.yaml, ...). Read it back with -f dir -R.
func (m *Mesh) WriteFiles(dir string, format Format) error {
	if format != YAML && format != JSON {
		return fmt.Errorf("unknown file format %q (want yaml or json)", format)
	}
	files := map[string]*bytes.Buffer{}
	var order []string
	for _, o := range m.Objects() {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		name := strings.ToLower(kind) + "s." + string(format)
		path := filepath.Join(dir, o.GetNamespace(), name)
		buf, ok := files[path]
		if !ok {
			buf = &bytes.Buffer{}
			files[path] = buf
			order = append(order, path)
		}
		if err := encode(buf, o, format); err != nil {
			return fmt.Errorf("writing %s: %w", Key(o), err)
		}
	}
	for _, path := range order {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[path].Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func encode(buf *bytes.Buffer, o Object, format Format) error {
	js, err := json.Marshal(o)
	if err != nil {
		return err
	}
	// Leave out what the generator never sets, as the API server would.
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return err
	}
	if md, ok := doc["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if st, ok := doc["status"].(map[string]any); ok && len(st) == 0 {
		delete(doc, "status")
	}
	if format == JSON {
		js, err = json.Marshal(doc)
		if err != nil {
			return err
		}
		buf.Write(js)
		buf.WriteByte('\n')
		return nil
	}
	y, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	if buf.Len() > 0 {
		buf.WriteString("---\n")
	}
	buf.Write(y)
	return nil
}
