package source

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mesh-explain/kubectl-mesh-explain/pkg/model"
	"github.com/mesh-explain/kubectl-mesh-explain/pkg/provenance"
)

// locator implements model.FieldLocator over the YAML nodes of the objects read from files.
type locator struct {
	objs map[model.ObjectKey]located
}

// located is one object's YAML node, or the tree of its document, and the file it was read
// from.
type located struct {
	file string
	node *yaml.Node
	tree *lazyTree
}

var _ model.FieldLocator = (*locator)(nil)

// FieldPosition returns the position of the field at path in the object key, or of its nearest
// ancestor present in the file; nil when the object was not read from a file.
func (l *locator) FieldPosition(key model.ObjectKey, path string) *provenance.Position {
	if l == nil {
		return nil
	}
	o, ok := l.objs[key]
	if !ok {
		return nil
	}
	n := o.node
	if n == nil {
		n = o.tree.root()
	}
	return locate(o.file, n, path)
}

// locate walks a CRD-style path from node and returns the position of the deepest node found:
// the key of a mapping field, or the item of a list. Path steps:
//
//	name        a mapping field
//	[N]         list item N, or the mapping key "N" when the node is a mapping (portLevelMtls[9090])
//	[port=N]    the list item whose port is N, or whose port.number or port.name is N
//	[name=S]    the list item whose name is S (any field=value works the same way)
//
// It returns nil only when node is nil.
func locate(file string, node *yaml.Node, path string) *provenance.Position {
	node = resolve(node)
	if node == nil {
		return nil
	}
	best := nodePos(file, node)
	cur := node
	for _, st := range splitPath(path) {
		cur = resolve(cur)
		if cur == nil {
			break
		}
		var keyNode, next *yaml.Node
		switch {
		case !st.selector || cur.Kind == yaml.MappingNode:
			keyNode, next = mappingField(cur, st.text)
		case cur.Kind == yaml.SequenceNode:
			next = sequenceItem(cur, st.text)
		}
		if next == nil {
			break
		}
		if keyNode != nil {
			best = nodePos(file, keyNode)
		} else {
			best = nodePos(file, resolve(next))
		}
		cur = next
	}
	return best
}

type pathStep struct {
	text     string
	selector bool
}

// splitPath splits `a.b[port=9080].c[0]` into a, b, [port=9080], c, [0]. Dots inside brackets
// are part of the selector (`labels[app.kubernetes.io/name]`).
func splitPath(path string) []pathStep {
	var out []pathStep
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, pathStep{text: cur.String()})
			cur.Reset()
		}
	}
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				out = append(out, pathStep{text: path[i+1:], selector: true})
				return out
			}
			out = append(out, pathStep{text: path[i+1 : i+end], selector: true})
			i += end
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// mappingField returns the key and value nodes of field name in a mapping node.
func mappingField(m *yaml.Node, name string) (*yaml.Node, *yaml.Node) {
	if m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// sequenceItem selects a list item by index (`0`) or by field value (`port=9080`, `name=v1`).
func sequenceItem(s *yaml.Node, sel string) *yaml.Node {
	field, want, hasEq := strings.Cut(sel, "=")
	if !hasEq {
		i, err := strconv.Atoi(sel)
		if err != nil || i < 0 || i >= len(s.Content) {
			return nil
		}
		return s.Content[i]
	}
	for _, item := range s.Content {
		_, v := mappingField(resolve(item), field)
		v = resolve(v)
		if v == nil {
			continue
		}
		if scalarIs(v, want) {
			return item
		}
		if v.Kind == yaml.MappingNode {
			// port: {number: 9080, name: http} in DestinationRule portLevelSettings and
			// Sidecar listeners: match the number or the name.
			_, num := mappingField(v, "number")
			_, name := mappingField(v, "name")
			if scalarIs(num, want) || scalarIs(name, want) {
				return item
			}
		}
	}
	return nil
}

func scalarIs(n *yaml.Node, want string) bool {
	n = resolve(n)
	return n != nil && n.Kind == yaml.ScalarNode && n.Value == want
}

// resolve follows YAML aliases and unwraps document nodes.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch {
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		case n.Kind == yaml.DocumentNode && len(n.Content) == 1:
			n = n.Content[0]
		default:
			return n
		}
	}
	return nil
}

func nodePos(file string, n *yaml.Node) *provenance.Position {
	return &provenance.Position{File: file, Line: n.Line, Col: n.Column}
}

// shiftNodes moves the positions of a node tree parsed from a fragment that starts at line, col
// of its file.
func shiftNodes(n *yaml.Node, line, col int) {
	if n == nil {
		return
	}
	if n.Line == 1 {
		n.Column += col - 1
	}
	n.Line += line - 1
	for _, c := range n.Content {
		shiftNodes(c, line, col)
	}
}
