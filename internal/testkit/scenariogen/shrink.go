package scenariogen

import "sort"

// Shrink makes s smaller while fails keeps returning true: it drops whole documents, then
// fields and list elements of each document's spec and data (largest first), until nothing
// more can go or budget calls of fails have been made. s itself is not modified.
func Shrink(s *Scenario, fails func(*Scenario) bool, budget int) *Scenario {
	cur := s.Clone()
	calls := 0
	try := func(c *Scenario) bool {
		if calls >= budget {
			return false
		}
		calls++
		return fails(c)
	}
	for progress := true; progress && calls < budget; {
		progress = false
		for i := len(cur.Docs) - 1; i >= 0 && calls < budget; i-- {
			c := cur.Clone()
			c.Docs = append(c.Docs[:i], c.Docs[i+1:]...)
			if try(c) {
				cur, progress = c, true
			}
		}
		for i := 0; i < len(cur.Docs) && calls < budget; i++ {
			for _, top := range []string{"spec", "data"} {
				for {
					changed := false
					for _, p := range paths(cur.Docs[i][top], []any{top}) {
						c := cur.Clone()
						if !deletePath(c.Docs[i], p) {
							continue
						}
						if try(c) {
							cur, progress, changed = c, true, true
							break
						}
						if calls >= budget {
							break
						}
					}
					if !changed || calls >= budget {
						break
					}
				}
			}
		}
	}
	return cur
}

// paths lists the paths under v, each parent before its children.
func paths(v any, prefix []any) [][]any {
	var out [][]any
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append([]any{}, prefix...), k)
			out = append(out, p)
			out = append(out, paths(t[k], p)...)
		}
	case []any:
		for i := range t {
			p := append(append([]any{}, prefix...), i)
			out = append(out, p)
			out = append(out, paths(t[i], p)...)
		}
	}
	return out
}

// deletePath removes the element at path p from doc and reports whether it existed.
func deletePath(doc map[string]any, p []any) bool {
	parent, ok := getPath(doc, p[:len(p)-1])
	if !ok {
		return false
	}
	last := p[len(p)-1]
	switch t := parent.(type) {
	case map[string]any:
		k, ok := last.(string)
		if !ok {
			return false
		}
		if _, ok := t[k]; !ok {
			return false
		}
		delete(t, k)
		return true
	case []any:
		i, ok := last.(int)
		if !ok || i >= len(t) {
			return false
		}
		// Lists are replaced in their parent, which needs the grandparent.
		return setPath(doc, p[:len(p)-1], append(append([]any{}, t[:i]...), t[i+1:]...))
	}
	return false
}

func setPath(doc map[string]any, p []any, v any) bool {
	parent, ok := getPath(doc, p[:len(p)-1])
	if !ok {
		return false
	}
	switch t := parent.(type) {
	case map[string]any:
		t[p[len(p)-1].(string)] = v
		return true
	case []any:
		t[p[len(p)-1].(int)] = v
		return true
	}
	return false
}

// getPath returns the value at path p of doc.
func getPath(doc map[string]any, p []any) (any, bool) {
	var cur any = doc
	for _, step := range p {
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[step.(string)]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i := step.(int)
			if i >= len(t) {
				return nil, false
			}
			cur = t[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
