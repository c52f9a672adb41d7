package scenariogen

import "strings"

// Mutate edits the documents as data says, so that a fuzzer's bytes turn a generated scenario
// into meshes the generator never writes: a rule without its Service, two objects of one name,
// a field holding a value Istio's validation rejects or one taken from elsewhere in the mesh (a
// host where a label was, a namespace where a port was). data is read as a sequence of edits,
// each an operation byte and its operand bytes (missing operands read as 0):
//
//	op%6 == 0  drop document d
//	op%6 == 1  copy document d to the end (two objects of one kind and name)
//	op%6 == 2  set the field at path p of document d to the value v of Values
//	op%6 == 3  delete the field at path p of document d
//	op%6 == 4  move document d to namespace n of the scenario's namespaces (or to none)
//	op%6 == 5  set the field at path p of document d to a copy of the field at path q of
//	           document e
//
// where d, e, p, q, v and n are the operand bytes, each taken modulo the number of choices
// (paths in the order paths lists them, parents first). The scenario's command is kept.
func (s *Scenario) Mutate(data []byte) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	for len(data) > 0 && len(s.Docs) > 0 {
		op := next() % 6
		d := next() % len(s.Docs)
		doc := s.Docs[d]
		switch op {
		case 0:
			s.Docs = append(s.Docs[:d:d], s.Docs[d+1:]...)
		case 1:
			s.Docs = append(s.Docs, deepCopy(doc).(map[string]any))
		case 2, 3, 5:
			ps := paths(doc, nil)
			if len(ps) == 0 {
				continue
			}
			p := ps[next()%len(ps)]
			switch op {
			case 2:
				setPath(doc, p, deepCopy(Values[next()%len(Values)]))
			case 3:
				deletePath(doc, p)
			case 5:
				from := s.Docs[next()%len(s.Docs)]
				qs := paths(from, nil)
				if len(qs) == 0 {
					continue
				}
				if v, ok := getPath(from, qs[next()%len(qs)]); ok {
					setPath(doc, p, deepCopy(v))
				}
			}
		case 4:
			ns := s.namespaces()
			i := next() % (len(ns) + 1)
			m, ok := doc["metadata"].(map[string]any)
			if !ok {
				continue
			}
			if i == len(ns) {
				delete(m, "namespace")
			} else {
				m["namespace"] = ns[i]
			}
		}
	}
}

// Values are the values Mutate sets fields to: wrong types, empty and zero values, values
// Istio's validation rejects (negative durations and counts, bad CIDRs and ports), wildcards,
// terminal escapes, and the words of the mesh (modes, actions, namespaces, hosts) out of place.
var Values = []any{
	nil, "", 0, -1, 1, 80, 65536, 4294967297, 1.5, true, false,
	[]any{}, map[string]any{}, []any{nil}, []any{""}, map[string]any{"": ""},
	"*", "*.local", "*.foo.svc.cluster.local", "~", "/", "a/b", "foo/*", "./x", "0",
	"-5s", "0s", "1h", "1ms", "abc", "not-a-cidr", "10.0.0.0/33", "0.0.0.0/0", "::/0", "10.0.0.1",
	"STRICT", "PERMISSIVE", "DISABLE", "UNSET", "ISTIO_MUTUAL", "MUTUAL", "SIMPLE",
	"ALLOW", "DENY", "AUDIT", "CUSTOM", "HTTP", "TCP", "GRPC", "TLS", "HTTPS", "HBONE",
	"foo", "bar", "istio-system", "default", "svc0.foo.svc.cluster.local", "waypoint",
	"spiffe://cluster.local/ns/foo/sa/a", "cluster.local/ns/foo/sa/a", "GET", "/path*",
	"\x1b[31mred\x1b[0m", "\x1b]8;;http://x\x07l", "\u202eevil", strings.Repeat("x", 300),
}

// namespaces are the namespaces the documents name, in order of first appearance.
func (s *Scenario) namespaces() []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range s.Docs {
		m, _ := d["metadata"].(map[string]any)
		ns, _ := m["namespace"].(string)
		if ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out
}
