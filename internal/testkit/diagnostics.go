package testkit

import (
	"encoding/json"
	"slices"
)

// DiagnosticMessages returns the messages of the diagnostics with one of ids found anywhere in
// an `-o json` answer (one explanation document or a list of them).
func DiagnosticMessages(answer []byte, ids ...string) ([]string, error) {
	var doc any
	if err := json.Unmarshal(answer, &doc); err != nil {
		return nil, err
	}
	var msgs []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if id, _ := x["id"].(string); slices.Contains(ids, id) {
				if m, ok := x["message"].(string); ok {
					msgs = append(msgs, m)
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	slices.Sort(msgs)
	return msgs, nil
}
